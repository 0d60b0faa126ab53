"""Simulated time a user can trust: over a generated op sweep (tiny to large, both SoCs, fp16 and fp32)
no kernel and no interval of concurrent kernels beats physics, large ops stay within 2x of their roofline, the L2
boundary is continuous, GEMV and full reductions use every core; the published anchors are met and the profile
carries the calibrated values."""
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

from atc_py.platform import load_soc
from om_run.sim.l2 import L2Cache
from om_run.sim.profile import RuntimeProfile
from om_run.sim.roofline import cube_peak
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT))
from bench.fidelity import anchors, calibrate  # noqa: E402
from bench.fidelity.sweep import (  # noqa: E402
    DTYPES,
    LARGE_NS,
    SOCS,
    SWEEP,
    compile_model,
    kernels,
    matmul,
    reduce_sum,
    run_case,
    simulate,
    unary,
)


@pytest.mark.parametrize("soc", SOCS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_no_kernel_beats_its_roofline_and_large_ops_are_within_2x(soc, dtype):
    large = 0
    for case in SWEEP:
        r = run_case(case, soc, dtype)
        t = r.end - r.start
        assert r.roofline_ns > 0 and r.bound in ("cube", "vector", "memory"), case.name
        assert t >= r.roofline_ns, (case.name, t, r.roofline_ns)
        if r.roofline_ns >= LARGE_NS:
            large += 1
            assert t <= 2 * r.roofline_ns, (case.name, t, r.roofline_ns)
    assert large >= 6   # the sweep reaches sizes where launch and head costs no longer matter


@pytest.mark.parametrize("soc", SOCS)
def test_gemv_k_split_and_full_reduction_use_all_cores(soc):
    s = load_soc(soc)
    by_name = {c.name: c for c in SWEEP}
    for name in ("GEMV 1x4096x4096", "MatMul 1x16x65536 (K split)"):
        assert run_case(by_name[name], soc, "float16").block_dim == s.cube_cores, name
    assert run_case(by_name["ReduceSum 64M -> scalar"], soc, "float32").block_dim == s.vector_cores
    assert run_case(by_name["Conv3x3 64ch 56^2"], soc, "float16").block_dim == s.cube_cores


def _interval_physics(records, soc) -> int:
    """For every interval from a kernel's start to a kernel's end, the kernels inside it moved no more DRAM or
    L2 bytes and did no more cube or vector work than the SoC's peaks allow in it. Returns the most kernels
    found overlapping at one time."""
    ks = [r for r in records if r.end > r.start]
    starts, ends = sorted({r.start for r in ks}), sorted({r.end for r in ks})
    for a in starts:
        for b in (e for e in ends if e > a):
            inside = [r for r in ks if r.start >= a and r.end <= b]
            span = b - a
            assert sum(r.dram_bytes for r in inside) <= soc.dram_bytes_per_ns * span * (1 + 1e-9) + 1
            assert sum(r.bytes for r in inside) <= soc.l2_bytes_per_ns * span * (1 + 1e-9) + 1
            assert sum(r.roof_cube_ns for r in inside) <= span * (1 + 1e-9) + 1
            assert sum(r.roof_vector_ns for r in inside) <= span * (1 + 1e-9) + 1
    return max(sum(1 for r in ks if r.start <= t < r.end) for t in starts)


def gemv_and_add(n=4096):
    """A GEMV (cube cores) and an Add (vector cores) on independent branches: on 910B's split cores they run at
    the same time, both memory bound."""
    io = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT16, shape)   # noqa: E731
    g = helper.make_graph([helper.make_node("MatMul", ["v", "w"], ["y1"]), helper.make_node("Add", ["a", "b"], ["y2"])],
                          "two", [io("v", [16, n]), io("w", [n, n]), io("a", [n, n]), io("b", [n, n])],
                          [io("y1", [16, n]), io("y2", [n, n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_concurrent_kernels_share_bandwidth_and_never_beat_physics(tmp_path):
    soc = "Ascend910B1"
    s = load_soc(soc)
    ks = kernels(simulate(compile_model(gemv_and_add(), soc, tmp_path, "two")))
    assert len(ks) == 2 and ks[0].stream != ks[1].stream
    assert _interval_physics(ks, s) == 2                      # they do overlap ...
    union = max(k.end for k in ks) - min(k.start for k in ks)
    assert union >= sum(k.dram_bytes for k in ks) / s.dram_bytes_per_ns   # ... and share the DRAM:
    alone = kernels(simulate(compile_model(gemv_and_add(), soc, tmp_path, "one", **{"ge.enableSingleStream": "true"})))
    assert union >= 0.95 * sum(k.end - k.start for k in alone)   # overlapping gains nothing, both memory bound
    for soc in SOCS:   # the inception block's four branches on their own streams
        inception = compile_model(str(ROOT / "models" / "inception_block.onnx"), soc, tmp_path, "inc" + soc)
        assert _interval_physics(kernels(simulate(inception)), load_soc(soc)) >= 2


def relu_chain(n: int):
    """Relu -> Abs over n fp16 elements (rows of 1024; two kernels, not one fused): the second, one pass and
    memory bound at every size (a softmax's fp32 passes make it vector bound while its data is in the L2), reads
    what the first just wrote."""
    io = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT16, [n // 1024, 1024])   # noqa: E731
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Abs", ["r"], ["y"])],
                          "chain", [io("x")], [io("y")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_l2_boundary_is_continuous(tmp_path):
    """The Abs finds its input in the 16 MB L2 while it fits and in DRAM past that, with time growing
    smoothly through the boundary (no jump when a few bytes more stop fitting)."""
    soc = "Ascend310P3"
    cap = load_soc(soc).l2_size
    # fp16 tensors of cap * f / 2 bytes: the Abs's input and output fill the L2 at f = 1, its input
    # alone at f = 2 (from there on it cannot be resident)
    fs = (0.6, 0.999, 1.001, 1.5, 1.999, 2.001, 3.0)
    sizes = [int(cap * f) // 4 // 1024 * 1024 for f in fs]
    times = []
    for n in sizes:
        second = kernels(simulate(compile_model(relu_chain(n), soc, tmp_path, f"c{n}",
                                                optimization_switch="autofuse:off")))[-1]   # two kernels
        times.append(second.end - second.start)
    assert times == sorted(times)
    for k in (1, 4):   # 0.2 % more bytes across either boundary: 0.2 % more time, not a jump
        assert times[k + 1] / times[k] < 1.01, (fs[k], times[k], times[k + 1])
    assert times[-1] / sizes[-1] > 2 * times[0] / sizes[0]    # from L2 speed to DRAM speed
    # a single cold op: the old "total bytes fit in L2 -> L2 rate" rule jumped 3.4x at one element more
    at = [kernels(simulate(compile_model(unary("Relu", (n,))("float16"), soc, tmp_path, f"u{n}")))[0]
          for n in (cap // 4, cap // 4 + 1)]
    assert (at[1].end - at[1].start) / (at[0].end - at[0].start) < 1.01


def test_l2_residency_is_page_lru_with_write_back():
    l2 = L2Cache(1 << 20)            # 16 pages of 64 KiB
    page = l2.page
    t = l2.access([(0, 8 * page)], [(8 * page, 16 * page)], 16 * page)
    assert (t.hits, t.dram, t.cold_in, t.writeback) == (0, 8 * page, 8 * page, 0)
    t = l2.access([(8 * page, 16 * page)], [(16 * page, 24 * page)], 16 * page)   # evicts the clean input pages
    assert (t.hits, t.dram) == (8 * page, 0)
    t = l2.access([(32 * page, 40 * page)], [], 8 * page)                           # evicts the dirty output
    assert t.writeback == 8 * page and t.dram == 16 * page
    l2.invalidate(16 * page, 24 * page)
    assert l2.resident(16 * page, 24 * page) == 0


@pytest.mark.heavy
def test_published_anchors_are_met_and_the_profile_carries_the_calibration():
    prof = RuntimeProfile()
    assert calibrate.load() == {k: getattr(prof, k) for k in calibrate.load()}
    for a in anchors.ANCHORS:
        if a.target is not None:   # an anchor listed as open is off indeed (a fixed one leaves OPEN)
            assert (a.ratio(a.predict(prof)) <= a.target) == (not a.open), a.name


def test_the_zoo_figures_are_compared_with_the_simulated_ais_bench_throughput():
    """The ModelZoo tables publish ais_bench's 1000 * batch / mean NPU_compute_time: the synchronous execute on
    the host, so the prediction counts the execute's launch and sync and the dispatch between kernels, not only
    the kernels' spans on the device."""
    from bench.fidelity.zoo import ZOO
    from om_run.sim.report import ais_bench_summary
    prof = RuntimeProfile()
    z = ZOO["squeezenet1_1"]
    stats = anchors.zoo_stats("squeezenet1_1", prof)
    predicted = anchors.zoo_throughput("squeezenet1_1")(prof)
    assert predicted == pytest.approx(ais_bench_summary([stats], z.batch)["throughput"])
    npu_ns = stats.e2e_ns - stats.h2d_ns - stats.d2h_ns
    kernel_gaps = len(kernels(stats)) * (prof.sqe_dispatch_ns + prof.kernel_start_ns)
    assert npu_ns >= stats.device_ns + prof.model_execute_launch_ns + prof.stream_sync_ns + kernel_gaps // 2
    assert predicted < z.batch / (stats.device_ns / 1e9)


def test_gemm_fp32_rate_and_efficiency_are_capped_by_physics(tmp_path):
    """Even at the largest values --sim-config accepts, a GEMM does not beat the cube's peak."""
    prof = RuntimeProfile(cube_efficiency=1.0, fp32_cube_rate=0.25)
    soc = load_soc("Ascend910B2")
    for dt in DTYPES:
        (k,) = kernels(simulate(compile_model(matmul(2048, 2048, 2048)(dt), "Ascend910B2", tmp_path, dt), prof))
        assert k.end - k.start >= 2 * 2048 ** 3 / cube_peak(soc, dt)


def test_sim_config_rejects_efficiencies_above_the_peak(tmp_path):
    from atc_py.common.errors import AtcError
    for bad in ('{"cube_efficiency": 1.2}', '{"fp32_cube_rate": 0.3}', '{"vector_efficiency": {"reduce": 2}}',
                '{"dram_efficiency": 0}'):
        p = tmp_path / "c.json"
        p.write_text(bad)
        with pytest.raises(AtcError, match="E30002"):
            RuntimeProfile.load(str(p))
    p.write_text('{"vector_efficiency": {"reduce": 0.5}, "cube_tile_overhead_cycles": 0}')
    prof = RuntimeProfile.load(str(p))
    assert prof.vector_efficiency["reduce"] == 0.5 and prof.vector_efficiency["norm"] == 0.7


def test_efficiency_parameters_move_the_time_they_name(tmp_path):
    model = compile_model(reduce_sum((4096, 4096), [1])("float16"), "Ascend910B1", tmp_path, "r")
    # make the reduction vector bound, then its efficiency decides its time
    slow = RuntimeProfile(vector_efficiency={"reduce": 0.01})
    fast = RuntimeProfile(vector_efficiency={"reduce": 0.02})
    t = [kernels(simulate(model, p))[0] for p in (slow, fast)]
    assert np.isclose((t[0].end - t[0].start) / (t[1].end - t[1].start), 2, rtol=0.1)
