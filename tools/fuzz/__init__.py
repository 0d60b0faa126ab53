"""Fuzzing both tools with hostile files and flags: `python -m tools.fuzz` (see __main__)."""
