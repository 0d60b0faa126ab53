"""om-run's command line on the samples."""
