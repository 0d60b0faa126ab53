"""Conformance data: the node-case exclusion list (each excluded case with its reason)."""
import pathlib

ROOT_EXCLUSIONS = str(pathlib.Path(__file__).resolve().parent / "node_exclusions.txt")
