"""Automatic fusion end to end: the `autofuse` pass builds AscBackend nodes for the patterns models are made of,
om-run interprets their ImplGraphs, and the numbers equal the unfused graph's (bit for bit in fp32 and fp16
where the order of operations is the same) with fewer tasks and less simulated device time."""
from functools import partial

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.autofuse.fusion import ORIGIN_NAMES
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import MODELS
from tests.helpers.onnx_builders import onnx_model

F = TensorProto.FLOAT
RNG = np.random.default_rng(16)
FP32 = {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}
FP16 = {"ge.socVersion": "Ascend910B1"}            # force_fp16, the default


model = partial(onnx_model, opset=17, ir_version=None, init_dtype=np.float32)


def run(tmp_path, m, options, switch="", feeds=None):
    r = atc_py.build(m, {**options, "optimization_switch": switch})
    p = tmp_path / f"m{abs(hash(switch))}.om"
    p.write_bytes(r.om)
    dm = load_model(str(p))
    if feeds is None:
        feeds = [RNG.standard_normal(io.desc.shape).astype(np.float32) for io in dm.inputs]
    outs, stats = Simulation(dm).run(feeds)
    return r, outs, stats, feeds


def fused_vs_unfused(tmp_path, m, options=FP32, exact=True, also_off="", feeds=None):
    """Build with autofuse on and off; same inputs (random floats unless given); returns (fused build, stats on,
    stats off)."""
    off_switch = ";".join(filter(None, ["autofuse:off", also_off]))
    r_off, ref, s_off, feeds = run(tmp_path, m, options, off_switch, feeds)
    r_on, got, s_on, _ = run(tmp_path, m, options, also_off, feeds)
    for a, b in zip(got, ref):
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert r_on.summary["ascbackend_nodes"] + r_on.summary["fused_ascbackend_nodes"] >= 1
    assert r_off.summary["ascbackend_nodes"] == 0
    assert s_on.tasks < s_off.tasks and s_on.device_ns < s_off.device_ns
    return r_on, s_on, s_off


def kinds(r):
    return [n.op_type for n in r.graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")]


def softmax_model(axis=-1):
    return model([helper.make_node("Div", ["x", "t"], ["s"]), helper.make_node("Softmax", ["s"], ["y"], axis=axis)],
                 [("x", [2, 4, 16, 24])], ["y"], [("t", 3.0)])


@pytest.mark.parametrize("options", [FP32, FP16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_fused_equals_unfused(tmp_path, options, axis):
    r, _, _ = fused_vs_unfused(tmp_path, softmax_model(axis), options)
    (node,) = [n for n in r.graph.nodes if n.op_type == "AscBackend"]
    hint = node.attrs["ascgraph"]
    assert [n.type for n in hint.nodes if n.type in ("Max", "Exp", "Sum", "Div")] == ["Div", "Max", "Exp", "Sum", "Div"]
    assert {"Div_0", "Softmax_1"} <= set(node.attrs[ORIGIN_NAMES])   # (in fp16 also the casts around them)


def layernorm_model():
    d = 48
    return model([helper.make_node("Add", ["x", "r"], ["h"]),
                  helper.make_node("LayerNormalization", ["h", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
                 [("x", [3, 10, d]), ("r", [3, 10, d])], ["y", "h"],
                 [("g", RNG.standard_normal(d)), ("b", RNG.standard_normal(d))])


@pytest.mark.parametrize("options", [FP32, FP16], ids=["fp32", "fp16"])
def test_residual_add_and_layernorm_fuse_into_one_kernel(tmp_path, options):
    r, _, _ = fused_vs_unfused(tmp_path, layernorm_model(), options)
    assert kinds(r) == ["AscBackend"]        # residual Add + LayerNorm, two outputs (h and y)
    assert len(r.graph.node(kinds_names(r)[0]).outputs) == 2


def kinds_names(r):
    return [n.name for n in r.graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")]


def rmsnorm_model():
    d = 64
    return model([helper.make_node("Pow", ["x", "two"], ["sq"]),
                  helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
                  helper.make_node("Add", ["ms", "eps"], ["v"]), helper.make_node("Sqrt", ["v"], ["rms"]),
                  helper.make_node("Div", ["x", "rms"], ["n"]), helper.make_node("Mul", ["n", "g"], ["y"])],
                 [("x", [4, 7, d])], ["y"], [("two", 2.0), ("eps", 1e-6), ("g", RNG.standard_normal(d))], opset=17)


@pytest.mark.parametrize("options", [FP32, FP16], ids=["fp32", "fp16"])
def test_rmsnorm_chain_fuses_bit_equal(tmp_path, options):
    r, _, _ = fused_vs_unfused(tmp_path, rmsnorm_model(), options)
    assert "AscBackend" in kinds(r) and not {"ReduceMeanD", "Sqrt", "RealDiv"} & set(kinds(r))


def gelu_models():
    erf = model([helper.make_node("Div", ["x", "sqrt2"], ["a"]), helper.make_node("Erf", ["a"], ["e"]),
                 helper.make_node("Add", ["e", "one"], ["b"]), helper.make_node("Mul", ["x", "b"], ["c"]),
                 helper.make_node("Mul", ["c", "half"], ["y"])],
                [("x", [8, 96])], ["y"], [("sqrt2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5)])
    tanh = model([helper.make_node("Pow", ["x", "three"], ["p"]), helper.make_node("Mul", ["p", "k"], ["q"]),
                  helper.make_node("Add", ["x", "q"], ["r"]), helper.make_node("Mul", ["r", "s"], ["t"]),
                  helper.make_node("Tanh", ["t"], ["u"]), helper.make_node("Add", ["u", "one"], ["v"]),
                  helper.make_node("Mul", ["x", "half"], ["w"]), helper.make_node("Mul", ["w", "v"], ["y"])],
                 [("x", [8, 96])], ["y"], [("three", 3.0), ("k", 0.044715), ("s", np.sqrt(2 / np.pi)), ("one", 1.0),
                                            ("half", 0.5)])
    op = model([helper.make_node("Gelu", ["x"], ["g"]), helper.make_node("Mul", ["g", "x"], ["y"])],
               [("x", [8, 96])], ["y"], opset=20)
    silu = model([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])],
                 [("x", [8, 96])], ["y"])
    return {"erf": erf, "tanh": tanh, "op": op, "silu": silu}


@pytest.mark.parametrize("options", [FP32, FP16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("name", ["erf", "tanh", "op", "silu"])
def test_gelu_and_silu_chains_fuse_bit_equal(tmp_path, name, options):
    r, _, _ = fused_vs_unfused(tmp_path, gelu_models()[name], options)
    assert [k for k in kinds(r) if k != "Cast"] == ["AscBackend"]


def test_bias_and_activation_after_matmul_and_conv(tmp_path):
    """(A Relu after a bias Add is relu_fusion's: the Add takes it as its epilogue, one op.)"""
    mm = model([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
                helper.make_node("Tanh", ["a"], ["y"])],
               [("x", [2, 8, 16])], ["y"], [("w", RNG.standard_normal((16, 32))), ("b", RNG.standard_normal(32))])
    r, _, _ = fused_vs_unfused(tmp_path, mm, also_off="matmul_bias:off")
    assert kinds(r) == ["BatchMatMulV2", "AscBackend"]       # the cube op keeps its own kernel
    conv = model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                  helper.make_node("Add", ["c", "b"], ["a"]), helper.make_node("Sigmoid", ["a"], ["y"])],
                 [("x", [1, 3, 8, 8])], ["y"], [("w", RNG.standard_normal((6, 3, 3, 3))),
                                                ("b", RNG.standard_normal((1, 6, 1, 1)))])
    r, _, _ = fused_vs_unfused(tmp_path, conv, also_off="conv_bias:off")
    assert kinds(r) == ["TransData", "Conv2D", "AscBackend", "TransData"]   # elementwise: 5HD as the conv's output


def test_a_reduction_over_a_middle_axis_is_within_the_documented_tolerance(tmp_path):
    """ReduceSumD over axis 1 adds sequentially in the unfused kernel; the fused kernel adds each row pairwise
    (reduced axes last): a few ulp apart, not bit-equal."""
    m = model([helper.make_node("Exp", ["x"], ["e"]),
               helper.make_node("ReduceSum", ["e", "ax"], ["s"], keepdims=0), helper.make_node("Sqrt", ["s"], ["y"])],
              [("x", [6, 300, 5])], ["y"], [])
    m.graph.initializer.append(numpy_helper.from_array(np.array([1], np.int64), "ax"))
    fused_vs_unfused(tmp_path, m, exact=False)


def test_small_transformer_fused_equals_unfused_with_fewer_tasks(tmp_path):
    for options, groups in ((FP32, 4), (FP16, 5)):     # fp16: LayerNorm 1 takes the Cast to the MatMul's fp16
        r, s_on, s_off = fused_vs_unfused(tmp_path, str(MODELS / "small_transformer.onnx"), options)
        assert r.summary["ascbackend_nodes"] == groups and s_on.tasks <= s_off.tasks - 7


def test_chains_cross_shared_values_and_broadcasts_but_not_transposes_or_cube_ops():
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Tanh", ["s"], ["t"]),
             helper.make_node("Exp", ["s"], ["e"]), helper.make_node("Add", ["t", "e"], ["a"]),   # s read twice
             helper.make_node("Add", ["a", "big"], ["b"]),                                       # grows [1,8]->[3,8]
             helper.make_node("Transpose", ["b"], ["tr"], perm=[1, 0]), helper.make_node("MatMul", ["tr", "w"], ["m"]),
             helper.make_node("Tanh", ["m"], ["y"])]
    r = atc_py.build(model(nodes, [("x", [1, 8])], ["y"], [("big", RNG.standard_normal((3, 8))),
                                                           ("w", RNG.standard_normal((3, 5)))]), FP32)
    assert kinds(r) == ["AscBackend", "TransposeD", "MatMulV2", "Tanh"]     # a lone op keeps its kernel
    assert r.summary["autofused_ops"] == 5


def test_autofuse_switch_off_keeps_every_op():
    r = atc_py.build(gelu_models()["silu"], {**FP32, "optimization_switch": "autofuse:off"})
    assert kinds(r) == ["Sigmoid", "Mul"] and r.summary["ascbackend_nodes"] == 0


def test_two_groups_joined_by_a_reshape_become_one_fused_asc_backend(tmp_path):
    m = model([helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Add", ["e", "c"], ["a"]),
               helper.make_node("Reshape", ["a", "shape"], ["r"]), helper.make_node("Mul", ["r", "x2"], ["m"]),
               helper.make_node("Tanh", ["m"], ["y"])],
              [("x", [4, 16]), ("x2", [8, 8])], ["y"], [("c", RNG.standard_normal(16))])
    m.graph.initializer.append(numpy_helper.from_array(np.array([8, 8], np.int64), "shape"))
    r, s_on, _ = fused_vs_unfused(tmp_path, m)
    assert kinds(r) == ["FusedAscBackend"] and r.summary["fused_ascbackend_nodes"] == 1 and s_on.tasks == 1
    (node,) = [n for n in r.graph.nodes if n.op_type == "FusedAscBackend"]
    fg = node.attrs["fused_graph"]
    assert len(fg.members) == 2 and fg.members[1].in_shapes[0] == (8, 8)
    assert len(node.attrs[ORIGIN_NAMES]) == 4          # Exp, Add | Mul, Tanh


def test_fused_kernels_run_their_tiling_on_the_host_executor_in_dynamic_models(tmp_path):
    """decoder_step with every op on the host executor (IncreFlashAttention forces a dynamic partition, the
    lower limit puts the rest with it): AscBackend nodes there are tiled per execution for the shapes met."""
    with np.load(MODELS / "decoder_step.inputs.npz") as z:
        feeds = {k: z[k] for k in z.files}
    res = {}
    for switch in ("autofuse:off", ""):
        r = atc_py.build(str(MODELS / "decoder_step.onnx"), {"ge.socVersion": "Ascend910B1",
                         "ge.exec.static_model_ops_lower_limit": "1000", "optimization_switch": switch})
        p = tmp_path / "d.om"
        p.write_bytes(r.om)
        dm = load_model(str(p))
        res[switch] = (r, *Simulation(dm).run([feeds[io.name] for io in dm.inputs]))
    r_on, got, s_on = res[""]
    _, ref, s_off = res["autofuse:off"]
    assert r_on.summary["unknown_subgraphs"] == 1 and r_on.summary["known_subgraphs"] == 0
    assert r_on.summary["ascbackend_nodes"] == 3     # Cast + LayerNorm, residual Add + LayerNorm, Softmax + Cast
    np.testing.assert_array_equal(got[0], ref[0])
    assert s_on.host_ns < s_off.host_ns and s_on.tasks < s_off.tasks


def test_mode6_counts_the_fused_nodes_and_the_ops_they_replace(atc, tmp_path):
    out = tmp_path / "st"
    code, stdout, _ = atc("--model", str(MODELS / "small_transformer.onnx"), "--framework=5", f"--output={out}",
                          "--soc_version=Ascend910B1")
    assert code == 0 and "autofuse: 14 ops into 5 AscBackend node(s), 0 FusedAscBackend" in stdout
    code, stdout, _ = atc("--mode=6", f"--om={out}.om")
    assert code == 0 and "autofuse : AscBackend[5], original ops[14]" in stdout


def test_a_model_with_a_dynamic_dim_fuses_and_runs_every_shape(tmp_path):
    """--input_shape x:-1,8,32: the fused nodes sit in the dynamic subgraph with a size variable for the
    unknown dim; the host executor tiles them for each shape it meets, with the unfused graph's bits."""
    d = 32
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1),
             helper.make_node("MatMul", ["ln", "w"], ["m"]), helper.make_node("Add", ["m", "bias"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Mul", ["a", "s"], ["y"])]
    m = model(nodes, [("x", ["N", 8, d])], ["y"],
              [("g", RNG.standard_normal(d)), ("b", RNG.standard_normal(d)), ("w", RNG.standard_normal((d, d))),
               ("bias", RNG.standard_normal(d))])
    sims = {}
    for switch in ("autofuse:off", ""):
        r = atc_py.build(m, {**FP16, "input_shape": "x:-1,8,32", "optimization_switch": switch})
        p = tmp_path / f"d{len(sims)}.om"
        p.write_bytes(r.om)
        sims[switch] = (r, Simulation(load_model(str(p))))
    assert sims[""][0].summary["ascbackend_nodes"] == 2 and sims[""][0].summary["unknown_subgraphs"] == 1
    for n in (1, 3, 17):
        x = RNG.standard_normal((n, 8, d)).astype(np.float32)
        (got,), s_on = sims[""][1].run([x])
        (ref,), s_off = sims["autofuse:off"][1].run([x])
        assert got.shape == (n, 8, d) and s_on.tasks < s_off.tasks
        np.testing.assert_array_equal(got, ref)


def test_an_op_aligning_unknown_dims_of_different_tensors_keeps_its_own_kernel(tmp_path):
    """Two -1 dims an Add aligns from two different inputs may differ at run time (one of them 1: numpy
    broadcasts it, as a causal mask of [s, 1] and [1, t] does), which one size variable cannot express: the Add
    stays unfused and a broadcasting run gives numpy's result. Dims of one root (Tanh(a) against a) still fuse."""
    m = model([helper.make_node("Add", ["x", "y"], ["a"]), helper.make_node("Tanh", ["a"], ["t"]),
               helper.make_node("Mul", ["a", "t"], ["z"])],
              [("x", ["N", 8]), ("y", ["M", 8])], ["z"])
    r = atc_py.build(m, {**FP32, "input_shape": "x:-1,8;y:-1,8"})
    assert r.summary["ascbackend_nodes"] == 1 and r.summary["autofused_ops"] == 2   # Tanh + Mul, not the Add
    p = tmp_path / "m.om"
    p.write_bytes(r.om)
    sim = Simulation(load_model(str(p)))
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    for y in (x, x[:1]):
        (z,), _ = sim.run([x, y])
        a = x + y
        np.testing.assert_allclose(z, a * np.tanh(a), rtol=1e-6)


def test_groups_of_two_iteration_spaces_joined_directly_become_one_fused_asc_backend(tmp_path):
    """A column reduction then an op over another space ([4, 8] -> [1, 8] -> added to [8, 8]): no one loop
    nest holds both groups, one kernel runs the two AscGraphs back to back."""
    m = model([helper.make_node("Exp", ["x"], ["e"]),
               helper.make_node("ReduceSum", ["e", "ax"], ["s"], keepdims=1), helper.make_node("Sqrt", ["s"], ["r"]),
               helper.make_node("Add", ["r", "x2"], ["a"]), helper.make_node("Tanh", ["a"], ["y"])],
              [("x", [4, 8]), ("x2", [8, 8])], ["y"])
    m.graph.initializer.append(numpy_helper.from_array(np.array([0], np.int64), "ax"))
    r, s_on, _ = fused_vs_unfused(tmp_path, m)
    assert kinds(r) == ["FusedAscBackend"] and s_on.tasks == 1


def test_ge_ub_elementwise_fusion_switch_turns_autofuse_off(tmp_path):
    """--fusion_switch_file's UBFusion TbeElemwiseFusion (GE's elementwise UB fusion) maps onto autofuse."""
    f = tmp_path / "fusion.json"
    f.write_text('{"Switch": {"UBFusion": {"TbeElemwiseFusion": "off"}}}')
    r = atc_py.build(gelu_models()["silu"], {**FP32, "fusion_switch_file": str(f)})
    assert kinds(r) == ["Sigmoid", "Mul"] and r.summary["ascbackend_nodes"] == 0


@pytest.mark.parametrize("options", [FP32, FP16], ids=["fp32", "fp16"])
def test_rmsnorm_op_and_its_residual_add_fuse_bit_equal(tmp_path, options):
    """ONNX RMSNormalization (GE RmsNorm) lowers to the AscIR its kernel computes; with the residual Add
    before it, one AscBackend node."""
    d = 64
    m = model([helper.make_node("Add", ["x", "r"], ["h"]),
               helper.make_node("RMSNormalization", ["h", "g"], ["y"], axis=-1, epsilon=1e-6)],
              [("x", [3, 5, d]), ("r", [3, 5, d])], ["y"], [("g", RNG.standard_normal(d))], opset=23)
    r, _, _ = fused_vs_unfused(tmp_path, m, options)
    assert [k for k in kinds(r) if k != "Cast"] == ["AscBackend"]


def test_rotary_style_trig_chain_fuses_bit_equal(tmp_path):
    """Sin / Cos of positions times inverse frequencies, as rotary embeddings build them, then a product."""
    m = model([helper.make_node("Mul", ["p", "f"], ["a"]), helper.make_node("Sin", ["a"], ["s"]),
               helper.make_node("Cos", ["a"], ["c"]), helper.make_node("Mul", ["x", "c"], ["xc"]),
               helper.make_node("Mul", ["x", "s"], ["xs"]), helper.make_node("Add", ["xc", "xs"], ["y"])],
              [("p", [16, 1]), ("x", [16, 32])], ["y"], [("f", RNG.standard_normal((1, 32)))])
    r, _, _ = fused_vs_unfused(tmp_path, m)
    assert kinds(r) == ["AscBackend"]


def test_control_flow_bodies_fuse_too(tmp_path):
    """An If whose branches are elementwise chains: each body gets its AscBackend, both branches run with the
    unfused bits."""
    def branch(name, op):
        return helper.make_graph([helper.make_node("Sigmoid", ["x"], [f"{name}_s"]),
                                  helper.make_node(op, ["x", f"{name}_s"], [f"{name}_y"])],
                                 name, [], [helper.make_tensor_value_info(f"{name}_y", F, [4, 8])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["t"], keepdims=0), helper.make_node("Greater", ["t", "z"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=branch("a", "Mul"), else_branch=branch("b", "Add"))]
    m = model(nodes, [("x", [4, 8])], ["y"], [("z", 0.0)])
    sims = {}
    for switch in ("autofuse:off", ""):
        r = atc_py.build(m, {**FP32, "optimization_switch": switch})
        p = tmp_path / f"cf{len(sims)}.om"
        p.write_bytes(r.om)
        sims[switch] = (r, Simulation(load_model(str(p))))
    assert sims[""][0].summary["ascbackend_nodes"] >= 2 and sims[""][0].summary["tasks"] < \
        sims["autofuse:off"][0].summary["tasks"]
    for sign in (1.0, -1.0):
        x = (np.abs(RNG.standard_normal((4, 8))) * sign).astype(np.float32)
        np.testing.assert_array_equal(sims[""][1].run([x])[0][0], sims["autofuse:off"][1].run([x])[0][0])


def test_a_dynamically_quantized_linear_and_its_layernorm_fuse_to_the_onnx_reference(tmp_path):
    """MatMulInteger's int32 sums, their scale, bias, the residual Add and the LayerNorm after a Reshape: one
    FusedAscBackend reading the int32 tensor, whose every output has onnx's reference bits in an fp32 build — the
    LayerNorm's too (its function body multiplies by the reciprocal standard deviation), so the
    DynamicQuantizeLinear after it rounds every element as the reference does."""
    from onnx.reference import ReferenceEvaluator

    from tests.helpers.quantized_graphs import dynamic_linear_residual_layernorm
    m, feeds = dynamic_linear_residual_layernorm(np.random.default_rng(5))
    want = ReferenceEvaluator(m).run(None, feeds)
    r, got, _, _ = run(tmp_path, m, {**FP32, "ge.exec.precision_mode": "force_fp32"}, feeds=list(feeds.values()))
    fused = [n for n in r.graph.nodes if n.op_type == "FusedAscBackend"]
    assert len(fused) == 1 and "int32" in {v.desc.dtype for v in fused[0].inputs}
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def _int_operand_models():
    """Chains whose operands are integers, as quantized graphs hold them: int32 sums plus an int32 bias then
    scaled (values past 2^24, where the float conversion rounds); int8 values scaled then Relu; uint8 values
    centred on a zero point in int32, squared and summed; int32 divided and clamped."""
    i32, i8, u8 = TensorProto.INT32, TensorProto.INT8, TensorProto.UINT8
    node = helper.make_node
    return {
        "int32_bias_then_scale": (
            [node("Add", ["x", "bias"], ["a"]), node("Cast", ["a"], ["f"], to=F), node("Mul", ["f", "s"], ["y"])],
            [("x", i32, [16, 48])], {"bias": np.arange(-24, 24, dtype=np.int32), "s": np.float32(3.1e-7)},
            RNG.integers(-2 ** 28, 2 ** 28, (16, 48)).astype(np.int32)),
        "int8_scale_relu": (
            [node("Cast", ["x"], ["f"], to=F), node("Mul", ["f", "s"], ["m"]), node("Relu", ["m"], ["y"])],
            [("x", i8, [4, 8, 48])], {"s": np.float32(0.0123)}, RNG.integers(-128, 128, (4, 8, 48)).astype(np.int8)),
        "uint8_centred_sum": (
            [node("Cast", ["x"], ["c"], to=i32), node("Sub", ["c", "zp"], ["d"]), node("Mul", ["d", "d"], ["d2"]),
             node("ReduceSum", ["d2", "ax"], ["r"], keepdims=1), node("Cast", ["r"], ["f"], to=F),
             node("Sqrt", ["f"], ["y"])],
            [("x", u8, [4, 8, 48])], {"zp": np.int32(128), "ax": np.array([-1])},
            RNG.integers(0, 256, (4, 8, 48)).astype(np.uint8)),
        "int32_div_clamp": (
            [node("Div", ["x", "k"], ["q"]), node("Max", ["q", "lo"], ["c"]), node("Cast", ["c"], ["y"], to=F)],
            [("x", i32, [16, 48])], {"k": np.int32(7), "lo": np.int32(-1000)},
            RNG.integers(-2 ** 28, 2 ** 28, (16, 48)).astype(np.int32)),
    }


@pytest.mark.parametrize("name", sorted(_int_operand_models()))
def test_integer_operands_fuse_bit_equal(tmp_path, name):
    nodes, inputs, consts, x = _int_operand_models()[name]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()]
    m = onnx_model(nodes, inputs, [("y", F, None)], inits, opset=17, ir_version=None)
    fused_vs_unfused(tmp_path, m, {**FP32, "ge.exec.precision_mode": "force_fp32"}, feeds=[x])


def test_shape_roots_along_a_long_chain_are_walked_once():
    """a_k = Relu(a_{k-1}), b_k = Add(a_k, x), every dim unknown: each Add asks for its inputs' shape roots;
    walking a_k's chain up for each k took minutes at 8,000 ops (a 3 KB TensorFlow library inlined into such a
    chain). The roots found along the way are remembered, and the answers are the same."""
    import time

    from atc_py.autofuse.fusion import fusable
    from atc_py.ir.graph import Graph, TensorDesc
    g = Graph("chain")
    desc = TensorDesc((-1, 8), "float32")
    x = g.add_node("x", "Data", out_descs=[desc], attrs={"index": 0}).outputs[0]
    a = g.add_node("a", "Data", out_descs=[desc], attrs={"index": 1}).outputs[0]
    for k in range(6000):
        a = g.add_node(f"relu{k}", "Relu", [a], [desc]).outputs[0]
        g.add_node(f"add{k}", "Add", [a, x], [desc])
    roots: dict = {}
    t0 = time.perf_counter()
    verdicts = [fusable(n, roots) for n in g.nodes]
    assert time.perf_counter() - t0 < 3
    assert verdicts[-60:] == [fusable(n) for n in g.nodes[-60:]]
