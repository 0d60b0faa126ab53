"""Models that ask for far more work than their file holds (tools/fuzz/work_models.py): a tree of If branches
repeating one graph, TensorFlow functions naming each other twice, a Loop over a sequence unrolled into tens of
thousands of nodes. atc-py counts the work before doing it and refuses it in moments with one error (E10041 for
the model, E14001 naming the loop), and builds what fits."""
from __future__ import annotations

import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper

from atc_py.common.errors import AtcError
from atc_py.frontend import import_budget
from atc_py.frontend.onnx import work as onnx_work
from atc_py.frontend.tensorflow.work import library_work
from atc_py.proto import tf_graph_pb2 as tf
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import compile_om
from tools.fuzz.work_models import onnx_if_tree, onnx_unrolled_loop, tf_function_tree

TF = {"ge.frameworkType": "3"}


def _refused(path, code: str, *words: str, seconds: float = 3.0, **options) -> str:
    t0 = time.perf_counter()
    with pytest.raises(AtcError) as exc:
        compile_om(path, **options)
    took = time.perf_counter() - t0
    msg = str(exc.value)
    assert exc.value.code == code and all(w in msg for w in words), msg
    assert took < seconds, f"refused after {took:.1f} s"
    return msg


def test_an_if_tree_12_deep_is_refused_before_converting(tmp_path):
    """8,190 branches in a 0.5 MB file: counted (stopping at the limit), refused at once."""
    path = tmp_path / "tree.onnx"
    path.write_bytes(onnx_if_tree(12))
    _refused(path, "E10041", "tree.onnx", "more than 4096 control-flow subgraphs", "MAX_SUBGRAPHS")


@pytest.mark.heavy
def test_an_if_tree_18_deep_is_refused_in_seconds(tmp_path):
    """524,286 branches (31 MB): the count stops at the limit, before anything walks the whole tree."""
    path = tmp_path / "tree.onnx"
    path.write_bytes(onnx_if_tree(18))
    _refused(path, "E10041", "MAX_SUBGRAPHS", seconds=6.0)


def test_a_small_if_tree_still_builds_and_runs(tmp_path):
    path = tmp_path / "m.om"
    path.write_bytes(compile_om(onnx.ModelProto.FromString(onnx_if_tree(4))))
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for c in (True, False):
        outs, _ = Simulation(load_model(str(path))).run([x, np.array(c)])
        np.testing.assert_array_equal(outs[0], np.maximum(x, 0))


@pytest.mark.parametrize("by_call", [False, True])
def test_tf_functions_naming_each_other_twice_are_counted_not_copied(tmp_path, by_call):
    """A 3 KB library asking for 2^18 copies: as If branches (subgraphs) or inlined calls (nodes)."""
    path = tmp_path / "tree.pb"
    path.write_bytes(tf_function_tree(18, by_call))
    _refused(path, "E10041", "tree.pb", "MAX_IMPORT_COPIED_NODES" if by_call else "MAX_SUBGRAPHS", **TF)


@pytest.mark.parametrize("by_call", [False, True])
def test_a_tf_function_named_by_several_ifs_builds_and_runs(tmp_path, by_call):
    """Each copy of the function gets node names of its own (the nested If's name was taken twice: E19999)."""
    path = tmp_path / "m.om"
    path.write_bytes(compile_om(tf.GraphDef.FromString(tf_function_tree(3, by_call)), **TF))
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    outs, _ = Simulation(load_model(str(path))).run([x, np.array(True)])
    np.testing.assert_array_equal(outs[0], np.maximum(x, 0))


def test_library_work_counts_each_function_once():
    gd = tf.GraphDef.FromString(tf_function_tree(40))      # 2^41 copies: counted in microseconds, capped
    subgraphs, copied = library_work(gd)
    assert subgraphs == import_budget.COUNT_CAP and copied == import_budget.COUNT_CAP
    # the top If's 2 copies of f3, 4 of f2, 8 of f1, 16 of f0: 30 subgraphs of one node each, 4 held in the file
    assert library_work(tf.GraphDef.FromString(tf_function_tree(3))) == (30, 30 - 4)
    # two calls inline f_{k-1} twice: f3 is 2 + 2 * (2 + 2 * (2 + 2 * 1)) = 22 nodes, copied into both branches;
    # the file holds the 7 nodes of f0..f3
    assert library_work(tf.GraphDef.FromString(tf_function_tree(3, by_call=True))) == (2, 2 * 22 - 7)


@pytest.mark.parametrize("trip,per", [(3000, 20), (4096, 20)])
def test_a_loop_unrolled_into_60000_nodes_or_more_is_refused_at_once(tmp_path, trip, per):
    path = tmp_path / "loop.onnx"
    path.write_bytes(onnx_unrolled_loop(trip, per))
    _refused(path, "E14001", "grow", f"would add {trip * per} nodes", "MAX_IMPORT_COPIED_NODES", seconds=2.0)


def test_unrolled_loops_draw_on_one_budget(monkeypatch):
    """Two loops that each fit, together not: the second is refused, naming it and what came before."""
    monkeypatch.setattr(import_budget, "MAX_IMPORT_COPIED_NODES", 300)
    one = onnx.ModelProto.FromString(onnx_unrolled_loop(10, 20))
    compile_om(one)
    g = one.graph
    twin = [onnx.NodeProto(), onnx.NodeProto(), onnx.NodeProto()]
    for new, old in zip(twin, g.node):
        new.CopyFrom(old)
        new.input[:] = [{"s0": "s0b", "s": "sb"}.get(i, i) for i in new.input]
        new.output[:] = [{"s0": "s0b", "s": "sb", "y": "y2"}.get(o, o) for o in new.output]
        new.name = new.name + "_b" if new.name else ""
    g.node.extend(twin)
    g.output.append(helper.make_tensor_value_info("y2", TP.FLOAT, None))
    with pytest.raises(AtcError) as exc:
        compile_om(one)
    assert exc.value.code == "E14001" and "grow_b" in str(exc.value) and "after the 2" in str(exc.value)


def test_a_loop_without_a_trip_count_stops_at_the_budget(monkeypatch):
    """Its condition alone bounds it: the copies are counted as they are made."""
    monkeypatch.setattr(import_budget, "MAX_IMPORT_COPIED_NODES", 500)
    m = onnx.ModelProto.FromString(onnx_unrolled_loop(100, 20))
    m.graph.node[1].input[0] = ""
    with pytest.raises(AtcError) as exc:
        compile_om(m)
    assert exc.value.code == "E14001" and "MAX_IMPORT_COPIED_NODES" in str(exc.value)


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TP.FLOAT, shape)


def test_every_gear_draws_on_the_same_budget(monkeypatch):
    """A gear converts the model again: 4 subgraphs per gear fit a limit of 6 once, not for two gears."""
    monkeypatch.setattr(import_budget, "MAX_SUBGRAPHS", 6)
    monkeypatch.setattr(onnx_work, "MAX_SUBGRAPHS", 6)
    inner = helper.make_graph([helper.make_node("Relu", ["x"], ["r"])], "leaf", [], [_vi("r", ["N", 3])])
    mid = helper.make_graph([helper.make_node("If", ["c"], ["o"], then_branch=inner, else_branch=inner)], "mid", [],
                            [_vi("o", ["N", 3])])
    m = helper.make_model(helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=mid, else_branch=inner)], "g",
        [_vi("x", ["N", 3]), helper.make_tensor_value_info("c", TP.BOOL, [])], [_vi("y", ["N", 3])]),
        opset_imports=[helper.make_opsetid("", 17)])
    compile_om(m, input_shape="x:2,3;c:")
    with pytest.raises(AtcError) as exc:
        compile_om(m, input_shape="x:-1,3;c:", **{"ge.dynamicBatchSize": "1,2"})
    assert exc.value.code == "E10041" and "MAX_SUBGRAPHS" in str(exc.value)
