"""ATC command lines as public READMEs write them: bracketed ranges and spaces in --input_shape, the text form of
--fusion_switch_file, --out_nodes naming a graph input, --enable_small_channel, --buffer_optimize,
--op_precision_mode and --customize_dtypes — each with its effect, not only that it parses."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

import atc_py
from atc_py.cli.main import run as atc_run
from atc_py.common.errors import AtcError
from tests.helpers import ROOT
from tests.helpers.precision_models import (
    APART,
    SOC,
    conv_bn_model,
    conv_model,
    dtypes,
    model_attrs,
)

RNG = np.random.default_rng(33)
FP32 = {**APART, "ge.exec.precision_mode": "force_fp32"}


def save(model, path):
    path.write_bytes(model.SerializeToString())
    return str(path)


@pytest.mark.parametrize("text", ["x:[1~16,3,8,8]", " x : [1~16,3,8,8] ", "x:[-1,3,8,8]", "x:[1~16,3,-1,8]"])
def test_bracketed_ranges_in_input_shape_are_input_shape_range(text):
    """`--input_shape="x:[1~16,3,224,224]"` (CANN 6.x) builds the same dynamic model as --input_shape_range."""
    plain = text.replace("[", "").replace("]", "").replace(" ", "")
    m = conv_model()
    a = atc_py.build(m, {**SOC, "input_shape": text})
    b = atc_py.build(m, {**SOC, "input_shape": plain})
    assert a.om == b.om and a.summary["unknown_subgraphs"] >= 1


def test_spaces_after_semicolons_are_trimmed():
    x = helper.make_tensor_value_info("x", TP.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TP.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "g", [x, y],
                          [helper.make_tensor_value_info("z", TP.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    res = atc_py.build(m, {**SOC, "input_shape": "x:2,4; y:2,4"})
    assert [d.outputs[0].desc.shape for d in res.graph.data_nodes] == [(2, 4), (2, 4)]


def test_out_nodes_may_name_a_graph_input(tmp_path):
    res = atc_py.build(conv_model(), {**SOC, "ge.outputNodeName": "x:0;sm:0"})
    net = res.graph.net_output
    assert [v.producer.op_type for v in net.inputs][0] == "Data" and net.attrs["output_names"][0] == "x"
    with pytest.raises(AtcError, match="E10016"):
        atc_py.build(conv_model(), {**SOC, "ge.outputNodeName": "nosuch:0"})


def test_fusion_switch_file_in_the_text_form(tmp_path):
    m = conv_bn_model()
    f = tmp_path / "fusion_switch.cfg"
    f.write_text("# switch BN folding off\nConvBatchnormFusionPass:off\nTbeEltwiseReluFusion : on\n")
    res = atc_py.build(m, {**SOC, "fusion_switch_file": str(f)})
    assert res.summary["bn_folded_into_conv"] == 0
    assert json.loads(model_attrs(res)["fusion_switch_file"]) == {"bn_conv_fold": False, "relu_fusion": True}
    f.write_text("ALL:off\n")
    assert atc_py.build(m, {**SOC, "fusion_switch_file": str(f)}).summary["bn_folded_into_conv"] == 0
    f.write_text("ConvBatchnormFusionPass off\n")
    with pytest.raises(AtcError, match="E10001.*fusion_switch_file"):
        atc_py.build(m, {**SOC, "fusion_switch_file": str(f)})


def test_enable_small_channel_is_value_checked_and_applied(tmp_path, capsys):
    """A 3-channel first convolution: its input as NC1HWC0_C04 (4 channels, not 16) and its filter FRACTAL_Z_C04;
    the same outputs as without (passes/formats.py)."""
    from atc_py.om import partitions as pt
    from atc_py.om.container import read_om
    from atc_py.proto import ge_ir_pb2
    from om_run.load.loader import load_model
    from om_run.sim.host import Simulation
    path = save(conv_model(), tmp_path / "m.onnx")
    base = [f"--model={path}", "--framework=5", "--soc_version=Ascend910B1", "--precision_mode=force_fp32"]
    assert atc_run(base + [f"--output={tmp_path / 'c04'}", "--enable_small_channel=1"]) == 0
    assert atc_run(base + [f"--output={tmp_path / 'c16'}"]) == 0
    md = ge_ir_pb2.ModelDef.FromString(read_om((tmp_path / "c04.om").read_bytes()).models[0].get(pt.MODEL_DEF))
    conv = next(op for g in md.graph for op in g.op if op.type == "Conv2D")
    assert [conv.input_desc[0].layout, conv.input_desc[1].layout] == ["NC1HWC0_C04", "FRACTAL_Z_C04"]
    assert conv.input_desc[0].shape.dim[-1] == 4
    x = np.random.default_rng(1).standard_normal(tuple(load_model(str(tmp_path / "c04.om")).inputs[0].desc.shape))
    runs = [Simulation(load_model(str(tmp_path / f"{k}.om"))).run([x.astype(np.float32)])[0][0] for k in ("c04", "c16")]
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-5, atol=1e-6)
    capsys.readouterr()
    assert atc_run(base + [f"--output={tmp_path / 'o'}", "--enable_small_channel=2"]) != 0
    assert "E10006" in capsys.readouterr().out


def test_buffer_optimize_is_checked_and_recorded(tmp_path, capsys):
    res = atc_py.build(conv_model(), {**SOC, "ge.bufferOptimize": "off_optimize"})
    assert model_attrs(res)["buffer_optimize"] == "off_optimize"
    assert "buffer_optimize" not in model_attrs(atc_py.build(conv_model(), SOC))   # l2_optimize: the default
    path = save(conv_model(), tmp_path / "m.onnx")
    assert atc_run([f"--model={path}", "--framework=5", f"--output={tmp_path / 'o'}", "--soc_version=Ascend910B1",
                    "--buffer_optimize=l3_optimize"]) != 0
    assert "E10001" in capsys.readouterr().out


def test_op_precision_mode_sets_each_ops_mode_and_keep_fp16_computes_in_fp16(tmp_path):
    f = tmp_path / "op_precision.ini"
    f.write_text("[ByOpType]\nSigmoid=keep_fp16\nSoftmaxV2=high_performance\n[ByNodeName]\nsm=high_precision\n")
    res = atc_py.build(conv_model(), {**FP32, "ge.exec.op_precision_mode": str(f), "op_select_implmode":
                                      "high_performance_for_all"})
    nodes = {n.name: n for n in res.graph.nodes}
    assert nodes["act"].attrs["_op_impl_mode"] == "keep_fp16" and dtypes(res)["act"] == "float16"
    assert nodes["sm"].attrs["_op_impl_mode"] == "high_precision"          # the node name wins over its type
    assert nodes["conv"].attrs["_op_impl_mode"] == "high_performance"      # --op_select_implmode where no entry
    assert dtypes(res)["conv"] == "float32"
    assert json.loads(model_attrs(res)["op_precision_mode"])["ByNodeName"] == {"sm": "high_precision"}


def test_op_precision_mode_in_the_mode_1_json(tmp_path):
    f = tmp_path / "op_precision.ini"
    f.write_text("Sigmoid=high_precision\n")
    path = save(conv_model(), tmp_path / "m.onnx")
    assert atc_run([f"--model={path}", "--framework=5", f"--output={tmp_path / 'o'}", "--soc_version=Ascend910B1",
                    f"--op_precision_mode={f}", "--optimization_switch=autofuse:off"]) == 0
    assert atc_run(["--mode=1", f"--om={tmp_path / 'o.om'}", f"--json={tmp_path / 'o.json'}"]) == 0
    ops = [op for g in json.loads((tmp_path / "o.json").read_text())["graph"] for op in g["op"]]
    act = next(op for op in ops if op["name"] == "act")
    assert "high_precision" in json.dumps(act["attr"])


@pytest.mark.parametrize("text, match", [("Sigmoid=fastest\n", "mode must be one of"),
                                         ("[ByWhat]\nSigmoid=keep_fp16\n", "sections"),
                                         ("Sigmoid keep_fp16\n", "OpType=mode")])
def test_op_precision_mode_refuses_what_atc_refuses(tmp_path, text, match):
    f = tmp_path / "op_precision.ini"
    f.write_text(text)
    with pytest.raises(AtcError, match=match):
        atc_py.build(conv_model(), {**SOC, "ge.exec.op_precision_mode": str(f)})
    for bad in (tmp_path / "missing.ini", tmp_path):      # missing, and not a regular file
        with pytest.raises(AtcError, match="E10001.*op_precision_mode"):
            atc_py.build(conv_model(), {**SOC, "ge.exec.op_precision_mode": str(bad)})


def test_customize_dtypes_by_name_and_type(tmp_path):
    import onnxruntime as ort
    f = tmp_path / "customize_dtypes.cfg"
    f.write_text("act::InputDtype:float16,OutputDtype:float16\nOpType::Conv2D:InputDtype:float32,float32,"
                 "OutputDtype:float32\n")
    keep = tmp_path / "keep.cfg"
    keep.write_text("act\n")
    res = atc_py.build(conv_model(), {**APART, "ge.customizeDtypes": str(f), "keep_dtype": str(keep)})
    d = dtypes(res)
    assert d["act"] == "float16"      # customized over --keep_dtype, in the default fp16 build
    assert d["conv"] == "float32"     # the op type kept in fp32 under force_fp16
    m = conv_model()
    fp32 = atc_py.build(m, {**FP32, "ge.customizeDtypes": str(f)})
    assert dtypes(fp32)["act"] == "float16" and fp32.summary["custom_dtype_ops"] == 1
    assert "act" in json.loads(model_attrs(fp32)["customize_dtypes"])["Opname"]
    # the numbers: an fp16 Sigmoid inside an fp32 model is off by fp16's rounding, not more
    from om_run.load.loader import load_model
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    model = load_model_bytes(fp32.om, tmp_path, load_model)
    got = run_once(model, x)
    err = np.abs(got - want).max()
    assert 0 < err < 2e-3


def load_model_bytes(om: bytes, tmp_path, load_model):
    p = tmp_path / "m.om"
    p.write_bytes(om)
    return load_model(str(p))


def run_once(model, x):
    from om_run.sim.host import Simulation
    from om_run.sim.profile import RuntimeProfile
    outs, _ = Simulation(model, RuntimeProfile()).run([x])
    return outs[0]


@pytest.mark.parametrize("text", ["act::float16\n", "act::InputDtype:float99,OutputDtype:float16\n",
                                  "OpType::InputDtype:float16,OutputDtype:float16\n"])
def test_customize_dtypes_refuses_malformed_lines(tmp_path, text):
    f = tmp_path / "customize_dtypes.cfg"
    f.write_text(text)
    with pytest.raises(AtcError, match="E10001.*customize_dtypes"):
        atc_py.build(conv_model(), {**SOC, "ge.customizeDtypes": str(f)})


def _elementwise_chain(n=6, shape=(1, 64, 128, 128)):
    nodes, v = [], "x"
    for k in range(n):
        nodes.append(helper.make_node("Relu" if k % 2 else "Sigmoid", [v], [f"v{k}"], name=f"op{k}"))
        v = f"v{k}"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, list(shape))],
                          [helper.make_tensor_value_info(v, TP.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_off_optimize_costs_dram_time_in_the_simulator(tmp_path):
    """4 MiB tensors between six kernels: with l2_optimize each kernel reads its input from the L2 the last one
    wrote; with off_optimize every input comes from DRAM and every output goes back, so the chain is slower."""
    from om_run.load.loader import load_model
    from om_run.sim.host import Simulation
    m = _elementwise_chain()
    x = np.zeros((1, 64, 128, 128), np.float32)
    device, dram = {}, {}
    for mode in ("l2_optimize", "off_optimize"):
        res = atc_py.build(m, {**FP32, "ge.bufferOptimize": mode, "ge.socVersion": "Ascend310P3"})
        path = tmp_path / f"{mode}.om"
        path.write_bytes(res.om)
        _, stats = Simulation(load_model(str(path)), compute=False).run([x])
        device[mode] = stats.device_ns
        dram[mode] = stats.utilisation()["DRAM"]
    assert device["off_optimize"] > 1.5 * device["l2_optimize"]
    assert dram["off_optimize"] > dram["l2_optimize"]


def cli_base(tmp_path) -> list[str]:
    path = save(conv_model(), tmp_path / "m.onnx")
    return [f"--model={path}", "--framework=5", f"--output={tmp_path / 'o'}", "--soc_version=Ascend910B1"]


@pytest.mark.parametrize("written", ["--op_precision", "--op_precision_m", "-op_precision", "--op-precision"])
def test_a_unique_prefix_is_the_flag_as_getopt_long_reads_it(tmp_path, capsys, written):
    """`--op_precision=op_precision.ini` (GPT-2's README) is --op_precision_mode: ATC parses with getopt_long."""
    ini = tmp_path / "op.ini"
    ini.write_text("Sigmoid=high_precision\n")
    assert atc_run(cli_base(tmp_path) + [f"{written}={ini}"]) == 0
    om = SimpleNamespace(om=(tmp_path / "o.om").read_bytes())
    assert json.loads(model_attrs(om)["op_precision_mode"])["ByOpType"] == {"Sigmoid": "high_precision"}


@pytest.mark.parametrize("written, words", [
    ("--in=x", "abbreviates more than one flag: --input_format, --input_fp16_nodes, --input_hint_shape, --input_shape"),
    ("--mod=0", "--mode, --model"), ("--nosuch=1", "unknown command line flag")])
def test_an_ambiguous_or_unknown_name_is_one_syntax_error(tmp_path, capsys, written, words):
    assert atc_run(cli_base(tmp_path) + [written]) == 255
    captured = capsys.readouterr()
    assert words in captured.out and captured.err.startswith("ERROR: ") and "Traceback" not in captured.out


def test_auto_tune_mode_says_it_went_with_auto_tune(tmp_path, capsys):
    assert atc_run(cli_base(tmp_path) + ["--auto_tune_mode=RL,GA"]) == 255
    out = capsys.readouterr().out
    assert "E10001: Value RL,GA for parameter --auto_tune_mode is invalid" in out
    assert "removed from ATC with Auto Tune in CANN 6.0.1" in out and "AOE" in out


@pytest.mark.parametrize("flag", ["--sparsity=1", "--external_weight=1",
                                  "--compress_weight_conf=c.cfg"])
def test_an_atc_flag_atc_py_lacks_names_itself(tmp_path, capsys, flag):
    assert atc_run(cli_base(tmp_path) + [flag]) == 255
    out = capsys.readouterr().out
    name = flag[2:].split("=")[0]
    assert f"E10055: The operation is not supported. Reason: --{name} (" in out and "not implemented by atc-py" in out


def test_value_range_before_type_as_cmd_flag_info(tmp_path, capsys):
    """`--framework=5\\ ` in a README gives ATC '5 ': outside the range, so E10007 before the int32 check."""
    assert atc_run(["--framework=5 "]) == 255
    assert "E10007: --framework is required" in capsys.readouterr().out


def test_op_debug_level_is_checked_and_recorded(tmp_path, capsys):
    from atc_py.options.build_options import BuildOptions
    assert BuildOptions.parse({**SOC, "ge.opDebugLevel": "3"}).op_debug_level == 3
    assert model_attrs(atc_py.build(conv_model(), {**SOC, "ge.opDebugLevel": "3"}))["op_debug_level"] == "3"
    assert "op_debug_level" not in model_attrs(atc_py.build(conv_model(), {**SOC, "ge.opDebugLevel": "0"}))
    assert atc_run(cli_base(tmp_path) + ["--op_debug_level=3"]) == 0
    assert atc_run(cli_base(tmp_path) + ["--op_debug_level=5"]) == 255
    assert ("E10001: Value 5 for parameter --op_debug_level is invalid. Reason: The value is not within the range of "
            "values. The valid range is [0] [1] [2] [3] [4] .") in capsys.readouterr().out


def test_enable_scope_fusion_passes_is_recorded_and_warned_not_applied(tmp_path):
    from atc_py.options.build_options import BuildOptions
    logged = []
    opts = BuildOptions.parse({**SOC, "ge.frameworkType": "3", "enable_scope_fusion_passes":
                               "ScopeBatchMultiClassNMSPass,ScopeDecodeBboxV2Pass"}, log=lambda *a: logged.append(a))
    assert opts.scope_fusion_passes == ("ScopeBatchMultiClassNMSPass", "ScopeDecodeBboxV2Pass")
    assert opts.recorded["enable_scope_fusion_passes"] == "ScopeBatchMultiClassNMSPass,ScopeDecodeBboxV2Pass"
    assert any(level == "warning" and "no scope fusion passes" in msg for level, msg in logged)
    logged.clear()
    BuildOptions.parse({**SOC, "enable_scope_fusion_passes": "ScopeDecodeBboxV2Pass"}, log=lambda *a: logged.append(a))
    assert any("applies to TensorFlow models" in msg for _, msg in logged)
    with pytest.raises(AtcError, match="E10001.*enable_scope_fusion_passes"):
        BuildOptions.parse({**SOC, "enable_scope_fusion_passes": "a,,b"})


def test_device_id_is_checked_and_kept(tmp_path, capsys):
    from atc_py.options.build_options import BuildOptions
    assert BuildOptions.parse({**SOC, "ge.exec.tuneDeviceIds": "3"}).device_id == 3
    assert atc_run(cli_base(tmp_path) + ["--device", "0"]) == 0       # YoloXs' README: the prefix of --device_id
    assert atc_run(cli_base(tmp_path) + ["--device_id=x"]) == 255
    assert "E10001: Value x for parameter --device_id is invalid" in capsys.readouterr().out


def test_norm_class_is_an_op_specific_mode(tmp_path):
    """YoloF's op_precision.ini: BatchMultiClassNonMaxSuppression=norm_class (in FE's list of impl modes)."""
    f = tmp_path / "op_precision.ini"
    f.write_text("BatchMultiClassNonMaxSuppression=norm_class\nSigmoid=high_performance\n")
    res = atc_py.build(conv_model(), {**SOC, "ge.exec.op_precision_mode": str(f)})
    modes = json.loads(model_attrs(res)["op_precision_mode"])["ByOpType"]
    assert modes == {"BatchMultiClassNonMaxSuppression": "norm_class", "Sigmoid": "high_performance"}


@pytest.mark.parametrize("shape, gears, ok", [
    ("x: 1,3,8,8", "", False), ("x:1, 3,8,8", "", False), ("x:1,3,8,8 ", "", False),   # static: digits only
    ("x: -1,3,8,8", "", True), ("x:1~4, 3,8,8", "", True),                             # shape range: trimmed
    ("x:-1, 3,8,8", "1,2", False), ("x:-1,3,8,8", "1,2", True),                        # gears: digits only
])
def test_spaces_beside_dims_as_ge_parses_each_path(shape, gears, ok):
    """ICNet's "actual_input_1: 1,3,1024,2048" and m2m's "src_tokens:1, 90" fail in ATC: GE's ParseInputShape
    takes a static dim as written; the shape-range path trims."""
    opts = {**SOC, "input_shape": shape, **({"ge.dynamicBatchSize": gears} if gears else {})}
    if ok:
        atc_py.build(conv_model(), opts)
    else:
        with pytest.raises(AtcError, match="E10002.*It is not a digit"):
            atc_py.build(conv_model(), opts)


def test_ascend310p1_is_a_soc(tmp_path):
    """Pi0's README converts for Ascend310P1: CANN's ini differs from 310P3's in the core counts."""
    from atc_py.platform import load_soc
    p1, p3 = load_soc("Ascend310P1"), load_soc("Ascend310P3")
    assert (p1.ai_core_cnt, p3.ai_core_cnt) == (10, 8)
    res = atc_py.build(conv_model(), {"ge.socVersion": "Ascend310P1"})
    assert model_attrs(res)["soc_version"] == "Ascend310P1"


def test_the_docs_list_every_atc_flag_atc_py_lacks():
    """docs/atc-py.md's table is the list the parser refuses (and every ATC flag is either implemented or in it)."""

    from atc_py.cli import atc_flags
    from atc_py.cli import flags as cmdline
    text = (ROOT / "docs" / "atc-py.md").read_text()
    section = text.split("## ATC flags atc-py does not implement")[1].split("\n## ")[0]
    listed = set(re.findall(r"^\| `--(\w+)`", section, re.M))
    assert listed == set(atc_flags.NOT_IMPLEMENTED) | set(atc_flags.REMOVED)
    assert set(atc_flags.ATC_FLAGS) - set(cmdline.FLAGS) == listed
