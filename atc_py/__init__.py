"""atc-py: an ATC-compatible offline model compiler for Ascend NPUs."""
from .version import __version__


def build(model, options, online=False, device=None, log=None):
    """Compile `model` (path or onnx.ModelProto) with GE options; see atc_py.pipeline.build."""
    from .pipeline import build as _build
    kwargs = {"log": log} if log is not None else {}
    return _build(model, options, online=online, device=device, **kwargs)


__all__ = ["build", "__version__"]
