"""Build options parsed once into `BuildOptions` (`build_options.py`), with a parser module per concern: input
shapes and ranges, gears, precision, per-op precision, debug flags, the AIPP configuration."""
