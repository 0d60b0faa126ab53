"""What the graph passes do with collectives (not pure functions of their inputs: the group's ranks all run them):
no folding of a constant's all-reduce, no merging of two alike, no removal of an HcomSend (no output) or an unread
collective, no precision cast into one, the HCCL engine in the build summary, and a stream of their own joined to the
compute by events (one stream under --enable_single_stream)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.om import partitions as pt
from atc_py.om import task_types as tt
from atc_py.om.container import read_om
from atc_py.proto import task_pb2
from tests.helpers.hccl_models import hcom_graph_model, hcom_model, hcom_node
from tests.helpers.om_files import om_ops, simulate_om

OPTS = {"ge.socVersion": "Ascend910B1", "om_name": "m", "ge.exec.precision_mode": "must_keep_origin_dtype",
        "optimization_switch": "autofuse:off"}


def _x(shape=(4, 8)):
    return helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))


def _y():
    return helper.make_tensor_value_info("y", TensorProto.FLOAT, None)


def _types(result) -> list[str]:
    return [n.op_type for n in result.graph.nodes]


def _tasks(om: bytes):
    return task_pb2.ModelTaskDef.FromString(read_om(om).models[0].get(pt.TASK_INFO)).task


def test_an_all_reduce_of_a_constant_is_not_folded():
    c = numpy_helper.from_array(np.arange(32, dtype=np.float32).reshape(4, 8), "c")
    nodes = [hcom_node("HcomAllReduce", ["c"], ["a"], reduction="sum"), helper.make_node("Add", ["x", "a"], ["y"])]
    model = hcom_graph_model(nodes, [_x()], [_y()])
    model.graph.initializer.append(c)
    r = atc_py.build(model, OPTS)
    assert "HcomAllReduce" in _types(r)
    assert r.summary["tasks_by_type"].get("HCCL") == 1


def test_two_alike_collectives_stay_two():
    nodes = [hcom_node("HcomAllReduce", ["x"], ["a"], name="a1", reduction="sum"),
             hcom_node("HcomAllReduce", ["x"], ["b"], name="a2", reduction="sum"),
             helper.make_node("Add", ["a", "b"], ["y"])]
    r = atc_py.build(hcom_graph_model(nodes, [_x()], [_y()]), OPTS)
    assert _types(r).count("HcomAllReduce") == 2


def test_a_send_and_an_unread_collective_are_kept():
    r = atc_py.build(hcom_model("HcomSend", (4, 8), sr_tag=3, dest_rank=1), OPTS)
    assert "HcomSend" in _types(r)
    nodes = [hcom_node("HcomAllReduce", ["x"], ["unused"], reduction="max"), helper.make_node("Relu", ["x"], ["y"])]
    r = atc_py.build(hcom_graph_model(nodes, [_x()], [_y()]), OPTS)
    assert "HcomAllReduce" in _types(r)
    assert r.summary["ops_by_engine"]["HCCL"] == 1 and r.summary["ops"] == 2


def test_force_fp16_leaves_a_collective_in_its_dtype():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), hcom_node("HcomAllReduce", ["r"], ["a"], reduction="sum"),
             helper.make_node("Relu", ["a"], ["y"])]
    r = atc_py.build(hcom_graph_model(nodes, [_x()], [_y()]), {**OPTS, "ge.exec.precision_mode": "force_fp16"})
    ar = next(n for n in r.graph.nodes if n.op_type == "HcomAllReduce")
    assert ar.inputs[0].desc.dtype == ar.outputs[0].desc.dtype == "float32"
    assert "_precision_mode" not in ar.attrs
    relu = next(n for n in r.graph.nodes if n.op_type == "Relu")
    assert relu.inputs[0].desc.dtype == "float16"      # the kernels around it did move to fp16


def _branchy():
    """x -> Relu -> AllReduce -> Relu -> Add <- Abs <- x: compute beside the collective."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), hcom_node("HcomAllReduce", ["r"], ["a"], reduction="sum"),
             helper.make_node("Relu", ["a"], ["c"]), helper.make_node("Abs", ["x"], ["b"]),
             helper.make_node("Add", ["c", "b"], ["y"])]
    return hcom_graph_model(nodes, [_x()], [_y()])


def test_collectives_run_on_a_stream_of_their_own(tmp_path):
    r = atc_py.build(_branchy(), OPTS)
    ops = {op.id: op for op in om_ops(r.om)}
    tasks = list(_tasks(r.om))
    hccl = [t for t in tasks if t.type == tt.HCCL]
    assert len(hccl) == 1
    s = hccl[0].stream_id
    others = {ops[t.kernel_with_handle.context.op_index].type: t.stream_id for t in tasks
              if t.HasField("kernel_with_handle")}
    assert s not in others.values(), others            # no kernel continues on the collective's stream
    on_its_stream = [t.type for t in tasks if t.stream_id == s]
    assert on_its_stream == [tt.EVENT_WAIT, tt.HCCL, tt.EVENT_RECORD]   # joined to the compute by events
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)
    outs, stats = simulate_om(r.om, [x], tmp_path)
    assert stats.hazards == []
    np.testing.assert_allclose(outs[0], np.maximum(x, 0) + np.abs(x), rtol=1e-6)


def test_one_stream_holds_the_collectives_too():
    r = atc_py.build(_branchy(), {**OPTS, "ge.enableSingleStream": "true"})
    assert {t.stream_id for t in _tasks(r.om)} == {0}
    assert r.summary["tasks_by_type"]["HCCL"] == 1
