"""Memory and stream planning: property tests on random DAGs and stream assignments, reuse vs no
reuse, single vs multi-stream, weight deduplication, the lower bound and the report."""
import random

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.frontend.onnx import convert_onnx
from atc_py.om import read_om
from atc_py.passes.memcheck import conflicts
from atc_py.passes.memory import plan_memory
from atc_py.passes.memory_buffers import OUTPUT_MARK, collect_buffers
from atc_py.passes.memory_greedy import conflict_matrix
from atc_py.passes.streams import assign_streams
from atc_py.platform import load_soc
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import MODELS

SOC = load_soc("Ascend910B1")
SHAPE = [4, 48]


def random_dag(seed: int, n_ops: int = 24):
    """Random DAG of unary/binary/concat-free elementwise ops over one shape, several outputs."""
    rng = random.Random(seed)
    tensors, nodes = ["x0", "x1"], []
    for k in range(n_ops):
        kind = rng.choice(["Relu", "Sigmoid", "Tanh", "Add", "Mul", "Sub"])
        a = rng.choice(tensors[-6:]) if rng.random() < 0.7 else rng.choice(tensors)
        ins = [a] if kind in ("Relu", "Sigmoid", "Tanh") else [a, rng.choice(tensors)]
        nodes.append(helper.make_node(kind, ins, [f"t{k}"], name=f"n{k}"))
        tensors.append(f"t{k}")
    consumed = {i for nd in nodes for i in nd.input}
    outs = [t for t in tensors[2:] if t not in consumed] or [tensors[-1]]
    g = helper.make_graph(nodes, f"dag{seed}", [helper.make_tensor_value_info(x, TensorProto.FLOAT, SHAPE)
                                                for x in ("x0", "x1")],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, SHAPE) for o in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("seed", range(40))
def test_no_two_possibly_overlapping_tensors_share_bytes(seed):
    graph, _ = convert_onnx(random_dag(seed))
    rng = random.Random(1000 + seed)
    tasks = [n.name for n in graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")]
    plans = [assign_streams(graph), assign_streams(graph, single_stream=True),
             assign_streams(graph, forced={t: rng.randrange(4) for t in tasks})]
    for sp in plans:
        ws = {t: [rng.choice([0, 1000, 5000])] for t in tasks if rng.random() < 0.3}
        plan = plan_memory(graph, ws, sp)
        assert conflicts(graph, plan, sp) == [], (seed, sp.stream_of)
        # workspaces never overlap a tensor or another workspace of a task that may run at the same time
        spans = [(off, off + size, name) for name, lst in plan.workspace.items() for off, size in lst if size]
        for i, (a0, a1, na) in enumerate(spans):
            for b0, b1, nb in spans[i + 1:]:
                if a0 < b1 and b0 < a1:
                    assert sp.happens_before(na, nb) or sp.happens_before(nb, na)


@pytest.mark.parametrize("seed", range(6))
def test_random_dags_simulate_without_hazards_and_match_onnxruntime(tmp_path, seed):
    model = random_dag(seed)
    p = tmp_path / "m.om"
    # fp32 kernels against onnxruntime's fp32 (the default force_fp16 would run these vector ops in fp16)
    p.write_bytes(atc_py.build(model, {"ge.socVersion": "Ascend910B1",
                                       "ge.exec.precision_mode": "must_keep_origin_dtype"}).om)
    m = load_model(str(p))
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2)]
    outs, stats = Simulation(m).run(xs)
    assert stats.hazards == []
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x0": xs[0], "x1": xs[1]})
    for o, e in zip(outs, ref):
        np.testing.assert_allclose(o, e, rtol=1e-5, atol=1e-6)


def run_sample(tmp_path, name, **opts):
    p = tmp_path / f"{name}{len(opts)}.om"
    r = atc_py.build(str(MODELS / f"{name}.onnx"), {"ge.socVersion": "Ascend910B1", **opts})
    p.write_bytes(r.om)
    m = load_model(str(p))
    x = [np.random.default_rng(0).standard_normal(io.desc.shape).astype(io.desc.dtype) for io in m.inputs]
    outs, stats = Simulation(m).run(x)
    return r, outs, stats


@pytest.mark.parametrize("name", ["small_cnn", "small_transformer", "inception_block"])
def test_disabling_reuse_changes_memory_not_outputs(tmp_path, name):
    r1, o1, s1 = run_sample(tmp_path, name)
    r0, o0, s0 = run_sample(tmp_path, name, **{"ge.exec.disableReuseMemory": "1"})
    assert r0.summary["memory_size"] > r1.summary["memory_size"]
    assert s0.hazards == s1.hazards == []
    for a, b in zip(o1, o0):
        np.testing.assert_array_equal(a, b)


def test_multi_stream_is_identical_and_not_slower_on_a_branchy_model(tmp_path):
    rm, om, sm = run_sample(tmp_path, "inception_block")
    rs, os_, ss = run_sample(tmp_path, "inception_block", **{"ge.enableSingleStream": "true"})
    assert rm.summary["stream_num"] >= 4 and rs.summary["stream_num"] == 1
    assert rm.summary["event_num"] > 0 and rs.summary["event_num"] == 0
    np.testing.assert_array_equal(om[0], os_[0])
    assert sm.e2e_ns <= ss.e2e_ns
    assert sm.hazards == []


def test_events_only_where_data_crosses_streams():
    graph, _ = convert_onnx(random_dag(3))
    sp = assign_streams(graph)
    from atc_py.passes.streams import task_producers
    crossing = {(p.name, n.name) for n in graph.nodes if n.name in sp.stream_of
                for p in task_producers(n) if sp.stream_of[p.name] != sp.stream_of[n.name]}
    assert sp.num_events <= len(crossing)
    for n, evs in sp.waits.items():
        assert any(sp.stream_of[p.name] != sp.stream_of[n] for p in task_producers(graph.node(n)))


@pytest.mark.parametrize("name", ["small_cnn", "small_transformer", "inception_block", "decoder_step"])
def test_planned_memory_within_10_percent_of_lower_bound(name):
    for sink in ("0", "1"):
        r = atc_py.build(str(MODELS / f"{name}.onnx"), {"ge.socVersion": "Ascend910B1",
                                                         "ge.tiling_schedule_optimize": sink})
        if r.summary["memory_lower_bound"]:
            assert r.summary["memory_size"] <= 1.10 * r.summary["memory_lower_bound"]
            assert r.summary["memory_size"] >= r.summary["memory_lower_bound"] * 0.999


def test_identical_constants_are_stored_once():
    w = numpy_helper.from_array(np.arange(64, dtype=np.float32).reshape(4, 16), "w1")
    w2 = numpy_helper.from_array(np.arange(64, dtype=np.float32).reshape(4, 16), "w2")
    nodes = [helper.make_node("Add", ["x", "w1"], ["a"]), helper.make_node("Mul", ["a", "w2"], ["y"])]
    g = helper.make_graph(nodes, "d", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [w, w2])
    r = atc_py.build(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                     {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"})
    assert r.summary["weight_size"] == 512 + 256  # the start offset + one 256-byte constant
    from atc_py.om import partitions as pt
    from atc_py.proto import ge_ir_pb2 as ge
    md = ge.ModelDef.FromString(read_om(r.om).models[0].get(pt.MODEL_DEF))
    offsets = {op.attr["value"].t.desc.data_offset for op in md.graph[0].op if op.type == "Const"}
    assert offsets == {512}


def test_cli_memory_and_stream_flags(atc, tmp_path):
    args = ["--model", str(MODELS / "inception_block.onnx"), "--framework=5", "--soc_version=Ascend910B1"]
    code, out, _ = atc(*args, f"--output={tmp_path / 'a'}", "--enable_single_stream=maybe")
    assert code == 255 and "E10005" in out
    code, out, _ = atc(*args, f"--output={tmp_path / 'b'}", "--enable_single_stream=true", "--disable_reuse_memory=1")
    assert code == 0 and "1 stream(s)" in out
    code, info, _ = atc("--mode=6", f"--om={tmp_path / 'b.om'}")
    assert "reuse off" in info and "streams  : 1" in info


def test_planning_scales_linearly_enough():
    """Not a timing assertion: the planner's work on a long chain stays proportional (no pairwise blow-up)."""
    nodes, cur = [], "x"
    for i in range(600):
        nodes.append(helper.make_node("Relu" if i % 2 else "Sigmoid", [cur], [f"t{i}"], name=f"n{i}"))
        cur = f"t{i}"
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [8, 64])])
    graph, _ = convert_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    plan = plan_memory(graph, {}, assign_streams(graph))
    assert plan.memory_size <= 1.10 * plan.lower_bound


def test_a_plan_that_clobbers_a_model_output_is_reported(tmp_path):
    """A later task writing over an output its producer already wrote is caught (the host reads outputs
    after the model: no task reads them, so only this check sees it)."""
    from atc_py.common.errors import AtcError
    from atc_py.engines.aicore import kernel_of
    from atc_py.engines.args import ADDR, parse
    model = random_dag(1)
    p = tmp_path / "m.om"
    p.write_bytes(atc_py.build(model, {"ge.socVersion": "Ascend910B1", "ge.enableSingleStream": "true",
                                       "optimization_switch": "autofuse:off"}).om)   # one task per op
    m = load_model(str(p))
    first_out = m.outputs[0]
    last = m.tasks[-1]
    k = kernel_of(last)
    addrs, _ = parse(k.context.args_format, k.args)
    items = [i.strip("{}") for i in k.context.args_format.replace("}{", "} {").split()]
    slot = items.index("o0")
    k.args = k.args[:8 * slot] + ADDR.pack(first_out.address) + k.args[8 * slot + 8:]
    xs = [np.zeros(SHAPE, np.float32)] * 2
    with pytest.raises(AtcError, match="E30005"):
        Simulation(m).run(xs)


@pytest.mark.parametrize("seed", range(12))
def test_conflict_matrix_is_the_pairwise_happens_before_test(seed):
    """The planner's numpy matrix against the definition, pair by pair: two buffers may share bytes only if
    their topological lifetimes are disjoint and (with several streams) every user of one happens strictly
    before every user of the other; nothing is apart after a graph output (the host reads it last)."""
    graph, _ = convert_onnx(random_dag(seed, 30))
    rng = random.Random(2000 + seed)
    tasks = [n.name for n in graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")]
    sp = assign_streams(graph, forced={t: rng.randrange(4) for t in tasks})
    plan = plan_memory(graph, {}, sp)
    items, _, _ = collect_buffers(graph, plan, {t: [512] for t in tasks if rng.random() < 0.3})
    matrix = conflict_matrix(items, sp)

    def apart(u1, u2):
        if OUTPUT_MARK in u1:
            return False
        u2 = u2 - {OUTPUT_MARK}
        return all(a not in u2 and sp.happens_before(a, b) for a in u1 for b in u2)
    for i, (_, f1, l1, _, u1) in enumerate(items):
        for j, (_, f2, l2, _, u2) in enumerate(items):
            if i != j:
                expect = (f1 <= l2 and l1 >= f2) or not (apart(u1, u2) or apart(u2, u1))
                assert matrix[i, j] == expect, (items[i], items[j])
    assert not matrix.all()   # some pairs may share: the test is not vacuous


@pytest.mark.parametrize("seed", range(4))
def test_above_the_greedy_limit_the_free_list_plan_stays_valid(monkeypatch, seed):
    """Graphs with more buffers than GREEDY_MAX_BUFFERS keep the free-list plan and the topological bound;
    the plan is still conflict-free, and no smaller than greedy-by-size's."""
    from atc_py.passes import memory_greedy
    graph, _ = convert_onnx(random_dag(seed, 40))
    rng = random.Random(seed)
    tasks = [n.name for n in graph.nodes if n.op_type not in ("Data", "Const", "NetOutput")]
    sp = assign_streams(graph, forced={t: rng.randrange(4) for t in tasks})
    greedy = plan_memory(graph, {}, sp)
    monkeypatch.setattr(memory_greedy, "GREEDY_MAX_BUFFERS", 1)
    kept = plan_memory(graph, {}, sp)
    assert conflicts(graph, kept, sp) == []
    assert kept.memory_size > greedy.memory_size and kept.lower_bound < greedy.lower_bound   # the limit took effect
