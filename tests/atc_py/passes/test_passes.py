"""Graph passes: folding (with the kernels), identity and dead-node removal, memory plan."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from atc_py.frontend.onnx import convert_onnx
from atc_py.ops.core.infer import infer_graph
from atc_py.passes.fold import fold_constants
from atc_py.passes.memory import MEM_ALIGN, WEIGHTS_START_OFFSET, plan_memory
from atc_py.passes.prune import remove_dead_nodes, remove_identities
from atc_py.platform import load_soc

SOC = load_soc("Ascend910B1")


def _graph(nodes, inits, out_shape=(2, 3), x_shape=(2, 3)):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))], inits)
    return convert_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))[0]


def test_constant_subgraph_is_folded_with_the_kernels():
    """Weight-sized constants (above value_fold.VALUE_BYTES, which import computes itself) fold in the pass."""
    c1 = numpy_helper.from_array(np.full((200, 100), 2.0, np.float32), "c1")
    c2 = numpy_helper.from_array(np.full((200, 100), 3.0, np.float32), "c2")
    g = _graph([helper.make_node("Mul", ["c1", "c2"], ["k"], name="const_mul"),
                helper.make_node("Add", ["x", "k"], ["y"], name="add")], [c1, c2], (200, 100), (200, 100))
    assert fold_constants(g, SOC) == 1
    types = [n.op_type for n in g.nodes]
    assert "Mul" not in types and types.count("Add") == 1
    k = g.node("add").inputs[1]
    assert k.is_const and np.all(k.data == 6.0)


def _big_fold_graph():
    """ConstantOfShape -> Mul -> Cast chains (each 1 MB) feeding an Add: the weight-preparation shape."""
    shape = numpy_helper.from_array(np.array([512, 512], np.int64), "shape")
    two = numpy_helper.from_array(np.array([2.0], np.float32), "two")
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["fill"], name="fill",
                              value=numpy_helper.from_array(np.array([1.5], np.float32))),
             helper.make_node("Mul", ["fill", "two"], ["w"], name="scale"),
             helper.make_node("Cast", ["w"], ["w16"], name="to_fp16", to=TensorProto.FLOAT16),
             helper.make_node("Cast", ["w16"], ["w32"], name="back", to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "w32"], ["y"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [512, 512])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [512, 512])], [shape, two])
    return convert_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))[0]


def test_big_folds_run_on_host_threads_with_the_same_result(monkeypatch):
    from atc_py.ir.graph import Graph
    from atc_py.passes import const_jobs
    made = []
    orig = Graph.add_pending_const
    monkeypatch.setattr(Graph, "add_pending_const", lambda self, *a: made.append(a[0]) or orig(self, *a))
    g = _big_fold_graph()
    assert fold_constants(g, SOC) == 4
    k = g.node("add").inputs[1]
    assert len(made) == 4 and k.is_const and k._pending is None          # waited for before the pass returned
    np.testing.assert_array_equal(k.data, np.full((512, 512), 3.0, np.float32))
    monkeypatch.setattr(const_jobs, "ASYNC_MIN_BYTES", 1 << 40)          # all inline: same names, same values
    inline = _big_fold_graph()
    fold_constants(inline, SOC)
    assert [n.name for n in inline.nodes] == [n.name for n in g.nodes] and len(made) == 4
    np.testing.assert_array_equal(inline.node("add").inputs[1].data, k.data)


def test_independent_threaded_folds_keep_their_own_values():
    fills = [helper.make_node("ConstantOfShape", ["shape"], [f"f{i}"], name=f"fill{i}",
                              value=numpy_helper.from_array(np.array([float(i)], np.float32))) for i in range(6)]
    adds = [helper.make_node("Add", ["x" if i == 0 else f"s{i - 1}", f"f{i}"], [f"s{i}" if i < 5 else "y"],
                             name=f"add{i}") for i in range(6)]
    g = helper.make_graph(fills + adds, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [512, 512])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [512, 512])],
                          [numpy_helper.from_array(np.array([512, 512], np.int64), "shape")])
    graph = convert_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))[0]
    assert fold_constants(graph, SOC) == 6
    for i in range(6):
        np.testing.assert_array_equal(graph.node(f"add{i}").inputs[1].data, np.full((512, 512), float(i)))


def test_a_failing_threaded_fold_names_its_node(monkeypatch):
    import pytest

    from atc_py.common.errors import AtcError
    from atc_py.ops import get_op
    from atc_py.ops.core.base import OpError

    def broken(self, args, inputs):
        raise OpError("kernel refused")
    monkeypatch.setattr(type(get_op("Mul")), "compute", broken)
    with pytest.raises(AtcError, match=r"E14001.*Op scale with optype Mul is invalid. Reason: constant folding failed: kernel refused"):
        fold_constants(_big_fold_graph(), SOC)


def test_identity_removed_and_dead_nodes_dropped():
    g = _graph([helper.make_node("Identity", ["x"], ["i"]), helper.make_node("Relu", ["i"], ["y"]),
                helper.make_node("Sigmoid", ["x"], ["unused"], name="dead")], [])
    assert remove_identities(g) == 1
    assert remove_dead_nodes(g) == 1
    assert [n.op_type for n in g.nodes] == ["Data", "Relu", "NetOutput"]


def test_identity_between_input_and_output_is_kept():
    g = _graph([helper.make_node("Identity", ["x"], ["y"])], [])
    assert remove_identities(g) == 0


def test_memory_plan_aligned_disjoint_and_views_alias():
    shape = numpy_helper.from_array(np.array([3, 2], np.int64), "s")
    g = _graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "s"], ["v"]),
                helper.make_node("Sigmoid", ["v"], ["y"])], [shape], out_shape=(3, 2))
    infer_graph(g)
    plan = plan_memory(g, {"Sigmoid_2": [100]})
    relu = g.node("Relu_0").outputs[0]
    view = g.node("Reshape_1").outputs[0]
    assert plan.fm_offset[id(view)] == plan.fm_offset[id(relu)]
    ranges = sorted((plan.fm_offset[id(v)], v.desc.nbytes) for n in g.nodes for v in n.outputs
                    if id(v) in plan.fm_offset and n.op_type != "Reshape")
    for (o1, s1), (o2, _) in zip(ranges, ranges[1:]):
        assert o1 % MEM_ALIGN == 0 and o1 + s1 <= o2
    assert plan.workspace["Sigmoid_2"][0][0] % MEM_ALIGN == 0
    assert plan.memory_size % MEM_ALIGN == 0
    assert not plan.weights or all(o >= WEIGHTS_START_OFFSET for o in plan.weight_offset.values())
