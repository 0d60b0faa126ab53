"""om-sweep's sweep file: every bad field is refused before any job runs, with a message naming it."""
from __future__ import annotations

import pytest

from om_sweep.spec import load_spec
from tests.helpers.sweep import MODELS, om_sweep, write_sweep

CNN = str(MODELS / "small_cnn.onnx")
GOOD_GRID = {"soc_version": ["Ascend910B1"]}

BAD = [
    ({"grid": GOOD_GRID}, "models", "is required"),
    ({"models": [], "grid": GOOD_GRID}, "models", "non-empty list"),
    ({"models": {"path": CNN}, "grid": GOOD_GRID}, "models", "non-empty list"),
    ({"models": [{"framework": 5}], "grid": GOOD_GRID}, "models[0].path", "is required"),
    ({"models": [{"path": 7}], "grid": GOOD_GRID}, "models[0].path", "non-empty string"),
    ({"models": [{"path": CNN, "framework": 7}], "grid": GOOD_GRID}, "models[0].framework", "3 (TensorFlow) or 5"),
    ({"models": [{"path": str(MODELS / "x.tflite")}], "grid": GOOD_GRID}, "models[0].framework", "is required"),
    ({"models": [{"path": CNN, "fromework": 5}], "grid": GOOD_GRID}, "models[0].fromework", "unknown key"),
    ({"models": [{"path": CNN}], "grid": {"soc_versoin": ["Ascend910B1"]}}, "grid.soc_versoin", "unknown atc-py flag"),
    ({"models": [{"path": CNN}], "grid": {"soc_version": []}}, "grid.soc_version", "at least one value"),
    ({"models": [{"path": CNN}], "grid": {"soc_version": [["Ascend910B1"]]}}, "grid.soc_version[0]",
     "string, integer or boolean"),
    ({"models": [{"path": CNN}], "grid": {"soc_version": ["Ascend910B1", None]}}, "grid.soc_version[1]", "null"),
    ({"models": [{"path": CNN}], "grid": {"soc_version": ["A", "A"]}}, "grid.soc_version", "listed twice"),
    ({"models": [{"path": CNN}], "grid": {"output": ["x"], **GOOD_GRID}}, "grid.output", "cannot be set"),
    ({"models": [{"path": CNN}], "grid": {"framework": [5], **GOOD_GRID}}, "grid.framework", "cannot be set"),
    ({"models": [{"path": CNN}], "grid": ["soc_version"]}, "grid", "mapping"),
    ({"models": [{"path": CNN}]}, "grid.soc_version", "no SoC for models[0]"),
    ({"models": [{"path": CNN, "flags": {"soc_version": "Ascend910B1"}}], "grid": GOOD_GRID},
     "models[0].flags.soc_version", "also a grid key"),
    ({"models": [{"path": CNN, "flags": {"modle": "x"}}], "grid": GOOD_GRID}, "models[0].flags.modle",
     "unknown atc-py flag"),
    ({"models": [{"path": CNN, "flags": ["x"]}], "grid": GOOD_GRID}, "models[0].flags", "mapping"),
    ({"models": [{"path": CNN, "compute": "yes please"}], "grid": GOOD_GRID}, "models[0].compute", "true or false"),
    ({"models": [{"path": CNN, "expected": "e.npz", "compute": False}], "grid": GOOD_GRID}, "models[0].expected",
     "numeric run"),
    ({"models": [{"path": CNN, "time_limit_s": 0}], "grid": GOOD_GRID}, "models[0].time_limit_s", "> 0"),
    ({"models": [{"path": CNN, "memory_limit_mb": "1G"}], "grid": GOOD_GRID}, "models[0].memory_limit_mb",
     "a number"),
    ({"models": [CNN], "grid": GOOD_GRID, "run": {"loop": 0}}, "run.loop", ">= 1"),
    ({"models": [CNN], "grid": GOOD_GRID, "run": {"retries": 1.5}}, "run.retries", "an integer"),
    ({"models": [CNN], "grid": GOOD_GRID, "run": {"sim_config": "nope.json"}}, "run.sim_config", "file not found"),
    ({"models": [CNN], "grid": GOOD_GRID, "run": {"engine": "dask"}}, "run.engine", "unknown key"),
    ({"models": [CNN], "grid": GOOD_GRID, "extra": 1}, "extra", "unknown key"),
    ({"models": [{"path": str(MODELS / "no_such_*.onnx")}], "grid": GOOD_GRID}, "models[0].path", "matches no file"),
]


@pytest.mark.parametrize("doc,field,reason", BAD, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)])
def test_bad_sweep_file_is_rejected_naming_the_field(tmp_path, doc, field, reason):
    sweep = write_sweep(tmp_path, doc)
    out = tmp_path / "results"
    code, stdout, stderr = om_sweep("run", sweep, "-o", out)
    assert code == 1
    line = stderr.strip()
    assert line.startswith("[ERROR] E40001: Invalid sweep file") and "Traceback" not in stderr, stderr
    assert f": {field}: " in line and reason in line, line
    assert not (out / "results.parquet").exists()


@pytest.mark.parametrize("text,reason", [
    ("models: [a\n", "YAML syntax error at line 2"),
    ("- just\n- a list\n", "must be a mapping"),
    ("", "the file is empty"),
])
def test_unreadable_or_malformed_yaml(tmp_path, text, reason):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(text)
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r")
    assert code == 1 and reason in stderr and stderr.startswith("[ERROR] E4000"), stderr


@pytest.mark.parametrize("text,field,lines", [
    ("models: [{cnn}]\ngrid: {{soc_version: [Ascend910B1]}}\nmodels: [nope.onnx]\n", "models", "lines 1 and 3"),
    ("models: [{cnn}]\ngrid:\n  soc_version: [Ascend910B1]\n  soc_version: [Ascend310P3]\n", "grid.soc_version",
     "lines 3 and 4"),
    ("models:\n  - path: {cnn}\n    framework: 5\n    framework: 3\ngrid: {{soc_version: [Ascend910B1]}}\n",
     "models[0].framework", "lines 3 and 4"),
    ("models: [{cnn}]\ngrid: {{soc_version: [Ascend910B1]}}\n'grid': {{}}\n", "grid", "lines 2 and 3"),
])
def test_a_key_given_twice_is_refused_not_dropped(tmp_path, text, field, lines):
    """PyYAML keeps the last of two equal keys: half the sweep would have run without a word."""
    sweep = tmp_path / "s.yaml"
    sweep.write_text(text.format(cnn=CNN))
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r")
    line = stderr.strip()
    assert code == 1 and line.startswith("[ERROR] E40001: Invalid sweep file") and "Traceback" not in line, stderr
    assert f": {field}: the key is given twice ({lines})" in line, line
    assert not (tmp_path / "r").exists()


def test_merge_keys_and_aliases_keep_their_meaning(tmp_path):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"models:\n  - &m {{path: {CNN}, framework: 5}}\n  - {{<<: *m, framework: 5, compute: false}}\n"
                     "grid: {soc_version: [Ascend910B1]}\n")
    spec = load_spec(sweep)
    assert len(spec.models) == 2 and spec.grid == {"soc_version": ["Ascend910B1"]}


def test_missing_sweep_file_and_wrong_suffix(tmp_path):
    code, _, stderr = om_sweep("run", tmp_path / "nope.yaml", "-o", tmp_path / "r")
    assert code == 1 and stderr.startswith("[ERROR] E40002: Cannot read sweep file") and "No such file" in stderr
    (tmp_path / "s.json").write_text("{}")
    code, _, stderr = om_sweep("run", tmp_path / "s.json", "-o", tmp_path / "r")
    assert code == 1 and ".yaml, .yml or .toml" in stderr


def test_toml_equals_yaml(tmp_path):
    (tmp_path / "s.toml").write_text(f'[[models]]\npath = "{CNN}"\nframework = 5\n\n'
                                     '[grid]\nsoc_version = ["Ascend910B1", "Ascend310P3"]\n'
                                     'tiling_schedule_optimize = [0, 1]\n')
    yaml_spec = load_spec(write_sweep(tmp_path, {"models": [{"path": CNN, "framework": 5}],
                                                 "grid": {"soc_version": ["Ascend910B1", "Ascend310P3"],
                                                          "tiling_schedule_optimize": [0, 1]}}))
    toml_spec = load_spec(tmp_path / "s.toml")
    assert toml_spec.models == yaml_spec.models and toml_spec.grid == yaml_spec.grid
    assert toml_spec.grid == {"soc_version": ["Ascend910B1", "Ascend310P3"], "tiling_schedule_optimize": ["0", "1"]}


def test_yaml_scalars_become_flag_text(tmp_path):
    spec = load_spec(write_sweep(tmp_path, {"models": [CNN], "grid": {
        "soc_version": "Ascend910B1", "enable_single_stream": [True, False], "tiling_schedule_optimize": [1]}}))
    assert spec.grid == {"soc_version": ["Ascend910B1"], "enable_single_stream": ["true", "false"],
                         "tiling_schedule_optimize": ["1"]}
    assert spec.models[0].framework is None        # from the suffix at planning time


def test_socs_lists_every_soc_with_its_figures():
    from atc_py.platform.soc import supported_socs
    code, out, _ = om_sweep("socs")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert code == 0 and set(rows) == set(supported_socs()) and "Ascend310" in rows
    assert rows["Ascend310"][1:4] == ["2", "0", "680"] and rows["Ascend310"][-1] == "no"
