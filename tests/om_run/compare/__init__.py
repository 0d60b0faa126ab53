"""om-run compare: layer-by-layer accuracy against the framework model."""
