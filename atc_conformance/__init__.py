"""ONNX conformance: an onnx.backend Backend that compiles with atc-py and runs in om-run's simulator."""
