"""om-sweep against hostile sweep files and output folders: a grid too large to expand, a sweep file that is a
FIFO, a device, a folder or huge, and files planted in the output folder (symlinks, forged or edited records).
Each ends in one `[ERROR] E4xxxx` line or in a warning and a rerun; nothing outside the output folder is
written or trusted, finished records are kept."""
from __future__ import annotations

import json
import os
import stat
import threading
import time

import pytest

from atc_py.common.errors import AtcError
from om_sweep.spec import DEFAULT_MAX_POINTS, MAX_SWEEP_FILE_BYTES, load_spec
from tests.helpers.sweep import MODELS, om_sweep, table, write_sweep

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


@pytest.mark.heavy
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


# -- files planted in the output folder ---------------------------------------------------------------------------

TWO_POINTS = {"models": [CNN], "grid": {"soc_version": SOCS[:2]}, "run": {"compute": False}}


@pytest.fixture
def swept(tmp_path):
    """A finished sweep of two jobs, its folder and records, and a folder outside it that nothing may touch."""
    sweep = write_sweep(tmp_path, TWO_POINTS)
    out = tmp_path / "r"
    code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0 and "2 jobs run" in stdout, stderr
    outside = tmp_path / "outside"
    outside.mkdir()
    return sweep, out, _records(out), outside


def _forged(rec: dict, key: str) -> dict:
    """A record claiming what the job never measured, with a digest computed the way the store does."""
    from om_sweep.store import record_digest
    fake = {**rec, "e2e_us": 0.5, "tasks": 1}
    fake["digest"] = record_digest(key, fake)
    return fake


def test_a_symlinked_record_is_not_reused_and_is_replaced(swept):
    sweep, out, recs, outside = swept
    key = sorted(recs)[0]
    forged = outside / "forged.json"
    forged.write_text(json.dumps(_forged(recs[key], key)))
    before = forged.read_bytes()
    (out / "jobs" / f"{key}.json").unlink()
    os.symlink(forged, out / "jobs" / f"{key}.json")
    code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0 and "1 jobs run, 1 reused" in stdout, stderr
    assert f"[WARNING] om-sweep: ignored the stored record jobs/{key}.json: it is a symbolic link; its job runs " \
           "again" in stderr
    assert {r["e2e_us"] for r in table(out)} != {0.5} and 0.5 not in {r["e2e_us"] for r in table(out)}
    assert not os.path.islink(out / "jobs" / f"{key}.json") and forged.read_bytes() == before
    assert _records(out)[key] == recs[key] or _records(out)[key]["e2e_us"] == recs[key]["e2e_us"]


def test_a_dangling_record_symlink_writes_nothing_outside(swept):
    sweep, out, recs, outside = swept
    key = sorted(recs)[1]
    (out / "jobs" / f"{key}.json").unlink()
    os.symlink(outside / "escaped.json", out / "jobs" / f"{key}.json")
    code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0 and "1 jobs run, 1 reused" in stdout, stderr
    assert not os.path.lexists(outside / "escaped.json") and list(outside.iterdir()) == []
    assert not os.path.islink(out / "jobs" / f"{key}.json") and _records(out)[key]["status"] == "ok"


@pytest.mark.parametrize("edit", ["value", "key", "digest", "no digest"])
def test_an_edited_or_misfiled_record_is_not_reused(swept, edit):
    sweep, out, recs, _ = swept
    first, second = sorted(recs)
    path = out / "jobs" / f"{first}.json"
    rec = dict(recs[first])
    if edit == "value":
        rec["e2e_us"] = 0.5                                    # digest left as it was
    elif edit == "key":
        rec = _forged(recs[second], second)                    # another job's (valid) record under this name
    elif edit == "digest":
        rec["digest"] = "0" * 64
    else:
        del rec["digest"]                                      # a record of an om-sweep without digests
    path.write_text(json.dumps(rec))
    code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0 and "1 jobs run, 1 reused" in stdout, stderr
    reason = {"value": "its digest does not match its content (edited or forged)",
              "key": "it is the record of another job", "digest": "its digest does not match",
              "no digest": "it is not a complete record of this om-sweep"}[edit]
    assert f"ignored the stored record jobs/{first}.json: {reason}" in stderr, stderr
    assert 0.5 not in {r["e2e_us"] for r in table(out)} and _records(out)[first]["e2e_us"] == recs[first]["e2e_us"]


def test_a_planted_fifo_record_is_ignored_without_blocking_and_never_replaced(swept):
    sweep, out, recs, _ = swept
    fifo = out / "jobs" / f"{sorted(recs)[0]}.json"
    fifo.unlink()
    os.mkfifo(fifo)
    code, stdout, stderr = _run_with_deadline(["run", sweep, "-o", out, "--no-report"])
    assert f"jobs/{fifo.name}: it is not a regular file" in stderr
    # saving the rerun's record there is one E13004 line (a FIFO is refused, as everywhere)
    errors = [line for line in stderr.splitlines() if line.startswith("[ERROR]")]
    assert code == 1 and "Traceback" not in stderr and len(errors) == 1, stderr
    assert errors[0].startswith("[ERROR] E13004: Failed to write file") and "it is a FIFO" in errors[0]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    fifo.unlink()
    code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0 and "1 jobs run, 1 reused" in stdout, stderr


def test_a_huge_record_is_ignored_without_reading_it(swept):
    from om_sweep.store import MAX_RECORD_BYTES
    sweep, out, recs, _ = swept
    key = sorted(recs)[1]
    with open(out / "jobs" / f"{key}.json", "ab") as f:
        f.truncate(MAX_RECORD_BYTES + 10)
    code, stdout, stderr = om_sweep("run", sweep, "-o", out, "--no-report")
    assert code == 0 and "1 jobs run, 1 reused" in stdout, stderr
    assert f"jobs/{key}.json: it holds more than 1 MiB" in stderr
    assert _records(out)[key]["e2e_us"] == recs[key]["e2e_us"]


def test_the_more_ignored_records_the_fewer_lines(tmp_path):
    import io

    from om_sweep.sweep import warn_ignored
    stream = io.StringIO()
    warn_ignored([f"jobs/{i}.json: why" for i in range(8)], stream)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 6 and lines[-1] == "[WARNING] om-sweep: ignored 3 more stored records; their jobs run again"


def test_a_symlinked_jobs_folder_is_refused(tmp_path):
    sweep = write_sweep(tmp_path, TWO_POINTS)
    out, outside = tmp_path / "r", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    os.symlink(outside, out / "jobs")
    code, _, stderr = om_sweep("run", sweep, "-o", out)
    line = _one_error_line(code, stderr, "[ERROR] E40010: Cannot write")
    assert "jobs: it is a symbolic link" in line
    assert list(outside.iterdir()) == [] and sorted(p.name for p in out.iterdir()) == ["jobs"]


@pytest.mark.parametrize("name", ["results.csv", "results.parquet", "report.html"])
def test_a_symlinked_table_or_report_is_replaced_not_written_through(tmp_path, name):
    sweep = write_sweep(tmp_path, TWO_POINTS)
    out = tmp_path / "r"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    os.symlink(victim, out / name)
    code, stdout, stderr = om_sweep("run", sweep, "-o", out)
    assert code == 0, stderr
    assert victim.read_text() == "keep\n" and not os.path.islink(out / name) and (out / name).stat().st_size > 100
    assert len(table(out)) == 2


def test_om_sweep_report_still_writes_through_a_link_the_user_names(swept):
    _, out, _, outside = swept
    os.symlink(outside / "report.html", out / "mine.html")
    code, _, stderr = om_sweep("report", out / "results.parquet", "-o", out / "mine.html")
    assert code == 0, stderr
    assert os.path.islink(out / "mine.html") and (outside / "report.html").read_text().startswith("<!DOCTYPE html>")
