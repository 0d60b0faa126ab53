"""Host side of om-run: inputs, model execute, outputs."""
