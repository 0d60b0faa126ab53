"""Loading an .om: hostile files, memory-mapped weights."""
