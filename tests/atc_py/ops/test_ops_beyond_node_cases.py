"""Operators beyond what onnx's node cases check: value-dependent ops (NonZero, Unique,
Compress, OneHot with a computed depth) in the dynamic-shape partition, a LLaMA-style block (RMSNorm, rotary
embedding, grouped-query causal attention) compiled by atc-py and run by om-run next to onnxruntime, kernels that
compute what their tiling covers, Cast's float8 saturation and e8m0 rounding, the dtypes Ascend lacks, and the
ops' own argument checks."""
from __future__ import annotations

from functools import partial

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.ir.graph import TensorDesc
from atc_py.ops import get_op
from atc_py.ops.core.base import OpError, TilingResult
from atc_py.ops.core.execute import launch, tiling_context
from atc_py.platform import load_soc
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers.kernels import run_one_op
from tests.helpers.onnx_builders import onnx_model

SOC = load_soc("Ascend910B1")
ORIGIN = {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}
RNG = np.random.default_rng(14)
vi = helper.make_tensor_value_info


model = partial(onnx_model, opset=23, ir_version=10)


def compile_om(tmp_path, m, **options):
    res = atc_py.build(m, {**ORIGIN, **options})
    p = tmp_path / "m.om"
    p.write_bytes(res.om)
    return res, load_model(str(p))


def ort_run(m, feeds):
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


# -- value-dependent shapes: the dynamic partition ----------------------------------------------------------------
def test_nonzero_unique_compress_onehot_shapes_follow_the_input_values(tmp_path):
    """One .om, two inputs with different contents: the output sizes follow the values (host executor), and the
    numbers match onnxruntime's."""
    F, I, B = TP.FLOAT, TP.INT64, TP.BOOL  # noqa: E741 -- the dtypes by their first letter
    nodes = [helper.make_node("Relu", ["x"], ["r"]),                       # a static producer ...
             helper.make_node("NonZero", ["r"], ["nz"]),
             helper.make_node("Unique", ["r"], ["u", "ui", "uinv", "uc"], sorted=1),
             helper.make_node("Compress", ["x", "keep"], ["c"], axis=0),
             helper.make_node("OneHot", ["labels", "depth", "values"], ["oh"], axis=-1),
             helper.make_node("Neg", ["c"], ["nc"])]                       # ... and a consumer of a dynamic tensor
    outs = [vi("nz", I, None), vi("u", F, None), vi("ui", I, None), vi("uinv", I, None), vi("uc", I, None),
            vi("nc", F, None), vi("oh", F, None)]
    m = model(nodes, [vi("x", F, [4, 3]), vi("keep", B, [4]), vi("labels", I, [3]), vi("depth", I, [])], outs,
              [numpy_helper.from_array(np.array([0.0, 1.0], np.float32), "values")], opset=13)
    res, om = compile_om(tmp_path, m)
    assert res.summary["unknown_subgraphs"] >= 1
    kinds = {n.op_type for n in res.graph.nodes}
    assert {"NonZero", "UniqueWithCountsExt2", "OneHot"} <= kinds
    sizes = set()
    for zeros, keep, depth in ((2, [1, 0, 1, 1], 5), (7, [0, 0, 1, 0], 3)):
        x = RNG.standard_normal((4, 3)).astype(np.float32)
        x.reshape(-1)[:zeros] = -1.0                                          # Relu makes these 0
        feeds = {"x": x, "keep": np.array(keep, bool), "labels": np.array([0, 2, -1], np.int64),
                 "depth": np.array(depth, np.int64)}
        got, _ = Simulation(om).run(list(feeds.values()))
        want = ort_run(m, feeds)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-6)
        sizes.add((got[0].shape, got[5].shape, got[6].shape))
    assert len(sizes) == 2   # the same .om gave two different output shapes


def test_a_constant_condition_folds_compress_to_a_static_gather():
    """With the condition known at import, NonZero folds and the gather is static (no dynamic partition)."""
    cond = numpy_helper.from_array(np.array([True, False, True]), "cond")
    m = model([helper.make_node("Compress", ["x", "cond"], ["y"], axis=1)], [vi("x", TP.FLOAT, [2, 3])],
              [vi("y", TP.FLOAT, None)], [cond], opset=13)
    res = atc_py.build(m, ORIGIN)
    assert res.summary["unknown_subgraphs"] == 0
    assert [n.op_type for n in res.graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")] == ["GatherV2D"]


# -- a static LLM block -----------------------------------------------------------------------------------------
def llama_block(b=2, s=6, hidden=32, heads=4, kv_heads=2):
    """RMSNorm -> q/k/v projections -> RotaryEmbedding (q, k) -> causal GQA Attention -> output projection ->
    residual, in opset 23 ops; weights random."""
    d = hidden // heads
    w = {n: (RNG.standard_normal(shape) * 0.2).astype(np.float32) for n, shape in
         (("wq", (hidden, hidden)), ("wk", (hidden, kv_heads * d)), ("wv", (hidden, kv_heads * d)),
          ("wo", (hidden, hidden)), ("gamma", (hidden,)))}
    pos = np.arange(64)[:, None] / (10000 ** (np.arange(0, d, 2) / d))[None, :]
    inits = [numpy_helper.from_array(v, n) for n, v in w.items()] + [
        numpy_helper.from_array(np.cos(pos).astype(np.float32), "cos"),
        numpy_helper.from_array(np.sin(pos).astype(np.float32), "sin")]
    nodes = [helper.make_node("RMSNormalization", ["x", "gamma"], ["n"], epsilon=1e-6),
             helper.make_node("MatMul", ["n", "wq"], ["q"]), helper.make_node("MatMul", ["n", "wk"], ["k"]),
             helper.make_node("MatMul", ["n", "wv"], ["v"]),
             helper.make_node("RotaryEmbedding", ["q", "cos", "sin", "pos"], ["qr"], num_heads=heads),
             helper.make_node("RotaryEmbedding", ["k", "cos", "sin", "pos"], ["kr"], num_heads=kv_heads),
             helper.make_node("Attention", ["qr", "kr", "v"], ["a"], is_causal=1, q_num_heads=heads,
                              kv_num_heads=kv_heads),
             helper.make_node("MatMul", ["a", "wo"], ["o"]), helper.make_node("Add", ["x", "o"], ["y"])]
    m = model(nodes, [vi("x", TP.FLOAT, [b, s, hidden]), vi("pos", TP.INT64, [b, s])], [vi("y", TP.FLOAT, None)],
              inits)
    feeds = {"x": RNG.standard_normal((b, s, hidden)).astype(np.float32),
             "pos": np.stack([np.arange(s), np.arange(3, 3 + s)]).astype(np.int64)}
    return m, feeds


def test_a_llama_block_compiles_to_cann_ops_and_matches_onnxruntime(tmp_path, om_run):
    m, feeds = llama_block()
    want = ort_run(m, feeds)[0]
    res, om = compile_om(tmp_path, m)
    np.savez(tmp_path / "in.npz", **feeds)
    np.savez(tmp_path / "exp.npz", y=want)
    code, out, err = om_run("--model", str(tmp_path / "m.om"), "--input", str(tmp_path / "in.npz"), "--expected",
                            str(tmp_path / "exp.npz"), "--rtol", "1e-4", "--atol", "1e-5")
    assert code == 0 and "PASS" in out, out + err
    kinds = [n.op_type for n in res.graph.nodes]
    for op in ("RmsNorm", "RotaryPositionEmbedding", "FusedInferAttentionScore"):
        assert kinds.count(op) == (2 if op == "RotaryPositionEmbedding" else 1), op
    assert res.summary["unknown_subgraphs"] == 0
    got, stats = Simulation(om).run(list(feeds.values()))
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-5)
    assert any(r.op_type == "FusedInferAttentionScore" for r in stats.records)
    # the default build (force_fp16) runs the projections in fp16: within what fp16 costs on this block
    _, om16 = compile_om(tmp_path, m, **{"ge.exec.precision_mode": "force_fp16"})
    got16, _ = Simulation(om16).run(list(feeds.values()))
    np.testing.assert_allclose(got16[0], want, rtol=2e-2, atol=2e-2)


# -- kernels compute what their tiling covers ------------------------------------------------------------------
def _f(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


TILED = [
    ("FusedInferAttentionScore", [_f(2, 4, 3, 8), _f(2, 2, 5, 8), _f(2, 2, 5, 8)],
     {"num_heads": 4, "num_key_value_heads": 2, "scale_value": 0.35, "next_tokens": 0}),
    ("RmsNorm", [_f(64, 16), _f(16)], {"epsilon": 1e-6}),
    ("GroupNorm", [_f(8, 6, 4), _f(6), _f(6)], {"num_groups": 3}),
    ("RotaryPositionEmbedding", [_f(2, 4, 8, 8), _f(2, 8, 4), _f(2, 8, 4)], {}),
    ("RecurrentGatedDeltaRule", [_f(8, 3, 16), _f(8, 3, 16), _f(8, 3, 16)],
     {"q_num_heads": 4, "kv_num_heads": 4, "update_rule": "linear"}),
    ("CausalConv1d", [_f(8, 6, 5), _f(6, 1, 3)], {}),
    ("MatrixDeterminant", [_f(64, 3, 3)], {}),
    ("HardMax", [_f(64, 9)], {"axis": -1}),
]


@pytest.mark.parametrize("op_type,inputs,attrs", TILED, ids=[t[0] for t in TILED])
def test_a_kernel_launched_with_fewer_blocks_leaves_rows_unwritten(op_type, inputs, attrs):
    (want, *_), node = run_one_op(op_type, inputs, attrs)
    spec = get_op(op_type)
    descs = [v.desc for v in node.outputs]
    good = spec.tiling(tiling_context(spec, [TensorDesc(x.shape, x.dtype.name) for x in inputs], descs, attrs, SOC))
    assert good.block_dim > 1, op_type
    (full, *_) = launch(spec, good, attrs, descs, inputs)
    np.testing.assert_array_equal(full, want)
    (part, *_) = launch(spec, TilingResult(1, good.tiling_key, good.tiling_data, good.workspace), attrs, descs, inputs)
    assert np.count_nonzero(part) < np.count_nonzero(want)
    assert not np.array_equal(part, want)


@pytest.mark.parametrize("op_type,inputs,attrs", TILED, ids=[t[0] for t in TILED])
def test_the_cost_grows_with_the_work(op_type, inputs, attrs):
    spec = get_op(op_type)
    (_, *_), node = run_one_op(op_type, inputs, attrs)
    ctx = tiling_context(spec, [TensorDesc(x.shape, x.dtype.name) for x in inputs], [v.desc for v in node.outputs],
                         attrs, SOC)
    lead = inputs[0].shape
    big = [np.concatenate([x, x]) if x.ndim > 1 and x.shape[0] == lead[0] else x for x in inputs]   # twice the batch
    (_, *_), node2 = run_one_op(op_type, big, attrs)
    ctx2 = tiling_context(spec, [TensorDesc(x.shape, x.dtype.name) for x in big], [v.desc for v in node2.outputs],
                          attrs, SOC)
    w, w2 = spec.work(ctx), spec.work(ctx2)
    assert w.bytes > 0 and (w.vector_ops > 0 or w.fractals > 0)
    assert w2.bytes > w.bytes and (w2.vector_ops > w.vector_ops or w2.fractals > w.fractals)


def test_attention_masks_the_band_and_zeroes_fully_masked_rows():
    q, k, v = _f(1, 1, 3, 4), _f(1, 1, 4, 4), _f(1, 1, 4, 4)
    mask = np.array([[False, False, False, False], [True, True, True, True], [False, True, False, True]])
    (y,), _ = run_one_op("FusedInferAttentionScore", [q, k, v, None, mask], {"num_heads": 1, "scale_value": 0.5})
    s = 0.5 * q[0, 0] @ k[0, 0].T
    s = np.where(mask, -np.inf, s)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    want = (p / p.sum(axis=1, keepdims=True)) @ v[0, 0]
    want[1] = 0                                   # every key masked: zeros, not NaN
    np.testing.assert_allclose(y[0, 0], want, rtol=1e-5, atol=1e-6)
    # a band two keys wide below a top-left diagonal (pre_tokens 1, next_tokens 0)
    (yb,), _ = run_one_op("FusedInferAttentionScore", [q, k, v], {"num_heads": 1, "scale_value": 0.5, "pre_tokens": 1,
                                                         "next_tokens": 0})
    band = np.array([[j > i or i - j > 1 for j in range(4)] for i in range(3)])
    (ym,), _ = run_one_op("FusedInferAttentionScore", [q, k, v, None, band], {"num_heads": 1, "scale_value": 0.5})
    np.testing.assert_allclose(yb, ym, rtol=1e-6)


# -- Cast to the low-precision types ----------------------------------------------------------------------------
def test_cast_to_float8_saturates_unless_told_not_to():
    x = np.array([1000.0, -1000.0, np.inf, -np.inf, np.nan, 0.3], np.float32)
    (sat,), _ = run_one_op("Cast", [x], {"dst_type": "float8_e4m3fn"})
    assert sat.dtype == ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(sat.astype(np.float32)[:4], [448, -448, 448, -448])
    assert np.isnan(sat.astype(np.float32)[4])
    (raw,), _ = run_one_op("Cast", [x], {"dst_type": "float8_e4m3fn", "saturate": False})
    assert np.isnan(raw.astype(np.float32)[:4]).all()          # e4m3fn has no infinity: out of range is NaN
    (e5,), _ = run_one_op("Cast", [x], {"dst_type": "float8_e5m2", "saturate": False})
    np.testing.assert_array_equal(e5.astype(np.float32)[2:4], [np.inf, -np.inf])


@pytest.mark.parametrize("mode,want", [("up", [4.0, 0.5, 8.0]), ("down", [2.0, 0.25, 8.0]), ("nearest", [4.0, 0.5, 8.0])])
def test_cast_to_e8m0_rounds_the_exponent(mode, want):
    (y,), _ = run_one_op("Cast", [np.array([3.0, 0.4, 8.0], np.float32)], {"dst_type": "float8_e8m0fnu", "round_mode": mode})
    np.testing.assert_array_equal(y.astype(np.float32), want)


def test_om_run_reads_a_bf16_npy_input_as_bf16(tmp_path, om_run):
    """np.save writes ml_dtypes arrays as raw records ('<V2'): om-run reads them as the input's bf16."""
    m = model([helper.make_node("Cast", ["x"], ["y"], to=TP.FLOAT)], [vi("x", TP.BFLOAT16, [3])],
              [vi("y", TP.FLOAT, None)], opset=21)
    compile_om(tmp_path, m)
    x = np.array([1.5, -2.0, 0.25], ml_dtypes.bfloat16)
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "exp.npz", y=x.astype(np.float32))
    code, out, err = om_run("--model", str(tmp_path / "m.om"), "--input", str(tmp_path / "x.npy"), "--expected",
                            str(tmp_path / "exp.npz"))
    assert code == 0 and "PASS" in out, out + err


def test_int4_and_bf16_are_storage_types_end_to_end(tmp_path):
    nodes = [helper.make_node("Cast", ["x"], ["i4"], to=TP.INT4), helper.make_node("Cast", ["i4"], ["y"], to=TP.BFLOAT16)]
    m = model(nodes, [vi("x", TP.FLOAT, [6])], [vi("y", TP.BFLOAT16, None), vi("i4", TP.INT4, None)], opset=21)
    _, om = compile_om(tmp_path, m)
    x = np.array([-9.0, -8.0, -1.4, 0.6, 7.0, 8.0], np.float32)
    (y, i4), _ = Simulation(om).run([x])
    assert i4.dtype == ml_dtypes.int4 and y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(i4, x.astype(ml_dtypes.int4))
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(ml_dtypes.int4).astype(np.float32))


@pytest.mark.parametrize("onnx_type,name", [(TP.UINT4, "UINT4"), (TP.FLOAT8E4M3FNUZ, "FLOAT8E4M3FNUZ")])
def test_types_ascend_lacks_are_named_in_the_error(onnx_type, name):
    as_input = model([helper.make_node("Cast", ["x"], ["y"], to=TP.FLOAT)], [vi("x", onnx_type, [4])],
                     [vi("y", TP.FLOAT, None)], opset=21)
    with pytest.raises(AtcError) as e:
        atc_py.build(as_input, ORIGIN)
    assert e.value.code == "E10055" and name in str(e.value)
    as_target = model([helper.make_node("Cast", ["x"], ["y"], to=onnx_type)], [vi("x", TP.FLOAT, [4])],
                      [vi("y", onnx_type, None)], opset=21)
    with pytest.raises(AtcError) as e:
        atc_py.build(as_target, ORIGIN)
    assert e.value.code == "E14001" and name in str(e.value)


# -- argument checks (the user's E14001, never a fault) --------------------------------------------------------
@pytest.mark.parametrize("op_type,inputs,attrs,why", [
    ("GatherElements", [_f(3, 4), np.array([[0, 5]], np.int64)], {"dim": 1}, "outside"),
    ("ScatterElements", [_f(3), np.array([3], np.int64), _f(1)], {}, "outside"),
    ("GatherNd", [_f(2, 3), np.array([[0, 3]], np.int64)], {}, "outside"),
    ("TensorScatterUpdate", [_f(4, 2), np.array([[4]], np.int64), _f(1, 2)], {}, "outside"),
    ("Einsum", [_f(2, 3), _f(4, 5)], {"equation": "ij,jk->ik"}, "letter 'j'"),
    ("Einsum", [_f(2, 3)], {"equation": "ij,jk->ik"}, "2 operands"),
    ("RotaryPositionEmbedding", [_f(1, 2, 3, 8), _f(10, 4), _f(10, 4), np.array([[0, 1, 11]], np.int64)], {},
     "position id"),
    ("Scatter", [_f(2, 4, 3), _f(2, 2, 3), np.array([3, 0], np.int64)], {"axis": 1}, "outside the cache"),
    ("FusedInferAttentionScore", [_f(1, 3, 2, 4), _f(1, 2, 2, 4), _f(1, 2, 2, 4)], {"num_heads": 3}, "divide"),
])
def test_bad_arguments_are_op_errors(op_type, inputs, attrs, why):
    with pytest.raises(OpError, match=why):
        run_one_op(op_type, inputs, attrs)


def test_an_unsupported_op_inside_a_flexattention_modifier_is_named():
    sub = helper.make_graph([helper.make_node("ImageDecoder", ["s"], ["o"])], "mod", [vi("s", TP.FLOAT, None)],
                            [vi("o", TP.FLOAT, None)])
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview", score_mod=sub)
    g = helper.make_graph([node], "g", [vi(n, TP.FLOAT, [1, 1, 2, 4]) for n in "qkv"], [vi("y", TP.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 26), helper.make_opsetid("ai.onnx.preview", 1)],
                          ir_version=10)
    with pytest.raises(AtcError) as e:
        atc_py.build(m, ORIGIN)
    # the one E19010 names ops inside subgraphs , with the path to them
    assert e.value.code == "E19010" and "FlexAttention_0/score_mod/ImageDecoder" in str(e.value)


# -- hostile attribute values (what a crafted .om can carry past om-run's type checks) --------------------------
def _i(*v):
    return np.array(v, np.int64)


HOSTILE_SAMPLES = {
    "FusedInferAttentionScore": [_f(1, 2, 3, 4), _f(1, 1, 5, 4), _f(1, 1, 5, 4), _f(3, 5), np.zeros((3, 5), bool), _i(4)],
    "RotaryPositionEmbedding": [_f(1, 2, 3, 4), _f(6, 2), _f(6, 2), _i(0, 1, 5).reshape(1, 3)],
    "RmsNorm": [_f(3, 4), _f(4)], "GroupNorm": [_f(2, 4, 3), _f(4), _f(4)], "MVNV2": [_f(2, 3, 4, 5)],
    "LpNorm": [_f(3, 4)], "LayerNormV3": [_f(3, 4), _f(4), _f(4)],
    "RecurrentGatedDeltaRule": [_f(1, 2, 8), _f(1, 2, 8), _f(1, 2, 8), _f(1, 2, 4, 4), _f(1, 2, 2), _f(1, 2, 2)],
    "CausalConv1d": [_f(1, 2, 5), _f(2, 1, 3), _f(2), _f(1, 2, 2)], "Einsum": [_f(2, 3), _f(3, 4)],
    "MatrixDeterminant": [_f(2, 3, 3)], "Cumprod": [_f(3, 4), _i(1)], "HardMax": [_f(3, 4)], "CeluV2": [_f(5)],
    "ThresholdedRelu": [_f(5)], "Swish": [_f(5)], "GeluV2": [_f(5)], "SwiGlu": [_f(5), _f(5)], "IsInf": [_f(5)],
    "Bitcast": [_f(4)], "GatherElements": [_f(3, 4), _i(0, 1, 2, 1).reshape(2, 2)],
    "GatherNd": [_f(3, 4), _i(0, 1).reshape(1, 2)], "ScatterElements": [_f(3, 4), _i(0, 1).reshape(1, 2), _f(1, 2)],
    "Scatter": [_f(2, 4, 3), _f(2, 2, 3), _i(0, 1)], "NonZero": [_f(3, 4)], "UniqueWithCountsExt2": [_f(6)],
    "Cast": [_f(4)],
}


def _hostile_values(default):
    from atc_py.ops.core.base import REQUIRED
    if default is REQUIRED or default is None:   # om-run's validation lets any type through for these
        return ["bogus", [1, 2], -7, 10 ** 12, 2.5, []]
    if isinstance(default, bool):
        return [not default]
    if isinstance(default, int):
        return [-(2 ** 40), -1, 0, 3, 2 ** 40]
    if isinstance(default, float):
        return [float("nan"), float("inf"), -1.0, 0.0, 1e30]
    if isinstance(default, str):
        return ["", "bogus", "tanh", "float64", "circular", "up", "BSH"]
    return [[], [10 ** 6], [-1, -1], [0, 1, 2, 3, 4, 5]]


@pytest.mark.parametrize("op_type", sorted(HOSTILE_SAMPLES))
def test_hostile_attribute_values_are_op_errors_or_results(op_type):
    """Every attribute value of the declared type (any value where the default is None / REQUIRED) either works or
    is an OpError (the user's E14001 / E30004): never a TypeError, KeyError, IndexError or crash."""
    spec = get_op(op_type)
    base = {k: v for k, v in {"num_heads": 2, "num_key_value_heads": 1, "q_num_heads": 2, "kv_num_heads": 2,
                              "equation": "ij,jk->ik", "type": "int32"}.items() if k in spec.attrs}
    tried = 0
    with np.errstate(all="ignore"):
        for name, default in spec.attrs.items():
            for value in _hostile_values(default):
                tried += 1
                try:
                    run_one_op(op_type, HOSTILE_SAMPLES[op_type], {**base, name: value})
                except OpError:
                    pass
    assert tried >= len(spec.attrs)
