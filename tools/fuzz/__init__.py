"""Fuzzing both tools with hostile files and flags (issue 13): `python -m tools.fuzz` (see __main__)."""
