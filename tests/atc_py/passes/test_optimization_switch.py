"""Graph optimisation passes (numbers unchanged, tasks reduced, each switchable with --optimization_switch),
--precision_mode dtypes, --output_type, --input_format, --input_shape / --out_nodes errors."""

from functools import partial

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.om import partitions as pt
from atc_py.om.container import read_om
from atc_py.ops import get_op
from atc_py.proto import ge_ir_pb2
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers.onnx_builders import onnx_model

F = TensorProto.FLOAT
RNG = np.random.default_rng(3)
ORIGIN = {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}


model = partial(onnx_model, opset=17, ir_version=None, init_dtype=np.float32)


def simulate(tmp_path, r, xs):
    p = tmp_path / "m.om"
    p.write_bytes(r.om)
    return Simulation(load_model(str(p))).run(xs)[0]


def compare_switch(tmp_path, m, xs, switch, stat, also_off: str = ""):
    """The pass on vs off (with `also_off` passes off in both builds): it fires, cuts tasks, keeps numbers."""
    on = atc_py.build(m, {**ORIGIN, "optimization_switch": also_off})
    off = atc_py.build(m, {**ORIGIN, "optimization_switch": ";".join(filter(None, [f"{switch}:off", also_off]))})
    assert on.summary[stat] > 0 and off.summary[stat] == 0
    assert on.summary["tasks"] < off.summary["tasks"]
    np.testing.assert_allclose(simulate(tmp_path, on, xs)[0], simulate(tmp_path, off, xs)[0], rtol=1e-5, atol=1e-5)


def test_bn_folds_into_conv(tmp_path):
    c = 4
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "o", "m", "v"], ["y"])]
    inits = [("w", RNG.standard_normal((c, 3, 3, 3))), ("b", RNG.standard_normal(c)),
             ("s", RNG.standard_normal(c)), ("o", RNG.standard_normal(c)), ("m", RNG.standard_normal(c)),
             ("v", RNG.random(c) + 0.5)]
    compare_switch(tmp_path, model(nodes, [("x", [1, 3, 8, 8])], ["y"], inits),
                   [RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)], "bn_conv_fold", "bn_folded_into_conv")


def test_bn_fold_of_big_filters_on_host_threads_equals_inline(monkeypatch):
    """Filters >= const_jobs.ASYNC_MIN_BYTES are scaled on host threads: the same .om bytes as inline."""
    from atc_py.passes import const_jobs
    c = 128
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "o", "m", "v"], ["y"])]
    inits = [("w", RNG.standard_normal((c, 64, 3, 3))), ("s", RNG.standard_normal(c)), ("o", RNG.standard_normal(c)),
             ("m", RNG.standard_normal(c)), ("v", RNG.random(c) + 0.5)]
    m = model(nodes, [("x", [1, 64, 8, 8])], ["y"], inits)
    jobs = []
    orig = const_jobs.ConstJobs.add
    monkeypatch.setattr(const_jobs.ConstJobs, "add", lambda self, *a: jobs.append(a[0]) or orig(self, *a))
    threaded = atc_py.build(m, ORIGIN)
    assert threaded.summary["bn_folded_into_conv"] == 1 and any("bn_filter" in name for name in jobs)
    monkeypatch.setattr(const_jobs, "ASYNC_MIN_BYTES", 1 << 40)
    assert atc_py.build(m, ORIGIN).om == threaded.om


def test_relu_fuses_into_the_conv_before_it(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["c2"]), helper.make_node("Relu", ["c2"], ["y"])]
    m = model(nodes, [("x", [1, 3, 6, 6])], ["y"], [("w", RNG.standard_normal((4, 3, 3, 3))),
                                                     ("w2", RNG.standard_normal((2, 4, 1, 1)))])
    compare_switch(tmp_path, m, [RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)], "relu_fusion",
                   "relu_fused")
    r = atc_py.build(m, ORIGIN)
    assert r.summary["relu_fused"] == 2 and not any(n.op_type == "Relu" for n in r.graph.nodes)
    names = {op.attr["_kernelname"].s.decode() for op in op_descs(r.om).values() if op.type == "Conv2D"}
    assert all(n.startswith("te_conv2d_relu_") for n in names)
    # a conv whose output is also read elsewhere keeps its Relu
    shared = model([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
                    helper.make_node("Add", ["r", "c"], ["y"])], [("x", [1, 3, 4, 4])], ["y"],
                   [("w", RNG.standard_normal((4, 3, 3, 3)))])
    assert atc_py.build(shared, ORIGIN).summary["relu_fused"] == 0


def test_residual_add_and_its_relu_fuse_into_the_conv_before_it(tmp_path):
    """conv -> relu -> conv -> Add(conv, shortcut) -> relu: the second conv takes the shortcut as its residual
    input and the Relu as its epilogue (te_conv2d_add_relu_...), as CANN's conv + elementwise + relu UB fusion;
    a residual of another shape, or a conv whose output is read twice, stays apart."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    m = model(nodes, [("x", [2, 4, 6, 6])], ["y"], [("w", RNG.standard_normal((4, 4, 3, 3))),
                                                   ("w2", RNG.standard_normal((4, 4, 3, 3)))])
    x = [RNG.standard_normal((2, 4, 6, 6)).astype(np.float32)]
    compare_switch(tmp_path, m, x, "conv_add_fusion", "conv_add_fused")
    r = atc_py.build(m, ORIGIN)
    # 5HD from the input's TransData on (passes/formats.py), back to NCHW at the output
    assert [n.op_type for n in r.graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")] == \
        ["TransData", "Conv2D", "Conv2D", "TransData"]
    md = ge_ir_pb2.ModelDef.FromString(read_om(r.om).models[0].get(pt.MODEL_DEF))
    names = sorted(op.attr["_kernelname"].s.decode() for g in md.graph for op in g.op if op.type == "Conv2D")
    assert names[0].startswith("te_conv2d_add_relu_") and names[1].startswith("te_conv2d_relu_")
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x[0]})[0]
    np.testing.assert_allclose(simulate(tmp_path, r, x)[0], ref, rtol=1e-4, atol=1e-4)
    # under force_fp16 as well (the residual is cast like the conv's input)
    np.testing.assert_allclose(simulate(tmp_path, atc_py.build(m, {"ge.socVersion": "Ascend910B1"}), x)[0], ref,
                               rtol=2e-2, atol=5e-2)
    twice = model(nodes[:4] + [helper.make_node("Mul", ["s", "c2"], ["y"])], [("x", [2, 4, 6, 6])], ["y"],
                  [("w", RNG.standard_normal((4, 4, 3, 3))), ("w2", RNG.standard_normal((4, 4, 3, 3)))])
    assert atc_py.build(twice, ORIGIN).summary["conv_add_fused"] == 0
    bcast = model([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Add", ["c", "b"], ["y"])],
                  [("x", [1, 4, 3, 3]), ("b", [1, 4, 1, 1])], ["y"], [("w", RNG.standard_normal((4, 4, 1, 1)))])
    assert atc_py.build(bcast, ORIGIN).summary["conv_add_fused"] == 0


def test_force_fp16_runs_vector_only_graphs_in_fp16(tmp_path):
    """ATC's force_fp16 picks fp16 for every op that supports it, cube ops or not: a Softmax -> Add graph
    computes in fp16 between one Cast in and one Cast out."""
    m = model([helper.make_node("Softmax", ["x"], ["s"], axis=-1), helper.make_node("Add", ["s", "k"], ["y"])],
              [("x", [4, 16])], ["y"], [("k", RNG.standard_normal((4, 16)))])
    r = atc_py.build(m, {"ge.socVersion": "Ascend910B1", "optimization_switch": "autofuse:off"})   # ops apart
    kinds = [n.op_type for n in r.graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")]
    assert kinds == ["Cast", "SoftmaxV2", "Add", "Cast"] and r.summary["fp16_vector_ops"] == 2
    ops = op_descs(r.om)
    assert all(d.dtype == 2 for name in ("SoftmaxV2", "Add") for d in list(ops[name].input_desc) + list(ops[name].output_desc))
    x = [RNG.standard_normal((4, 16)).astype(np.float32)]
    got, ref = simulate(tmp_path, r, x)[0], simulate(tmp_path, atc_py.build(m, ORIGIN), x)[0]
    assert got.dtype == np.float32 and not np.array_equal(got, ref)
    np.testing.assert_allclose(got, ref, rtol=1e-2, atol=1e-2)
    assert atc_py.build(m, ORIGIN).summary["fp16_vector_ops"] == 0


def test_matmul_add_becomes_matmul_with_bias(tmp_path):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])]
    m = model(nodes, [("x", [4, 8])], ["y"], [("w", RNG.standard_normal((8, 5))), ("b", RNG.standard_normal(5))])
    compare_switch(tmp_path, m, [RNG.standard_normal((4, 8)).astype(np.float32)], "matmul_bias", "matmul_bias_fused")


def test_transpose_pairs_cancel(tmp_path):
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["t"], ["u"], perm=[0, 3, 1, 2]), helper.make_node("Relu", ["u"], ["y"])]
    compare_switch(tmp_path, model(nodes, [("x", [1, 2, 3, 4])], ["y"]),
                   [RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)], "transpose_cancel", "transposes_cancelled")


def test_shape_chain_values_are_known_at_import_whatever_the_fold_switch():
    """Value-aware import: Shape of a static tensor and what is computed from it are constants while
    the graph is built, so the model stays static even with the fold pass off."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("ConstantOfShape", ["s"], ["z"]),
             helper.make_node("Add", ["x", "z"], ["y"])]
    m = model(nodes, [("x", [2, 3])], ["y"])
    for options in (ORIGIN, {**ORIGIN, "optimization_switch": "fold:off"}):
        res = atc_py.build(m, options)
        assert res.summary["values_at_import"] == 2 and res.summary["unknown_subgraphs"] == 0
        assert [n.op_type for n in res.graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")] == ["Add"]


def test_identity_and_dce_switches():
    nodes = [helper.make_node("Identity", ["x"], ["i"]), helper.make_node("Relu", ["i"], ["y"]),
             helper.make_node("Neg", ["x"], ["unused"])]
    m = model(nodes, [("x", [2])], ["y"])
    on = atc_py.build(m, ORIGIN)
    assert on.summary["identities_removed"] == 1 and on.summary["dead_removed"] == 1
    off = atc_py.build(m, {**ORIGIN, "optimization_switch": "identity:off;dce:off"})
    assert off.summary["identities_removed"] == 0 and off.summary["dead_removed"] == 0
    assert off.summary["tasks"] > on.summary["tasks"]


@pytest.mark.parametrize("bad", ["fold", "fold:maybe", "nosuchpass:off"])
def test_bad_optimization_switch(bad):
    with pytest.raises(AtcError) as e:
        atc_py.build(model([helper.make_node("Relu", ["x"], ["y"])], [("x", [2])], ["y"]),
                     {**ORIGIN, "optimization_switch": bad})
    assert e.value.code == "E10001"


def op_descs(om: bytes) -> dict:
    md = ge_ir_pb2.ModelDef.FromString(read_om(om).models[0].get(pt.MODEL_DEF))
    return {op.type: op for g in md.graph for op in g.op}


CONV = model([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
             [("x", [1, 2, 5, 5])], ["y"], [("w", RNG.standard_normal((3, 2, 3, 3)))])


@pytest.mark.parametrize("mode,conv_in,conv_out,relu,casts", [
    ("force_fp16", 2, 2, 2, 2), ("allow_fp32_to_fp16", 2, 2, 1, 2), ("allow_mix_precision", 2, 2, 2, 2),
    ("cube_fp16in_fp32out", 2, 1, 1, 1), ("must_keep_origin_dtype", 1, 1, 1, 0), ("force_fp32", 1, 1, 1, 0)])
def test_precision_modes_set_cube_dtypes(tmp_path, mode, conv_in, conv_out, relu, casts):
    """GE DataType proto: 1 = DT_FLOAT, 2 = DT_FLOAT16. Cube inputs fp16 (the weight cast folds into an fp16
    constant), accumulation fp32; vector ops (Relu) run fp16 under force_fp16 (the Cast back moves after
    them), fp32 otherwise. relu_fusion and autofuse are off so that the Relu stays an op of its own."""
    r = atc_py.build(CONV, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": mode,
                            "optimization_switch": "relu_fusion:off;autofuse:off"})
    ops = op_descs(r.om)
    conv = ops["Conv2D"]
    assert conv.input_desc[0].dtype == conv_in and conv.input_desc[1].dtype == conv_in
    assert conv.output_desc[0].dtype == conv_out
    assert ops["Relu"].input_desc[0].dtype == relu and ops["Relu"].output_desc[0].dtype == relu
    assert sum(1 for n in r.graph.nodes if n.op_type == "Cast") == casts
    x = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
    got = simulate(tmp_path, r, [x])[0]
    ref = simulate(tmp_path, atc_py.build(CONV, ORIGIN), [x])[0]
    np.testing.assert_allclose(got, ref, rtol=5e-3, atol=5e-3)
    if conv_in == 2:
        assert not np.array_equal(got, ref)   # fp16 inputs really change the numbers


def test_force_fp16_runs_the_chain_between_cube_ops_in_fp16_with_casts_only_at_the_ends(tmp_path):
    """conv -> BN -> relu -> maxpool -> conv -> add(const): one Cast in (graph input), one out (graph output);
    BN folds into the first conv before dtypes are chosen. allow_fp32_to_fp16 keeps a Cast pair per conv."""
    m = model([helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
               helper.make_node("BatchNormalization", ["c1", "s", "b", "mu", "var"], ["bn"]),
               helper.make_node("Relu", ["bn"], ["r"]),
               helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
               helper.make_node("Conv", ["p", "w2"], ["c2"]),
               helper.make_node("Add", ["c2", "k"], ["y"])],
              [("x", [1, 2, 6, 6])], ["y"],
              [("w1", RNG.standard_normal((4, 2, 3, 3))), ("w2", RNG.standard_normal((3, 4, 1, 1))),
               ("s", RNG.uniform(0.5, 1.5, 4)), ("b", RNG.standard_normal(4)), ("mu", RNG.standard_normal(4)),
               ("var", RNG.uniform(0.5, 1.5, 4)), ("k", RNG.standard_normal((1, 3, 1, 1)))])
    r = atc_py.build(m, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "force_fp16",
                         "optimization_switch": "relu_fusion:off;conv_bias:off;autofuse:off"})   # ops apart
    kinds = [n.op_type for n in r.graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")]
    assert kinds == ["Cast", "TransData", "Conv2D", "Relu", "MaxPoolV3", "Conv2D", "Add", "Cast", "TransData"]
    assert all(d.dtype == 2 for name, op in op_descs(r.om).items() if name in ("Relu", "MaxPoolV3", "Add")
               for d in list(op.input_desc) + list(op.output_desc))
    assert r.summary["bn_folded_into_conv"] == 1
    pairs = atc_py.build(m, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "allow_fp32_to_fp16",
                             "optimization_switch": "relu_fusion:off;conv_bias:off;autofuse:off"})
    assert sum(n.op_type == "Cast" for n in pairs.graph.nodes) == 4
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    got = simulate(tmp_path, r, [x])[0]
    ref = simulate(tmp_path, atc_py.build(m, ORIGIN), [x])[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2)


def test_precision_mode_is_force_fp16_by_default():
    r = atc_py.build(CONV, {"ge.socVersion": "Ascend910B1"})
    assert op_descs(r.om)["Conv2D"].input_desc[0].dtype == 2 and r.summary["fp16_cube_ops"] == 1


def test_bad_precision_mode():
    with pytest.raises(AtcError) as e:
        atc_py.build(CONV, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "fp8"})
    assert e.value.code == "E10001"


@pytest.mark.parametrize("value,dtype", [("FP16", "float16"), ("FP32", "float32"), ("y:0:FP16", "float16")])
def test_output_type(tmp_path, value, dtype):
    r = atc_py.build(CONV, {**ORIGIN, "output_type": value, "ge.outputNodeName": "y" if ":" in value else ""})
    assert simulate(tmp_path, r, [RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)])[0].dtype == dtype


@pytest.mark.parametrize("value,reason", [("INT64", "The value must be FP32, FP16, UINT8, INT8"),
                                          ("y:FP16", 'Valid format "opname:index:dtype"'),
                                          ("other:0:FP16", "must be found in --out_nodes")])
def test_output_type_errors(value, reason):
    with pytest.raises(AtcError) as e:
        atc_py.build(CONV, {**ORIGIN, "output_type": value})
    assert e.value.code == "E10001" and reason in str(e.value)


def test_input_format_recorded_on_inputs():
    r = atc_py.build(CONV, {**ORIGIN, "input_format": "ND"})
    assert r.graph.data_nodes[0].outputs[0].desc.format == "ND"


@pytest.mark.parametrize("shape,code", [("x:1,2,5", "E10001"), ("nosuch:1,2,5,5", "E10016"), ("c:1,2,5,5", "E10017"),
                                        ("x:1,2,5.5,5", "E10002"), ("x:1,2,0,5", "E10011"), ("3:1,2,5,5", "E10016"),
                                        ("1,2,5,5;1,2", "E10002"),
                                        ("1,2,5,5", None), ("x:1,2,7,7", None)])
def test_input_shape_forms_and_errors(shape, code):
    opts = {**ORIGIN, "input_shape": shape}
    if code is None:
        r = atc_py.build(CONV, opts)
        assert r.graph.data_nodes[0].outputs[0].desc.shape[0] == 1
        return
    with pytest.raises(AtcError) as e:
        atc_py.build(CONV, opts)
    assert e.value.code == code


@pytest.mark.parametrize("out,code", [("c:0", None), ("c", None), ("nosuch:0", "E10016"), ("c:3", "E10003")])
def test_out_nodes_forms(out, code):
    m = model([helper.make_node("Conv", ["x", "w"], ["c"], name="conv"), helper.make_node("Relu", ["c"], ["y"])],
              [("x", [1, 2, 5, 5])], ["y"], [("w", RNG.standard_normal((3, 2, 3, 3)))])
    out = out.replace("c:", "conv:") if ":" in out else out
    opts = {**ORIGIN, "ge.outputNodeName": out}
    if code is None:
        r = atc_py.build(m, opts)
        last = r.graph.net_output.inputs[0].producer       # the conv's NC1HWC0 result, back to NCHW
        assert last.op_type == "TransData" and last.inputs[0].producer.op_type == "Conv2D"
        return
    with pytest.raises(AtcError) as e:
        atc_py.build(m, opts)
    assert e.value.code == code


# -- common subexpression elimination -------------------------------------------------------------------
def test_cse_merges_equal_constants_and_nodes(tmp_path):
    """Two equal weight initializers and the two identical MatMul->Relu branches built on them become one."""
    w = RNG.standard_normal((8, 5))
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Relu", ["m1"], ["r1"]),
             helper.make_node("MatMul", ["x", "w2"], ["m2"]), helper.make_node("Relu", ["m2"], ["r2"]),
             helper.make_node("Add", ["r1", "r2"], ["y"])]
    m = model(nodes, [("x", [4, 8])], ["y"], [("w1", w), ("w2", w.copy())])
    on = atc_py.build(m, ORIGIN)
    assert on.summary["cse_merged"] == 3          # w2, then the MatMul and the Relu on it
    compare_switch(tmp_path, m, [RNG.standard_normal((4, 8)).astype(np.float32)], "cse", "cse_merged")


def test_cse_keeps_what_differs_and_graph_outputs():
    from atc_py.frontend.onnx import convert_onnx
    from atc_py.passes.cse import eliminate_common_subexpressions
    w = RNG.standard_normal(6)
    nodes = [helper.make_node("LeakyRelu", ["x"], ["a"], alpha=0.1),
             helper.make_node("LeakyRelu", ["x"], ["b"], alpha=0.2),
             helper.make_node("Mul", ["a", "w32"], ["c"]), helper.make_node("Mul", ["b", "w64"], ["d"]),
             helper.make_node("Add", ["c", "d"], ["y"]),
             helper.make_node("Sigmoid", ["x"], ["out1"]), helper.make_node("Sigmoid", ["x"], ["out2"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 6])],
                          [helper.make_tensor_value_info(n, F, None) for n in ("y", "out1", "out2")],
                          [numpy_helper.from_array(w.astype(np.float32), "w32"),
                           numpy_helper.from_array(w.astype(np.float32).reshape(1, 6), "w64")])   # same bytes,
    # other shape: w32 and w64 stay apart
    graph = convert_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))[0]
    before = sorted(n.name for n in graph.nodes)
    assert eliminate_common_subexpressions(graph) == 0
    assert sorted(n.name for n in graph.nodes) == before


def test_cse_attr_keys_are_exact():
    from atc_py.passes.cse import attr_key
    assert attr_key(0.0) != attr_key(-0.0) and attr_key(1.0) == attr_key(1.0)
    assert attr_key(np.array([1], np.float32)) != attr_key(np.array([1], np.int32))
    assert attr_key({"a": [1, 2]}) == attr_key({"a": [1, 2]}) != attr_key({"a": (1, 2)})


def test_convs_sharing_filter_and_bn_statistics_share_the_scaled_filter():
    c = 4
    stats = [("s", RNG.standard_normal(c)), ("o", RNG.standard_normal(c)), ("m", RNG.standard_normal(c)),
             ("v", RNG.random(c) + 0.5)]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "s", "o", "m", "v"], ["b1"]),
             helper.make_node("Relu", ["x"], ["x2"]),
             helper.make_node("Conv", ["x2", "w"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c2", "s", "o", "m", "v"], ["b2"]),
             helper.make_node("Add", ["b1", "b2"], ["y"])]
    m = model(nodes, [("x", [1, c, 6, 6])], ["y"], [("w", RNG.standard_normal((c, c, 3, 3)))] + stats)
    r = atc_py.build(m, ORIGIN)
    convs = [n for n in r.graph.nodes if n.op_type == "Conv2D"]
    assert r.summary["bn_folded_into_conv"] == 2 and len(convs) == 2
    assert convs[0].inputs[1] is convs[1].inputs[1]


def _big_weight_model():
    return model([helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", [4, 512])], ["y"],
                 [("w", RNG.standard_normal((512, 512)))])


def test_fp16_weight_casts_left_on_threads_give_the_same_om_and_numbers(tmp_path, monkeypatch):
    """force_fp16's weight Cast (512 KB fp16) is computed on a host thread while compiling goes on; the .om is
    the same as with every fold inline, and its numbers are the model's."""
    from atc_py.passes import const_jobs
    m = _big_weight_model()
    threaded = atc_py.build(m, {"ge.socVersion": "Ascend910B1"})
    w = next(n for n in threaded.graph.nodes if n.op_type == "Const" and n.outputs[0].desc.dtype == "float16")
    assert w.outputs[0].threaded
    monkeypatch.setattr(const_jobs, "ASYNC_MIN_BYTES", 1 << 40)
    assert atc_py.build(m, {"ge.socVersion": "Ascend910B1"}).om == threaded.om
    x = RNG.standard_normal((4, 512)).astype(np.float32)
    (y,) = simulate(tmp_path, threaded, [x])
    w16 = numpy_helper.to_array(m.graph.initializer[0]).astype(np.float16).astype(np.float32)
    ref = x.astype(np.float16).astype(np.float32) @ w16
    np.testing.assert_allclose(y, ref, rtol=2e-3, atol=2e-2)


def test_a_failing_weight_cast_is_reported_by_the_build(monkeypatch):
    from atc_py.ops import get_op
    from atc_py.ops.core.base import OpError

    def broken(self, args, inputs):
        raise OpError("no room")
    monkeypatch.setattr(type(get_op("Cast")), "compute", broken)
    # fp32 -> fp16 weight casts are folded by passes/fp16_fold.py (the kernel's numbers, faster): broken too
    monkeypatch.setattr("atc_py.passes.fold.float32_to_float16", lambda x: broken(None, None, [x]))
    monkeypatch.setattr("atc_py.passes.fold.saturate_to_float16", lambda x: broken(None, None, [x]))   # the precision
    #                                                                            mode's casts saturate (fp16_fold.py)
    with pytest.raises(AtcError, match=r"E14001.*with optype Cast is invalid. Reason: constant folding failed: no room"):
        atc_py.build(_big_weight_model(), {"ge.socVersion": "Ascend910B1"})


def test_transposes_sink_through_elementwise_ops_and_cancel(tmp_path):
    """NHWC-style: Transpose -> Add(bias over the last axis) -> Sub(const - y) -> Relu -> inverse Transpose ->
    Relu: the constants are transposed instead and both Transposes go."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("Add", ["t", "b"], ["a"]), helper.make_node("Sub", ["c", "a"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]), helper.make_node("Transpose", ["r"], ["u"], perm=[0, 3, 1, 2]),
             helper.make_node("Sigmoid", ["u"], ["y"])]
    m = model(nodes, [("x", [2, 3, 4, 5])], ["y"],
              [("b", RNG.standard_normal(3)), ("c", RNG.standard_normal((4, 1, 3)))])
    compare_switch(tmp_path, m, [RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)], "transpose_cancel",
                   "transposes_cancelled")
    r = atc_py.build(m, ORIGIN)
    assert r.summary["transposes_cancelled"] == 2 and not any(n.op_type == "TransposeD" for n in r.graph.nodes)


def test_a_transpose_read_twice_stays():
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Relu", ["t"], ["a"]),
             helper.make_node("Sigmoid", ["t"], ["b"]), helper.make_node("Add", ["a", "b"], ["y"])]
    r = atc_py.build(model(nodes, [("x", [3, 4])], ["y"]), ORIGIN)
    assert r.summary["transposes_cancelled"] == 0 and sum(n.op_type == "TransposeD" for n in r.graph.nodes) == 1


@pytest.mark.parametrize("shape,fused", [((1, 4, 1, 1), True), ((4, 1, 1), True), ((1,), True), ((1, 1, 1, 6), False)])
def test_per_channel_add_after_conv_becomes_its_bias(tmp_path, shape, fused):
    nodes = [helper.make_node("Conv", ["x", "w", "b0"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "k"], ["y"])]
    m = model(nodes, [("x", [1, 3, 6, 6])], ["y"], [("w", RNG.standard_normal((4, 3, 3, 3))),
                                                     ("b0", RNG.standard_normal(4)), ("k", RNG.standard_normal(shape))])
    if fused:
        compare_switch(tmp_path, m, [RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)], "conv_bias",
                       "bias_fused_into_conv")
    else:
        assert atc_py.build(m, ORIGIN).summary["bias_fused_into_conv"] == 0


@pytest.mark.parametrize("op", ["Add", "Sum"])
def test_relu_fuses_into_a_residual_add(tmp_path, op):
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["x"], ["b"]),
             helper.make_node(op, ["a", "b"] + (["x"] if op == "Sum" else []), ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    m = model(nodes, [("x", [2, 8])], ["y"])
    # autofuse off: it would put the whole graph (Relu, Sigmoid, Add, Relu) into one kernel either way
    compare_switch(tmp_path, m, [RNG.standard_normal((2, 8)).astype(np.float32)], "relu_fusion", "relu_fused",
                   also_off="autofuse:off")
    r = atc_py.build(m, {**ORIGIN, "optimization_switch": "autofuse:off"})
    assert [n.op_type for n in r.graph.nodes if n.op_type in ("Relu", "Add", "AddN")] == \
        ["Relu", "Add" if op == "Add" else "AddN"]   # the first Relu has no producer to fuse into


def test_a_transpose_does_not_sink_below_a_cast_to_a_dtype_it_cannot_move(monkeypatch):
    """A Transpose -> Cast(double) pair stays as it is when TransposeD has no float64 kernel (taken out of its
    dtypes here: its kernel moves every dtype the library has)."""
    spec = get_op("TransposeD")
    monkeypatch.setattr(type(spec), "dtypes", tuple(d for d in spec.dtypes if d != "float64"))
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("Cast", ["t"], ["c"], to=TensorProto.DOUBLE),
             helper.make_node("Cast", ["c"], ["y"], to=F)]
    r = atc_py.build(model(nodes, [("x", [3, 4])], ["y"]), ORIGIN)
    kinds = [n.op_type for n in r.graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")]
    assert kinds[0] == "TransposeD" and r.summary["transposes_cancelled"] == 0


def test_batched_matmul_add_becomes_batched_matmul_with_bias(tmp_path):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])]
    m = model(nodes, [("x", [2, 4, 8])], ["y"], [("w", RNG.standard_normal((8, 5))), ("b", RNG.standard_normal(5))])
    compare_switch(tmp_path, m, [RNG.standard_normal((2, 4, 8)).astype(np.float32)], "matmul_bias", "matmul_bias_fused")
    assert [n.op_type for n in atc_py.build(m, ORIGIN).graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")] \
        == ["BatchMatMulV2"]


def test_decomposed_batchnorm_folds_into_the_conv(tmp_path):
    """Keras 3 freezes BatchNorm as Conv -> per-channel Mul -> per-channel Add: both join
    the conv's filter and bias under bn_conv_fold, with the unfolded numbers."""
    rng = np.random.default_rng(5)
    inits = [("w", rng.standard_normal((4, 3, 3, 3))), ("s", rng.uniform(0.5, 2, (1, 4, 1, 1))),
             ("t", rng.standard_normal((4, 1, 1)))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Mul", ["c", "s"], ["m"]),
             helper.make_node("Add", ["m", "t"], ["a"]), helper.make_node("Relu", ["a"], ["y"])]
    m = model(nodes, [("x", [1, 3, 6, 6])], ["y"], inits)
    on = atc_py.build(m, ORIGIN)
    assert on.summary["bn_folded_into_conv"] == 1
    assert [n.op_type for n in on.graph.nodes if n.op_type not in ("Data", "Const", "NetOutput", "TransData")] == \
        ["Conv2D"]
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    compare_switch(tmp_path, m, [x], "bn_conv_fold", "bn_folded_into_conv")


def test_dce_off_in_the_default_fp16_build_compiles_and_matches_onnxruntime(tmp_path):
    """With dead-node removal off, the Casts the fp16 rewrite leaves unread stay in the graph; automatic fusion
    leaves such a group unfused (it was E19999: an AscGraph with no Output) and the outputs are the same."""
    from tests.helpers import MODELS
    from tests.helpers.om_files import simulate_om
    src = MODELS / "small_cnn.onnx"
    x = np.random.default_rng(5).standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    got = {}
    for switch in ("", "dce:off"):
        res = atc_py.build(str(src), {"ge.socVersion": "Ascend910B1", "optimization_switch": switch})
        got[switch] = simulate_om(res.om, [x], tmp_path, switch.replace(":", "_") or "default")[0][0]
    assert res.summary["dead_removed"] == 0
    np.testing.assert_array_equal(got["dce:off"], got[""])
    np.testing.assert_allclose(got[""], want, rtol=2e-2, atol=2e-2)
