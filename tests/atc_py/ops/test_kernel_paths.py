"""The faster kernel paths and launch replay: each gives the same bits as the path it replaced, and each
is taken (a test that fails without it). Speed itself is measured in bench/speed_table.py, never here."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.autofuse import ascgraph_kernel
from atc_py.ir.graph import TensorDesc
from atc_py.ops import conv_pool, get_op, matmul
from atc_py.ops.core.execute import run_op
from atc_py.platform import load_soc
from om_run.load.loader import load_model
from om_run.sim.host import Simulation

RNG = np.random.default_rng(18)
SOC = load_soc("Ascend910B1")
FP32 = {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}


def test_matmul_with_one_weight_for_all_batches_is_one_2d_gemm(monkeypatch):
    """(B, S, M, K) @ (K, N): the batch folds into M, the weight is never broadcast into a (B*S, K, N) stack;
    the result is bit-equal to the batched GEMM it replaced."""
    a = RNG.standard_normal((2, 3, 5, 16)).astype(np.float32)
    b = RNG.standard_normal((16, 7)).astype(np.float32)
    ref = np.matmul(np.broadcast_to(a, (2, 3, 5, 16)).reshape(-1, 5, 16),
                    np.broadcast_to(b, (2, 3, 16, 7)).reshape(-1, 16, 7)).reshape(2, 3, 5, 7)
    broadcast = []
    real = np.broadcast_to

    class Np:   # numpy as the kernel sees it, with broadcast_to recorded
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def broadcast_to(x, shape):
            broadcast.append(tuple(shape))
            return real(x, shape)
    monkeypatch.setattr(matmul, "np", Np())
    spec = get_op("MatMulV2")
    out = run_op(spec, [TensorDesc(a.shape, "float32"), TensorDesc(b.shape, "float32")],
                 [TensorDesc((2, 3, 5, 7), "float32")], {}, SOC, [a, b])[0]
    assert not broadcast
    np.testing.assert_array_equal(out, ref)
    # a batched weight still takes the batched GEMM
    b3 = RNG.standard_normal((3, 16, 7)).astype(np.float32)
    out3 = run_op(spec, [TensorDesc(a.shape, "float32"), TensorDesc(b3.shape, "float32")],
                  [TensorDesc((2, 3, 5, 7), "float32")], {}, SOC, [a, b3])[0]
    assert broadcast
    np.testing.assert_array_equal(out3, np.matmul(a, b3))


@pytest.mark.parametrize("shape,w,pads,strides", [((1, 8, 9, 9), (16, 8, 3, 3), (1, 1, 1, 1), (1, 1)),
                                                    ((2, 6, 10, 7), (6, 2, 3, 3), (0, 1, 2, 1), (2, 1)),
                                                    ((1, 4, 8, 8), (4, 1, 3, 3), (1, 1, 1, 1), (1, 1))])
def test_conv_im2col_in_reused_scratch_is_bit_equal(shape, w, pads, strides):
    """Padding and im2col go into per-thread scratch buffers reused by every launch: the same values as the
    fresh-array path, and the second launch uses the first one's memory."""
    x = RNG.standard_normal(shape).astype(np.float32)
    groups = shape[1] // w[1]
    attrs = {"strides": [1, 1, *strides], "pads": list(pads), "groups": groups}
    spec = get_op("Conv2D")
    wt = RNG.standard_normal(w).astype(np.float32)
    descs = [TensorDesc(shape, "float32"), TensorDesc(w, "float32")]
    from atc_py.ir.graph import Node, Value
    node = Node("c", "Conv2D", attrs)
    node.inputs = [Value("x", descs[0], None), Value("w", descs[1], None)]
    out_desc = spec.infer(node)
    got = run_op(spec, descs, out_desc, attrs, SOC, [x, wt])[0]
    t = spec._geom(shape, w, attrs)
    xp = conv_pool.pad_planes(x, t["pt"], t["pb"], t["pl"], t["pr"], dtype=np.float32)
    cols = conv_pool.im2col(xp, t["kh"], t["kw"], t["sh"], t["sw"], t["dh"], t["dw"], t["ho"], t["wo"])
    k, p, og = (shape[1] // groups) * t["kh"] * t["kw"], t["ho"] * t["wo"], w[0] // groups
    ref = np.matmul(wt.reshape(groups, og, k), cols.reshape(shape[0], groups, k, p)) if groups > 1 or shape[0] > 1 \
        else (wt.reshape(og, k) @ cols.reshape(k, p))
    np.testing.assert_array_equal(got.reshape(-1), np.asarray(ref).reshape(-1))
    first = conv_pool.scratch("cols", (4,), np.float32)
    run_op(spec, descs, out_desc, attrs, SOC, [x, wt])
    assert np.shares_memory(first, conv_pool.scratch("cols", (4,), np.float32))


@pytest.mark.parametrize("shape,k,strides,dil", [((1, 5, 9, 11), (3, 3), (1, 1), (1, 1)),
                                                  ((2, 3, 12, 13), (3, 2), (1, 2), (2, 1)),
                                                  ((1, 4, 10, 40), (3, 3), (1, 1), (1, 1)),    # too wide: one copy
                                                  ((1, 4, 10, 10), (3, 3), (2, 2), (1, 1))])   # strided rows: one copy
def test_im2col_row_shift_path_is_taken_for_short_rows_and_bit_equal(shape, k, strides, dil):
    """Short stride-1 output rows take the two-copy im2col (row shifts, then contiguous tap runs); the columns
    are the one-copy im2col's, value for value."""
    xp = RNG.standard_normal(shape).astype(np.float32)
    (kh, kw), (sh, sw), (dh, dw) = k, strides, dil
    ho, wo = (shape[2] - (kh - 1) * dh - 1) // sh + 1, (shape[3] - (kw - 1) * dw - 1) // sw + 1
    conv_pool.scratch("shifted", (1,), np.float32)[...] = np.nan   # a fresh marker: was the shift buffer written?
    got = conv_pool.im2col_scratch(xp, kh, kw, sh, sw, dh, dw, ho, wo)
    np.testing.assert_array_equal(got, conv_pool.im2col(xp, kh, kw, sh, sw, dh, dw, ho, wo))
    shifted = conv_pool.scratch("shifted", (1,), np.float32)
    assert np.isnan(shifted[0]) != (sh == 1 and wo <= conv_pool.ROW_SHIFT_MAX_WO)


def fresh_kernels(monkeypatch):
    """AscBackend kernels (and their launch plans) decoded anew, not taken from an earlier test's cache."""
    monkeypatch.setattr(ascgraph_kernel, "_BY_ID", {})
    monkeypatch.setattr(ascgraph_kernel, "_BY_CONTENT", {})


def elementwise_model(shape=(1, 64, 56, 56)):
    c = shape[1]
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "s"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])], "bnrelu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(RNG.standard_normal((c, 1, 1)).astype(np.float32), "s"),
         numpy_helper.from_array(RNG.standard_normal((c, 1, 1)).astype(np.float32), "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("options", [FP32, {"ge.socVersion": "Ascend910B1"}])
def test_elementwise_ascbackend_runs_its_tiles_as_one_pass(tmp_path, monkeypatch, options):
    """An elementwise fused graph is computed in one pass over all rows (no Python loop per tile) with the
    same bits as the unfused ops (and so as the tile-by-tile interpreter, which test_autofuse holds equal)."""
    m = elementwise_model()
    calls = []
    real_step = ascgraph_kernel._Run.step

    def step(self, n, slot):
        fn = real_step(self, n, slot)

        def counted(v, lo, hi):
            calls.append(n.ir.kind)
            return fn(v, lo, hi)
        return counted
    monkeypatch.setattr(ascgraph_kernel._Run, "step", step)
    fresh_kernels(monkeypatch)
    outs = {}
    x = RNG.standard_normal((1, 64, 56, 56)).astype(np.float32)
    for switch in ("", "autofuse:off"):
        r = atc_py.build(m, {**options, "optimization_switch": switch})
        p = tmp_path / f"m{bool(switch)}.om"
        p.write_bytes(r.om)
        outs[switch], _ = Simulation(load_model(str(p))).run([x])
    np.testing.assert_array_equal(outs[""][0], outs["autofuse:off"][0])
    loads = calls.count("Load")
    assert 0 < loads <= 3   # x, s, b each loaded once, not once per tile


def test_replayed_plans_follow_new_inputs_and_start_from_a_zeroed_feature_map(tmp_path):
    """Device memory and each kernel's plan (input and output views) outlive an execution; a second execution
    with other inputs computes what a fresh simulation does, and the feature map starts zeroed again."""
    r = atc_py.build(elementwise_model((1, 8, 4, 4)), {**FP32, "optimization_switch": "autofuse:off"})
    p = tmp_path / "m.om"
    p.write_bytes(r.om)
    dm = load_model(str(p))
    sim = Simulation(dm)
    x1, x2 = (RNG.standard_normal((1, 8, 4, 4)).astype(np.float32) for _ in range(2))
    sim.run([x1])
    mem = sim.memories[dm.name]
    plans = [c.plan for prog in sim.programs.values() for t in prog.tasks for c in t.calls]
    assert plans and all(pl is not None and pl.mem is mem for pl in plans)
    mem.regions[0][2][:] = 0xAB          # garbage left in the feature map must not reach the next execution
    zeroed = []
    real_reset = mem.reset

    def reset():
        real_reset()
        zeroed.append(not mem.regions[0][2].any())
    mem.reset = reset
    got, _ = sim.run([x2])
    assert zeroed == [True] and sim.memories[dm.name] is mem
    ref, _ = Simulation(load_model(str(p))).run([x2])
    np.testing.assert_array_equal(got[0], ref[0])


def norm_model(shape=(2, 197, 96)):
    """LayerNorm, Softmax and a ReduceMean over the last axis: fused graphs with Reduce nodes."""
    c = shape[-1]
    g = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1),
         helper.make_node("Softmax", ["n"], ["s"], axis=-1),
         helper.make_node("ReduceMean", ["s"], ["m"], axes=[-1], keepdims=1),
         helper.make_node("Sub", ["s", "m"], ["y"])], "norms",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32), "g"),
         numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32), "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("options", [FP32, {"ge.socVersion": "Ascend910B1"}])
def test_reduction_ascbackend_runs_its_tiles_as_one_pass(tmp_path, monkeypatch, options):
    """Fused graphs with Reduce nodes (LayerNorm, Softmax, ReduceMean) run their tiles as one pass over all
    rows, bit-equal to the tile-by-tile loop nest (ONE_PASS off), in fp32 and in the fp16 build."""
    r = atc_py.build(norm_model(), options)
    p = tmp_path / "m.om"
    p.write_bytes(r.om)
    x = RNG.standard_normal((2, 197, 96)).astype(np.float32) * 3
    outs, calls = {}, {}
    real_step = ascgraph_kernel._Run.step
    for one_pass in (True, False):
        seen = calls[one_pass] = []

        def step(self, n, slot, seen=seen):
            fn = real_step(self, n, slot)

            def counted(v, lo, hi):
                seen.append(n.ir.kind)
                return fn(v, lo, hi)
            return counted
        monkeypatch.setattr(ascgraph_kernel._Run, "step", step)
        monkeypatch.setattr(ascgraph_kernel, "ONE_PASS", one_pass)
        fresh_kernels(monkeypatch)
        outs[one_pass], _ = Simulation(load_model(str(p))).run([x])
    assert calls[True].count("Reduce") > 0
    assert len(calls[True]) < len(calls[False])          # the tile loop ran more than once per node before
    np.testing.assert_array_equal(outs[True][0].view(np.uint8), outs[False][0].view(np.uint8))


def test_ascbackend_launch_plans_are_made_once_and_hold_no_launch_state(tmp_path, monkeypatch):
    """A fused kernel's launch plan (gather/scatter specs, steps) is made at its first launch and replayed:
    later executions with other inputs, and two threads launching one plan at once, compute what fresh
    plans do."""
    fresh_kernels(monkeypatch)
    made = []
    real_init = ascgraph_kernel._Run.__init__

    def init(self, *a, **kw):
        made.append(1)
        real_init(self, *a, **kw)
    monkeypatch.setattr(ascgraph_kernel._Run, "__init__", init)
    r = atc_py.build(norm_model((1, 64, 32)), FP32)
    p = tmp_path / "m.om"
    p.write_bytes(r.om)
    sim = Simulation(load_model(str(p)))
    xs = [RNG.standard_normal((1, 64, 32)).astype(np.float32) for _ in range(3)]
    got = [sim.run([xs[0]])[0][0]]
    n_plans = len(made)
    got += [sim.run([x])[0][0] for x in xs[1:]]
    assert n_plans > 0 and len(made) == n_plans    # replayed, not remade
    fresh_kernels(monkeypatch)
    for x, g in zip(xs, got):
        np.testing.assert_array_equal(g, Simulation(load_model(str(p))).run([x])[0][0])
    assert len(made) > n_plans             # the fresh caches made their own plans
    kernels = list(ascgraph_kernel._BY_CONTENT.values())
    k = kernels[0]
    (cache_key, plan), = list(k._runs.items())[:1]
    inputs = [[RNG.standard_normal(s).astype(np.float32) for s in cache_key[3]] for _ in range(8)]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:
        par = list(pool.map(plan, inputs))
    for x, y in zip(inputs, par):
        for a, b in zip(y, plan(x)):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_bninfer_broadcast_path_is_bit_equal(dtype, monkeypatch):
    """BNInfer with every plane covered computes x * k + b by per-channel broadcasting into one result array:
    the bits of the per-plane gather it replaced (still used when fewer blocks run)."""
    from atc_py.ops import channel_norm
    x = RNG.standard_normal((2, 24, 7, 9)).astype(dtype)
    scale, offset, mean = (RNG.standard_normal(24).astype(dtype) for _ in range(3))
    var = np.abs(RNG.standard_normal(24)).astype(dtype)
    descs = [TensorDesc(x.shape, dtype)] + [TensorDesc((24,), dtype)] * 4
    zeros = []
    monkeypatch.setattr(channel_norm, "np", type("Np", (), {"__getattr__": lambda self, n: getattr(np, n),
                                                            "zeros_like": lambda self, a: zeros.append(1) or
                                                            np.zeros_like(a)})())
    out = run_op(get_op("BNInfer"), descs, [TensorDesc(x.shape, dtype)], {"epsilon": 1e-5}, SOC,
                 [x, scale, offset, mean, var])[0]
    assert not zeros                      # the broadcast path, not the per-plane gather
    k = (scale / np.sqrt(var.astype(np.float32) + np.float32(1e-5))).astype(np.float32)
    b = offset.astype(np.float32) - mean.astype(np.float32) * k
    ch = np.arange(48) % 24
    ref = np.zeros((48, 63), dtype)
    ref[:] = x.reshape(48, 63) * k[ch, None] + b[ch, None]
    np.testing.assert_array_equal(out.view(np.uint8), ref.reshape(x.shape).view(np.uint8))


@pytest.mark.parametrize("options", [FP32, {"ge.socVersion": "Ascend910B1"}])
@pytest.mark.parametrize("model,shape", [(elementwise_model, (1, 64, 56, 56)), (norm_model, (2, 197, 96))])
def test_one_pass_keeps_the_parallel_axes_so_per_channel_inputs_stay_broadcast_views(tmp_path, monkeypatch,
                                                                                    options, model, shape):
    """In the one pass a launch's values keep the parallel axes (not flattened to rows): a per-channel input
    is gathered as a broadcast view, never copied out to every row; bit-equal to the tile-by-tile nest."""
    r = atc_py.build(model(shape), options)
    p = tmp_path / "m.om"
    p.write_bytes(r.om)
    x = RNG.standard_normal(shape).astype(np.float32)
    outs, gathered = {}, []
    real_gather = ascgraph_kernel._Run.gather

    def gather(self, spec, arr):
        out = real_gather(self, spec, arr)
        gathered.append((self.nlead, arr.size < out.size and 0 in out.strides))
        return out
    monkeypatch.setattr(ascgraph_kernel._Run, "gather", gather)
    for one_pass in (True, False):
        fresh_kernels(monkeypatch)
        monkeypatch.setattr(ascgraph_kernel, "ONE_PASS", one_pass)
        gathered.clear()
        outs[one_pass], _ = Simulation(load_model(str(p))).run([x])
        if one_pass:
            assert any(n > 1 for n, _ in gathered)
            if model is elementwise_model:
                assert any(view for _, view in gathered)   # the (c, 1, 1) scale and bias: stride-0 views
        else:
            assert all(n == 1 for n, _ in gathered)
    for a, b in zip(outs[True], outs[False]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("ufunc", [np.maximum, np.fmin])
@pytest.mark.parametrize("shape,k,s,dil,dtypes", [((1, 3, 11, 13), (3, 3), (2, 2), (1, 1), ("float32", "float32")),
                                                 ((2, 2, 9, 8), (2, 3), (1, 2), (2, 1), ("float32", "float32")),
                                                 ((1, 4, 10, 10), (3, 2), (3, 1), (1, 2), ("float16", "float32"))])
def test_max_min_pooling_is_separable_and_equal_to_every_window_cell(ufunc, shape, k, s, dil, dtypes):
    """Max/min pooling reduces the column taps of every row, then the row taps: the same values as reducing
    each window's cells (any order gives the same max), and the two-pass path is the one taken."""
    xp = RNG.standard_normal(shape).astype(dtypes[0])
    xp[0, 0, 1, 1] = np.nan
    (kh, kw), (sh, sw), (dh, dw) = k, s, dil
    ho, wo = (shape[2] - (kh - 1) * dh - 1) // sh + 1, (shape[3] - (kw - 1) * dw - 1) // sw + 1
    conv_pool.scratch("pool_rows", (1,), dtypes[1])[...] = 7
    got = conv_pool.reduce_windows(xp, ufunc, np.empty(shape[:2] + (ho, wo), dtypes[1]), kh, kw, sh, sw, dh, dw, ho, wo)
    cols = conv_pool.im2col(xp, kh, kw, sh, sw, dh, dw, ho, wo).astype(dtypes[1])
    ref = ufunc.reduce(cols.reshape(shape[:2] + (kh * kw, ho * wo)), axis=2).reshape(got.shape)
    np.testing.assert_array_equal(got, ref)
    assert conv_pool.scratch("pool_rows", (1,), dtypes[1])[0] != 7      # the row pass wrote its buffer
