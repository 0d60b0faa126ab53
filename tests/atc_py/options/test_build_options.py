"""Build options are parsed once, at the boundary, into an immutable BuildOptions that the pipeline passes down."""
from __future__ import annotations

import ast
import dataclasses
import pathlib

import pytest

import atc_py
from atc_py.common.errors import AtcError
from atc_py.options.build_options import BuildOptions
from tests.helpers import ROOT

MODELS = ROOT / "models"
SOC = {"ge.socVersion": "Ascend910B1"}

# every parser of an option's text, and the one module allowed to call it
PARSERS = {"parse_input_shape", "parse_input_shape_range", "parse_out_nodes", "parse_gears", "fold_size_limit",
           "debug_sink_nops", "precision_mode", "check_precision_mode", "implmode", "keep_dtype", "modify_mixlist",
           "fusion_switches", "parse_optimization_switch", "parse_output_type", "parse_attr_config", "parse_config",
           "input_fp16_nodes", "check_tiling_schedule_optimize_session"}
PARSE_SITE = ROOT / "atc_py" / "build_options.py"
NO_RAW_OPTIONS = ["atc_py/passes", "atc_py/engines", "atc_py/frontend", "atc_py/ops", "atc_py/om", "om_run"]


def _calls(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return names


def test_each_option_parser_is_called_from_build_options_only():
    callers: dict[str, list[str]] = {}
    for path in sorted((ROOT / "atc_py").rglob("*.py")):
        if path.name.endswith("_pb2.py"):
            continue
        for name in _calls(path) & PARSERS:
            callers.setdefault(name, []).append(str(path.relative_to(ROOT)))
    outside = {name: [p for p in paths if p != "atc_py/options/build_options.py"] for name, paths in callers.items()}
    assert {k: v for k, v in outside.items() if v} == {}
    assert {"parse_input_shape", "parse_gears", "precision_mode", "fold_size_limit"} <= set(callers)


def _raw_option_params(path: pathlib.Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = node.args
        params = a.posonlyargs + a.args + a.kwonlyargs + [p for p in (a.vararg, a.kwarg) if p is not None]
        for p in params:
            note = ast.unparse(p.annotation) if p.annotation is not None else ""
            if p.arg in ("options", "given") or ("option" in p.arg and "str" in note and "BuildOptions" not in note):
                found.append(f"{node.name}({p.arg}: {note or '-'}) line {node.lineno}")
    return found


def test_no_pass_engine_frontend_op_om_or_runner_module_takes_a_raw_option_dict():
    offenders = {}
    for folder in NO_RAW_OPTIONS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if not path.name.endswith("_pb2.py") and (hits := _raw_option_params(path)):
                offenders[str(path.relative_to(ROOT))] = hits
    assert offenders == {}


def test_parse_gives_typed_values():
    opts = BuildOptions.parse({**SOC, "input_shape": "x:-1,3,32,32", "ge.dynamicBatchSize": "1,4",
                               "ge.exec.precision_mode_v2": "origin", "optimization_switch": "cse:off",
                               "ge.tiling_schedule_optimize": "1", "ge.enableSingleStream": "true",
                               "fold_size_limit": "1024", "ge.exec.static_model_ops_lower_limit": "-1",
                               "output_type": "FP16", "ge.outputNodeName": "a:0;b:1"})
    assert opts.soc.soc_version == "Ascend910B1" and opts.offline and opts.tiling_sink and opts.single_stream
    assert opts.input_shapes == {"x": [-1, 3, 32, 32]} and opts.gears.kind == "batch"
    assert opts.gears.gears == [(1,), (4,)]
    assert opts.precision.mode == "must_keep_origin_dtype" and opts.recorded == {"precision_mode_v2": "origin"}
    assert not opts.switch("cse") and opts.switch("fold")
    assert opts.fold_limit == 1024 and opts.static_ops_lower_limit == -1
    assert opts.output_types.every == "float16" and opts.out_nodes == (("a", 0), ("b", 1))
    assert opts.default_input_format == "NCHW"


def test_the_older_range_spelling_is_the_same_shapes():
    a = BuildOptions.parse({**SOC, "input_shape": "x:1~8,3,-1"})
    b = BuildOptions.parse({**SOC, "input_shape_range": "x:[1~8,3,-1]"})
    assert a.input_shapes == b.input_shapes and a.input_shapes.ranges == b.input_shapes.ranges
    with pytest.raises(AtcError) as exc:
        BuildOptions.parse({**SOC, "input_shape": "x:1", "input_shape_range": "x:[1]"})
    assert exc.value.code == "E10056"


def test_options_are_immutable():
    opts = BuildOptions.parse(SOC)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.tiling_sink = True


@pytest.mark.parametrize("bad, code", [({"ge.exec.precision_mode": "fp8"}, "E10001"),
                                      ({"ge.dynamicBatchSize": "1,2"}, "E10004"),
                                      ({"fold_size_limit": "-1"}, "E10003"),
                                      ({"output_type": "FP64"}, "E10001"),
                                      ({"ge.outputNodeName": "a:0;b"}, "E10001")])
def test_a_bad_option_fails_before_the_model_is_read(bad, code, tmp_path):
    """The option is checked first: the model path does not even exist."""
    with pytest.raises(AtcError) as exc:
        atc_py.build(str(tmp_path / "missing.onnx"), {**SOC, **bad})
    assert exc.value.code == code


def test_build_takes_the_parsed_object_with_the_same_bytes():
    options = {**SOC, "input_shape": "input:1,3,32,32", "ge.exec.precision_mode": "force_fp32"}
    model = str(MODELS / "small_cnn.onnx")
    assert atc_py.build(model, BuildOptions.parse(options)).om == atc_py.build(model, options).om
