"""The simulator's fast paths give the same simulated run as the event queue they bypass — every record's
times, the traffic, the units' busy time, the L2's contents, the outputs' bits — and are taken. Speed itself is
measured in bench/speed_table.py, never here."""
import numpy as np
import pytest

import atc_py
from atc_py.platform import load_soc
from om_run.load.loader import load_model
from om_run.sim.device import DeviceRun
from om_run.sim.host import Simulation
from om_run.sim.machine import Job, Machine
from om_run.sim.profile import RuntimeProfile
from tests.helpers import MODELS

SOC = "Ascend910B1"


def compiled(tmp_path, name, **options):
    p = tmp_path / f"{name}.om"
    p.write_bytes(atc_py.build(str(MODELS / name), {"ge.socVersion": SOC, **options}).om)
    return load_model(str(p))


def inputs_of(model, npz):
    if npz is None:
        rng = np.random.default_rng(0)
        return [rng.standard_normal(io.desc.shape).astype(io.desc.dtype) for io in model.inputs]
    with np.load(MODELS / npz) as z:
        return [z[io.name] for io in model.inputs]


def runs(model, inputs, compute, loops=2):
    """Two executions (the L2 carries over); everything the reports and the outputs derive from."""
    sim = Simulation(model, compute=compute)
    out = []
    for _ in range(loops):
        outs, s = sim.run(inputs if compute or inputs is not None else None)
        recs = [(r.task, r.stream, r.type, r.name, r.arrive, r.start, r.end, r.block_dim, r.unit, r.bytes,
                 r.dram_bytes, r.flops) for r in s.records]
        out.append((recs, s.e2e_ns, s.device_ns, s.host_ns, s.unit_busy, [h.as_dict() for h in s.hazards], s.flows,
                    None if outs is None else [np.asarray(o).tobytes() for o in outs]))
    out.append(list(sim.l2.lru.items()))
    return out


@pytest.mark.parametrize("name,npz,options,compute", [
    ("small_cnn.onnx", None, {}, True),
    ("small_cnn.onnx", None, {}, False),
    ("inception_block.onnx", None, {}, True),
    ("superkernel.onnx", "superkernel.inputs.npz", {"ge.tiling_schedule_optimize": "1"}, True),
    ("decoder_step.onnx", "decoder_step.inputs.npz", {"ge.tiling_schedule_optimize": "1",
                                                      "ge.exec.precision_mode": "must_keep_origin_dtype"}, True),
    ("rnn_loop.onnx", None, {}, True),          # label switches: a loop in the task streams
])
def test_inline_kernels_equal_the_event_queue_and_are_taken(tmp_path, monkeypatch, name, npz, options, compute):
    model = compiled(tmp_path, name, **options)
    x = inputs_of(model, npz)
    inline = []
    real = Machine.run_inline

    def counted(self, t, job):
        end = real(self, t, job)
        inline.append(end is not None)
        return end
    monkeypatch.setattr(Machine, "run_inline", counted)
    fast = runs(model, x, compute)
    assert any(inline), "no kernel took the inline path"
    monkeypatch.setattr(DeviceRun, "inline_kernels", False)
    inline.clear()
    slow = runs(model, x, compute)
    assert not inline
    assert fast == slow


def test_run_inline_refuses_without_side_effects_when_the_kernel_cannot_start_alone():
    """More blocks than idle cores (waves), or a kernel already running: None, the machine untouched — the
    caller submits it through the event queue."""
    soc = load_soc(SOC)
    m = Machine(soc, RuntimeProfile())
    m.bind(lambda *a: None)
    big = Job("AIV", m.vector_cores + 1, block_ns=100)
    assert m.run_inline(10, big) is None
    assert (m.now, m.epoch, m.free_aiv, big.start) == (0, 0, m.vector_cores, None)
    m.submit(0, Job("AIV", 1, block_ns=100))
    assert m.run_inline(10, Job("AIV", 1, block_ns=100)) is None


def test_run_inline_equals_submit_and_tick():
    """One kernel alone: the same start, end, busy core-ns and traffic as submit plus the queued tick."""
    soc = load_soc(SOC)
    heap = []

    def at(t, fn, *a):
        heap.append((t, fn, a))
    ends = []
    for inline in (True, False):
        m = Machine(soc, RuntimeProfile())
        m.bind(at)
        job = Job("AIV", 3, block_ns=1234)
        if inline:
            end = m.run_inline(50, job)
        else:
            job.on_done = lambda t: None
            m.submit(50, job)
            while heap:
                t, fn, a = heap.pop(0)
                fn(t, *a)
            end = job.end
        ends.append((end, job.start, job.end, dict(m.busy_ns), m.free_aiv, m.now, m.epoch, m.groups))
    assert ends[0] == ends[1]


def test_l2_resident_counts_whole_inner_pages_like_the_page_by_page_sum():
    """resident() adds the whole pages between a range's two ends at once: the same bytes as summing every
    page's overlap, over random ranges and a changing LRU."""
    import random

    from om_run.sim.l2 import L2Cache
    rng = random.Random(18)
    for cap in (1 << 20, 5000):
        l2 = L2Cache(cap)
        for _ in range(2000):
            lo = rng.randrange(0, 50 * l2.page)
            hi = lo + rng.randrange(1, 8 * l2.page)
            ref = sum(l2._overlap(p, lo, hi) for p in l2._span(lo, hi) if p in l2.lru)
            assert l2.resident(lo, hi) == ref
            l2._touch(lo, hi, rng.random() < 0.5)


def test_holds_answers_a_fresh_array_without_scanning_the_regions(monkeypatch):
    """A kernel's fresh result owns its memory: not device memory, decided without may_share_memory; views
    of device memory are still found."""
    from atc_py.ir.graph import TensorDesc
    from om_run.sim import device_memory as dm
    mem = dm.DeviceMemory(0x1000, 64, 0x8000, b"\0" * 16)
    view = mem.view(0x1000, TensorDesc((4,), "float32"))
    scans = []
    real = np.may_share_memory
    monkeypatch.setattr(dm.np, "may_share_memory", lambda a, b: scans.append(1) or real(a, b))
    assert not mem.holds(np.zeros(4, np.float32)) and not scans
    assert mem.holds(view) and mem.holds(view[1:]) and scans


@pytest.mark.parametrize("name", ["small_cnn.onnx"])
def test_convs_run_inline_write_their_output_where_it_lands_with_the_same_bits(tmp_path, monkeypatch, name):
    """An fp32 Conv2D run inline computes its GEMM into the output's device memory (no copy at its end): taken,
    and the outputs, records and L2 equal the queue path's, where every result is copied in at the end. (An
    NC1HWC0 output is packed on its way out: the path exists for convolutions kept in NCHW, formats:off.)"""
    from atc_py.ops import conv_pool
    model = compiled(tmp_path, name, **{"ge.exec.precision_mode": "must_keep_origin_dtype",
                                        "optimization_switch": "formats:off"})
    x = inputs_of(model, None)
    direct = []
    real = conv_pool.direct_output

    def counted(args, acc, inputs):
        dst = real(args, acc, inputs)
        direct.append(dst is not None)
        return dst
    monkeypatch.setattr(conv_pool, "direct_output", counted)
    fast = runs(model, x, True)
    assert any(direct)
    monkeypatch.setattr(DeviceRun, "inline_kernels", False)
    direct.clear()
    slow = runs(model, x, True)
    assert direct and not any(direct)
    assert fast == slow


def test_conv_direct_output_is_refused_when_an_input_overlaps_it():
    """A residual planned in the output's memory (an in-place add) must be read before the GEMM writes there."""
    from atc_py.ir.graph import TensorDesc
    from atc_py.ops import conv_pool
    from atc_py.ops.core.base import KernelArgs
    buf = np.zeros(64, np.float32)
    dst = buf[:16].reshape(1, 4, 2, 2)
    args = KernelArgs({}, 0, 1, {}, [TensorDesc((1, 4, 2, 2), "float32")], [dst])
    assert conv_pool.direct_output(args, np.float32, [np.ones(4, np.float32)]) is dst
    assert conv_pool.direct_output(args, np.float32, [buf[8:24]]) is None        # overlaps
    assert conv_pool.direct_output(args, np.float64, [np.ones(4, np.float32)]) is None   # a cast at the end


def test_concat_run_inline_writes_where_it_lands_with_the_same_bits(tmp_path, monkeypatch):
    """A ConcatD run inline concatenates straight into the output's device memory; the same outputs and
    records as the queue path, which concatenates into a fresh array and copies it in at the end."""
    from onnx import TensorProto, helper

    from atc_py.ops import shape_layout
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Sigmoid", ["x"], ["s"]),
                           helper.make_node("Concat", ["r", "s", "x"], ["c"], axis=1),
                           helper.make_node("Tanh", ["c"], ["y"])], "cat",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 9, 5, 4])])
    p = tmp_path / "cat.om"
    p.write_bytes(atc_py.build(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                               {"ge.socVersion": SOC, "ge.exec.precision_mode": "must_keep_origin_dtype",
                                "optimization_switch": "autofuse:off"}).om)
    model = load_model(str(p))
    x = inputs_of(model, None)
    direct = []
    real = shape_layout.direct_output
    monkeypatch.setattr(shape_layout, "direct_output", lambda *a: direct.append(real(*a)) or direct[-1])
    fast = runs(model, x, True)
    assert any(d is not None for d in direct)
    monkeypatch.setattr(DeviceRun, "inline_kernels", False)
    direct.clear()
    slow = runs(model, x, True)
    assert direct and all(d is None for d in direct)
    assert fast == slow


def test_device_formats_change_no_number(tmp_path):
    """The same model with its convolutions on NC1HWC0 / FRACTAL_Z (the default) and kept in NCHW (formats:off):
    the same output bits; the 5HD build has its TransData tasks."""
    on = compiled(tmp_path, "small_cnn.onnx", **{"ge.exec.precision_mode": "must_keep_origin_dtype"})
    (tmp_path / "off").mkdir()
    off = compiled(tmp_path / "off", "small_cnn.onnx", **{"ge.exec.precision_mode": "must_keep_origin_dtype",
                                                         "optimization_switch": "formats:off"})
    x = inputs_of(on, None)
    assert any(op.type == "TransData" for op in on.ops.values())
    assert not any(op.type == "TransData" for op in off.ops.values())
    a, _ = Simulation(on).run(x)
    b, _ = Simulation(off).run(x)
    assert all(np.array_equal(p, q) for p, q in zip(a, b))


def test_a_device_format_tensor_is_read_back_from_the_array_its_kernel_wrote(tmp_path, monkeypatch):
    """DeviceMemory.shadow: a 5HD tensor stays in the framework's layout its kernel computed it in; its readers
    take it as it is and its NC1HWC0 bytes are made only when read as bytes (here: never between two kernels) —
    no conversion either way, the same output bits, on every execution (memory reused)."""
    from atc_py.ops.core import execute
    from om_run.sim import device_memory
    model = compiled(tmp_path, "inception_block.onnx", **{"ge.exec.precision_mode": "must_keep_origin_dtype"})
    x = inputs_of(model, None)
    calls = []
    for mod, name in ((execute, "from_device"), (execute, "to_device"), (device_memory, "to_device")):
        real = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _real=real: calls.append(1) or _real(*a))

    def count(shadow: bool):
        monkeypatch.setattr(DeviceRun, "shadow_outputs", shadow)
        calls.clear()
        sim = Simulation(model)
        outs = [sim.run(x)[0] for _ in range(2)]
        return len(calls), outs
    with_shadow, a = count(True)
    without, b = count(False)
    assert with_shadow < without / 4
    assert all(np.array_equal(p, q) for r, s in zip(a, b) for p, q in zip(r, s))


def test_the_shadow_of_bytes_is_dropped_when_they_are_written_and_a_pending_one_written_when_read():
    from atc_py.ir.formats import to_device
    from atc_py.ir.graph import TensorDesc
    from om_run.sim.device_memory import DeviceMemory
    mem = DeviceMemory(0x1000, 4096, 0x100000, b"\0" * 64)
    d = TensorDesc((1, 1, 2, 2, 16), "float32", "NC1HWC0", "NCHW", (1, 3, 2, 2))
    logical = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2) + 1
    device = to_device(logical, "NC1HWC0", "NCHW")
    mem.shadow_put(0x1000, d, logical)
    assert mem.shadow_get(0x1000, d) is logical
    assert mem.shadow_get(0x1000, TensorDesc((1, 1, 2, 2, 16), "float32", "NC1HWC0", "NCHW", (1, 4, 2, 2))) is None
    mem.write(0x1000 + d.nbytes - 4, np.zeros(1, np.float32))     # its last element rewritten
    assert mem.shadow_get(0x1000, d) is None
    mem.shadow_put(0x1000, d, logical)
    mem.write(0x1000 + d.nbytes, np.zeros(4, np.float32))          # next to it: kept
    assert mem.shadow_get(0x1000, d) is logical
    mem.reset()
    assert mem.shadow_get(0x1000, d) is None
    # pending: no bytes until something reads them; then the NC1HWC0 bytes of the array
    mem.shadow_put(0x1000, d, logical, pending=True)
    assert not mem.view(0x1000, d).any()
    assert np.array_equal(mem.read(0x1000, d), device) and mem.pending == 0
    # a pending tensor written over in part keeps the rest of its bytes; written over whole, none are made
    mem.reset()
    mem.shadow_put(0x1000, d, logical, pending=True)
    mem.write(0x1000, np.full(4, 7, np.float32))
    want = device.copy().reshape(-1)
    want[:4] = 7
    assert np.array_equal(mem.read(0x1000, d).reshape(-1), want)
    mem.reset()
    mem.shadow_put(0x1000, d, logical, pending=True)
    mem.write(0x1000, np.full(d.nbytes // 4, 5, np.float32))
    assert mem.pending == 0 and np.all(mem.read(0x1000, d) == 5)


def test_a_pending_tensor_written_over_in_part_keeps_its_other_bytes_until_read(monkeypatch):
    """Memory reuse writes over part of a pending tensor: no kernel takes it any more, its other bytes are made
    only if something reads them; written over whole in two parts, none are made; past REMNANT_BYTES the oldest
    are made at once."""
    from atc_py.ir.formats import to_device
    from atc_py.ir.graph import TensorDesc
    from om_run.sim import device_memory
    from om_run.sim.device_memory import DeviceMemory
    made = []
    real = device_memory.to_device
    monkeypatch.setattr(device_memory, "to_device", lambda *a: made.append(1) or real(*a))
    mem = DeviceMemory(0x1000, 8192, 0x100000, b"\0" * 64)
    d = TensorDesc((1, 1, 2, 2, 16), "float32", "NC1HWC0", "NCHW", (1, 3, 2, 2))
    logical = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2) + 1
    mem.shadow_put(0x1000, d, logical, pending=True)
    mem.write(0x1000 + 64, np.full(4, 9, np.float32))
    assert mem.shadow_get(0x1000, d) is None and not made and mem.pending == 1
    want = to_device(logical, "NC1HWC0", "NCHW").reshape(-1).copy()
    want[16:20] = 9
    assert np.array_equal(mem.read(0x1000, d).reshape(-1), want) and mem.pending == 0
    mem.reset()
    made.clear()
    mem.shadow_put(0x1000, d, logical, pending=True)
    half = d.nbytes // 2
    mem.write(0x1000, np.full(half // 4, 1, np.float32))
    mem.write(0x1000 + half, np.full(half // 4, 2, np.float32))
    assert mem.pending == 0 and not mem.remnants and not made
    mem.reset()
    monkeypatch.setattr(device_memory, "REMNANT_BYTES", logical.nbytes)
    mem.shadow_put(0x1000, d, logical, pending=True)
    mem.shadow_put(0x1000 + d.nbytes, d, logical, pending=True)
    mem.write(0x1000, np.zeros(1, np.float32))
    assert not made
    mem.write(0x1000 + d.nbytes, np.zeros(1, np.float32))      # a second remnant: over the budget, the first made
    assert len(made) == 1 and len(mem.remnants) == 1


def test_a_landing_over_a_remnant_is_recorded_even_when_no_tensor_is_shadowed():
    """The only pending tensor became a remnant (the shadow itself is empty): an output landing over the rest of it
    must still count as written there, or reading that range later would bring the stale tensor's bytes back."""
    from types import SimpleNamespace

    from atc_py.ir.graph import TensorDesc
    from om_run.sim.device import Landing
    from om_run.sim.device_memory import DeviceMemory
    mem = DeviceMemory(0x1000, 8192, 0x100000, b"\0" * 64)
    d = TensorDesc((1, 1, 2, 2, 16), "float32", "NC1HWC0", "NCHW", (1, 3, 2, 2))
    mem.shadow_put(0x1000, d, np.ones((1, 3, 2, 2), np.float32), pending=True)
    half = d.nbytes // 2
    mem.write(0x1000, np.full(half // 4, 2, np.float32))               # first half: now a remnant
    assert not mem.shadow and len(mem.remnants) == 1
    out = TensorDesc((half // 4,), "float32")
    view = mem.out_view(0x1000 + half, out)
    writes = Landing()
    writes.append((view, np.full(half // 4, 3, np.float32)))
    writes.ranges = [(0x1000 + half, out, None)]
    DeviceRun._land_all(SimpleNamespace(mem=mem, _land=lambda dst, arr: np.copyto(dst, arr)), writes)
    assert not mem.remnants and mem.pending == 0
    got = mem.read(0x1000, TensorDesc((d.nbytes // 4,), "float32"))
    assert np.all(got[:half // 4] == 2) and np.all(got[half // 4:] == 3)
