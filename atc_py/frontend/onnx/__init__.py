"""ONNX frontend (--framework=5)."""
from .converter import convert_onnx
from .loader import load_onnx

__all__ = ["convert_onnx", "load_onnx"]
