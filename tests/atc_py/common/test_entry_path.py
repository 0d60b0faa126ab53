"""`python -m atc_py` / `-m om_run` / `-m om_run.ais_bench` / `-m om_run.msame` / `-m om_sweep` do not import
from the working folder (common/entry_path.py): modules planted there (numpy.py, click.py, ...) never run,
and run from a source tree without installing, the three packages come from that tree."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.helpers import MODELS, ROOT, compile_om

PLANTED = ("numpy", "click", "yaml", "onnx", "google")
PLANT = ("import pathlib\n"
         "pathlib.Path(__file__).with_name('PLANTED_' + pathlib.Path(__file__).stem).write_text('ran')\n"
         "raise SystemExit('a planted module was imported')\n")
ENTRIES = {
    "atc_py": ["--mode=6", "--om=m.om"],
    "om_run": ["--model", "m.om", "--output", "out"],
    "om_run.ais_bench": ["--model", "m.om", "--output", "out"],
    "om_run.msame": ["--model", "m.om", "--output", "out"],
    "om_sweep": ["socs"],
}


@pytest.fixture(scope="module")
def om_bytes() -> bytes:
    return compile_om(MODELS / "small_cnn.onnx")


def _plant(folder) -> None:
    for name in PLANTED:
        (folder / f"{name}.py").write_text(PLANT)


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH", "ATC_PY_DEBUG")}
    return {**env, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **extra}


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_modules_planted_in_the_working_folder_are_not_imported(tmp_path, om_bytes, entry):
    _plant(tmp_path)
    (tmp_path / "m.om").write_bytes(om_bytes)
    proc = subprocess.run([sys.executable, "-m", entry, *ENTRIES[entry]], cwd=tmp_path, env=_env(PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not sorted(p.name for p in tmp_path.glob("PLANTED_*")) and "planted" not in proc.stdout + proc.stderr


@pytest.mark.heavy
def test_run_from_a_source_tree_the_packages_come_from_that_tree(tmp_path, om_bytes):
    """The working folder is where the packages are (not installed; here a tree of links to this repository's
    packages, whatever the environment has installed): they are imported from it, each other from it too, and
    the planted numpy.py beside them is not."""
    tree = tmp_path / "src"
    tree.mkdir()
    for name in ("atc_py", "om_run", "om_sweep"):
        (tree / name).symlink_to(ROOT / name)
    _plant(tree)
    (tree / "m.om").write_bytes(om_bytes)
    proc = subprocess.run([sys.executable, "-v", "-m", "om_run", "--model", "m.om", "--output", "out"], cwd=tree,
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    loaded = re.findall(r"^# code object from '?([^'\n]+)", proc.stderr, re.MULTILINE)
    ours = [p for p in loaded if re.search(r"/(atc_py|om_run|om_sweep)/", p)]
    assert ours and all(p.startswith(str(tree)) for p in ours), [p for p in ours if not p.startswith(str(tree))][:5]
    assert not list(tree.glob("PLANTED_*")) and (tree / "out").is_dir()
    # om-sweep's job processes (its fork server takes the sweep's sys.path) find the tree too
    (tree / "m.onnx").symlink_to(MODELS / "small_cnn.onnx")
    (tree / "s.yaml").write_text("models: [m.onnx]\ngrid: {soc_version: [Ascend910B1]}\nrun: {compute: false}\n")
    sweep = subprocess.run([sys.executable, "-m", "om_sweep", "run", "s.yaml", "-o", "r", "--workers", "1",
                            "--no-report"], cwd=tree, env=_env(), capture_output=True, text=True, timeout=300)
    assert sweep.returncode == 0 and "ok 1" in sweep.stdout + sweep.stderr, sweep.stdout[-2000:] + sweep.stderr[-2000:]
    assert not list(tree.glob("PLANTED_*"))


def test_only_the_implicit_working_folder_entry_goes(tmp_path, monkeypatch):
    """An entry on PYTHONPATH (the user's choice) stays; under -P (no implicit entry) nothing is taken out."""
    from atc_py.common import entry_path
    monkeypatch.chdir(tmp_path)
    rest = ["/explicit", str(tmp_path)]
    monkeypatch.setattr(sys, "path", [str(ROOT), str(tmp_path), *rest])
    entry_path.leave_working_folder()
    assert sys.path == rest
    monkeypatch.setattr(sys, "path", [str(ROOT), "", *rest])
    entry_path.leave_working_folder()
    assert sys.path == rest
    monkeypatch.setattr(sys, "path", [str(ROOT), "/usr/lib/python3.zip", *rest])
    entry_path.leave_working_folder()
    assert sys.path == ["/usr/lib/python3.zip", *rest]
