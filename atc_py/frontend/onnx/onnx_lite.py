"""The parts of the `onnx` package the compiler's hot path needs, without `import onnx` (its import was a fixed cost of every compile).

`import onnx` costs ~70 ms of a ~0.3 s CLI process (its __init__ pulls in helper, ml_dtypes, compose,
json_format, ...), while a compile needs only the protobuf classes (onnx/onnx_ml_pb2.py) and the operator
schemas (the onnx_cpp2py_export extension). Both are loaded here from the installed onnx package under
their own module names, so that a later `import onnx` reuses the very same modules: `onnx.ModelProto is
ModelProto`, one descriptor pool entry, isinstance checks unchanged. Anything else (`helper`, `numpy_helper`,
`load`, `__version__`, ...) is the real package, imported on first use. If onnx is already imported, or the
files are not where a wheel puts them, this is simply the onnx package.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types

_PB2, _EXT = "onnx.onnx_ml_pb2", "onnx.onnx_cpp2py_export"


def _load(name: str, path: str) -> types.ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _light() -> tuple[types.ModuleType, types.ModuleType] | None:
    if "onnx" in sys.modules:
        return None
    spec = importlib.util.find_spec("onnx")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = list(spec.submodule_search_locations)[0]
    ext = next((os.path.join(root, "onnx_cpp2py_export" + s) for s in importlib.machinery.EXTENSION_SUFFIXES
                if os.path.isfile(os.path.join(root, "onnx_cpp2py_export" + s))), None)
    pb2 = os.path.join(root, "onnx_ml_pb2.py")
    if ext is None or not os.path.isfile(pb2):
        return None
    return _load(_PB2, pb2), _load(_EXT, ext)


try:
    _parts = _light()
except Exception:   # noqa: BLE001 -- an onnx layout this does not know: the real package
    _parts = None

if _parts is None:
    import onnx as _onnx
    from onnx import onnx_ml_pb2 as _pb2
    from onnx.onnx_cpp2py_export import defs as _C
else:
    _onnx = None
    _pb2, _C = _parts[0], _parts[1].defs

ModelProto = _pb2.ModelProto
GraphProto = _pb2.GraphProto
NodeProto = _pb2.NodeProto
TensorProto = _pb2.TensorProto
AttributeProto = _pb2.AttributeProto
ValueInfoProto = _pb2.ValueInfoProto
TypeProto = _pb2.TypeProto
SparseTensorProto = _pb2.SparseTensorProto
FunctionProto = _pb2.FunctionProto
TensorShapeProto = _pb2.TensorShapeProto
OperatorSetIdProto = _pb2.OperatorSetIdProto
StringStringEntryProto = _pb2.StringStringEntryProto


class defs:   # noqa: N801 - stands for onnx.defs
    """onnx.defs' schema lookups, straight from the extension (onnx.defs defines them as these)."""
    get_schema = staticmethod(_C.get_schema)
    has = staticmethod(_C.has_schema)
    SchemaError = _C.SchemaError
    OpSchema = _C.OpSchema

    @staticmethod
    def onnx_opset_version() -> int:
        return _C.schema_version_map()[""][1]


# raw_data decodes as one np.frombuffer for these (numpy_helper.to_array's own branch for them)
_NATIVE = {TensorProto.FLOAT: "<f4", TensorProto.DOUBLE: "<f8", TensorProto.FLOAT16: "<f2", TensorProto.INT8: "i1",
           TensorProto.INT16: "<i2", TensorProto.INT32: "<i4", TensorProto.INT64: "<i8", TensorProto.UINT8: "u1",
           TensorProto.UINT16: "<u2", TensorProto.UINT32: "<u4", TensorProto.UINT64: "<u8", TensorProto.BOOL: "?"}
_SIMPLE_ATTR = {AttributeProto.FLOAT: lambda a: a.f, AttributeProto.INT: lambda a: a.i,
                AttributeProto.STRING: lambda a: a.s, AttributeProto.TENSOR: lambda a: a.t,
                AttributeProto.GRAPH: lambda a: a.g, AttributeProto.FLOATS: lambda a: list(a.floats),
                AttributeProto.INTS: lambda a: list(a.ints), AttributeProto.STRINGS: lambda a: list(a.strings)}


def to_array(t):
    """numpy_helper.to_array: raw little-endian data of a native dtype here, anything else by onnx itself."""
    code = _NATIVE.get(t.data_type)
    if code is not None and sys.byteorder == "little" and t.HasField("raw_data") and not t.HasField("segment") \
            and t.data_location != TensorProto.EXTERNAL:
        import numpy as np
        return np.frombuffer(t.raw_data, dtype=np.dtype(code)).reshape(t.dims)
    if t.data_location == TensorProto.EXTERNAL:   # left in its checked file by the loader: mapped, never in the proto
        from .external_data import mapped_array
        arr = mapped_array(t)
        if arr is not None:
            return arr
    return full().numpy_helper.to_array(t)


def itemsize(data_type: int) -> int:
    """onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize, without onnx.helper for the native dtypes."""
    code = _NATIVE.get(data_type)
    if code is not None:
        import numpy as np
        return np.dtype(code).itemsize
    return full().helper.tensor_dtype_to_np_dtype(data_type).itemsize


def get_attribute_value(a):
    """onnx.helper.get_attribute_value: the common kinds here, the rest (and its errors) by onnx itself."""
    get = _SIMPLE_ATTR.get(a.type)
    if get is None or a.ref_attr_name:
        return full().helper.get_attribute_value(a)
    return get(a)


def full() -> types.ModuleType:
    """The real onnx package (imported now if it was not)."""
    return _onnx if _onnx is not None else importlib.import_module("onnx")


def __getattr__(name: str):   # helper, numpy_helper, load, __version__, ...: the real package on first use
    if name.startswith("__") and name != "__version__":
        raise AttributeError(name)
    return getattr(full(), name)
