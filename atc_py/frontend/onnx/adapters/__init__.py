"""ONNX op adapters, one module per family; importing registers them."""
from . import elementwise, nn, tensor  # noqa: F401
from . import ascend, misc, scan  # noqa: F401,E402
