"""The op sweep: single-op ONNX models from tiny to large, compiled by atc-py for a SoC and dtype and simulated in
time only (no numerics), each kernel with its simulated time, roofline and bound."""
from __future__ import annotations

import pathlib
import tempfile
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import atc_py
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from om_run.sim.profile import RuntimeProfile

ONNX_TYPE = {"float16": TensorProto.FLOAT16, "float32": TensorProto.FLOAT}
KERNELS = ("KERNEL", "ALL_KERNEL", "FFTS_PLUS_TASK", "SUPER_KERNEL", "KERNEL (host launched)")


LARGE_NS = 20_000   # an op whose roofline is at least this is "large": launch and block heads no longer matter


@dataclass
class Case:
    """One op at one size: `build(dtype)` makes the ONNX model."""
    name: str
    build: object


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "op", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _io(name, dtype, shape):
    return helper.make_tensor_value_info(name, ONNX_TYPE[dtype], list(shape))


def matmul(m, k, n):
    return lambda dt: _model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                             [_io("a", dt, (m, k)), _io("b", dt, (k, n))], [_io("y", dt, (m, n))])


def conv(n, c, h, cout, kh=3):
    def build(dt):
        w = numpy_helper.from_array(np.zeros((cout, c, kh, kh), np.dtype(dt)), "w")
        return _model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[kh // 2] * 4)],
                      [_io("x", dt, (n, c, h, h))], [_io("y", dt, (n, cout, h, h))], [w])
    return build


def unary(op, shape, **attrs):
    return lambda dt: _model([helper.make_node(op, ["x"], ["y"], **attrs)], [_io("x", dt, shape)],
                             [_io("y", dt, shape)])


def add(shape):
    return lambda dt: _model([helper.make_node("Add", ["a", "b"], ["y"])], [_io("a", dt, shape), _io("b", dt, shape)],
                             [_io("y", dt, shape)])


def transpose(shape):
    return lambda dt: _model([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], [_io("x", dt, shape)],
                             [_io("y", dt, shape[::-1])])


def layernorm(shape):
    def build(dt):
        g = numpy_helper.from_array(np.ones(shape[-1:], np.dtype(dt)), "g")
        b = numpy_helper.from_array(np.zeros(shape[-1:], np.dtype(dt)), "b")
        return _model([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)],
                      [_io("x", dt, shape)], [_io("y", dt, shape)], [g, b])
    return build


def reduce_sum(shape, axes, keep=0):
    def build(dt):
        out = [d for i, d in enumerate(shape) if i not in axes] if not keep else [1 if i in axes else d for i, d in enumerate(shape)]
        ax = numpy_helper.from_array(np.array(axes, np.int64), "axes")
        return _model([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=keep)],
                      [_io("x", dt, shape)], [_io("y", dt, out)], [ax])
    return build


SWEEP = [
    Case("MatMul 64^3", matmul(64, 64, 64)),
    Case("MatMul 1024^3", matmul(1024, 1024, 1024)),
    Case("MatMul 4096^3", matmul(4096, 4096, 4096)),
    Case("GEMV 1x4096x4096", matmul(1, 4096, 4096)),
    Case("MatMul 16x4096x4096", matmul(16, 4096, 4096)),
    Case("MatMul 1x16x65536 (K split)", matmul(1, 65536, 16)),
    Case("Conv3x3 16ch 8^2", conv(1, 16, 8, 16)),
    Case("Conv3x3 64ch 56^2", conv(1, 64, 56, 64)),
    Case("Conv3x3 256ch 56^2", conv(1, 256, 56, 256)),
    Case("Conv3x3 64ch 56^2 batch 8", conv(8, 64, 56, 64)),
    Case("Add 1K", add((1024,))),
    Case("Add 64M", add((8192, 8192))),
    Case("Relu 1M", unary("Relu", (1024, 1024))),
    Case("Softmax 4096^2", unary("Softmax", (4096, 4096), axis=-1)),
    Case("LayerNorm 4096^2", layernorm((4096, 4096))),
    Case("Transpose 4096^2", transpose((4096, 4096))),
    Case("ReduceSum 64M -> scalar", reduce_sum((8192, 8192), [0, 1])),
    Case("ReduceSum 4096^2 rows", reduce_sum((4096, 4096), [1])),
    Case("ReduceSum 256x4 -> 4", reduce_sum((256, 4), [0])),
]
SOCS = ("Ascend910B1", "Ascend310P3")
DTYPES = ("float16", "float32")


def compile_model(model, soc: str, d: pathlib.Path, name: str = "m", precision: str = "must_keep_origin_dtype",
                  **options):
    """atc-py's .om of `model`, loaded; the model's own dtypes unless `precision` says otherwise ("": ATC's
    default, force_fp16)."""
    path = d / f"{name}.om"
    opts = {"ge.socVersion": soc, **({"ge.exec.precision_mode": precision} if precision else {}), **options}
    path.write_bytes(atc_py.build(model, opts).om)
    return load_model(str(path))


def simulate(model, prof: RuntimeProfile | None = None, loops: int = 1):
    """Timing-only runs; the last loop's stats."""
    sim = Simulation(model, prof, compute=False)
    stats = None
    for _ in range(loops):
        _, stats = sim.run(None)
    return stats


def kernels(stats) -> list:
    return [r for r in stats.records if r.type in KERNELS]


def run_case(case: Case, soc: str, dtype: str, prof: RuntimeProfile | None = None):
    """The one kernel of a single-op model: its record (simulated time, roofline, bound, block_dim)."""
    with tempfile.TemporaryDirectory() as d:
        model = compile_model(case.build(dtype), soc, pathlib.Path(d))
    ks = [k for k in kernels(simulate(model, prof)) if k.op_type != "TransData"]   # the format conversions around it
    assert len(ks) == 1, [k.op_type for k in ks]
    return ks[0]
