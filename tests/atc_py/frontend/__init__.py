"""ONNX and TensorFlow into the IR: adapters, sequences, control flow, value-aware import."""
