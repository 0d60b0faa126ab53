"""Build options: BuildOptions, precision knobs, implementation modes, AIPP configs, gears."""
