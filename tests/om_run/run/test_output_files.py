"""om-run's outputs, profile and generated tokens are files it names inside the folders given by --output and
--profile: a symlink planted at such a name is replaced by the file, never written through (the folder's
owner may not be the one who planted it). A path the user names (--summary-json) is still written as given."""
from __future__ import annotations

import os

import pytest

from tests.helpers import MODELS, compile_om
from tests.helpers.decoders import compile_decoder, prompt_file


@pytest.fixture(scope="module")
def cnn_om(tmp_path_factory):
    path = tmp_path_factory.mktemp("om") / "small_cnn.om"
    path.write_bytes(compile_om(MODELS / "small_cnn.onnx"))
    return path


def _plant(folder, victim):
    """Each file of `folder` becomes a symlink to `victim`; returns their names."""
    names = sorted(p.name for p in folder.iterdir())
    for name in names:
        (folder / name).unlink()
        os.symlink(victim, folder / name)
    return names


def _replaced(folder, names, victim):
    assert victim.read_text() == "keep\n"
    for name in names:
        assert not os.path.islink(folder / name) and (folder / name).stat().st_size > 0, name


@pytest.mark.parametrize("fmt", ["NPY", "BIN", "TXT"])
def test_symlinks_planted_in_output_and_profile_folders_are_replaced(om_run, cnn_om, tmp_path, fmt):
    out, prof, victim = tmp_path / "out", tmp_path / "prof", tmp_path / "victim.txt"
    args = ("--model", str(cnn_om), "--output", str(out), "--outfmt", fmt, "--profile", str(prof))
    code, stdout, stderr = om_run(*args)
    assert code == 0, stdout + stderr
    victim.write_text("keep\n")
    planted = {d: _plant(d, victim) for d in (out, prof)}
    assert planted[out] and sorted(planted[prof]) == ["op_summary.csv", "trace.json"]
    code, stdout, stderr = om_run(*args)
    assert code == 0 and "Traceback" not in stdout + stderr, stdout + stderr
    for d, names in planted.items():
        _replaced(d, names, victim)


def test_a_dangling_output_symlink_creates_nothing_outside(om_run, cnn_om, tmp_path):
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    code, stdout, stderr = om_run("--model", str(cnn_om), "--output", str(out))
    assert code == 0, stdout + stderr
    names = [p.name for p in out.iterdir()]
    for name in names:
        (out / name).unlink()
        os.symlink(outside / name, out / name)
    assert om_run("--model", str(cnn_om), "--output", str(out))[0] == 0
    assert list(outside.iterdir()) == [] and not any(os.path.islink(out / n) for n in names)


def test_a_summary_json_the_user_names_is_still_written_through_a_link(om_run, cnn_om, tmp_path):
    (tmp_path / "real.json").write_text("")
    os.symlink("real.json", tmp_path / "link.json")
    assert om_run("--model", str(cnn_om), "--no-compute", "--summary-json", str(tmp_path / "link.json"))[0] == 0
    assert os.path.islink(tmp_path / "link.json") and (tmp_path / "real.json").read_text().startswith("{")


def test_generate_replaces_planted_tokens_and_steps(atc, om_run, tmp_path):
    om, _ = compile_decoder(atc, tmp_path, "growing")
    out, prof, victim = tmp_path / "out", tmp_path / "prof", tmp_path / "victim.txt"
    args = ("--model", str(om), "--input", str(prompt_file(tmp_path)), "--generate", "2", "--output", str(out),
            "--profile", str(prof))
    code, stdout, stderr = om_run(*args)
    assert code == 0, stdout + stderr
    victim.write_text("keep\n")
    planted = {d: _plant(d, victim) for d in (out, prof)}
    assert planted[out] == ["tokens.npy"] and "steps.csv" in planted[prof]
    code, stdout, stderr = om_run(*args)
    assert code == 0, stdout + stderr
    for d, names in planted.items():
        _replaced(d, names, victim)
