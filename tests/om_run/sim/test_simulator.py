"""The simulator: scheduler semantics on hand-built task lists, prefetch/UPDATE, memory hazards,
cost sanity against roofline bounds, host runtime (syncs, tiling cache, pipeline threads), reports."""
import csv
import io
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.om import task_types as tt
from atc_py.platform import load_soc
from atc_py.proto import ge_ir_pb2 as ge
from om_run.load.loader import load_model
from om_run.sim.device import DeviceRun
from om_run.sim.host import Simulation
from om_run.sim.machine import Job, Machine
from om_run.sim.profile import RuntimeProfile
from om_run.sim.program import Call, Program, SimTask
from om_run.sim.report import (
    OP_SUMMARY_COLUMNS,
    chrome_trace,
    op_summary_csv,
    summary_json,
)
from tests.helpers import MODELS, PLUGIN

PROF = RuntimeProfile()
SOC = load_soc("Ascend910B1")


# -- hand-built task lists ------------------------------------------------------------------------------
def kernel(tid, stream, blocks, block_ns, core="AIV", name="k"):
    op = ge.OpDef(name=f"{name}{tid}", type="Relu", id=tid)
    t = SimTask(tid, tt.KERNEL, stream, op=op, core_type=core, name=op.name)
    t.calls = [Call(op, {}, b"", False, blocks, 0, block_ns)]
    return t


def ev(tid, kind, stream, event):
    return SimTask(tid, kind, stream, event=event)


def run(tasks, soc=SOC):
    prog = Program(None, tasks, {}, {t.op.id: t.id for t in tasks if t.calls}, {})
    res = DeviceRun(prog, Machine(soc, PROF), PROF, None).run(0)
    return {r.task: r for r in res.records}, res


def test_stream_is_in_order_and_event_wait_blocks_until_record_plus_notify():
    tasks = [kernel(0, 0, 1, 50_000), ev(1, tt.EVENT_RECORD, 0, 0),
             ev(2, tt.EVENT_WAIT, 1, 0), kernel(3, 1, 1, 1000)]
    r, _ = run(tasks)
    assert r[1].start >= r[0].end
    assert r[2].start >= r[1].end + PROF.event_notify_ns
    assert r[3].start >= r[2].end


def test_blocks_run_in_waves_over_free_cores():
    n = SOC.vector_core_cnt  # 48 AIV cores
    r, _ = run([kernel(0, 0, n, 10_000)])
    one_wave = r[0].end - r[0].start
    r, _ = run([kernel(0, 0, n + 1, 10_000)])
    assert r[0].end - r[0].start == 2 * one_wave


def test_kernels_of_two_streams_share_the_cores():
    n = SOC.vector_core_cnt
    alone, _ = run([kernel(0, 0, n // 2, 10_000)])
    together, _ = run([kernel(0, 0, n // 2, 10_000), kernel(1, 1, n // 2, 10_000)])
    assert together[0].start == together[1].start  # both fit: they overlap
    crowded, _ = run([kernel(0, 0, n, 10_000), kernel(1, 1, n, 10_000)])
    assert crowded[1].end - crowded[0].start >= 2 * (alone[0].end - alone[0].start)  # one waits for cores


def test_mix_blocks_take_cube_and_vector_cores_on_split_soc():
    def busy(soc):
        m = Machine(soc, PROF)
        m.run_alone(0, Job("MIX", 4, block_ns=1000))
        return {name: b for name, b, _ in m.pools()}
    split = busy(SOC)
    assert split["AI Core (cube)"] == 4000 and split["Vector Core"] == 8000
    assert busy(load_soc("Ascend310P3")) == {"AI Core": 4000, "AICPU": 0}


def test_a_unit_is_active_while_any_of_its_cores_is_busy():
    """Active time (the utilisation's "busy" shares) is the union of the unit's kernels, not their sum nor core-ns:
    on the event-queue path, on the inline path and on the AICPU pool."""
    import heapq
    m = Machine(SOC, PROF)
    heap = []
    m.bind(lambda t, fn, *a: heapq.heappush(heap, (t, len(heap), fn, a)))
    m.submit(0, Job("AIC", 2, block_ns=10_000))
    heapq.heappush(heap, (5_000, -1, lambda t: m.submit(t, Job("AIC", 1, block_ns=10_000)), ()))
    while heap:
        t, _, fn, a = heapq.heappop(heap)
        fn(t, *a)
    assert m.active() == {"AI Core (cube)": 15_000, "Vector Core": 0, "AICPU": 0}
    assert m.pools()[0][1] == 30_000           # core-ns: 2 blocks x 10 us + 1 block x 10 us
    inline = Machine(SOC, PROF)
    assert inline.run_inline(100, Job("AIV", 4, block_ns=1000)) == 1100
    for start, dur in ((0, 100), (50, 100), (500, 10)):
        inline.run_aicpu(start, dur)
    assert inline.active() == {"AI Core (cube)": 0, "Vector Core": 1000, "AICPU": 160}


def test_deadlock_on_a_wait_nobody_records():
    with pytest.raises(AtcError, match="deadlock"):
        run([ev(0, tt.EVENT_WAIT, 0, 5), kernel(1, 0, 1, 10)])


# -- tiling sink: prefetch window and UPDATE --------------------------------------------------------------
def trilu_sink_model(tmp_path, soc, nops=None):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Add", ["kin", "one"], ["k"], name="k_plus_one"),
             helper.make_node("Trilu", ["r", "k"], ["y"], name="tri")]
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8, 8]),
                                       helper.make_tensor_value_info("kin", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8, 8])],
                          [onnx.numpy_helper.from_array(np.array(1, np.int64), "one")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    opts = {"ge.socVersion": soc, "ge.tiling_schedule_optimize": "1",
            "ge.exec.precision_mode": "must_keep_origin_dtype"}   # fp32 kernels: exact against numpy
    if nops is not None:
        opts["debug_sink_nops"] = str(nops)
    p = tmp_path / f"t{soc}{nops}.om"
    p.write_bytes(atc_py.build(m, opts).om)
    return load_model(str(p))


def sim_run(model, inputs=None, **kw):
    return Simulation(model, **kw).run(inputs)


@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310P3"])
def test_prefetch_hazard_iff_fewer_nops_than_prefetch_num(tmp_path, soc):
    n = load_soc(soc).prefetch_num
    x = np.random.default_rng(0).standard_normal((4, 8, 8)).astype(np.float32)
    ok = trilu_sink_model(tmp_path, soc, n)
    outs, stats = sim_run(ok, [x, np.array(0, np.int64)])
    assert stats.hazards == []
    np.testing.assert_allclose(outs[0], np.triu(np.maximum(x, 0), 1))
    bad = trilu_sink_model(tmp_path, soc, n - 1)
    with pytest.raises(AtcError, match=r"E30005.*prefetched before UPDATE task \d+ patched it"):
        sim_run(bad, [x, np.array(0, np.int64)])
    outs, stats = sim_run(bad, [x, np.array(0, np.int64)], allow_hazards=True)
    (h,) = stats.hazards
    assert h.kind == "prefetch" and h.other >= 0 and h.task != h.other
    assert not np.allclose(outs[0], np.triu(np.maximum(x, 0), 1))  # the kernel never wrote its output


def test_update_patches_before_the_kernel_and_flows_are_recorded(tmp_path):
    model = trilu_sink_model(tmp_path, "Ascend910B1")
    _, stats = sim_run(model, [np.ones((4, 8, 8), np.float32), np.array(2, np.int64)])
    rec = {r.type: r for r in stats.records}
    assert rec["UPDATE"].end <= rec["ALL_KERNEL"].start
    assert rec["PREPROCESS_KERNEL"].end <= rec["UPDATE"].start
    assert rec["ALL_KERNEL"].block_dim != 0xFFFFFFFF
    kinds = {k for k, _, _ in stats.flows}
    assert kinds == {"event", "update"}


# -- memory hazards ---------------------------------------------------------------------------------------
def test_removed_event_wait_is_a_memory_hazard(tmp_path):
    model = trilu_sink_model(tmp_path, "Ascend910B1")
    # the attached stream's wait for k = kin + 1 (produced on the main stream) is removed
    first = next(i for i, t in enumerate(model.tasks) if t.type == tt.PREPROCESS_KERNEL)
    assert (model.tasks[first - 2].type, model.tasks[first - 1].type) == (tt.EVENT_RECORD, tt.EVENT_WAIT)
    del model.tasks[first - 2:first]
    for k, t in enumerate(model.tasks):
        t.id = k
    with pytest.raises(AtcError, match=r"reads .* before its producer task \d+ \((ALL_)?KERNEL k_plus_one: Add\) finished"):
        sim_run(model, [np.ones((4, 8, 8), np.float32), np.array(2, np.int64)])


def test_broken_memory_plan_is_a_memory_hazard_on_two_streams(tmp_path):
    """Two independent chains on two streams, one output moved onto the other chain's live input."""
    r1 = kernel(0, 0, 1, 50_000)
    r2 = kernel(1, 1, 1, 1_000)
    from om_run.sim.hazards import Access, analyse
    accesses = {0: [Access(0, 0x1000, 0x2000, False), Access(0, 0x4000, 0x5000, True)],
                1: [Access(1, 0x3000, 0x3100, False), Access(1, 0x1000, 0x1100, True)]}  # overwrites task 0's input
    prog = Program(None, [r1, r2], analyse(accesses, [0, 1]), {0: 0, 1: 1}, {})
    with pytest.raises(AtcError, match=r"overwrites \[0x1000, 0x1100\) .* while task 0 .* has still to read it"):
        DeviceRun(prog, Machine(SOC, PROF), PROF, None).run(0)


def test_samples_have_no_hazards():
    for name, plugin in (("small_cnn", ""), ("small_transformer", ""), ("decoder_step", ""),
                         ("superkernel", ""), ("custom_op", str(PLUGIN))):
        for sink in ("0", "1"):
            om = atc_py.build(str(MODELS / f"{name}.onnx"), {"ge.socVersion": "Ascend910B1",
                                                             "ge.tiling_schedule_optimize": sink, "op_plugin": plugin}).om
            import os
            import tempfile
            with tempfile.TemporaryDirectory() as d:
                p = os.path.join(d, "m.om")
                open(p, "wb").write(om)
                _, stats = sim_run(load_model(p), None, compute=False)
            assert stats.hazards == [], name


# the roofline checks (every kernel and every overlap of kernels against the SoC's peaks, large ops within 2x)
# are in test_fidelity.py; the old "ddr_rate x cores" bound here was not the chip's bandwidth


# -- host runtime -------------------------------------------------------------------------------------------
def decoder(tmp_path, soc, sink):
    p = tmp_path / f"d{soc}{sink}.om"
    p.write_bytes(atc_py.build(str(MODELS / "decoder_step.onnx"),
                               {"ge.socVersion": soc, "ge.tiling_schedule_optimize": sink}).om)
    model = load_model(str(p))
    with np.load(MODELS / "decoder_step.inputs.npz") as z:
        return model, [z[io.name] for io in model.inputs]


@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310P3"])
def test_sink_decoder_has_no_mid_model_sync_and_is_faster(tmp_path, soc):
    m1, x = decoder(tmp_path, soc, "1")
    m0, _ = decoder(tmp_path, soc, "0")
    o1, s1 = sim_run(m1, x)
    o0, s0 = sim_run(m0, x)
    assert s1.syncs == 0 and s0.syncs >= 1
    assert s1.e2e_ns < s0.e2e_ns
    np.testing.assert_array_equal(o1[0], o0[0])


def test_tiling_cache_and_host_threads_change_host_time_in_the_expected_direction(tmp_path):
    m0, x = decoder(tmp_path, "Ascend910B1", "0")
    base = Simulation(m0, compute=False)
    base.run(None)
    _, warm = base.run(None)                       # second loop: the cache is warm
    _, off = sim_run(m0, None, compute=False, tiling_cache=False)
    assert warm.tiling_cache_hits > 0 and off.tiling_cache_hits == 0
    assert warm.host_ns < off.host_ns
    _, one = sim_run(m0, None, compute=False, host_threads=1)
    _, three = sim_run(m0, None, compute=False, host_threads=3)
    assert three.e2e_ns < one.e2e_ns


def test_sim_config_overrides_and_rejects_unknown(tmp_path):
    m1, x = decoder(tmp_path, "Ascend910B1", "1")
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"aicpu_tiling_ns": 200000}))
    slow = Simulation(m1, RuntimeProfile.load(str(cfg)), compute=False).run(None)[1]
    fast = Simulation(m1, compute=False).run(None)[1]
    assert slow.e2e_ns > fast.e2e_ns
    cfg.write_text(json.dumps({"warp_speed": 1}))
    with pytest.raises(AtcError, match="unknown parameter 'warp_speed'"):
        RuntimeProfile.load(str(cfg))


def test_soc_timings_differ(tmp_path):
    e2e = {soc: sim_run(decoder(tmp_path, soc, "1")[0], None, compute=False)[1].e2e_ns
           for soc in ("Ascend910B1", "Ascend310P3")}
    assert e2e["Ascend910B1"] != e2e["Ascend310P3"]


# -- reports --------------------------------------------------------------------------------------------------
def test_reports_parse(tmp_path, om_run):
    m1, x = decoder(tmp_path, "Ascend910B1", "1")
    _, stats = sim_run(m1, x)
    rows = list(csv.reader(io.StringIO(op_summary_csv(stats, "d"))))
    assert rows[0] == OP_SUMMARY_COLUMNS and len(rows) > 10
    trace = json.loads(json.dumps(chrome_trace(stats)))
    phases = {e["ph"] for e in trace["traceEvents"]}
    assert {"X", "M", "s", "f"} <= phases
    summary = summary_json([stats], "d", "Ascend910B1")
    for key in ("e2e_us", "host_us", "device_us", "host_device_syncs", "hazards", "tasks", "utilisation"):
        assert key in summary
    om = tmp_path / "cli.om"
    om.write_bytes(atc_py.build(str(MODELS / "decoder_step.onnx"), {"ge.socVersion": "Ascend910B1"}).om)
    code, out, err = om_run(str(om), "--no-compute", "--loop", "3", "--summary-json", str(tmp_path / "s.json"),
                            "--profile", str(tmp_path / "prof"), "--host-threads", "3", "--tiling-cache", "off")
    assert code == 0, err
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["loops"] == 3 and s["host_device_syncs"] >= 1 and s["tiling_cache_hits"] == 0
    assert "median" in out and "output" not in out.split("[SIM]")[-1]
    assert (tmp_path / "prof" / "op_summary.csv").is_file()
    json.loads((tmp_path / "prof" / "trace.json").read_text())


def test_op_summary_gives_each_kernel_its_roofline_bound_and_useful_work(tmp_path):
    """A matmul-heavy model: its MatMul rows name the cube as bound with useful FLOPs = 2 M K N; every kernel's
    duration is at least its roofline; utilisation counts useful work (cube: FLOPs / peak), not busy cores."""
    n = 1024
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["m"]), helper.make_node("Relu", ["m"], ["y"])], "mm",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [n, n]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT16, [n, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [n, n])])
    p = tmp_path / "mm.om"
    p.write_bytes(atc_py.build(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                               {"ge.socVersion": "Ascend910B1", "optimization_switch": "relu_fusion:off"}).om)
    _, stats = sim_run(load_model(str(p)), None, compute=False)
    rows = list(csv.DictReader(io.StringIO(op_summary_csv(stats, "mm"))))
    mm = next(r for r in rows if r["OP Type"] == "MatMulV2")
    relu = next(r for r in rows if r["OP Type"] == "Relu")
    assert mm["Bound"] == "cube" and int(mm["FLOPs"]) == 2 * n ** 3 and relu["Bound"] == "memory"
    for r in (mm, relu):
        assert float(r["Task Duration(us)"]) >= float(r["Roofline(us)"]) > 0
        assert float(r["Duration/Roofline"]) >= 1
    util = stats.utilisation()
    busy_cube = stats.unit_busy["AI Core (cube)"][0] / (SOC.cube_cores * stats.e2e_ns)
    assert 0 < util["cube"] < busy_cube     # useful FLOPs at peak take less than the cores were held
    assert util["cube"] == pytest.approx(2 * n ** 3 / (SOC.cube_flops_per_ns("float16") * stats.e2e_ns))


def test_bandwidth_is_shared_max_min_fairly():
    from om_run.sim.machine import fair_shares
    assert fair_shares([1.0, 10.0, 10.0], 9.0) == [1.0, 4.0, 4.0]
    assert fair_shares([1.0, 2.0], 10.0) == [1.0, 2.0]
    # two memory-bound kernels of one stream each: together they take as long as one after the other
    m = Machine(SOC, PROF)
    from atc_py.ops.core.cost import BlockCost
    mb = 1 << 20
    jobs = [Job("AIC", 4, BlockCost(0, 0, 10, 0, 64 * mb), moved=256 * mb),
            Job("AIV", 4, BlockCost(0, 0, 10, 0, 64 * mb), moved=256 * mb)]
    done = []
    import heapq
    heap = []
    m.bind(lambda t, fn, *a: heapq.heappush(heap, (t, len(heap), fn, a)))
    for j in jobs:
        j.on_done = done.append
        m.submit(0, j)
    while heap:
        t, _, fn, a = heapq.heappop(heap)
        fn(t, *a)
    assert max(done) >= 2 * 256 * mb / (SOC.dram_bytes_per_ns * PROF.dram_efficiency) - 1
    assert m.dram_bytes == 512 * mb


# -- kernels read device memory through read-only views -------------------------------------------------
def test_kernels_read_read_only_views_and_outputs_aliasing_memory_are_copied(tmp_path, monkeypatch):
    """Inputs are views (no copy per read); a kernel cannot write through them, and an output that is a view
    of device memory is copied when the kernel runs, so later writes to that memory do not change it."""
    from atc_py.ir.graph import TensorDesc
    from atc_py.ops import get_op
    from om_run.sim import device as sim_device
    from om_run.sim.device_memory import DeviceMemory

    mem = DeviceMemory(0x1000, 64, 0x8000, b"\0" * 16)
    desc = TensorDesc((4,), "float32")
    mem.write(0x1000, np.arange(4, dtype=np.float32))
    v = mem.view(0x1000, desc)
    assert mem.holds(v) and not mem.holds(v.copy()) and not v.flags.writeable
    with pytest.raises(ValueError):
        v += 1

    relu = get_op("Relu")
    monkeypatch.setattr(type(relu), "compute", lambda self, args, inputs: [inputs[0]])   # an aliasing kernel
    written = []
    orig_land = sim_device.DeviceRun._land

    def land(self, dst, arr):       # where outputs land (on the compute lane too)
        written.append(self.mem.holds(arr))
        orig_land(self, dst, arr)
    monkeypatch.setattr(sim_device.DeviceRun, "_land", land)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])
    p = tmp_path / "relu.om"
    p.write_bytes(atc_py.build(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                               {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}).om)
    x = np.arange(16, dtype=np.float32).reshape(2, 8) - 8
    outs, _ = sim_run(load_model(str(p)), [x])
    np.testing.assert_array_equal(outs[0], x)          # the "kernel" passed its input through
    assert written == [False]                          # ...as a copy, not as a view of device memory


def test_weights_are_loaded_once_per_simulation(monkeypatch):
    """Like a model load: --loop N executions share the weights in device memory (no copy per execution)."""
    from om_run.sim import host as sim_host
    calls = []
    orig = sim_host.load_weights
    monkeypatch.setattr(sim_host, "load_weights", lambda w, *a: calls.append(len(w)) or orig(w, *a))
    p = MODELS / "small_cnn.onnx"
    import pathlib
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        om = pathlib.Path(d) / "m.om"
        atc_py.build(str(p), {"ge.socVersion": "Ascend910B1"}).save(om)
        model = load_model(str(om))
    sim = Simulation(model)
    x = [np.ones((1, 3, 32, 32), np.float32)]
    first, _ = sim.run(x)
    second, _ = sim.run(x)
    assert len(calls) == 1 and calls[0] > 0
    np.testing.assert_array_equal(first[0], second[0])


def test_fp16_weights_of_cube_kernels_are_widened_once_with_the_same_bits(monkeypatch):
    """Cube kernels compute in fp32: their fp16 weights are widened once per loaded model, not per execution,
    and the outputs are bit-identical to widening inside the kernel every time."""
    import pathlib
    import tempfile

    from om_run.sim import program
    with tempfile.TemporaryDirectory() as d:
        om = pathlib.Path(d) / "m.om"
        atc_py.build(str(MODELS / "small_cnn.onnx"), {"ge.socVersion": "Ascend910B1"}).save(om)   # force_fp16
        model = load_model(str(om))
    x = [np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)]
    sim = Simulation(model)
    first, _ = sim.run(x)
    cache = sim.widened[model.name]
    assert cache and all(a.dtype == np.float32 and not a.flags.writeable for a in cache.values())
    kept = {k: id(a) for k, a in cache.items()}
    second, _ = sim.run(x)
    assert {k: id(a) for k, a in sim.widened[model.name].items()} == kept     # not converted again
    monkeypatch.setattr(program.Call, "widens_fp16_weights", property(lambda self: False))
    plain, _ = Simulation(model).run(x)
    assert first[0].tobytes() == second[0].tobytes() == plain[0].tobytes()


def test_a_task_queue_thread_takes_the_launches_off_the_first_thread(tmp_path):
    # torch_npu's TASK_QUEUE_ENABLE=1: InferShape/tiling and allocation on one thread, launches on a second; 2: the
    # allocations move to the second thread too. Each split shortens the first thread's work per op
    m0, _ = decoder(tmp_path, "Ascend910B1", "0")
    one = sim_run(m0, None, compute=False, host_threads=1)[1]
    tq1 = sim_run(m0, None, compute=False, host_threads=(0, 0, 1))[1]
    tq2 = sim_run(m0, None, compute=False, host_threads=(0, 1, 1))[1]
    assert {e.thread for e in tq1.host_events} >= {"InferShape+Tiling / Alloc", "Launch"}
    assert {e.thread for e in tq2.host_events} >= {"InferShape+Tiling", "Alloc / Launch"}
    assert tq2.issued_ns <= tq1.issued_ns < one.issued_ns
    first = [e for e in tq1.host_events if e.thread == "InferShape+Tiling / Alloc" and e.name != "wait"]
    assert all(a.end <= b.start for a, b in zip(first, first[1:]))       # one thread: its work never overlaps
