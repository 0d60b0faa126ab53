"""TensorFlow control flow and library functions: Keras LSTM, GRU and bidirectional LSTM frozen
both ways (v1: lowered Enter/Exit/Merge/Switch/NextIteration/LoopCond frames; v2: one functional While with
TensorList ops) match TensorFlow's outputs; convolutions inside a library function called through
StatefulPartitionedCall; bad v1 frames and unsupported ops inside functions are E-coded errors.
The fixtures come from models/make_tf_rnn.py (TensorFlow, dev only)."""
import numpy as np
import pytest

from atc_py.common.errors import AtcError
from atc_py.frontend.tensorflow.functionalize import functionalize
from atc_py.om import task_types as tt
from atc_py.proto import tf_graph_pb2 as tf
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import MODELS, compile_om

RNN = MODELS / "tf_rnn"


def _run(tmp_path, pb, x):
    path = tmp_path / "m.om"
    path.write_bytes(compile_om(pb, **{"ge.frameworkType": "3"}))
    m = load_model(str(path))
    outs, stats = Simulation(m).run([x])
    assert not stats.hazards
    return m, outs


@pytest.mark.parametrize("form", ["v1", "v2"])
@pytest.mark.parametrize("name", ["lstm", "gru", "bilstm"])
def test_keras_recurrent_layers_match_tensorflow(tmp_path, name, form):
    data = np.load(RNN / f"{name}.npz")
    m, outs = _run(tmp_path, RNN / f"{name}.{form}.pb", data["x"])
    np.testing.assert_allclose(outs[0], data["y"], rtol=1e-5, atol=1e-5)
    loops = sum(t.type == tt.LABEL_GOTO_EX for t in m.tasks)
    assert loops == (2 if name == "bilstm" else 1)          # each layer is one label loop on the device


def test_v1_frames_become_functional_while_loops():
    gd = tf.GraphDef.FromString((RNN / "lstm.v1.pb").read_bytes())
    assert any(n.op == "LoopCond" for n in gd.node)
    out = functionalize(gd)
    ops = {n.op for n in out.node}
    assert "While" in ops and not ops & {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond"}
    assert len(out.library.function) == 2


def test_convolutions_in_a_library_function(tmp_path):
    gd = tf.GraphDef.FromString((RNN / "calls.pb").read_bytes())
    assert any(n.op in ("PartitionedCall", "StatefulPartitionedCall") for n in gd.node)
    data = np.load(RNN / "calls.npz")
    m, outs = _run(tmp_path, RNN / "calls.pb", data["x"])
    assert sum(op.type == "Conv2D" for op in m.ops.values()) == 2
    np.testing.assert_allclose(outs[0], data["y"], rtol=1e-5, atol=1e-5)


def _bad_frame(tmp_path, drop_loop_cond: bool):
    gd = tf.GraphDef.FromString((RNN / "gru.v1.pb").read_bytes())
    if drop_loop_cond:      # the frame's cycle no longer has its LoopCond: not a loop
        lc = next(n for n in gd.node if n.op == "LoopCond")
        lc.op = "Identity"
    path = tmp_path / "bad.pb"
    path.write_bytes(gd.SerializeToString())
    with pytest.raises(AtcError) as exc:
        compile_om(path, **{"ge.frameworkType": "3"})
    return exc.value


def test_a_cycle_in_a_v1_frame_that_is_not_a_loop(tmp_path):
    err = _bad_frame(tmp_path, True)
    assert err.code == "E10041" and "LoopCond" in str(err) and "node" in str(err)


def test_unsupported_op_inside_a_library_function_is_named(tmp_path):
    gd = tf.GraphDef.FromString((RNN / "lstm.v2.pb").read_bytes())
    body = next(f for f in gd.library.function if "body" in f.signature.name)
    node = next(n for n in body.node_def if n.op == "Tanh")
    node.op = "NoSuchTfOp"
    path = tmp_path / "bad.pb"
    path.write_bytes(gd.SerializeToString())
    with pytest.raises(AtcError) as exc:
        compile_om(path, **{"ge.frameworkType": "3"})
    assert exc.value.code == "E19010" and f"{body.signature.name}/{node.name}" in str(exc.value)


@pytest.mark.parametrize("form", ["v1", "v2"])
def test_tf_cond_with_a_runtime_predicate_takes_each_branch(tmp_path, form):
    """tf.cond frozen as Switch/Merge (v1, rebuilt into an If GE lowers with StreamSwitch) or StatelessIf (v2,
    labels): both branches match TF."""
    data = np.load(RNN / "cond.npz")
    path = tmp_path / "c.om"
    path.write_bytes(compile_om(RNN / f"cond.{form}.pb", **{"ge.frameworkType": "3"}))
    m = load_model(str(path))
    switches = (sum(t.type == tt.LABEL_SWITCH_BY_INDEX for t in m.tasks), sum(t.type == tt.STREAM_SWITCH for t in m.tasks))
    assert switches == ((0, 2) if form == "v1" else (1, 0))
    for side in ("then", "else"):
        outs, stats = Simulation(m).run([data[f"x_{side}"]])
        np.testing.assert_allclose(outs[0], data[f"y_{side}"], rtol=1e-5, atol=1e-6)
        assert not stats.hazards


def _stream_tasks(m):
    return {s: [t for t in m.tasks if t.stream_id == s] for s in sorted({t.stream_id for t in m.tasks})}


def test_v1_cond_lowers_to_stream_switch_tasks(tmp_path):
    """GE's v1 cond lowering (SwitchToStreamSwitchPass, MergeToStreamMergePass): the parent stream ends with
    the predicate cast to int32 and StreamSwitch_t (== 1) / StreamSwitch_f (== 0), each naming its branch's
    stream; each branch stream copies its result into the If's output and activates the merge stream, where
    the work after the cond runs. No label task."""
    path = tmp_path / "c.om"
    path.write_bytes(compile_om(RNN / "cond.v1.pb", **{"ge.frameworkType": "3"}))
    m = load_model(str(path))
    assert not any(t.type in (tt.LABEL_SET, tt.LABEL_SWITCH_BY_INDEX, tt.LABEL_GOTO_EX) for t in m.tasks)
    per = _stream_tasks(m)
    assert m.stream_num == 4 and sorted(per) == [0, 1, 2, 3]
    head = [t.type for t in per[0]]
    assert head[-2:] == [tt.STREAM_SWITCH, tt.STREAM_SWITCH]
    sw_t, sw_f = per[0][-2:]
    ops = {op.id: op for op in m.ops.values()}
    from atc_py.om.attrs import from_attr
    for sw, stream, flag in ((sw_t, 1, 1), (sw_f, 2, 0)):
        op = ops[sw.stream_switch.op_index]
        assert op.type == "StreamSwitch" and sw.stream_switch.true_stream_id == stream
        assert from_attr(op.attr["switch_condition"]) == 0 and from_attr(op.attr["active_stream_list"]) == [stream]
        assert bool(from_attr(op.attr["_switch_true_branch_flag"])) == bool(flag)
    for stream in (1, 2):       # branch, its copy into the If's output, then STREAM_ACTIVE of the merge stream
        kinds = [t.type for t in per[stream]]
        assert kinds[-2:] == [tt.MEMCPY_ASYNC, tt.STREAM_ACTIVE] and per[stream][-1].stream_active.active_stream_id == 3
    assert per[3] and all(t.type in (tt.KERNEL, tt.ALL_KERNEL) for t in per[3])   # * 2 + x after the cond


def test_stream_switch_runs_only_the_taken_branch_stream(tmp_path):
    """om-run: STREAM_SWITCH_t hands stream 0 over to the then stream when the predicate holds (StreamSwitch_f
    never runs), otherwise StreamSwitch_f hands it to the else stream; the merge stream starts only after the
    branch's STREAM_ACTIVE, and reads the branch's result without a hazard."""
    data = np.load(RNN / "cond.npz")
    path = tmp_path / "c.om"
    path.write_bytes(compile_om(RNN / "cond.v1.pb", **{"ge.frameworkType": "3"}))
    m = load_model(str(path))
    for side, taken, skipped in (("then", 1, 2), ("else", 2, 1)):
        outs, stats = Simulation(m).run([data[f"x_{side}"]])
        np.testing.assert_allclose(outs[0], data[f"y_{side}"], rtol=1e-5, atol=1e-6)
        assert not stats.hazards
        recs = stats.records
        switches = [r.name.rsplit("/", 1)[-1] for r in recs if r.type == "STREAM_SWITCH"]
        assert switches == (["StreamSwitch_t"] if side == "then" else ["StreamSwitch_t", "StreamSwitch_f"])
        assert any(r.stream == taken for r in recs) and not any(r.stream == skipped for r in recs)
        active = next(r for r in recs if r.type == "STREAM_ACTIVE" and r.stream == taken)
        assert all(r.start >= active.end for r in recs if r.stream == 3) and any(r.stream == 3 for r in recs)


def test_v1_cond_becomes_an_if():
    gd = tf.GraphDef.FromString((RNN / "cond.v1.pb").read_bytes())
    assert any(n.op == "Merge" for n in gd.node)
    ops = {n.op for n in functionalize(gd).node}
    assert "If" in ops and not ops & {"Switch", "Merge"}


TA_OUTPUTS = ("y", "y_concat", "y_gather", "size", "h")


def test_tensor_array_v3_loop_matches_tensorflow(tmp_path):
    """A v1 while_loop over TensorArrays (dynamic_rnn's form: Scatter / Split before the loop, Read and Write
    carrying the flow through the frame, Gather / Concat / Size / Close after it) runs as one label loop."""
    gd = tf.GraphDef.FromString((RNN / "tensor_array.pb").read_bytes())
    ops = {n.op for n in gd.node}
    assert {"TensorArrayV3", "TensorArrayScatterV3", "TensorArraySplitV3", "TensorArrayReadV3",
            "TensorArrayWriteV3", "TensorArrayGatherV3", "TensorArrayConcatV3", "TensorArraySizeV3",
            "TensorArrayCloseV3", "LoopCond"} <= ops
    data = np.load(RNN / "tensor_array.npz")
    m, outs = _run(tmp_path, RNN / "tensor_array.pb", data["x"])
    assert [o.name.split(":")[0] for o in m.outputs] == list(TA_OUTPUTS)
    for k, name in enumerate(TA_OUTPUTS):
        np.testing.assert_allclose(outs[k], data[f"y{k}"], rtol=1e-5, atol=1e-6, err_msg=name)
    assert sum(t.type == tt.LABEL_GOTO_EX for t in m.tasks) == 1


def _bad_tensor_array(tmp_path, edit):
    gd = tf.GraphDef.FromString((RNN / "tensor_array.pb").read_bytes())
    edit(gd)
    path = tmp_path / "bad.pb"
    path.write_bytes(gd.SerializeToString())
    with pytest.raises(AtcError) as exc:
        compile_om(path, **{"ge.frameworkType": "3"})
    return exc.value


def test_a_growing_tensor_array_is_refused_naming_the_node(tmp_path):
    def grow(gd):
        next(n for n in gd.node if n.op == "TensorArrayV3").attr["dynamic_size"].b = True
    err = _bad_tensor_array(tmp_path, grow)
    assert err.code == "E14001" and "TensorArray" in str(err) and "dynamic_size" in str(err)


def test_tensor_array_split_into_unequal_elements_is_refused(tmp_path):
    def unequal(gd):
        split = next(n for n in gd.node if n.op == "TensorArraySplitV3")
        cast = next(n for n in gd.node if n.name == split.input[2])             # Cast(int32 const)
        t = next(n for n in gd.node if n.name == cast.input[0]).attr["value"].tensor
        vals = np.frombuffer(t.tensor_content, np.int32).copy()
        assert vals.tolist() == [1] * 6
        vals[:2] = (2, 0)
        t.tensor_content = vals.tobytes()
    err = _bad_tensor_array(tmp_path, unequal)
    assert err.code == "E14001" and "TensorArraySplitV3" in str(err) and "lengths" in str(err)


def test_switch_case_with_a_runtime_branch_index_runs_each_branch(tmp_path):
    """tf.switch_case (a functional StatelessCase over three library functions) on a runtime index: one
    LABEL_SWITCH_BY_INDEX over the three branch labels; every index (and one past the end: TensorFlow and
    the label switch both take the last branch) matches TensorFlow."""
    gd = tf.GraphDef.FromString((RNN / "case.pb").read_bytes())
    assert any(n.op in ("Case", "StatelessCase") for n in gd.node)
    data = np.load(RNN / "case.npz")
    path = tmp_path / "case.om"
    path.write_bytes(compile_om(RNN / "case.pb", **{"ge.frameworkType": "3"}))
    m = load_model(str(path))
    assert [i.name for i in m.inputs] == ["i", "x"]
    for k, idx in enumerate(data["i"]):
        outs, stats = Simulation(m).run([np.array(idx, np.int32), data["x"]])
        np.testing.assert_allclose(outs[0], data["y"][k], rtol=1e-5, atol=1e-6, err_msg=f"branch index {idx}")
        assert not stats.hazards
        branch_sets = [r.name for r in stats.records if r.type == "LABEL_SET" and "Branch" in r.name]
        assert branch_sets == [f"switch_case_indexed_case/Branch{min(int(idx), 2)}_LabelSet"]


def test_switch_case_task_list(tmp_path):
    """The lowered Case in the task list (GE's case_op_label_maker): Cast is not needed (the index is int32),
    LABEL_SWITCH_BY_INDEX lists the three branch labels; each branch opens with its LABEL_SET, copies its
    result into the Case's output and jumps to the leave label; the last branch ends by setting it."""
    from atc_py.om import read_om
    from atc_py.om.json_dump import om_file_to_json
    doc = om_file_to_json(read_om(compile_om(RNN / "case.pb", **{"ge.frameworkType": "3"})))
    tasks = doc["task_info"]["task"]
    kinds = [t.get("type", 0) for t in tasks]
    switch = next(t for t in tasks if t.get("type") == tt.LABEL_SWITCH_BY_INDEX)
    assert switch["label_switch_by_index"]["label_max"] == 3
    sets = [t.get("label_set", {}).get("label_id", 0) for t in tasks if t.get("type") == tt.LABEL_SET]
    gotos = [t["label_goto_ex"].get("label_id", 0) for t in tasks if t.get("type") == tt.LABEL_GOTO_EX]
    assert kinds.count(tt.LABEL_SWITCH_BY_INDEX) == 1 and len(sets) == 4 and len(gotos) == 2
    assert sets[-1] == gotos[0] == gotos[1]            # both early branches jump to the label the last one sets
    assert kinds.index(tt.LABEL_SWITCH_BY_INDEX) < kinds.index(tt.LABEL_SET)
    assert kinds.count(tt.MEMCPY_ASYNC) == 3           # each branch copies its result into the Case's output


def test_single_stream_build_keeps_labels_for_a_v1_cond(tmp_path):
    """--enable_single_stream=true: one stream, so the v1 cond falls back to label tasks (and still matches)."""
    data = np.load(RNN / "cond.npz")
    path = tmp_path / "c.om"
    path.write_bytes(compile_om(RNN / "cond.v1.pb", **{"ge.frameworkType": "3", "ge.enableSingleStream": "true"}))
    m = load_model(str(path))
    assert m.stream_num == 1 and not any(t.type == tt.STREAM_SWITCH for t in m.tasks)
    assert sum(t.type == tt.LABEL_SWITCH_BY_INDEX for t in m.tasks) == 1
    outs, stats = Simulation(m).run([data["x_else"]])
    np.testing.assert_allclose(outs[0], data["y_else"], rtol=1e-5, atol=1e-6)
