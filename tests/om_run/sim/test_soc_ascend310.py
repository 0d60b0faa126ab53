"""--soc_version=Ascend310 (Atlas 200/300/500, CANN <= 8): builds, runs in om-run with onnxruntime's numbers in
force_fp32, and its simulated time comes from its own platform data (2 AI Cores at 680 MHz, 8 MB L2, LPDDR4X)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import atc_py
from atc_py.platform import load_soc
from atc_py.platform.soc import supported_socs
from tests.helpers.om_files import simulate_one_input

RNG = np.random.default_rng(310)


def conv_relu(channels=64, size=56):
    w = numpy_helper.from_array(RNG.standard_normal((channels, channels, 3, 3)).astype(np.float32) * 0.05, "w")
    b = numpy_helper.from_array(RNG.standard_normal(channels).astype(np.float32), "b")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["c"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [1, channels, size, size])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)], [w, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])




def test_the_platform_data():
    soc = load_soc("Ascend310")
    assert "Ascend310" in supported_socs()
    assert (soc.ai_core_cnt, soc.vector_cores, soc.cube_freq_mhz, soc.l2_size) == (2, 2, 680, 8 << 20)
    assert not soc.cube_vector_split and not soc.model_task_update and soc.prefetch_num == 0
    assert round(soc.cube_flops_per_ns("float16") / 1e3, 1) == 11.1        # 2 x 4096 MAC x 2 x 0.68 GHz
    assert round(soc.cube_flops_per_ns("int8") / 1e3, 1) == 22.3           # "up to 22 TOPS INT8"
    assert soc.dram_bytes_per_ns == 51.2


def test_force_fp32_matches_onnxruntime_and_times_follow_the_platform(tmp_path):
    m = conv_relu()
    x = RNG.standard_normal((1, 64, 56, 56)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    device = {}
    for soc in ("Ascend310", "Ascend310P3"):
        res = atc_py.build(m, {"ge.socVersion": soc, "ge.exec.precision_mode": "force_fp32"})
        assert res.summary["soc_version"] == soc
        got, stats = simulate_one_input(res.om, x, tmp_path, soc)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        device[soc] = stats.device_ns
    # 2 cores at 680 MHz against 310P3's 8 at 1060 MHz: the same conv takes longer, by less than the peak ratio
    peak = load_soc("Ascend310P3").cube_flops_per_ns("float16") / load_soc("Ascend310").cube_flops_per_ns("float16")
    assert 1.5 < device["Ascend310"] / device["Ascend310P3"] <= peak * 1.05



def test_fp32_transcendentals_compute_in_fp16_where_the_soc_has_fp16_intrinsics_only(tmp_path):
    """Ascend310's vexp / vln take float16 only ([AICoreintrinsicDtypeMap]): an fp32 Softmax or Log computes in
    fp16 inside, so its numbers carry fp16's rounding there and not on 310P3, whose vexp takes float32."""
    from atc_py.passes.soc_kernels import fp32_computes_in_fp16
    assert fp32_computes_in_fp16(load_soc("Ascend310"), "SoftmaxV2")
    assert not fp32_computes_in_fp16(load_soc("Ascend310"), "Relu")
    assert not fp32_computes_in_fp16(load_soc("Ascend310P3"), "SoftmaxV2")
    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["s"], axis=-1),
                           helper.make_node("Log", ["s"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [4, 64])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = RNG.standard_normal((4, 64)).astype(np.float32)   # no probability below fp16's smallest normal
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    errs = {}
    for soc in ("Ascend310", "Ascend310P3"):
        res = atc_py.build(m, {"ge.socVersion": soc, "ge.exec.precision_mode": "force_fp32",
                               "optimization_switch": "autofuse:off"})
        marked = {n.op_type for n in res.graph.nodes if n.attrs.get("_internal_dtype") == "float16"}
        assert marked == ({"SoftmaxV2", "Log"} if soc == "Ascend310" else set())
        got, _ = simulate_one_input(res.om, x, tmp_path, soc)
        errs[soc] = float(np.abs(got - want).max())
    assert errs["Ascend310P3"] < 1e-5 and 1e-4 < errs["Ascend310"] < 5e-2


def test_layer_norm_implementation_mode_changes_numbers_and_time(tmp_path):
    """TBE's LayerNorm computes fp16 input in fp32 when the SoC has fp32 vexp and the mode is high_performance,
    or when it is high_precision; otherwise in fp16. On Ascend310 the default build therefore normalises in fp16,
    and --op_precision_mode LayerNorm=high_precision buys fp32 inside: closer numbers, more vector time."""
    from atc_py.passes.soc_kernels import layer_norm_compute_dtype
    assert layer_norm_compute_dtype(load_soc("Ascend310"), "high_performance") == "float16"
    assert layer_norm_compute_dtype(load_soc("Ascend310"), "high_precision") == "float32"
    assert layer_norm_compute_dtype(load_soc("Ascend310P3"), "high_performance") == "float32"
    d = 768
    g = helper.make_graph([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [64, d])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                          [numpy_helper.from_array(RNG.standard_normal(d).astype(np.float32), "s"),
                           numpy_helper.from_array(RNG.standard_normal(d).astype(np.float32), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = (RNG.standard_normal((64, d)) * 4 + 30).astype(np.float32)    # a large mean: fp16 sums lose digits
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ini = tmp_path / "op_precision.ini"
    ini.write_text("LayerNorm=high_precision\n")
    err, device, inside = {}, {}, {}
    for name, extra in (("default", {}), ("high_precision", {"ge.exec.op_precision_mode": str(ini)})):
        res = atc_py.build(m, {"ge.socVersion": "Ascend310", "optimization_switch": "autofuse:off", **extra})
        inside[name] = {n.attrs.get("_internal_dtype") for n in res.graph.nodes if n.op_type == "LayerNorm"}
        got, stats = simulate_one_input(res.om, x, tmp_path, name)
        err[name] = float(np.abs(got - want).mean())
        device[name] = stats.device_ns
    assert inside == {"default": {"float16"}, "high_precision": {"float32"}}
    assert err["high_precision"] < 0.8 * err["default"], err
    assert device["high_precision"] > device["default"]
    p3 = atc_py.build(m, {"ge.socVersion": "Ascend310P3", "optimization_switch": "autofuse:off"})
    assert not any(n.attrs.get("_internal_dtype") for n in p3.graph.nodes)   # fp32 inside: the kernel's default


def test_a_fused_layer_norm_computes_in_the_dtype_its_kernel_does(tmp_path):
    """The implementation marks come before automatic fusion: on Ascend310 the residual Add + LayerNorm's AscGraph
    normalises fp16 in fp16, as the LayerNorm kernel does there, so fusing does not change a bit."""
    d = 256
    g = helper.make_graph([helper.make_node("Add", ["x", "r"], ["h"]),
                           helper.make_node("LayerNormalization", ["h", "s", "b"], ["y"], axis=-1)], "g",
                          [helper.make_tensor_value_info(n, TP.FLOAT, [8, d]) for n in ("x", "r")],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                          [numpy_helper.from_array(RNG.standard_normal(d).astype(np.float32), "s"),
                           numpy_helper.from_array(RNG.standard_normal(d).astype(np.float32), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x, r = (RNG.standard_normal((8, d)) * 4 + 30).astype(np.float32), RNG.standard_normal((8, d)).astype(np.float32)
    from om_run.load.loader import load_model
    from om_run.sim.host import Simulation
    outs = {}
    for fuse in ("on", "off"):
        res = atc_py.build(m, {"ge.socVersion": "Ascend310", "optimization_switch": f"autofuse:{fuse}"})
        assert ("AscBackend" in {n.op_type for n in res.graph.nodes}) == (fuse == "on")
        (tmp_path / f"{fuse}.om").write_bytes(res.om)
        outs[fuse] = Simulation(load_model(str(tmp_path / f"{fuse}.om"))).run([x, r])[0][0]
    np.testing.assert_array_equal(outs["on"], outs["off"])
