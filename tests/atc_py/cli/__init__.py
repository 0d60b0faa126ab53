"""atc-py's command line: ATC's syntax, messages and codes, public command lines, the pre-check."""
