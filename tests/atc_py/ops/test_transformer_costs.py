"""The transformer kernels' cost rules: softmax and the norms priced as the kernels compute them (fp16 rows in fp32,
the "norm" class), vector work over the padding of device formats, and CANN's fold of a small-M batched Linear
into one 2-D product (BatchMatMulV2ReshapeFusionPass)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.ir.formats import device_shape
from atc_py.ir.graph import TensorDesc
from atc_py.ops import get_op
from atc_py.ops.core.base import TilingContext
from atc_py.ops.core.execute import tiling_context
from atc_py.platform.soc import load_soc
from tests.helpers.om_files import om_ops, simulate_one_input

P3, A310 = load_soc("Ascend310P3"), load_soc("Ascend310")


def _ctx(op_type, shape, dtype="float16", soc=P3, attrs=None, extra_ins=()):
    spec = get_op(op_type)
    x = TensorDesc(shape, dtype)
    outs = [TensorDesc(shape, dtype)] + [TensorDesc(shape[:-1] + (1,), "float32")] * (len(spec.outputs) - 1)
    return spec, TilingContext([x, *extra_ins], outs, dict(attrs or {}), soc, {}, 1.0)


def test_softmax_of_fp16_rows_is_priced_as_tbes_fp32_kernel():
    """softmax_v2.py casts fp16 rows up before vexp where the SoC's vexp takes fp32: max and subtract in fp16, a
    cast up, exp, sum and the reciprocal multiply in fp32, a cast down = 6 fp32 element-ops; Ascend310's vexp is
    fp16 only, so its 5 passes stay fp16. Either way a row reduction of dependent passes (the "norm" class)."""
    n = 12 * 197 * 197
    spec, ctx = _ctx("SoftmaxV2", (12, 197, 197), attrs={"axes": [-1]})
    w = spec.work(ctx)
    assert (w.dtype, w.vector_ops, w.vector_class) == ("float32", 6 * n, "norm")
    w310 = spec.work(_ctx("SoftmaxV2", (12, 197, 197), soc=A310, attrs={"axes": [-1]})[1])
    assert (w310.dtype, w310.vector_ops, w310.vector_class) == ("float16", 5 * n, "norm")
    w32 = spec.work(_ctx("SoftmaxV2", (12, 197, 197), "float32", attrs={"axes": [-1]})[1])
    assert (w32.dtype, w32.vector_ops) == ("float32", 5 * n)
    log = get_op("LogSoftmaxV2").work(_ctx("LogSoftmaxV2", (12, 197, 197), attrs={"axes": [-1]})[1])
    assert (log.dtype, log.vector_ops) == ("float32", 8 * n)          # all six passes in fp32, two casts


def test_the_norms_are_priced_in_the_fp32_their_kernels_and_lowerings_compute():
    """LayerNorm and RmsNorm compute fp16 rows in fp32 (compute(), and autofuse's lowering of the same op): their
    passes at the fp32 rate plus a cast in and out per element, the "norm" class; where _internal_dtype keeps
    fp16 (Ascend310's LayerNorm), fp16 and no casts."""
    shape = (64, 768)
    n = 64 * 768
    g = TensorDesc((768,), "float16")
    spec, ctx = _ctx("LayerNorm", shape, extra_ins=(g, g))
    w = spec.work(ctx)
    assert (w.dtype, w.vector_ops, w.vector_class) == ("float32", 8 * n, "norm")
    w16 = spec.work(_ctx("LayerNorm", shape, attrs={"_internal_dtype": "float16"}, extra_ins=(g, g))[1])
    assert (w16.dtype, w16.vector_ops) == ("float16", 6 * n)
    rms, ctx = _ctx("RmsNorm", shape, extra_ins=(g,))
    w = rms.work(ctx)
    assert (w.dtype, w.vector_ops, w.vector_class) == ("float32", 6 * n, "norm")


def test_vector_work_on_a_padded_device_format_covers_the_padding():
    """A vector kernel on NC1HWC0 walks whole C0 blocks: 24 channels in two blocks of 16 cost 32 channels' vector
    work, as their bytes do; a data-movement op with a move plan counts its device layout itself."""
    logical = (1, 24, 8, 8)
    dev = TensorDesc(device_shape(logical, "NC1HWC0", "NCHW", "float16"), "float16", "NC1HWC0", "NCHW", logical)
    relu = get_op("Relu")
    ctx = tiling_context(relu, [dev], [dev], {}, P3)
    assert ctx.byte_scale == 32 / 24
    plain = relu.work(ctx).vector_ops
    assert relu.launch_work(ctx).vector_ops == int(plain * 32 / 24)
    trans = get_op("TransData")
    nchw = TensorDesc(logical, "float16", "NCHW", "NCHW")
    tctx = tiling_context(trans, [nchw], [dev], {"src_format": "NCHW", "dst_format": "NC1HWC0"}, P3)
    assert trans.launch_work(tctx).vector_ops == trans.work(tctx).vector_ops


def _linear(b, m, k=96, n=48, bias=True, seed=0, residual=False):
    """x [b, m, k] @ w (+ bias) (+ a residual r [b, m, n], a second input)."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32) * 0.1, "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm" if bias else "y"])]
    inits = [w]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b"))
        nodes.append(helper.make_node("Add", ["mm", "b"], ["biased" if residual else "y"]))
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, m, k])]
    if residual:
        nodes.append(helper.make_node("Add", ["biased", "r"], ["y"]))
        ins.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [b, m, n]))
    g = helper.make_graph(nodes, "lin", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, m, n])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), w, inits


def _matmul_x1(om):
    (mm,) = [op for op in om_ops(om) if op.type == "BatchMatMulV2"]
    return tuple(mm.input_desc[0].shape.dim)


def test_a_small_m_batched_linear_becomes_one_2d_product_as_canns_fusion_makes_it(tmp_path):
    """A sequence-first Linear at batch 1 ([197, 1, K] by a weight, then its bias Add): CANN's
    BatchMatMulV2ReshapeFusionPass (B >= 50, M <= 32, an Add of a 1-D operand after it) multiplies [197, K]; on
    FRACTAL_NZ that is 13 row fractals, not 197 batches of one padded to 16. The result is the same numbers."""
    model, w, inits = _linear(197, 1)
    opts = {"ge.socVersion": "Ascend310P3", "ge.exec.precision_mode": "force_fp32"}
    om = atc_py.build(model, opts).om
    assert _matmul_x1(om) == (6, 13, 16, 16)                      # [197, 96] in NZ: K1 6, M1 13
    off = atc_py.build(model, {**opts, "optimization_switch": "batch_matmul_reshape:off"}).om
    assert _matmul_x1(off)[0] == 197                               # one padded batch per row
    x = np.random.default_rng(1).standard_normal((197, 1, 96)).astype(np.float32)
    got, stats = simulate_one_input(om, x, tmp_path)
    want = x @ numpy_helper.to_array(inits[0]) + numpy_helper.to_array(inits[1])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    _, slow = simulate_one_input(off, x, tmp_path, "off")
    assert stats.device_ns < slow.device_ns


def test_the_fold_needs_canns_conditions():
    """Below 50 batches, above 32 rows, or without the bias Add the product keeps its batches; from 4096 batches
    of at most 64 rows it folds without one (the pass's big-batch case)."""
    opts = {"ge.socVersion": "Ascend310P3", "ge.exec.precision_mode": "force_fp32"}
    assert _matmul_x1(atc_py.build(_linear(8, 1)[0], opts).om)[0] == 8
    assert _matmul_x1(atc_py.build(_linear(64, 48)[0], opts).om)[0] == 64
    assert _matmul_x1(atc_py.build(_linear(64, 1, bias=False)[0], opts).om)[0] == 64
    assert len(_matmul_x1(atc_py.build(_linear(4096, 2, k=16, n=16, bias=False)[0], opts).om)) == 4


def test_the_fold_carries_a_residual_add_along(tmp_path):
    """Bias Add then a residual Add of the product's shape (the pass's second scenario): both run on [B*M, N], the
    residual reshaped to it, and the numbers are the graph's."""
    from tests.helpers.om_files import simulate_om
    model, _, inits = _linear(64, 2, residual=True)
    om = atc_py.build(model, {"ge.socVersion": "Ascend310P3", "ge.exec.precision_mode": "force_fp32"}).om
    assert _matmul_x1(om) == (6, 8, 16, 16)
    rng = np.random.default_rng(2)
    x, r = rng.standard_normal((64, 2, 96)).astype(np.float32), rng.standard_normal((64, 2, 48)).astype(np.float32)
    (got, *_), _ = simulate_om(om, [x, r], tmp_path)
    want = x @ numpy_helper.to_array(inits[0]) + numpy_helper.to_array(inits[1]) + r
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
