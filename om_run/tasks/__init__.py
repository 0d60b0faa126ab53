"""The task types om-run loads and runs, one handler class each (table.py holds them by type)."""
