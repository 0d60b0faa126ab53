"""atc-py command line: ATC's flag syntax, start/success/failure lines, error codes, exit status, no output on failure."""
import json
import os
import subprocess
import sys

import pytest

from atc_py.cli.main import FAILURE, START, SUCCESS
from tests.helpers import MODELS, ROOT

CNN = str(MODELS / "small_cnn.onnx")


def ok_args(out, *extra):
    return ["--model", CNN, "--framework=5", f"--output={out}", "--soc_version=Ascend910B1", *extra]


def test_success(atc, tmp_path):
    code, out, _ = atc(*ok_args(tmp_path / "cnn"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == START and lines[-1] == SUCCESS and lines[-2] == "..."
    assert (tmp_path / "cnn.om").is_file()


def test_single_dash_and_dashed_names_and_space_separated_values(atc, tmp_path):
    code, out, _ = atc("-model", CNN, "-framework=5", "--output", str(tmp_path / "c"), "--soc-version", "Ascend910B1")
    assert code == 0 and (tmp_path / "c.om").is_file()


@pytest.mark.parametrize("extra,code_text", [
    (["--tiling_schedule_optimize=2"],
     "E10006: Value 2 for parameter --tiling_schedule_optimize is invalid. The value must be either 1 or 0."),
    (["--log=loud"], "E10010: Value loud for parameter --log is invalid."),
    (["--mode=9"], "E10001: Value 9 for parameter --mode is invalid. Reason: The value is not within the range of "
                   "values. The valid range is [0] [1] [3] [30] [5] [6] [7] ."),
    (["--mode=x"], "E10001: Value x for parameter --mode is invalid. Reason: The value is not within the range of "
                   "values."),   # ATC checks the value range before the int32 type
    (["--display_model_info=2"], "E10006: Value 2 for parameter --display_model_info"),
    (["--input_shape=input:1,3,a,32"], "E10002"),
    (["--input_shape=input:1,3,0,32"], "E10011"),
    (["--input_shape=input:1,3,32.5,32"], "The float number is unsupported"),
    (["--input_shape=nothere:1,3,32,32"], "E10016: Opname nothere specified in --input_shape is not found"),
    (["--input_shape=r1:1,16,32,32"], "E10017: Input Op r1 specified in --input_shape is invalid. The Op type must be Data."),
    (["--out_nodes=nothere:0"], "E10016: Opname nothere specified in --out_nodes"),
    (["--out_nodes=fc:3"], "E10003: Value fc:3 for parameter --out_nodes is invalid"),
    (["--out_nodes=fc:0;prob"], "Only one of index, top_name and output_name can be used."),
    (["--static_model_ops_lower_limit=-2"], "E10001"),
])
def test_option_errors_have_codes_exit_255_and_write_nothing(atc, tmp_path, extra, code_text):
    code, out, _ = atc(*ok_args(tmp_path / "cnn"), *extra)
    assert code == 255
    assert FAILURE in out and code_text in out
    assert "Traceback" not in out
    assert not list(tmp_path.iterdir())


LONG_NAME, DEEP_PATH = "x" * 300, "/".join(["d"] * 2500)    # one name over NAME_MAX; a path over PATH_MAX


@pytest.mark.parametrize("flag,value,code_text", [
    ("output", "sub/" + LONG_NAME, "E10001: Value sub/xxx"),
    ("output", DEEP_PATH, "E10021: Path for parameter --output is too long. Keep the length within 4096."),
    ("op_plugin", LONG_NAME, "E10001"),
    ("op_plugin", DEEP_PATH, "E10001"),
    ("op_plugin", "loop", "E10001"),
    ("soc_version", LONG_NAME, "E10001"),
    ("insert_op_conf", LONG_NAME, "E10001"),
    ("op_attr_config", DEEP_PATH, "E10001"),
    ("model", DEEP_PATH, "E10001"),
])
def test_names_the_file_system_refuses_are_flag_errors(atc, tmp_path, monkeypatch, flag, value, code_text):
    """A name longer than the file system takes made pathlib raise (E19999); a link loop is no file either."""
    monkeypatch.chdir(tmp_path)
    os.symlink("loop", tmp_path / "loop")
    args = {"--model": CNN, "--framework": "5", "--output": "cnn", "--soc_version": "Ascend910B1", f"--{flag}": value}
    code, out, _ = atc(*[f"{k}={v}" for k, v in args.items()])
    assert code == 255 and code_text in out and "E19999" not in out, out[-400:]
    assert sorted(os.listdir(tmp_path)) == ["loop"]


def test_required_flags(atc, tmp_path):
    code, out, _ = atc("--model", CNN, f"--output={tmp_path / 'x'}", "--soc_version=Ascend910B1")
    assert code == 255 and "E10007: --framework is required." in out
    code, out, _ = atc("--model", CNN, "--framework=5", f"--output={tmp_path / 'x'}")
    assert code == 255 and "E10054: The required parameter --soc_version for ATC is empty." in out
    code, out, _ = atc("--model", CNN, "--framework=5", "--soc_version=Ascend910B1")
    assert code == 255 and "E10004: Value for --output is empty." in out
    code, out, _ = atc("--framework=5", f"--output={tmp_path / 'x'}", "--soc_version=Ascend910B1")
    assert code == 255 and "E10004: Value for --model is empty." in out
    code, out, _ = atc(*ok_args(tmp_path / "x")[:-1], "--soc_version=Ascend999")
    assert code == 255 and "E10001: Value Ascend999 for parameter --soc_version" in out
    code, out, _ = atc(*ok_args(str(tmp_path) + "/"))
    assert code == 255 and "E10022" in out


def test_syntax_errors(atc, tmp_path):
    code, out, err = atc(*ok_args(tmp_path / "x"), "--bogus=1")
    assert code == 255 and "ERROR: unknown command line flag 'bogus'" in err and FAILURE in out
    code, out, err = atc(*ok_args(tmp_path / "x"), "stray")
    assert code == 255 and "ERROR: Non-option parameter: stray" in err
    code, out, err = atc(*ok_args(tmp_path / "x"), "--json")
    assert code == 255 and "ERROR: flag 'json' is missing its argument" in err


def test_failure_keeps_existing_output(atc, tmp_path):
    target = tmp_path / "cnn.om"
    target.write_bytes(b"previous")
    code, _, _ = atc(*ok_args(tmp_path / "cnn"), "--input_shape=input:1,3,0,32")
    assert code == 255 and target.read_bytes() == b"previous"


def test_unsupported_model_names_every_missing_op(atc, tmp_path):
    import onnx
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Foo", ["x"], ["a"], name="f"), helper.make_node("Bar", ["a"], ["y"], name="b")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    p = tmp_path / "u.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    code, out, _ = atc("--model", str(p), "--framework=5", f"--output={tmp_path / 'u'}", "--soc_version=Ascend910B1")
    assert code == 255 and "E19010" in out and "Foo" in out and "Bar" in out
    assert not (tmp_path / "u.om").exists()


def test_mode1_json_and_mode6_info(atc, tmp_path):
    assert atc(*ok_args(tmp_path / "cnn"))[0] == 0
    om = str(tmp_path / "cnn.om")
    code, out, _ = atc("--mode=1", f"--om={om}", f"--json={tmp_path / 'cnn.json'}")
    assert code == 0
    doc = json.loads((tmp_path / "cnn.json").read_text())
    assert doc["name"] == "cnn" and doc["graph"][0]["op"]
    assert "task" in doc["task_info"]
    attrs = {a["key"]: a["value"] for a in doc["attr"]}
    assert attrs["soc_version"] == {"s": "Ascend910B1"}
    assert "memory_size" in attrs  # model attrs keep their keys; the field black-list is for proto fields
    code, out, _ = atc("--mode=6", f"--om={om}")
    assert code == 0 and "resource info: memory_size[" in out and "  tasks    : " in out and "lower bound" in out
    code, out, _ = atc("--mode=6", f"--om={om}", "--framework=5")
    assert code == 255 and "E10057" in out
    code, out, _ = atc("--mode=1", f"--om={om}")
    assert code == 255 and "E10004: Value for --json is empty." in out


def test_mode6_on_corrupt_om(atc, tmp_path):
    p = tmp_path / "bad.om"
    p.write_bytes(b"IMOD" + b"\0" * 300)
    code, out, _ = atc("--mode=6", f"--om={p}")
    assert code == 255 and "E10041" in out


def test_display_model_info_after_build(atc, tmp_path):
    code, out, _ = atc(*ok_args(tmp_path / "cnn"), "--display_model_info=1")
    assert code == 0 and "Display Model Info start" in out


def test_log_info_prints_stages(atc, tmp_path):
    code, out, _ = atc(*ok_args(tmp_path / "cnn"), "--log=info")
    assert code == 0 and "[INFO] GE(atc-py): stage compile:" in out


def test_console_scripts_and_module_entry(tmp_path):
    """The installed entry points: python -m atc_py works the same as atc-py."""
    res = subprocess.run([sys.executable, "-m", "atc_py", *ok_args(tmp_path / "cnn"), "--tiling_schedule_optimize=2"],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 255 and "E10006" in res.stdout and not os.path.exists(tmp_path / "cnn.om")


DECODER = str(MODELS / "decoder_step.onnx")
PLUGIN = str(ROOT / "plugins" / "example_custom_ops.py")


def test_log_info_prints_every_sink_decision_and_summary_counts(atc, tmp_path):
    code, out, _ = atc("--model", DECODER, "--framework=5", f"--output={tmp_path / 'd'}", "--soc_version=Ascend910B1",
                       "--tiling_schedule_optimize=1", "--log=info")
    assert code == 0
    assert out.count("sinks its tiling to AICPU") == 4
    assert "[INFO] build summary: tiling sink: 4 ops sunk, 0 forced dynamic" in out
    # the two equal LayerNorm constants, then (force_fp16 runs LayerNorm in fp16) their two equal Casts to fp16
    assert "common subexpressions merged 4, constants folded" in out
    code, out, _ = atc("--model", DECODER, "--framework=5", f"--output={tmp_path / 'd0'}", "--soc_version=Ascend910B1")
    assert "tiling sink: 0 ops sunk, 4 forced dynamic: l0_ifa (IncreFlashAttention) tiling_schedule_optimize is not 1" \
        in out and "goes dynamic" not in out  # decisions only with --log=info; the summary always


def test_debug_sink_nops_warns_loudly_even_with_log_null(atc, tmp_path):
    code, out, _ = atc("--model", DECODER, "--framework=5", f"--output={tmp_path / 'd'}", "--soc_version=Ascend910B1",
                       "--tiling_schedule_optimize=1", "--debug_sink_nops=0")
    assert code == 0 and "[WARNING] GE(atc-py): --debug_sink_nops=0 overrides" in out
    code, out, _ = atc("--model", DECODER, "--framework=5", f"--output={tmp_path / 'd'}", "--soc_version=Ascend910B1",
                       "--debug_sink_nops=x")
    assert code == 255 and "E10003" in out


def test_op_plugin_flag_env_and_errors(atc, tmp_path, monkeypatch):
    custom = str(MODELS / "custom_op.onnx")
    args = ["--model", custom, "--framework=5", "--soc_version=Ascend910B1", "--tiling_schedule_optimize=1"]
    code, out, _ = atc(*args, f"--output={tmp_path / 'a'}", f"--op_plugin={PLUGIN}")
    assert code == 0
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", str(ROOT / "plugins"))
    code, out, _ = atc(*args, f"--output={tmp_path / 'b'}")
    assert code == 0 and (tmp_path / "a.om").read_bytes() != b""
    code, out, _ = atc(*args, f"--output={tmp_path / 'c'}", "--op_plugin=/nonexistent/x.py")
    assert code == 255 and "E10001" in out and "--op_plugin" in out
    bad = tmp_path / "bad_plugin.py"
    bad.write_text("raise RuntimeError('boom')\n")
    code, out, _ = atc(*args, f"--output={tmp_path / 'd'}", f"--op_plugin={bad}")
    assert code == 255 and "The plugin failed to load: RuntimeError: boom" in out and "Traceback" not in out


LEAKY_RELU_PLUGIN = """
import numpy as np
from atc_py.ops import register
from atc_py.ops.activation import Relu


@register
class LeakyRelu10(Relu):
    # a custom Relu: negative inputs keep a tenth
    op_type = "Relu"
    fn = staticmethod(lambda x: np.where(x > 0, x, x * x.dtype.type(0.1)))
"""


@pytest.fixture
def own_registry(monkeypatch):
    """The op registry and the loaded-plugin table as they are, put back afterwards (a plugin replacing a builtin
    type must not outlive its test)."""
    from atc_py import plugins
    from atc_py.ops.core import registry
    registry.all_ops()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_SHADOWED", dict(registry._SHADOWED))
    monkeypatch.setattr(plugins, "_loaded", dict(plugins._loaded))
    return registry


def add_relu_mul(path):
    """Add -> Relu -> Mul: relu_fusion would fold a builtin Relu into the Add, autofuse would fuse all three."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    g = helper.make_graph([helper.make_node("Add", ["x", "c"], ["a"], name="add"),
                           helper.make_node("Relu", ["a"], ["r"], name="relu"),
                           helper.make_node("Mul", ["r", "c"], ["y"], name="mul")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.full((4, 8), 2.0, np.float32), "c")])
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return str(path)


def test_a_plugin_op_of_a_builtin_type_wins_and_is_custom(atc, om_run, tmp_path, own_registry):
    """--op_plugin re-registering Relu: the build says so (info), the Relu is a custom kernel (cust_ prefix) that no
    fusion folds away, om-run runs the plugin's kernel, and a builtin registration arriving later (the lazy import
    path) does not take the type back."""
    import numpy as np

    from atc_py.om import partitions as pt
    from atc_py.om import read_om
    from atc_py.om.attrs import from_attr
    from atc_py.proto import ge_ir_pb2 as ge
    plugin = tmp_path / "leaky.py"
    plugin.write_text(LEAKY_RELU_PLUGIN)
    builtin_relu = type(own_registry.get_op("Relu"))
    model = add_relu_mul(tmp_path / "m.onnx")
    code, out, _ = atc("--model", model, "--framework=5", f"--output={tmp_path / 'm'}", "--soc_version=Ascend910B1",
                       f"--op_plugin={plugin}", "--log=info", "--precision_mode=force_fp32")
    assert code == 0 and "custom op Relu of leaky.py overrides the builtin Relu" in out
    spec = own_registry.get_op("Relu")
    assert spec.is_custom and spec.custom_op_file_path == "vendors/leaky" and own_registry.shadowed("Relu")
    own_registry.register(builtin_relu)                    # a builtin module imported after the plugin
    assert own_registry.get_op("Relu") is spec and own_registry.builtin_op("Relu").fn(np.float32(-1)) == 0
    md = ge.ModelDef.FromString(read_om((tmp_path / "m.om").read_bytes()).models[0].get(pt.MODEL_DEF))
    ops = {op.name: (op.type, {k: from_attr(v) for k, v in op.attr.items()}) for op in md.graph[0].op}
    assert ops["relu"][0] == "Relu" and ops["relu"][1]["_kernelname"].startswith("cust_relu_")
    assert not ops["add"][1].get("fused_relu")
    x = np.linspace(-4, 4, 32, dtype=np.float32).reshape(4, 8)
    np.save(tmp_path / "x.npy", x)
    code, out, err = om_run("--model", str(tmp_path / "m.om"), "--input", str(tmp_path / "x.npy"),
                            "--output", str(tmp_path / "out"), "--outfmt", "NPY", "--op_plugin", str(plugin))
    assert code == 0, out + err
    (got,) = [np.load(p) for p in sorted((tmp_path / "out").rglob("*.npy"))]
    a = x + 2
    np.testing.assert_allclose(got.reshape(a.shape), np.where(a > 0, a, a * 0.1) * 2, rtol=1e-6)


def test_op_attr_config_flag(atc, tmp_path):
    cfg = tmp_path / "a.json"
    cfg.write_text('{"o_proj": {"super_kernel_reuse_binary": true}}')
    code, out, _ = atc("--model", str(MODELS / "superkernel.onnx"), "--framework=5", f"--output={tmp_path / 's'}",
                       "--soc_version=Ascend910B1", "--tiling_schedule_optimize=1", f"--op_attr_config={cfg}")
    assert code == 255 and "SK procedure failed" in out and not (tmp_path / "s.om").exists()
    code, out, _ = atc("--model", str(MODELS / "superkernel.onnx"), "--framework=5", f"--output={tmp_path / 's'}",
                       "--soc_version=Ascend910B1", f"--op_attr_config={tmp_path / 'none.json'}")
    assert code == 255 and "E10001" in out


def test_static_model_ops_lower_limit_flag(atc, tmp_path):
    code, out, _ = atc("--model", DECODER, "--framework=5", f"--output={tmp_path / 'd'}", "--soc_version=Ascend910B1",
                       "--static_model_ops_lower_limit=-1")
    assert code == 0 and "root + 0 known, 1 unknown" in out


def test_help_lists_every_optimization_pass_and_messages_name_atc_py(atc):
    from atc_py.options.shapes import OPTIMIZATION_PASSES
    code, out, _ = atc("--help")
    assert code == 0 and all(p in out for p in OPTIMIZATION_PASSES)
    code, out, _ = atc("--model=x.onnx")
    assert code == 255 and "Try 'atc-py --help'" in out


def test_framework_messages_agree(atc, tmp_path):
    from atc_py.cli.flags import FRAMEWORK_SUPPORT
    for args in (["--framework=4"], ["--framework=0"]):
        code, out, _ = atc(f"--model={MODELS / 'small_cnn.onnx'}", f"--output={tmp_path / 'm'}",
                           "--soc_version=Ascend910B1", *args)
        assert code == 255 and FRAMEWORK_SUPPORT in out, out
    code, out, _ = atc(f"--model={MODELS / 'small_cnn.onnx'}", f"--output={tmp_path / 'm'}", "--soc_version=Ascend910B1")
    assert code == 255 and "E10007" in out and FRAMEWORK_SUPPORT in out
