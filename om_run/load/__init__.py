"""Loading an .om: decode (`loader.py`, `mapped.py`), check every field the simulator uses (`validate.py`,
`validate_shapes.py`, bounded by `limits.py`), the loaded model (`model.py`)."""
