"""--op_select_implmode / --optypelist_for_implmode / --op_precision_mode choose between the two implementations of
the kernels that have them (ops/core/impl_modes.py): high_precision computes fp16 input in fp32 and rounds once,
high_performance computes it in fp16 (Gelu's is TBE's fast polynomial). The choice is in the .om, om-run runs the
same implementation (fused or not), its time follows the dtype it computes in, and fp32 builds do not change."""
from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.om import partitions as pt
from atc_py.om import read_om
from atc_py.om.attrs import from_attr
from atc_py.ops.math_unary import fast_gelu
from atc_py.proto import ge_ir_pb2 as ge
from tests.helpers.om_files import simulate_one_input

RNG = np.random.default_rng(24)
SOC = {"ge.socVersion": "Ascend910B1"}
APART = {**SOC, "optimization_switch": "autofuse:off"}
SHAPE = (16, 256)
X = (RNG.standard_normal(SHAPE) * 3).astype(np.float32)    # GELU's curved part and softmax rows of many scales
_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu_softmax(op="Softmax"):
    g = helper.make_graph([helper.make_node("Gelu", ["x"], ["g"], name="gelu"),
                           helper.make_node(op, ["g"], ["y"], axis=-1, name="sm")], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, list(SHAPE))],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def unary(op, shape=SHAPE):
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="u")], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def reference(x: np.ndarray) -> np.ndarray:
    """GELU then softmax in fp64, of the fp16 input the fp16 build computes from."""
    v = x.astype(np.float16).astype(np.float64)
    g = 0.5 * v * (1 + _erf(v / math.sqrt(2)))
    e = np.exp(g - g.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)




def om_ops(om: bytes) -> dict[str, dict]:
    md = ge.ModelDef.FromString(read_om(om).models[0].get(pt.MODEL_DEF))
    return {op.name: {k: from_attr(v) for k, v in op.attr.items()} for g in md.graph for op in g.op}


def marks(res) -> dict[str, tuple]:
    return {n.op_type: (n.attrs.get("_op_impl_mode"), n.attrs.get("_internal_dtype")) for n in res.graph.nodes
            if n.op_type in ("Gelu", "SoftmaxV2", "LogSoftmaxV2", "Exp")}


BUILDS = {"default": {}, "high_precision": {"op_select_implmode": "high_precision"},
          "high_performance_for_all": {"op_select_implmode": "high_performance_for_all"}}


def test_high_precision_is_closer_in_fp16_and_fusion_keeps_the_numbers(tmp_path):
    """Against fp64: high_precision (fp32 inside, rounded once) is closer than the default (Gelu high_precision,
    its kernel's default; Softmax in fp16), which is closer than high_performance_for_all (Gelu's fast form too).
    Fused into AscBackend nodes or not, each mode gives the same numbers."""
    want = reference(X)
    err = {}
    for name, extra in BUILDS.items():
        got = {}
        for fuse in ("on", "off"):
            res = atc_py.build(gelu_softmax(), {**SOC, "optimization_switch": f"autofuse:{fuse}", **extra})
            got[fuse], _ = simulate_one_input(res.om, X, tmp_path, f"{name}_{fuse}")
            if fuse == "on" and name == "high_performance_for_all":    # the fast form keeps its own kernel
                assert "Gelu" in {n.op_type for n in res.graph.nodes}
        np.testing.assert_array_equal(got["on"], got["off"])
        err[name] = float(np.abs(got["off"].astype(np.float64) - want).mean())
    assert err["high_precision"] < 0.8 * err["default"] < 0.8 * err["high_performance_for_all"], err


def test_the_om_records_the_mode_and_om_run_reads_it(tmp_path):
    from om_run.sim.program import op_attrs
    res = atc_py.build(gelu_softmax(), {**APART, "op_select_implmode": "high_performance_for_all"})
    ops = om_ops(res.om)
    assert ops["gelu"]["_op_impl_mode"] == "high_performance" and "_internal_dtype" not in ops["gelu"]
    md = ge.ModelDef.FromString(read_om(res.om).models[0].get(pt.MODEL_DEF))
    gelu = next(op for op in md.graph[0].op if op.name == "gelu")
    assert op_attrs(gelu)["_op_impl_mode"] == "high_performance"      # what om-run hands the kernel
    ops = om_ops(atc_py.build(gelu_softmax(), {**APART, "op_select_implmode": "high_precision"}).om)
    assert ops["sm"]["_op_impl_mode"] == "high_precision" and ops["sm"]["_internal_dtype"] == "float32"
    ops = om_ops(atc_py.build(gelu_softmax(), APART).om)    # the kernels' defaults: nothing chosen, Gelu in fp32
    assert "_op_impl_mode" not in ops["gelu"] and ops["gelu"]["_internal_dtype"] == "float32"
    assert "_op_impl_mode" not in ops["sm"] and "_internal_dtype" not in ops["sm"]


def test_optypelist_limits_the_mode_to_the_named_types(tmp_path):
    res = atc_py.build(gelu_softmax(), {**APART, "op_select_implmode": "high_precision",
                                        "optypelist_for_implmode": "SoftmaxV2"})
    assert marks(res) == {"Gelu": (None, "float32"), "SoftmaxV2": ("high_precision", "float32")}
    res = atc_py.build(gelu_softmax(), {**APART, "op_select_implmode": "high_performance",
                                        "optypelist_for_implmode": "Gelu"})
    assert marks(res) == {"Gelu": ("high_performance", None), "SoftmaxV2": (None, None)}
    # plain high_performance is ATC's default: the same kernels as no flag
    assert marks(atc_py.build(gelu_softmax(), {**APART, "op_select_implmode": "high_performance"})) == \
        marks(atc_py.build(gelu_softmax(), APART)) == {"Gelu": (None, "float32"), "SoftmaxV2": (None, None)}
    log = atc_py.build(gelu_softmax("LogSoftmax"), {**APART, "op_select_implmode": "high_precision_for_all"})
    assert marks(log)["LogSoftmaxV2"] == ("high_precision", "float32")


def test_op_precision_mode_overrides_the_flag(tmp_path):
    ini = tmp_path / "op_precision.ini"
    ini.write_text("SoftmaxV2=high_performance\n[ByNodeName]\ngelu=high_performance\n")
    res = atc_py.build(gelu_softmax(), {**APART, "op_select_implmode": "high_precision_for_all",
                                        "ge.exec.op_precision_mode": str(ini)})
    assert marks(res) == {"Gelu": ("high_performance", None), "SoftmaxV2": ("high_performance", None)}


def test_bad_values_are_e10001(atc, tmp_path):
    with pytest.raises(AtcError, match="E10001.*op_select_implmode"):
        atc_py.build(gelu_softmax(), {**SOC, "op_select_implmode": "highest_precision"})
    with pytest.raises(AtcError, match="E10001.*must be set at the same time"):
        atc_py.build(gelu_softmax(), {**SOC, "optypelist_for_implmode": "Gelu"})
    path = tmp_path / "m.onnx"
    path.write_bytes(gelu_softmax().SerializeToString())
    code, out, _ = atc("--model", str(path), "--framework=5", f"--output={tmp_path / 'o'}",
                       "--soc_version=Ascend910B1", "--op_select_implmode=fast")
    assert code == 255 and "E10001" in out and "Traceback" not in out


def test_fp32_builds_do_not_change(tmp_path):
    """force_fp32: the modes are about fp16 input, so the numbers and the kernels are the default's."""
    fp32 = {**APART, "ge.exec.precision_mode": "force_fp32"}
    base = atc_py.build(gelu_softmax(), fp32)
    assert marks(base) == {"Gelu": (None, None), "SoftmaxV2": (None, None)}
    y0, _ = simulate_one_input(base.om, X, tmp_path, "fp32")
    v = X.astype(np.float64)
    g = 0.5 * v * (1 + _erf(v / math.sqrt(2)))
    e = np.exp(g - g.max(-1, keepdims=True))
    np.testing.assert_allclose(y0, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    hp = atc_py.build(gelu_softmax(), {**fp32, "op_select_implmode": "high_precision_for_all"})
    assert {k: v[1] for k, v in marks(hp).items()} == {"Gelu": None, "SoftmaxV2": None}
    np.testing.assert_array_equal(simulate_one_input(hp.om, X, tmp_path, "fp32_hp")[0], y0)


def test_a_soc_without_fp32_vexp_stays_in_fp16(tmp_path):
    """TBE upcasts only where vexp takes fp32: on Ascend310 high_precision computes fp16 in fp16."""
    res = atc_py.build(gelu_softmax(), {**APART, "ge.socVersion": "Ascend310", "op_select_implmode": "high_precision"})
    assert marks(res) == {"Gelu": ("high_precision", None), "SoftmaxV2": ("high_precision", None)}


def test_exp_high_precision_costs_the_fp32_vector_rate(tmp_path):
    """An fp16 Exp rounds once either way here (numpy's fp16 exp is correctly rounded; the fp16 vexp's own error
    is not modelled); high_precision's fp32 inside costs the fp32 rate and the casts."""
    x = RNG.standard_normal((64, 8192)).astype(np.float32)
    outs, times = {}, {}
    for name, extra in (("default", {}), ("high_precision", {"op_select_implmode": "high_precision"})):
        res = atc_py.build(unary("Exp", x.shape), {**APART, **extra})
        assert marks(res)["Exp"][1] == (None if name == "default" else "float32")
        outs[name], stats = simulate_one_input(res.om, x, tmp_path, name)
        times[name] = stats.device_ns
    np.testing.assert_array_equal(outs["default"], outs["high_precision"])
    assert times["high_precision"] > times["default"]


def test_fast_gelu_is_tbes_polynomial():
    """fast_gelu_v2's error against GELU (0.018 at |x| = 2.35); in fp16 every step rounds, and 0 stays 0."""
    x = np.linspace(-8, 8, 64001)
    exact = 0.5 * x * (1 + _erf(x / math.sqrt(2)))
    err = np.abs(fast_gelu(x) - exact)
    assert 0.017 < err.max() < 0.019 and abs(abs(x[err.argmax()]) - 2.35) < 0.01
    h = fast_gelu(np.array([0.0, -0.0, 1.0, -3.0, 65504.0], np.float16))
    assert h.dtype == np.float16 and np.all(np.isfinite(h)) and h[0] == 0 and h[1] == 0
    assert np.abs(h.astype(np.float64) - fast_gelu(h.astype(np.float64))).max() > 0   # rounded at each step
