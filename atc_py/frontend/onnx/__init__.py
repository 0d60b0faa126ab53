"""ONNX frontend (--framework=5)."""
from .converter import convert_onnx
from .loader import load_onnx, load_onnx_lazy

__all__ = ["convert_onnx", "load_onnx", "load_onnx_lazy"]
