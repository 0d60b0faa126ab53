"""Replay of real ATC command lines from public Ascend READMEs (tests/data/atc_replay/cases.json): each line runs
through the shell's word splitting (tests/replay_shell.py) into `atc_py.cli.main.run`, in a scratch directory holding
a stand-in model (tests/replay_models.py) and the configuration files at the paths the line names. A line real
ATC accepts must convert; a line real ATC refuses must fail with one clean ATC error."""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil

import pytest

from atc_py.cli.main import run as atc_run
from tests.helpers import DATA
from tests.helpers.replay_models import onnx_model, tf_graph
from tests.helpers.replay_shell import atc_argv

REPLAY = DATA / "atc_replay"
CASES = json.loads((REPLAY / "cases.json").read_text(encoding="utf-8"))["cases"]
MIN_CONVERTED = 0.98
ERROR_LINE = re.compile(r"^(E\d{5}): ", re.M)


def flag_value(argv: list[str], name: str) -> str | None:
    """The value of --name in argv as ATC would read it (`--name=v`, `--name v`, `-name`, '-' for '_'), else None."""
    for i, arg in enumerate(argv):
        flag, eq, value = arg.lstrip("-").partition("=")
        if arg.startswith("-") and flag.replace("-", "_") == name:
            return value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return None


def rooted(argv: list[str], root: pathlib.Path) -> list[str]:
    """Absolute paths in the line (/home/HwHiAiUser/..., $HOME/...) moved under the scratch root."""
    out = []
    for arg in argv:
        flag, eq, value = arg.partition("=")
        if eq and value.startswith("/"):
            arg = f"{flag}={root}{value}"
        elif arg.startswith("/"):
            arg = f"{root}{arg}"
        out.append(arg)
    return out


def stage(case: dict, argv: list[str], root: pathlib.Path) -> None:
    """The scratch directory as the README leaves it: the model where --model points, the output's folder, the
    configuration files where the line names them."""
    work = root / case.get("cwd", "")
    work.mkdir(parents=True, exist_ok=True)
    for dest, src in case.get("files", {}).items():
        target = work / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPLAY / "files" / src, target)
    model = flag_value(argv, "model")
    if model:
        path = work / model
        path.parent.mkdir(parents=True, exist_ok=True)
        build = tf_graph if flag_value(argv, "framework") == "3" else onnx_model
        path.write_bytes(build(case["inputs"], case.get("nodes", ()), case.get("ops", ()), seed=7)
                         .SerializeToString())
    output = flag_value(argv, "output")
    if output:
        (work / output).parent.mkdir(parents=True, exist_ok=True)


def replay(case: dict, root: pathlib.Path, capsys) -> tuple[int, str, pathlib.Path | None]:
    """Run the case's line; (exit code, everything printed, the .om it should write)."""
    cmd = case["cmd"]
    for old, new in case.get("reader_fixes", ()):
        cmd = cmd.replace(old, new)
    argv = rooted(atc_argv(cmd, case.get("vars", {})), root)
    stage(case, argv, root)
    cwd = os.getcwd()
    os.chdir(root / case.get("cwd", ""))
    try:
        code = atc_run(argv)
    finally:
        os.chdir(cwd)
    captured = capsys.readouterr()
    output = flag_value(argv, "output")
    return code, captured.out + captured.err, (root / case.get("cwd", "") / f"{output}.om") if output else None


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_real_atc_line(case, tmp_path, capsys):
    code, out, om = replay(case, tmp_path, capsys)
    if case["expect"] == "ok":
        assert code == 0 and om.stat().st_size > 0, out[-3000:]
        return
    assert code != 0 and "Traceback" not in out and "E19999" not in out, out[-3000:]
    assert ERROR_LINE.findall(out) == [case["error"]] and case["error_says"] in out, out[-3000:]


def test_the_lines_real_atc_accepts_convert(tmp_path, capsys):
    """The replay figure docs/atc-py.md quotes: of the lines real ATC accepts, the share atc-py converts."""
    accepted = [c for c in CASES if c["expect"] == "ok"]
    failed = []
    for case in accepted:
        code, _, _ = replay(case, tmp_path / case["id"], capsys)
        if code != 0:
            failed.append(case["id"])
    converted = len(accepted) - len(failed)
    assert len(accepted) >= 40 and converted / len(accepted) >= MIN_CONVERTED, failed
    docs = (REPLAY.parents[2] / "docs" / "atc-py.md").read_text(encoding="utf-8")
    assert f"replays {len(CASES)} `atc` command lines" in docs and f"accepts {len(accepted)} of them" in docs
    assert f"atc-py converts **{converted} of {len(accepted)}**" in docs and \
        f"The {len(CASES) - len(accepted)} real ATC refuses" in docs


def test_cases_are_verbatim_and_explained():
    """Every case keeps its README text and source; every refused line says why and which error."""
    assert len({c["id"] for c in CASES}) == len(CASES)
    for c in CASES:
        assert c["cmd"].lstrip("`").startswith("atc") and c["source"]
        assert c["expect"] in ("ok", "error")
        if c["expect"] == "error":
            assert re.fullmatch(r"E\d{5}", c["error"]) and c["error_says"] and c["why"]
        for src in c.get("files", {}).values():
            assert (REPLAY / "files" / src).is_file(), src
