"""Task generation: the tasks each engine writes into the .om."""
