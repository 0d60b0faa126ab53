"""Real models end to end against their framework and onnxruntime; onnx's conformance suites."""
