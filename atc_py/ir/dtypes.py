"""Data types and their numbers in each world: numpy, GE proto enum, GE C++ enum, ONNX."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import ml_dtypes  # noqa: F401  (registers bfloat16, float8_*, int4/int2... with numpy; an onnx dependency)
import numpy as np


@dataclass(frozen=True)
class DType:
    name: str          # numpy name, our canonical spelling
    proto: int         # ge.proto.DataType (TensorDescriptor.dtype)
    cpp: int           # ge::DataType (AttrDef.dt, MODEL_INOUT_INFO)
    onnx: int          # onnx.TensorProto.DataType
    ge_name: str       # "DT_FLOAT" ...

    @cached_property
    def np(self) -> np.dtype:
        return np.dtype(object) if self.name == STRING else np.dtype(self.name)

    @cached_property   # asked per tensor per task by the simulator: np.dtype() each time cost ~1 us
    def itemsize(self) -> int:
        # a string element is GE's StringHead (u64 address + u64 length) in device memory
        return STRING_HEAD_BYTES if self.name == STRING else np.dtype(self.name).itemsize


STRING = "string"
STRING_HEAD_BYTES = 16


_ALL = [
    DType("float32", 1, 0, 1, "DT_FLOAT"),
    DType("float16", 2, 1, 10, "DT_FLOAT16"),
    DType("int8", 3, 2, 3, "DT_INT8"),
    DType("int32", 7, 3, 6, "DT_INT32"),
    DType("uint8", 4, 4, 2, "DT_UINT8"),
    DType("int16", 5, 6, 5, "DT_INT16"),
    DType("uint16", 6, 7, 4, "DT_UINT16"),
    DType("uint32", 9, 8, 12, "DT_UINT32"),
    DType("int64", 8, 9, 7, "DT_INT64"),
    DType("uint64", 10, 10, 13, "DT_UINT64"),
    DType("float64", 12, 11, 11, "DT_DOUBLE"),
    DType("bool", 11, 12, 9, "DT_BOOL"),
    DType(STRING, 13, 13, 8, "DT_STRING"),
    # the types Ascend added for LLMs (ge_ir.proto: DT_BF16 = 27 ... DT_FLOAT4_E1M2 = 40; the C++ enum is one
    # higher from DT_INT4 on, after its DT_UNDEFINED = 28). Sub-byte types hold one element per byte here.
    DType("bfloat16", 27, 27, 16, "DT_BF16"),
    DType("int4", 28, 29, 22, "DT_INT4"),
    DType("int2", 30, 31, 26, "DT_INT2"),
    DType("uint2", 31, 32, 25, "DT_UINT2"),
    DType("float8_e5m2", 34, 35, 19, "DT_FLOAT8_E5M2"),
    DType("float8_e4m3fn", 35, 36, 17, "DT_FLOAT8_E4M3FN"),
    DType("float8_e8m0fnu", 36, 37, 24, "DT_FLOAT8_E8M0"),
    DType("float4_e2m1fn", 39, 40, 23, "DT_FLOAT4_E2M1"),
]
# ONNX types GE's DataType enum has no number for: a model using one gets an error naming it
NO_ASCEND_TYPE = {21: "UINT4", 18: "FLOAT8E4M3FNUZ", 20: "FLOAT8E5M2FNUZ", 14: "COMPLEX64", 15: "COMPLEX128"}
LOW_FLOATS = ("bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu", "float4_e2m1fn")
_BY_NAME = {d.name: d for d in _ALL}
_BY_ONNX = {d.onnx: d for d in _ALL}
_BY_PROTO = {d.proto: d for d in _ALL}


def dtype_by_name(name: str) -> DType:
    return _BY_NAME[name]


def dtype_from_numpy(dt) -> DType:
    d = np.dtype(dt)
    return _BY_NAME[STRING] if d.kind in "OUS" else _BY_NAME[d.name]


def dtype_from_onnx(code: int) -> DType | None:
    return _BY_ONNX.get(code)


def dtype_from_proto(code: int) -> DType | None:
    return _BY_PROTO.get(code)


def is_float(name: str) -> bool:
    """A floating-point type, numpy's or ml_dtypes' (whose numpy kind is 'V' for most)."""
    return name in LOW_FLOATS or np.dtype(name).kind == "f"


def no_ascend_type(code: int) -> str | None:
    """The ONNX name of a type Ascend has no DataType for (None if it has one or ONNX does not define it)."""
    return NO_ASCEND_TYPE.get(code)
