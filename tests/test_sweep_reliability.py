"""om-sweep against hostile sweep files and output folders: a grid too large to expand, a sweep file that is a
FIFO, a device, a folder or huge, and files planted in the output folder (symlinks, forged or edited records).
Each ends in one `[ERROR] E4xxxx` line or in a warning and a rerun; nothing outside the output folder is
written or trusted, finished records are kept."""
from __future__ import annotations

import json
import os
import threading
import time

import pytest

from atc_py.errors import AtcError
from om_sweep.spec import DEFAULT_MAX_POINTS, MAX_SWEEP_FILE_BYTES, load_spec

from .sweep_helpers import MODELS, om_sweep, table, write_sweep

CNN = str(MODELS / "small_cnn.onnx")
LENET = str(MODELS / "tf_lenet.pb")
SOCS = ["Ascend910B1", "Ascend310P3", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend310P1", "Ascend910A",
        "Ascend310", "Ascend310B1", "Ascend910_9391"]


def _one_error_line(code: int, stderr: str, prefix: str) -> str:
    line = stderr.strip()
    assert code == 1 and "Traceback" not in stderr, stderr
    assert len(line.splitlines()) == 1 and line.startswith(prefix), stderr
    return line


# -- grids too large to expand ----------------------------------------------------------------------------------

def huge_grid(keys: int = 7, values: int = 25) -> dict:
    """7 keys x 25 values: 6.1e9 points, the audit's MemoryError (values need not be valid flag values to count)."""
    names = ["soc_version", "tiling_schedule_optimize", "precision_mode", "enable_single_stream", "op_select_implmode",
             "disable_reuse_memory", "input_format", "static_model_ops_lower_limit"]
    return {names[k]: [f"v{i}" for i in range(values)] for k in range(keys)}


def test_a_grid_of_billions_of_points_is_refused_before_it_is_expanded(tmp_path):
    sweep = write_sweep(tmp_path, {"models": [CNN], "grid": huge_grid()})
    t0 = time.monotonic()
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r")
    line = _one_error_line(code, stderr, "[ERROR] E40001: Invalid sweep file")
    assert time.monotonic() - t0 < 10
    assert ": grid: 1 model entries x 25 x 25 x 25 x 25 x 25 x 25 x 25 grid values = 6,103,515,625 points, more " \
           "than the limit of 100,000 (raise it with run.max_points or om-sweep run --max-points)" in line, line
    assert not (tmp_path / "r").exists()


def test_the_limit_counts_the_files_a_glob_matches(tmp_path):
    for i in range(3):
        (tmp_path / f"m{i}.onnx").write_bytes(b"")
    doc = {"models": [{"path": "m*.onnx"}], "grid": {"soc_version": SOCS[:4]}, "run": {"max_points": 10}}
    code, _, stderr = om_sweep("run", write_sweep(tmp_path, doc), "-o", tmp_path / "r")
    line = _one_error_line(code, stderr, "[ERROR] E40001")
    assert "3 model files x 4 grid values = 12 points, more than the limit of 10" in line, line
    doc["run"]["max_points"] = 12
    assert load_spec(write_sweep(tmp_path, doc)).run.max_points == 12


def test_the_limit_is_the_files_or_the_command_lines(tmp_path):
    doc = {"models": [CNN, LENET], "grid": {"soc_version": SOCS[:3]}, "run": {"compute": False}}
    sweep = write_sweep(tmp_path, doc)
    assert load_spec(sweep).run.max_points == DEFAULT_MAX_POINTS
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--max-points", "5")
    assert "2 model entries x 3 grid values = 6 points, more than the limit of 5" in \
        _one_error_line(code, stderr, "[ERROR] E40001")
    code, _, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--max-points", "0")
    assert "--max-points" in _one_error_line(code, stderr, "[ERROR] E40011")
    doc["run"]["max_points"] = 5
    code, _, stderr = om_sweep("run", write_sweep(tmp_path, doc), "-o", tmp_path / "r")
    _one_error_line(code, stderr, "[ERROR] E40001")
    code, stdout, stderr = om_sweep("run", sweep, "-o", tmp_path / "r", "--max-points", "6", "--no-report")
    assert code == 0 and "6 points, 6 jobs run" in stdout, stderr


@pytest.mark.parametrize("value", [0, -1, "many", 2.5, True])
def test_max_points_must_be_a_positive_integer(tmp_path, value):
    doc = {"models": [CNN], "grid": {"soc_version": SOCS[:1]}, "run": {"max_points": value}}
    code, _, stderr = om_sweep("run", write_sweep(tmp_path, doc), "-o", tmp_path / "r")
    assert ": run.max_points: " in _one_error_line(code, stderr, "[ERROR] E40001")


def test_a_grid_key_of_many_values_is_checked_in_linear_time(tmp_path):
    """The duplicate check was quadratic: 200,000 values took minutes before the count could refuse them."""
    doc = {"models": [CNN], "grid": {"static_model_ops_lower_limit": list(range(200_000))}}
    t0 = time.monotonic()
    code, _, stderr = om_sweep("run", write_sweep(tmp_path, doc), "-o", tmp_path / "r")
    assert "200,000 points, more than the limit of 100,000" in _one_error_line(code, stderr, "[ERROR] E40001")
    assert time.monotonic() - t0 < 30


# -- sweep files that are not regular files of sane size ---------------------------------------------------------

def _run_with_deadline(argv, seconds: float = 20.0):
    """om_sweep(*argv) in a thread: a hang fails the test instead of blocking it."""
    result = {}
    t = threading.Thread(target=lambda: result.update(out=om_sweep(*argv)), daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"om-sweep {' '.join(map(str, argv))} still runs after {seconds} s")
    return result["out"]


def test_a_fifo_as_sweep_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "sweep.yaml"
    os.mkfifo(fifo)
    code, _, stderr = _run_with_deadline(["run", fifo, "-o", tmp_path / "r"])
    assert "it is a FIFO, not a regular file" in _one_error_line(code, stderr, "[ERROR] E40002: Cannot read sweep file")


def test_a_device_as_sweep_file_is_refused_without_reading_it(tmp_path):
    link = tmp_path / "sweep.yaml"
    os.symlink("/dev/zero", link)         # the suffix check passes; /dev/zero would be read for ever
    code, _, stderr = _run_with_deadline(["run", link, "-o", tmp_path / "r"])
    assert "it is a device, not a regular file" in _one_error_line(code, stderr, "[ERROR] E40002")


def test_a_folder_as_sweep_file_is_refused(tmp_path):
    (tmp_path / "sweep.yaml").mkdir()
    code, _, stderr = om_sweep("run", tmp_path / "sweep.yaml", "-o", tmp_path / "r")
    assert "is a directory" in _one_error_line(code, stderr, "[ERROR] E40011")     # click's check of SWEEP_FILE
    with pytest.raises(AtcError, match="E40002.*it is a folder, not a regular file"):
        load_spec(tmp_path / "sweep.yaml")                                         # the API's own


def test_a_huge_sweep_file_is_refused_by_its_size(tmp_path):
    big = tmp_path / "sweep.yaml"
    with open(big, "wb") as f:
        f.truncate(4 << 30)               # sparse: 4 GiB that would be read whole
    code, _, stderr = _run_with_deadline(["run", big, "-o", tmp_path / "r"])
    line = _one_error_line(code, stderr, "[ERROR] E40002")
    assert f"holds {4 << 30} bytes; a sweep file may hold at most {MAX_SWEEP_FILE_BYTES >> 20} MiB" in line, line


def test_a_sweep_file_that_is_not_utf8_is_refused(tmp_path):
    bad = tmp_path / "sweep.yaml"
    bad.write_bytes(b"models: [\xff\xfe]\n")
    code, _, stderr = om_sweep("run", bad, "-o", tmp_path / "r")
    assert "utf-8" in _one_error_line(code, stderr, "[ERROR] E40002")


def _records(out) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((out / "jobs").glob("*.json"))}
