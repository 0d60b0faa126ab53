"""Control flow: ONNX If / Loop / Scan compile to GE's If / While with subgraphs; static ones are
lowered to label tasks om-run executes, dynamic ones run in the host executor; bad models and hostile files
get E-coded errors."""
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from atc_py.common.errors import AtcError
from atc_py.om import read_om
from atc_py.om import task_types as tt
from atc_py.om.json_dump import om_file_to_json
from atc_py.proto import task_pb2
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import MODELS, compile_om

OPSET = [h.make_opsetid("", 17)]


def _model(nodes, inputs, outputs, inits=()):
    return h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(inits)), opset_imports=OPSET)


def _vi(name, dt, shape):
    return h.make_tensor_value_info(name, dt, shape)


def _load(tmp_path, model, name="m", **options):
    path = tmp_path / f"{name}.om"
    path.write_bytes(compile_om(model, **options))
    return load_model(str(path))


def _ort(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def if_model():
    """y = If(c, relu(x) * W, -x + x2) * x2 with x2 = x + x: the branches capture x, x2 and W."""
    w = h.make_tensor("W", T.FLOAT, [2, 3], np.arange(6, dtype=np.float32).tolist())
    then = h.make_graph([h.make_node("Relu", ["x"], ["r"]), h.make_node("Mul", ["r", "W"], ["t"])], "then", [],
                        [_vi("t", T.FLOAT, [2, 3])])
    els = h.make_graph([h.make_node("Neg", ["x"], ["n"]), h.make_node("Add", ["n", "x2"], ["e"])], "else", [],
                       [_vi("e", T.FLOAT, [2, 3])])
    return _model([h.make_node("Add", ["x", "x"], ["x2"]),
                   h.make_node("If", ["c"], ["y0"], then_branch=then, else_branch=els),
                   h.make_node("Mul", ["y0", "x2"], ["y"])],
                  [_vi("x", T.FLOAT, [2, 3]), _vi("c", T.BOOL, [])], [_vi("y", T.FLOAT, [2, 3])], [w])


def loop_model(trip: int, with_cond: bool = False):
    """v <- v * 0.5 + x, `trip` times (a trip-count input when trip < 0), optionally also while sum(v) < 13."""
    body_nodes = [h.make_node("Mul", ["v", "half"], ["m"]), h.make_node("Add", ["m", "x"], ["v_out"])]
    if with_cond:
        body_nodes += [h.make_node("ReduceSum", ["v_out"], ["s"], keepdims=0),
                       h.make_node("Less", ["s", "limit"], ["c_out"])]
    else:
        body_nodes += [h.make_node("Identity", ["c_in"], ["c_out"])]
    body = h.make_graph(body_nodes, "body", [_vi("i", T.INT64, []), _vi("c_in", T.BOOL, []), _vi("v", T.FLOAT, [4])],
                        [_vi("c_out", T.BOOL, []), _vi("v_out", T.FLOAT, [4])])
    inits = [h.make_tensor("half", T.FLOAT, [], [0.5]), h.make_tensor("limit", T.FLOAT, [], [13.0]),
             h.make_tensor("c0", T.BOOL, [], [True])]
    inputs = [_vi("x", T.FLOAT, [4])]
    if trip >= 0:
        inits.append(h.make_tensor("M", T.INT64, [], [trip]))
    else:
        inputs.append(_vi("M", T.INT64, []))
    node = h.make_node("Loop", ["M", "c0" if with_cond else "", "x"], ["y"], body=body)
    return _model([node], inputs, [_vi("y", T.FLOAT, [4])], inits)


def _types(model) -> dict:
    out = {}
    for t in model.tasks:
        out[t.type] = out.get(t.type, 0) + 1
    return out


def test_if_with_a_runtime_condition_runs_both_branches_like_onnxruntime(tmp_path):
    model = if_model()
    m = _load(tmp_path, model)
    types = _types(m)
    assert types[tt.LABEL_SWITCH_BY_INDEX] == 1 and types[tt.LABEL_SET] == 3 and types[tt.LABEL_GOTO_EX] == 1
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    for c in (True, False):
        outs, stats = Simulation(m).run([x, np.array(c)])
        np.testing.assert_allclose(outs[0], _ort(model, {"x": x, "c": np.array(c)})[0], rtol=1e-6, atol=1e-6)
        assert not stats.hazards
        ran = {r.name for r in stats.records}
        assert any("then" in n for n in ran) == c and any("else" in n for n in ran) != c


def test_if_with_a_constant_condition_keeps_only_its_branch(tmp_path):
    model = if_model()
    model.graph.input.pop()                              # c becomes a constant: the branch is chosen at import
    model.graph.initializer.append(h.make_tensor("c", T.BOOL, [], [False]))
    m = _load(tmp_path, model)
    assert tt.LABEL_SWITCH_BY_INDEX not in _types(m) and len(model.graph.node) == 3
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(Simulation(m).run([x])[0][0], _ort(model, {"x": x})[0])


def test_static_loop_is_a_label_loop_with_carried_values_in_device_memory(tmp_path):
    model = loop_model(20)
    m = _load(tmp_path, model)
    types = _types(m)
    assert types[tt.LABEL_SWITCH_BY_INDEX] == 1 and types[tt.LABEL_GOTO_EX] == 1 and types[tt.LABEL_SET] == 3
    x = np.arange(4, dtype=np.float32)
    outs, stats = Simulation(m).run([x])
    np.testing.assert_allclose(outs[0], _ort(model, {"x": x})[0], rtol=1e-6)
    gotos = [r for r in stats.records if r.type == "LABEL_GOTO_EX"]
    assert len(gotos) == 20                                   # the profile shows each iteration
    assert not stats.hazards


def test_data_dependent_loop_condition_on_the_device(tmp_path):
    model = loop_model(1000, with_cond=True)
    m = _load(tmp_path, model)
    x = np.full(4, 2.0, np.float32)
    outs, stats = Simulation(m).run([x])
    ref = _ort(model, {"x": x})[0]
    np.testing.assert_allclose(outs[0], ref, rtol=1e-6)
    assert 0 < sum(r.type == "LABEL_GOTO_EX" for r in stats.records) < 1000


def test_loop_unroll_switch(tmp_path):
    model = loop_model(4)
    x = np.arange(4, dtype=np.float32)
    unrolled = _load(tmp_path, model, "u")
    looped = _load(tmp_path, model, "l", optimization_switch="loop_unroll:off")
    assert tt.LABEL_GOTO_EX not in _types(unrolled) and tt.LABEL_GOTO_EX in _types(looped)
    a, b = Simulation(unrolled).run([x])[0][0], Simulation(looped).run([x])[0][0]
    np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(a, _ort(model, {"x": x})[0], rtol=1e-6)


def test_simulated_time_grows_by_one_iteration_cost_per_iteration(tmp_path):
    """t(M) = fixed + M * per_iteration: each iteration costs its cond and body tasks (the records between
    two LABEL_SETs of the cond label), the same every iteration."""
    x = np.arange(4, dtype=np.float32)
    e2e = {}
    for trip in (10, 20, 30):
        e2e[trip] = Simulation(_load(tmp_path, loop_model(trip), f"t{trip}")).run([x])[1].e2e_ns
    per = (e2e[20] - e2e[10]) / 10
    assert per > 0 and e2e[30] - e2e[20] == e2e[20] - e2e[10]
    stats = Simulation(_load(tmp_path, loop_model(10), "p")).run([x])[1]
    heads = [r for r in stats.records if r.type == "LABEL_SET" and r.name.endswith("CondLabelSet")]
    assert len(heads) == 11                                   # 10 iterations + the exit test
    spans = [b.start - a.start for a, b in zip(heads, heads[1:])]
    assert len(set(spans[1:])) == 1 and spans[1] == per


def test_runtime_trip_count_with_static_shapes_stays_a_device_loop(tmp_path):
    model = loop_model(-1)                   # the trip count is a model input, read from device memory
    m = _load(tmp_path, model)
    assert tt.LABEL_SWITCH_BY_INDEX in _types(m)
    x = np.arange(4, dtype=np.float32)
    for trip in (0, 3, 7):
        outs, stats = Simulation(m).run([x, np.array(trip, np.int64)])
        np.testing.assert_allclose(outs[0], _ort(model, {"x": x, "M": np.array(trip, np.int64)})[0], rtol=1e-6)
        assert stats.syncs == 0 and sum(r.type == "LABEL_GOTO_EX" for r in stats.records) == trip


def test_loop_with_scan_outputs_of_runtime_length_runs_in_the_host_executor(tmp_path):
    """The scan output's length is the runtime trip count: a dynamic loop, run iteration by iteration on the
    host, its condition brought to the host (a sync) before each iteration and the exit."""
    body = h.make_graph([h.make_node("Add", ["v", "one"], ["v_out"]), h.make_node("Identity", ["c"], ["c_out"]),
                         h.make_node("Mul", ["v_out", "v_out"], ["sq"])], "b",
                        [_vi("i", T.INT64, []), _vi("c", T.BOOL, []), _vi("v", T.FLOAT, [2])],
                        [_vi("c_out", T.BOOL, []), _vi("v_out", T.FLOAT, [2]), _vi("sq", T.FLOAT, [2])])
    model = _model([h.make_node("Loop", ["M", "", "v0"], ["v", "sqs"], body=body)],
                   [_vi("M", T.INT64, []), _vi("v0", T.FLOAT, [2])],
                   [_vi("v", T.FLOAT, [2]), _vi("sqs", T.FLOAT, [None, 2])], [h.make_tensor("one", T.FLOAT, [], [1])])
    m = _load(tmp_path, model)
    assert not m.tasks and m.subs          # a multi-model om: the loop is in an unknown (host) sub-model
    feeds = {"M": np.array(5, np.int64), "v0": np.array([1, 2], np.float32)}
    outs, stats = Simulation(m).run(list(feeds.values()))
    for a, b in zip(outs, _ort(model, feeds)):
        np.testing.assert_allclose(a, b)
    assert stats.syncs >= 5 + 1


def test_scan_compiles_to_a_static_loop(tmp_path):
    body = h.make_graph([h.make_node("Add", ["s", "x"], ["s_out"]), h.make_node("Identity", ["s_out"], ["y"])], "b",
                        [_vi("s", T.FLOAT, [3]), _vi("x", T.FLOAT, [3])], [_vi("s_out", T.FLOAT, [3]), _vi("y", T.FLOAT, [3])])
    model = _model([h.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1,
                                scan_input_directions=[1])],
                   [_vi("s0", T.FLOAT, [3]), _vi("xs", T.FLOAT, [12, 3])], [_vi("s", T.FLOAT, [3]), _vi("ys", T.FLOAT, [12, 3])])
    m = _load(tmp_path, model)
    assert tt.LABEL_GOTO_EX in _types(m)
    feeds = {"s0": np.zeros(3, np.float32), "xs": np.arange(36, dtype=np.float32).reshape(12, 3)}
    for a, b in zip(Simulation(m).run(list(feeds.values()))[0], _ort(model, feeds)):
        np.testing.assert_allclose(a, b)


def test_static_loop_task_list_golden():
    """The rnn_loop sample's task list (--mode=1 JSON) is in tests/golden (test_golden.py): its label tasks
    and subgraphs are there."""
    from tests.helpers import GOLDEN
    doc = json.loads((GOLDEN / "rnn_loop.Ascend910B1.sink0.json").read_text())
    kinds = [t.get("type", 0) for t in doc["task_info"]["task"]]
    assert tt.LABEL_SWITCH_BY_INDEX in kinds and tt.LABEL_GOTO_EX in kinds
    names = [g["name"] for g in doc["graph"]]
    assert len(names) == 3 and any(op.get("subgraph_name") for op in doc["graph"][0]["op"])


def test_om_holds_subgraphs_in_model_def(tmp_path):
    om = read_om(compile_om(MODELS / "rnn_loop.onnx"))
    doc = om_file_to_json(om)
    root = doc["graph"][0]
    loop = next(op for op in root["op"] if op["type"] == "While")
    assert loop["subgraph_name"] == [g["name"] for g in doc["graph"][1:]]


# -- bad models ---------------------------------------------------------------------------------------------
def _error(model) -> AtcError:
    with pytest.raises(AtcError) as exc:
        compile_om(model)
    return exc.value


def test_unbounded_loop_without_condition_is_an_error():
    body = h.make_graph([h.make_node("Identity", ["c"], ["c_out"]), h.make_node("Identity", ["v"], ["v_out"])], "b",
                        [_vi("i", T.INT64, []), _vi("c", T.BOOL, []), _vi("v", T.FLOAT, [2])],
                        [_vi("c_out", T.BOOL, []), _vi("v_out", T.FLOAT, [2])])
    err = _error(_model([h.make_node("Loop", ["", "", "v0"], ["v"], body=body, name="forever")],
                        [_vi("v0", T.FLOAT, [2])], [_vi("v", T.FLOAT, [2])]))
    assert err.code == "E14001" and "forever" in str(err) and "unbounded" in str(err)


def test_loop_body_output_that_does_not_match_its_carried_input():
    body = h.make_graph([h.make_node("Identity", ["c"], ["c_out"]), h.make_node("Cast", ["v"], ["v_out"], to=T.INT32)],
                        "b", [_vi("i", T.INT64, []), _vi("c", T.BOOL, []), _vi("v", T.FLOAT, [2])],
                        [_vi("c_out", T.BOOL, []), _vi("v_out", T.INT32, [2])])
    err = _error(_model([h.make_node("Loop", ["M", "", "v0"], ["v"], body=body, name="mismatch")],
                        [_vi("v0", T.FLOAT, [2])], [_vi("v", T.FLOAT, [2])], [h.make_tensor("M", T.INT64, [], [3])]))
    assert err.code == "E14001" and "mismatch" in str(err) and "int32" in str(err)


def test_branches_with_different_output_counts():
    then = h.make_graph([h.make_node("Relu", ["x"], ["a"])], "t", [], [_vi("a", T.FLOAT, [2])])
    els = h.make_graph([h.make_node("Relu", ["x"], ["b"]), h.make_node("Neg", ["x"], ["d"])], "e", [],
                       [_vi("b", T.FLOAT, [2]), _vi("d", T.FLOAT, [2])])
    err = _error(_model([h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=els, name="uneven")],
                        [_vi("x", T.FLOAT, [2]), _vi("c", T.BOOL, [])], [_vi("y", T.FLOAT, [2])]))
    assert err.code == "E14001" and "uneven" in str(err) and "outputs" in str(err)


def test_unsupported_ops_inside_subgraphs_are_named_in_one_error():
    then = h.make_graph([h.make_node("NoSuchOp", ["x"], ["a"], name="deep")], "t", [], [_vi("a", T.FLOAT, [2])])
    els = h.make_graph([h.make_node("AlsoMissing", ["x"], ["b"])], "e", [], [_vi("b", T.FLOAT, [2])])
    err = _error(_model([h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=els, name="sel")],
                        [_vi("x", T.FLOAT, [2]), _vi("c", T.BOOL, [])], [_vi("y", T.FLOAT, [2])]))
    assert err.code == "E19010" and "sel/then_branch/deep" in str(err) and "AlsoMissing" in str(err)


# -- om-run: runaway loops and hostile files ------------------------------------------------------------------
def test_runaway_loop_stops_at_the_iteration_limit(tmp_path):
    model = loop_model(1000)
    m = _load(tmp_path, model)
    with pytest.raises(AtcError) as exc:
        Simulation(m, max_loop_iterations=50).run([np.zeros(4, np.float32)])
    assert exc.value.code == "E30007" and "50" in str(exc.value)
    host = _load(tmp_path, loop_model(-1), "h")
    with pytest.raises(AtcError) as exc:
        Simulation(host, max_loop_iterations=5).run([np.zeros(4, np.float32), np.array(10, np.int64)])
    assert exc.value.code == "E30007"


def test_a_constant_trip_count_of_2_62_stops_at_the_task_budget_naming_the_loop(tmp_path, atc):
    """The per-label limit alone let a Loop of M = 2^62 run minutes and gigabytes (every iteration's records): the
    execution's task budget stops it within the budget, naming the busiest label; atc-py warns at build time."""
    import time

    from om_run.sim.budget import MIN_TASK_BUDGET, default_task_budget
    model = loop_model(2 ** 62)
    src = tmp_path / "runaway.onnx"
    onnx.save(model, src)
    code, out, err = atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'runaway'}",
                         "--soc_version=Ascend910B1", "--log=warning")
    assert code == 0 and "constant trip count of 4611686018427387904" in out + err
    m = load_model(str(tmp_path / "runaway.om"))
    sim = Simulation(m)
    assert sim.max_tasks == default_task_budget(len(m.tasks) + len(m.ops)) == MIN_TASK_BUDGET   # a small model
    t0 = time.perf_counter()
    with pytest.raises(AtcError) as exc:
        Simulation(m, max_tasks=3000).run([np.zeros(4, np.float32)])
    assert exc.value.code == "E30007" and "--max-tasks=3000" in str(exc.value) and "busiest loop is label" in str(exc.value)
    assert time.perf_counter() - t0 < 30
    # the host executor's While (the trip count an input: a dynamic loop) spends the same budget
    host = _load(tmp_path, loop_model(-1), "h")
    with pytest.raises(AtcError) as exc:
        Simulation(host, max_tasks=200).run([np.zeros(4, np.float32), np.array(10 ** 9, np.int64)])
    assert exc.value.code == "E30007" and "--max-tasks=200" in str(exc.value)
    # a finite loop within the budget runs as before
    outs, _ = Simulation(_load(tmp_path, loop_model(20), "ok"), max_tasks=5000).run([np.ones(4, np.float32)])
    np.testing.assert_allclose(outs[0], np.full(4, 2 - 2.0 ** -20), rtol=1e-7)


def test_om_run_max_tasks_flag(om_run, tmp_path):
    onnx.save(loop_model(2 ** 40), tmp_path / "l.onnx")
    from atc_py.cli.main import run as atc_run
    assert atc_run([f"--model={tmp_path / 'l.onnx'}", "--framework=5", f"--output={tmp_path / 'l'}",
                    "--soc_version=Ascend910B1"]) == 0
    code, out, err = om_run(str(tmp_path / "l.om"), "--max-tasks", "500")
    assert code == 1 and "E30007" in err and "--max-tasks=500" in err and "Traceback" not in out + err


def _mutate(tmp_path, fn, name):
    """Recompile the static loop, edit its TASK_INFO / MODEL_DEF with fn, reseal, load: the E30001 text."""
    from atc_py.om import OmModel, write_om
    from atc_py.om import partitions as pt
    from atc_py.proto import ge_ir_pb2
    om = read_om(compile_om(loop_model(20)))
    m = om.models[0]
    parts = {t: m.get(t) for t in pt.STATIC_ORDER if m.get(t)}
    mtd = task_pb2.ModelTaskDef.FromString(parts[pt.TASK_INFO])
    md = ge_ir_pb2.ModelDef.FromString(parts[pt.MODEL_DEF])
    fn(mtd, md)
    parts[pt.TASK_INFO] = mtd.SerializeToString()
    parts[pt.MODEL_DEF] = md.SerializeToString()
    path = tmp_path / f"{name}.om"
    image = write_om([OmModel([(t, parts[t]) for t in pt.STATIC_ORDER if parts.get(t)])], name)
    path.write_bytes(image.tobytes())
    with pytest.raises(AtcError) as exc:
        load_model(str(path))
    assert exc.value.code == "E30001"
    return str(exc.value)


def _first(mtd, kind):
    return next(t for t in mtd.task if t.type == kind)


def test_hostile_label_tasks_are_rejected_before_running(tmp_path):
    def bad_label(mtd, md):
        _first(mtd, tt.LABEL_GOTO_EX).label_goto_ex.label_id = 999
    assert "label 999" in _mutate(tmp_path, bad_label, "a")

    def unset_label(mtd, md):
        s = _first(mtd, tt.LABEL_SET)
        s.label_set.label_id = 2 if s.label_set.label_id != 2 else 1   # set one label twice, another never
    assert "label" in _mutate(tmp_path, unset_label, "b")

    def switch_max(mtd, md):
        _first(mtd, tt.LABEL_SWITCH_BY_INDEX).label_switch_by_index.label_max = 7
    assert "label_max 7" in _mutate(tmp_path, switch_max, "c")

    def copy_out(mtd, md):
        _first(mtd, tt.MEMCPY_ASYNC).memcpy_async.dst = 0x10
    assert "leaves device memory" in _mutate(tmp_path, copy_out, "d")

    def copy_big(mtd, md):
        c = _first(mtd, tt.MEMCPY_ASYNC).memcpy_async
        c.count = c.dst_max + 1
    assert "MEMCPY_ASYNC copies" in _mutate(tmp_path, copy_big, "e")

    def orphan(mtd, md):
        md.graph.add(name="stray")
    assert "stray" in _mutate(tmp_path, orphan, "f")

    def twice(mtd, md):
        loop = next(op for op in md.graph[0].op if op.type == "While")
        loop.subgraph_name[1] = loop.subgraph_name[0]
    assert "owned by two ops" in _mutate(tmp_path, twice, "g")

    def stream(mtd, md):
        t = mtd.task.add(type=tt.STREAM_ACTIVE)
        t.stream_active.op_index = _first(mtd, tt.LABEL_SET).label_set.op_index
    assert "StreamActive" in _mutate(tmp_path, stream, "h")


def test_nested_loops_and_an_if_inside_a_loop_body(tmp_path):
    """Outer Loop (13) over an inner Loop (14) and an If on the inner result: labels of every level in one
    stream's task list, each region's switch right before its branches."""
    inner = h.make_graph([h.make_node("Identity", ["c2"], ["co2"]), h.make_node("Mul", ["w", "k"], ["m"]),
                          h.make_node("Add", ["m", "x"], ["wo"])], "inner",
                         [_vi("j", T.INT64, []), _vi("c2", T.BOOL, []), _vi("w", T.FLOAT, [3])],
                         [_vi("co2", T.BOOL, []), _vi("wo", T.FLOAT, [3])])
    then = h.make_graph([h.make_node("Sub", ["vi", "one"], ["t"])], "then", [], [_vi("t", T.FLOAT, [3])])
    els = h.make_graph([h.make_node("Add", ["vi", "one"], ["e"])], "else", [], [_vi("e", T.FLOAT, [3])])
    outer = h.make_graph([h.make_node("Identity", ["c"], ["co"]), h.make_node("Loop", ["N4", "", "v"], ["vi"], body=inner),
                          h.make_node("ReduceSum", ["vi"], ["s"], keepdims=0), h.make_node("Greater", ["s", "five"], ["g"]),
                          h.make_node("If", ["g"], ["vo"], then_branch=then, else_branch=els)], "outer",
                         [_vi("i", T.INT64, []), _vi("c", T.BOOL, []), _vi("v", T.FLOAT, [3])],
                         [_vi("co", T.BOOL, []), _vi("vo", T.FLOAT, [3])])
    inits = [h.make_tensor("N3", T.INT64, [], [13]), h.make_tensor("N4", T.INT64, [], [14]),
             h.make_tensor("k", T.FLOAT, [], [0.9]), h.make_tensor("one", T.FLOAT, [], [1.0]),
             h.make_tensor("five", T.FLOAT, [], [5.0])]
    model = _model([h.make_node("Loop", ["N3", "", "x"], ["y"], body=outer)], [_vi("x", T.FLOAT, [3])],
                   [_vi("y", T.FLOAT, [3])], inits)
    m = _load(tmp_path, model)
    assert _types(m)[tt.LABEL_SWITCH_BY_INDEX] == 3 and m.label_num == 9
    x = np.array([0.1, 0.5, -0.3], np.float32)
    outs, stats = Simulation(m).run([x])
    np.testing.assert_allclose(outs[0], _ort(model, {"x": x})[0], rtol=1e-5)
    assert sum(r.type == "LABEL_GOTO_EX" and r.name.startswith("Loop_1") for r in stats.records) == 13 * 14


def test_a_loop_whose_carried_shape_grows_runs_in_the_host_executor(tmp_path):
    body = h.make_graph([h.make_node("Identity", ["c"], ["co"]), h.make_node("Slice", ["v", "s0", "s1"], ["p"]),
                         h.make_node("Concat", ["v", "p"], ["vo"], axis=0)], "grow",
                        [_vi("i", T.INT64, []), _vi("c", T.BOOL, []), _vi("v", T.FLOAT, [None])],
                        [_vi("co", T.BOOL, []), _vi("vo", T.FLOAT, [None])])
    model = _model([h.make_node("Loop", ["M", "", "x"], ["y"], body=body)], [_vi("x", T.FLOAT, [2])],
                   [_vi("y", T.FLOAT, [None])], [h.make_tensor("M", T.INT64, [], [12]),
                                                 h.make_tensor("s0", T.INT64, [1], [0]), h.make_tensor("s1", T.INT64, [1], [1])])
    m = _load(tmp_path, model)
    x = np.array([1, 2], np.float32)
    outs, stats = Simulation(m).run([x])
    np.testing.assert_allclose(outs[0], _ort(model, {"x": x})[0])
    assert outs[0].shape == (14,) and stats.syncs == 13      # 12 iterations and the exit test


def _edited(tmp_path, model, fn, name):
    """Compile, edit TASK_INFO / MODEL_DEF with fn, reseal, load (validation included)."""
    from atc_py.om import OmModel, write_om
    from atc_py.om import partitions as pt
    from atc_py.om.attrs import set_attr
    from atc_py.proto import ge_ir_pb2
    m = read_om(compile_om(model)).models[0]
    parts = {t: m.get(t) for t in pt.STATIC_ORDER if m.get(t)}
    mtd = task_pb2.ModelTaskDef.FromString(parts[pt.TASK_INFO])
    md = ge_ir_pb2.ModelDef.FromString(parts[pt.MODEL_DEF])
    fn(mtd, md, set_attr)
    parts[pt.TASK_INFO], parts[pt.MODEL_DEF] = mtd.SerializeToString(), md.SerializeToString()
    path = tmp_path / f"{name}.om"
    path.write_bytes(write_om([OmModel([(t, parts[t]) for t in pt.STATIC_ORDER if parts.get(t)])], name).tobytes())
    return load_model(str(path))


def _add_stream(md, set_attr) -> int:
    """One more stream; its id."""
    from atc_py.om.attrs import from_attr
    n = from_attr(md.attr["stream_num"])
    set_attr(md.attr["stream_num"], n + 1)
    return n


def test_stream_active_starts_a_stream_that_waits_until_then(tmp_path):
    """A stream some STREAM_ACTIVE names is not started by the model execute; the STREAM_ACTIVE runs it from its
    head (aclrtActiveStream: in parallel with the activating stream)."""
    def activate(mtd, md, set_attr):
        new = _add_stream(md, set_attr)
        sa = next(op for g in md.graph for op in g.op if op.type == "StreamActive")
        t = mtd.task.add(type=tt.STREAM_ACTIVE, stream_id=0)
        t.stream_active.op_index, t.stream_active.active_stream_id = sa.id, new
        mtd.task.add(type=tt.NOP, stream_id=new)
    x, c = np.ones((2, 3), np.float32), np.array(True)
    m = _edited(tmp_path, if_model(), activate, "active")
    stats = Simulation(m).run([x, c])[1]
    act = next(r for r in stats.records if r.type == "STREAM_ACTIVE")
    nop = next(r for r in stats.records if r.type == "NOP")
    assert nop.stream == m.stream_num - 1 and nop.start >= act.end


def test_stream_switch_hands_over_to_its_stream_when_the_condition_holds(tmp_path):
    """STREAM_SWITCH compares two int32 values in device memory (here the If's predicate with itself): EQUAL
    holds, so the new stream runs and the switching stream stops (its Mul kernel never runs); NOT_EQUAL does not."""
    def switch(mtd, md, set_attr, cond):
        new = _add_stream(md, set_attr)
        root = md.graph[0]
        idx = next(op for op in root.op if op.name.endswith("SwitchIndex"))
        op = root.op.add(name="sw", type="StreamSwitch", id=max(o.id for g in md.graph for o in g.op) + 1)
        op.input.extend([f"{idx.name}:0", f"{idx.name}:0"])
        op.input_i.extend([idx.output_i[0], idx.output_i[0]])
        op.input_desc.add().CopyFrom(idx.output_desc[0])
        op.input_desc.add().CopyFrom(idx.output_desc[0])
        set_attr(op.attr["switch_condition"], cond)
        mul = next(o.id for o in root.op if o.type == "Mul")
        last = next(k for k, t in enumerate(mtd.task) if t.HasField("kernel") and t.kernel.context.op_index == mul
                    or t.HasField("kernel_with_handle") and t.kernel_with_handle.context.op_index == mul)
        tasks = list(mtd.task)
        sw = task_pb2.TaskDef(type=tt.STREAM_SWITCH, stream_id=tasks[last].stream_id)
        sw.stream_switch.op_index, sw.stream_switch.true_stream_id = op.id, new
        tasks.insert(last, sw)
        tasks.append(task_pb2.TaskDef(type=tt.NOP, stream_id=new))
        del mtd.task[:]
        mtd.task.extend(tasks)
    x, c = np.ones((2, 3), np.float32), np.array(True)
    taken = Simulation(_edited(tmp_path, if_model(), lambda a, b, s: switch(a, b, s, 0), "eq")).run([x, c])[1]
    kinds = [r.type for r in taken.records]
    assert "NOP" in kinds and kinds.index("NOP") > kinds.index("STREAM_SWITCH")
    assert not any(r.op_type == "Mul" for r in taken.records)
    kept = Simulation(_edited(tmp_path, if_model(), lambda a, b, s: switch(a, b, s, 1), "ne")).run([x, c])[1]
    assert "NOP" not in [r.type for r in kept.records] and any(r.op_type == "Mul" for r in kept.records)
