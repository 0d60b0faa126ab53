"""onnxruntime's quantized contrib ops (com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QLinearSoftmax, QGemm) through atc-py and om-run give
onnxruntime's own bits: each model holds several nodes with random scales and zero points, so values on rounding
boundaries of the output quantization occur, and land where onnxruntime's kernels put them. The quantized ops keep
their arithmetic in every precision mode."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.common.errors import AtcError
from om_run.load.loader import load_model
from om_run.sim.host import Simulation

MS = "com.microsoft"
TYPES = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8}
MODES = ("must_keep_origin_dtype", "force_fp16")


def rand_q(rng, shape, dtype):
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    return rng.integers(lo, hi, shape).astype(dtype)


def params(rng, dtype, prefix: str, inits: dict, scale=(0.001, 0.2)):
    """A scale and a zero point as initializers; returns their names."""
    inits[f"{prefix}_s"] = np.float32(rng.uniform(*scale))
    inits[f"{prefix}_z"] = rand_q(rng, (), dtype)
    return [f"{prefix}_s", f"{prefix}_z"]


def make(nodes, feeds: dict, inits: dict, outputs: list[str]) -> onnx.ModelProto:
    """Outputs of the feeds' quantized type, or float32 when named "y:float32"."""
    qtype = next(TYPES[str(v.dtype)] for v in feeds.values() if str(v.dtype) in TYPES)
    named = [o.split(":") for o in outputs]
    g = helper.make_graph(nodes, "q", [helper.make_tensor_value_info(k, TYPES.get(str(v.dtype), TensorProto.FLOAT),
                                                                     list(v.shape)) for k, v in feeds.items()],
                          [helper.make_tensor_value_info(o[0], TensorProto.FLOAT if o[1:] else qtype, None)
                           for o in named],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])


def onnxruntime_outputs(m, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def ours(m, feeds, mode, tmp_path):
    res = atc_py.build(m, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": mode})
    p = tmp_path / f"{mode}.om"
    p.write_bytes(res.om)
    return Simulation(load_model(str(p))).run(list(feeds.values()))[0], res


def assert_onnxruntime_bits(m, feeds, tmp_path, modes=MODES):
    want = onnxruntime_outputs(m, feeds)
    for mode in modes:
        got, _ = ours(m, feeds, mode, tmp_path)
        for k, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == w.dtype and g.shape == w.shape, (mode, k)
            assert np.array_equal(g, w), f"{mode} output {k}: {int((g != w).sum())} of {w.size} differ"


BROADCASTS = {"same": ([2, 8, 12, 12], [2, 8, 12, 12]), "per_channel_b": ([2, 8, 12, 12], [1, 8, 1, 1]),
              "per_channel_a": ([1, 8, 1, 1], [2, 8, 12, 12]), "scalar_b": ([2, 8, 12, 12], [1]),
              "bias": ([4, 9, 40], [40])}


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("shapes", list(BROADCASTS), ids=list(BROADCASTS))
def test_qlinear_add_and_mul_give_onnxruntime_bits(op, dtype, shapes, tmp_path):
    """Every broadcast onnxruntime's loop tells apart (both inputs vary; one is a value per span, either side)."""
    rng = np.random.default_rng(len(op) + 7 * len(dtype) + 13 * list(BROADCASTS).index(shapes))
    sa, sb = BROADCASTS[shapes]
    feeds = {"a": rand_q(rng, sa, dtype), "b": rand_q(rng, sb, dtype)}
    inits, nodes = {}, []
    for k in range(12):
        ins = ["a"] + params(rng, dtype, f"a{k}", inits) + ["b"] + params(rng, dtype, f"b{k}", inits) + \
            params(rng, dtype, f"c{k}", inits)
        nodes.append(helper.make_node(op, ins, [f"y{k}"], domain=MS))
    assert_onnxruntime_bits(make(nodes, feeds, inits, [f"y{k}" for k in range(12)]), feeds, tmp_path)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_lookup_activations_give_onnxruntime_bits(dtype, tmp_path):
    """QLinearSigmoid and QLinearLeakyRelu over every input code, several scales each."""
    rng = np.random.default_rng(5)
    feeds = {"x": np.arange(256, dtype=np.uint8).view(dtype).reshape(16, 16)}
    inits, nodes = {}, []
    for k in range(6):
        nodes.append(helper.make_node("QLinearSigmoid", ["x"] + params(rng, dtype, f"sx{k}", inits, (0.01, 0.1)) +
                                      params(rng, dtype, f"sy{k}", inits, (0.002, 0.01)), [f"s{k}"], domain=MS))
        nodes.append(helper.make_node("QLinearLeakyRelu", ["x"] + params(rng, dtype, f"lx{k}", inits) +
                                      params(rng, dtype, f"ly{k}", inits), [f"l{k}"], domain=MS,
                                      alpha=float(rng.uniform(0.01, 0.3))))
    outs = [n.output[0] for n in nodes]
    assert_onnxruntime_bits(make(nodes, feeds, inits, outs), feeds, tmp_path)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_quantized_pools_give_onnxruntime_bits(dtype, tmp_path):
    """QLinearGlobalAveragePool (channels first and last) and QLinearAveragePool (padding counted or not,
    ceil mode, SAME_UPPER)."""
    rng = np.random.default_rng(11)
    feeds = {"x": rand_q(rng, [2, 6, 11, 13], dtype)}
    inits, nodes = {}, []
    pools = [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1),
             dict(kernel_shape=[2, 3], strides=[2, 2], ceil_mode=1),
             dict(kernel_shape=[3, 2], strides=[1, 2], auto_pad="SAME_UPPER"),
             dict(kernel_shape=[3, 3], channels_last=1)]
    for k, attrs in enumerate(pools):
        nodes.append(helper.make_node("QLinearAveragePool", ["x"] + params(rng, dtype, f"px{k}", inits) +
                                      params(rng, dtype, f"py{k}", inits), [f"p{k}"], domain=MS, **attrs))
    for k, last in enumerate((0, 1)):
        nodes.append(helper.make_node("QLinearGlobalAveragePool", ["x"] + params(rng, dtype, f"gx{k}", inits) +
                                      params(rng, dtype, f"gy{k}", inits), [f"g{k}"], domain=MS, channels_last=last))
    assert_onnxruntime_bits(make(nodes, feeds, inits, [n.output[0] for n in nodes]), feeds, tmp_path)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_qlinear_concat_and_softmax_give_onnxruntime_bits(dtype, tmp_path):
    """QLinearConcat: one input copied (its parameters are the output's), the others requantized; QLinearSoftmax
    along the last axis (opset 13) and over the flattened trailing dims (opset 12)."""
    rng = np.random.default_rng(2)
    feeds = {"a": rand_q(rng, [3, 5, 7], dtype), "b": rand_q(rng, [3, 4, 7], dtype), "c": rand_q(rng, [3, 1, 7], dtype)}
    inits = {}
    y = params(rng, dtype, "y", inits)
    nodes = [helper.make_node("QLinearConcat", y + ["a"] + params(rng, dtype, "a", inits) + ["b"] + y + ["c"] +
                              params(rng, dtype, "c", inits), ["cat"], domain=MS, axis=1)]
    for k, (opset, axis) in enumerate(((13, -1), (13, 1), (12, 1))):
        nodes.append(helper.make_node("QLinearSoftmax", ["a"] + params(rng, dtype, f"sx{k}", inits, (0.02, 0.2)) +
                                      [f"sy{k}_s", f"sy{k}_z"], [f"sm{k}"], domain=MS, opset=opset, axis=axis))
        inits[f"sy{k}_s"], inits[f"sy{k}_z"] = np.float32(1 / 256), np.array(0 if dtype == "uint8" else -128, dtype)
    assert_onnxruntime_bits(make(nodes, feeds, inits, [n.output[0] for n in nodes]), feeds, tmp_path)


@pytest.mark.parametrize("trans", [(0, 1), (1, 0)])
def test_qgemm_gives_onnxruntime_bits(trans, tmp_path):
    """QGemm with per-column int8 weights, an int32 bias and a uint8 output; and with a float output (no
    y_scale), alpha and a transposed A."""
    rng = np.random.default_rng(4)
    ta, tb = trans
    m, k, n = 6, 40, 10
    feeds = {"a": rand_q(rng, [k, m] if ta else [m, k], "uint8")}
    # 7-bit weights (the quantizer's reduce_range): onnxruntime's u8s8 kernels saturate int16 pair sums on CPUs
    # without VNNI, so full-range int8 weights would measure that, not the op
    inits = {"w": rng.integers(-64, 64, [n, k] if tb else [k, n]).astype(np.int8),
             "ws": rng.uniform(0.001, 0.01, n).astype(np.float32), "wz": np.zeros(n, np.int8),
             "bias": rng.integers(-3000, 3000, n).astype(np.int32)}
    a = ["a"] + params(rng, "uint8", "a", inits, (0.01, 0.05))
    nodes = [helper.make_node("QGemm", a + ["w", "ws", "wz", "bias"] + params(rng, "uint8", "y", inits),
                              ["y"], domain=MS, transA=ta, transB=tb),
             helper.make_node("QGemm", a + ["w", "ws", "wz", "bias"], ["f"], domain=MS, transA=ta, transB=tb,
                              alpha=0.75)]
    model = make(nodes, feeds, inits, ["y", "f:float32"])
    want = onnxruntime_outputs(model, feeds)
    for mode in MODES:
        got, _ = ours(model, feeds, mode, tmp_path)
        assert np.array_equal(got[0], want[0]), mode
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, err_msg=mode)


def test_bad_quantized_contrib_nodes_get_atc_errors():
    """Per-axis parameters, mixed types and a QLinearSoftmax without its opset attribute: E14001 naming the node,
    never a traceback."""
    rng = np.random.default_rng(0)
    feeds = {"a": rand_q(rng, [2, 3], "uint8"), "b": rand_q(rng, [2, 3], "int8")}
    inits = {"s": np.float32(0.1), "z": np.uint8(3), "sv": np.full(3, 0.1, np.float32), "zi": np.int8(0)}
    cases = {"per-axis": helper.make_node("QLinearAdd", ["a", "sv", "z", "a", "s", "z", "s", "z"], ["y"], domain=MS),
             "types": helper.make_node("QLinearMul", ["a", "s", "z", "b", "s", "zi", "s", "z"], ["y"], domain=MS),
             "opset": helper.make_node("QLinearSoftmax", ["a", "s", "z", "s", "z"], ["y"], domain=MS),
             "concat": helper.make_node("QLinearConcat", ["s", "z", "a", "s"], ["y"], domain=MS, axis=0)}
    for what, node in cases.items():
        with pytest.raises(AtcError) as err:
            atc_py.build(make([node], feeds, inits, ["y"]), {"ge.socVersion": "Ascend910B1"})
        assert err.value.code == "E14001", what
