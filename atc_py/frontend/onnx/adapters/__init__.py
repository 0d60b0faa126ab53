"""ONNX op adapters, one module per family; importing registers them."""
from . import math, elementwise, nn, tensor, index, reduce, sequence, training  # noqa: F401
from . import ascend, misc, scan  # noqa: F401,E402
from . import losses, quant, recurrent, signal, vision  # noqa: F401,E402  (issue 14b: quantized, vision, recurrent, signal, loss ops)
from . import gather_scatter, math_more, transformer  # noqa: F401,E402
from . import control, optional, sequence_map  # noqa: F401,E402
