"""Benchmarks (make bench): bench.py is the entry point; compile_speed.py its compile-speed part."""
