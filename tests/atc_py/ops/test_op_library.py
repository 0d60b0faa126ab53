"""Operator library: every op's kernel against a numpy reference, tiling invariants, stale tiling, cost."""
import numpy as np
import pytest

from atc_py.ir.graph import Graph, TensorDesc
from atc_py.ops import all_ops, get_op
from atc_py.ops.core.base import OpError, OpSpec, TilingResult
from atc_py.ops.core.cost import block_cost
from atc_py.ops.core.execute import launch, tiling_context
from atc_py.platform import load_soc
from tests.helpers.kernels import SOC, run_one_op

RNG = np.random.default_rng(0)



def r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("op,ref", [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply),
                                    ("RealDiv", np.divide)])
def test_binary_broadcast(op, ref):
    a, b = r(2, 3, 4, 5), r(1, 3, 1, 5) + 3.0
    (y,), _ = run_one_op(op, [a, b])
    np.testing.assert_allclose(y, ref(a, b), rtol=1e-6)


@pytest.mark.parametrize("op,ref", [("Relu", lambda x: np.maximum(x, 0)), ("Sigmoid", lambda x: 1 / (1 + np.exp(-x))),
                                    ("Tanh", np.tanh), ("Identity", lambda x: x)])
def test_unary(op, ref):
    x = r(3, 1000)
    (y,), _ = run_one_op(op, [x])
    np.testing.assert_allclose(y, ref(x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_hardswish_gives_the_onnx_function_bodys_bits(dtype):
    """HardSwish is x * HardSigmoid(x) with alpha 1/6 in ONNX (a MobileNetV3's activations, each one quantized
    after it in a QDQ model): onnx's reference evaluator runs that body."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    x = (r(20000) * 4).astype(dtype)
    t = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
    m = helper.make_model(helper.make_graph([helper.make_node("HardSwish", ["x"], ["y"])], "g",
                                            [helper.make_tensor_value_info("x", t, [x.size])],
                                            [helper.make_tensor_value_info("y", t, [x.size])]),
                          opset_imports=[helper.make_opsetid("", 14)])
    (y,), _ = run_one_op("HardSwish", [x])
    np.testing.assert_array_equal(y, ReferenceEvaluator(m).run(None, {"x": x})[0])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_any_axis(axis):
    x = r(3, 4, 5)
    (y,), _ = run_one_op("SoftmaxV2", [x], {"axes": [axis]})
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=axis, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes_and_bias(ta, tb):
    a, b, bias = r(37, 19), r(19, 23), r(23)
    a_in, b_in = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
    (y,), _ = run_one_op("MatMulV2", [a_in, b_in, bias], {"transpose_x1": ta, "transpose_x2": tb})
    np.testing.assert_allclose(y, a @ b + bias, rtol=1e-5, atol=1e-5)


def test_batch_matmul_broadcast():
    a, b = r(2, 3, 5, 7), r(3, 7, 4)
    (y,), _ = run_one_op("BatchMatMulV2", [a, b, None])
    np.testing.assert_allclose(y, np.matmul(a, b), rtol=1e-5, atol=1e-5)


def conv_ref(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])))
    ho = (h + pad[0] + pad[1] - dil * (kh - 1) - 1) // stride + 1
    wo = (wd + pad[2] + pad[3] - dil * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, co, ho, wo), np.float64)
    og = co // groups
    for o in range(co):
        g = o // og
        for i in range(ho):
            for j in range(wo):
                patch = xp[:, g * cg:(g + 1) * cg, i * stride:i * stride + dil * (kh - 1) + 1:dil,
                           j * stride:j * stride + dil * (kw - 1) + 1:dil]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
    return out + (b.reshape(1, -1, 1, 1) if b is not None else 0)


@pytest.mark.parametrize("stride,pad,dil,groups", [(1, [1, 1, 1, 1], 1, 1), (2, [0, 1, 0, 1], 1, 1),
                                                   (1, [2, 2, 2, 2], 2, 1), (1, [1, 1, 1, 1], 1, 4)])
def test_conv2d(stride, pad, dil, groups):
    x, w, b = r(2, 8, 9, 9), r(40, 8 // groups, 3, 3), r(40)
    attrs = {"strides": [1, 1, stride, stride], "pads": pad, "dilations": [1, 1, dil, dil], "groups": groups}
    (y,), _ = run_one_op("Conv2D", [x, w, b], attrs)
    np.testing.assert_allclose(y, conv_ref(x, w, b, stride, pad, dil, groups), rtol=1e-4, atol=1e-4)


def test_maxpool_ceil_mode_and_avgpool_exclusive():
    x = r(1, 2, 7, 7)
    attrs = {"ksize": [1, 1, 3, 3], "strides": [1, 1, 2, 2], "pads": [1, 1, 1, 1], "ceil_mode": True}
    (y,), _ = run_one_op("MaxPoolV3", [x], attrs)
    assert y.shape == (1, 2, 4, 4)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 2), (1, 2)), constant_values=-np.inf)
    ref = np.array([[[[xp[0, c, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max() for j in range(4)] for i in range(4)]
                     for c in range(2)]])
    np.testing.assert_allclose(y, ref)
    (a,), _ = run_one_op("AvgPoolV2", [x], {**attrs, "ceil_mode": False, "exclusive": True})
    xz = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones((7, 7)), 1)
    ref = np.array([[[[xz[0, c, 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum() / ones[2 * i:2 * i + 3, 2 * j:2 * j + 3].sum()
                       for j in range(4)] for i in range(4)] for c in range(2)]])
    np.testing.assert_allclose(a, ref, rtol=1e-5)


def test_fp16_pools_are_exact():
    """fp16 MaxPool returns exactly the fp16 window maxima (-0, ±inf included); fp16 AvgPool is the fp32 window
    sum / count rounded once to fp16."""
    x = (r(1, 2, 7, 7) * 100).astype(np.float16)
    x.flat[::5] = -0.0
    x.flat[3], x.flat[8] = np.inf, -np.inf
    attrs = {"ksize": [1, 1, 3, 3], "strides": [1, 1, 2, 2], "pads": [1, 1, 1, 1]}
    (y,), _ = run_one_op("MaxPoolV3", [x], attrs)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    ref = np.array([[[[xp[0, c, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max() for j in range(4)] for i in range(4)]
                     for c in range(2)]], np.float16)
    assert y.dtype == np.float16 and np.array_equal(y, ref)
    (a,), _ = run_one_op("AvgPoolV2", [np.nan_to_num(x, posinf=7, neginf=-7)], {**attrs, "exclusive": False})
    xz = np.pad(np.nan_to_num(x, posinf=7, neginf=-7).astype(np.float32), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.array([[[[xz[0, c, 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum() / 9 for j in range(4)] for i in range(4)]
                     for c in range(2)]], np.float32).astype(np.float16)
    assert a.dtype == np.float16
    np.testing.assert_array_equal(a, ref)


def test_global_average_pool_and_bninfer():
    x = r(2, 5, 4, 3)
    (y,), _ = run_one_op("GlobalAveragePool", [x])
    np.testing.assert_allclose(y, x.mean(axis=(2, 3), keepdims=True), rtol=1e-5)
    s, o, m, v = r(5), r(5), r(5), np.abs(r(5)) + 0.5
    (y,), _ = run_one_op("BNInfer", [x, s, o, m, v], {"epsilon": 1e-3})
    ref = (x - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-3) * s[:, None, None] + o[:, None, None]
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_layernorm():
    x, g, b = r(4, 6, 16), r(16), r(16)
    (y, mean, var), _ = run_one_op("LayerNorm", [x, g, b], {"begin_norm_axis": -1, "epsilon": 1e-5})
    mu, va = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(y, (x - mu) / np.sqrt(va + 1e-5) * g + b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)


def test_layernorm_gives_the_onnx_function_bodys_bits():
    """LayerNormalization's function body multiplies the centred row by Reciprocal(Sqrt(var + epsilon)): dividing
    by the square root instead leaves about one output in eight an ulp away, enough to move a DynamicQuantizeLinear
    after it across a rounding boundary."""
    from onnx.reference.ops.op_layer_normalization import _layer_normalization
    x, g, b = r(500, 192) * 3 + 1, r(192), r(192)
    (y, mean, _), _ = run_one_op("LayerNorm", [x, g, b], {"begin_norm_axis": -1, "epsilon": 1e-12})
    want_y, want_mean, _ = _layer_normalization(x, g, b, axis=-1, epsilon=1e-12)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(mean, want_mean)


def test_layout_ops():
    x = r(2, 3, 4)
    (y,), _ = run_one_op("TransposeD", [x], {"perm": [2, 0, 1]})
    np.testing.assert_array_equal(y, x.transpose(2, 0, 1))
    (y,), _ = run_one_op("ConcatD", [x, r(2, 5, 4)], {"concat_dim": 1})
    assert y.shape == (2, 8, 4)
    (y,), node = run_one_op("Flatten", [x], {"axis": 2})
    assert y.shape == (6, 4) and get_op("Flatten").no_task


def test_reshape_infer_zero_and_minus_one():
    from atc_py.ops.shape_layout import reshape_target
    assert reshape_target((2, 3, 4), [0, -1], False) == (2, 12)
    with pytest.raises(OpError, match="cannot reshape"):
        reshape_target((2, 3, 4), [5, -1], False)


def test_infer_rejects_bad_shapes():
    g = Graph("t")
    a = g.add_node("a", "Data", out_descs=[TensorDesc((2, 3), "float32")], attrs={"index": 0}).outputs[0]
    b = g.add_node("b", "Data", out_descs=[TensorDesc((4, 5), "float32")], attrs={"index": 1}).outputs[0]
    node = g.add_node("mm", "MatMulV2", [a, b], [TensorDesc((), "float32")])
    with pytest.raises(OpError, match="inner dimensions"):
        get_op("MatMulV2").infer(node)


def test_every_task_op_has_tiling_kernel_and_cost():
    for name, spec in all_ops().items():
        if spec.no_task or spec.task_kind in ("control", "rts", "hccl"):   # plumbing, control flow, runtime and
            continue                                                         # HCCL tasks (tests/atc_py/ops/test_hccl_ops.py)
        # a generated kernel (AscBackend) derives its TilingData layout from its graph: decode_tiling says how
        assert spec.tiling_struct is not None or type(spec).decode_tiling is not OpSpec.decode_tiling, name
        assert spec.engine in ("AICORE", "AICPU") and spec.core_type in ("AIC", "AIV", "MIX"), name


def test_tiling_spreads_blocks_within_core_count():
    for soc_name in ("Ascend910B1", "Ascend310P3"):
        soc = load_soc(soc_name)
        spec = get_op("Add")
        d = TensorDesc((64, 1024), "float32")
        t = spec.tiling(tiling_context(spec, [d, d], [d], {}, soc))
        assert 1 < t.block_dim <= soc.vector_cores
        mm = get_op("MatMulV2")
        t = mm.tiling(tiling_context(mm, [TensorDesc((1024, 64), "float32"), TensorDesc((64, 64), "float32")],
                                     [TensorDesc((1024, 64), "float32")], {}, soc))
        assert 1 < t.block_dim <= soc.cube_cores


def test_kernel_computes_from_its_tiling_not_its_inputs():
    """A kernel launched with stale tiling (fewer blocks) leaves part of its output unwritten."""
    spec = get_op("Relu")
    d = TensorDesc((4096,), "float32")
    x = np.abs(r(4096)) + 1
    good = spec.tiling(tiling_context(spec, [d], [d], {}, SOC))
    (y,) = launch(spec, good, {}, [d], [x])
    np.testing.assert_array_equal(y, x)
    stale = TilingResult(1, good.tiling_key, good.tiling_data)
    (y,) = launch(spec, stale, {}, [d], [x])
    assert good.block_dim > 1
    block_len = spec.tiling_struct.unpack(good.tiling_data)["block_len"]
    np.testing.assert_array_equal(y[:block_len], x[:block_len])
    assert (y[block_len:] == 0).all()


def test_cost_uses_soc_figures():
    """The cube cycles are the largest block's fractals at the fractal rate (910B1: 24 cube cores, 310P3: 8)."""
    mm = get_op("MatMulV2")
    descs = [TensorDesc((2048, 2048), "float16"), TensorDesc((2048, 2048), "float16")]
    out = [TensorDesc((2048, 2048), "float16")]
    costs = {}
    for name in ("Ascend910B1", "Ascend310P3"):
        soc = load_soc(name)
        ctx = tiling_context(mm, descs, out, {}, soc)
        bd = mm.tiling(ctx).block_dim
        assert bd == soc.cube_cores
        costs[name] = block_cost(mm, ctx, bd, soc)
        assert costs[name].cube == mm.block_work(ctx, bd).fractals >= -(-(128 ** 3) // bd)
    assert costs["Ascend310P3"].cube > costs["Ascend910B1"].cube  # fewer cube cores


@pytest.mark.parametrize("op_type,inputs,attrs", [
    ("Conv2D", [(1, 4, 8, 8), (8, 4, 3, 3)], {"pads": [1, 1, 1, 1]}), ("Add", [(4, 64), (4, 64)], {}),
    ("AddN", [(4, 64), (4, 64), (4, 64)], {})])
def test_a_fused_relu_epilogue_is_computed_and_costed(op_type, inputs, attrs):
    """fused_relu (relu_fusion) clamps the kernel's result at 0 and adds one vector op per output element."""
    xs = [r(*s) for s in inputs]
    (plain,), node = run_one_op(op_type, xs, attrs)
    (fused,), _ = run_one_op(op_type, xs, {**attrs, "fused_relu": True})
    np.testing.assert_array_equal(fused, np.maximum(plain, 0))
    spec = get_op(op_type)
    ctx = tiling_context(spec, [TensorDesc(x.shape, "float32") for x in xs], [v.desc for v in node.outputs], attrs, SOC)
    fused_ctx = tiling_context(spec, ctx.inputs, ctx.outputs, {**attrs, "fused_relu": True}, SOC)
    assert spec.launch_work(fused_ctx).vector_ops == spec.launch_work(ctx).vector_ops + node.outputs[0].desc.numel


@pytest.mark.parametrize("op_type,shapes,attrs", [
    ("MatMulV2", [(64, 96), (96, 80)], {}),             # an M x N grid
    ("MatMulV2", [(1, 4096), (4096, 64)], {}),          # a GEMV: N and K split, a reduction step
    ("Conv2D", [(2, 8, 12, 12), (32, 8, 3, 3)], {"pads": [1, 1, 1, 1]}),   # batch x rows x channels
    ("ReduceSumD", [(64, 4096)], {"axes": [0, 1]}),     # a full reduction over every core
])
def test_grid_tilings_compute_the_whole_op_and_fewer_blocks_leave_tiles_unwritten(op_type, shapes, attrs):
    """The new tilings split over several dimensions (and the reduced axis): with all their blocks the kernel
    computes the op; launched with fewer (a stale SQE) only the tiles those blocks complete are written."""
    spec = get_op(op_type)
    xs = [r(*s) for s in shapes]
    (full,), node = run_one_op(op_type, xs, attrs)
    ctx = tiling_context(spec, [TensorDesc(x.shape, "float32") for x in xs], [v.desc for v in node.outputs], attrs, SOC)
    t = spec.tiling(ctx)
    assert t.block_dim > 1
    ref = {"MatMulV2": lambda: xs[0] @ xs[1], "ReduceSumD": lambda: xs[0].sum(keepdims=False).reshape(full.shape)}
    if op_type in ref:
        np.testing.assert_allclose(full, ref[op_type](), rtol=1e-4, atol=1e-3)
    (part,) = launch(spec, TilingResult(t.block_dim - 1, t.tiling_key, t.tiling_data), attrs,
                     [v.desc for v in node.outputs], xs)
    written = part != 0
    assert written.any() or op_type == "ReduceSumD"      # a split reduction is complete only with every block
    np.testing.assert_array_equal(part[written], full[written])
    assert not written.all()


def test_block_work_is_the_largest_block_not_the_average():
    """25 fractal rows cannot split evenly: the kernel is charged its largest block (two rows), more than the
    average share of the work."""
    spec = get_op("MatMulV2")
    ins = [TensorDesc((400, 16), "float16"), TensorDesc((16, 16), "float16")]
    ctx = tiling_context(spec, ins, [TensorDesc((400, 16), "float16")], {}, SOC)
    bd = spec.tiling(ctx).block_dim
    assert spec.block_work(ctx, bd).fractals == 2 and 2 * bd > spec.work(ctx).fractals
    assert block_cost(spec, ctx, bd, SOC).cube >= 2
