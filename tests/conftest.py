"""Shared fixtures: repo paths, compiling samples, running both CLIs in-process."""
from __future__ import annotations

import pathlib

import pytest
from click.testing import CliRunner

import atc_py
from atc_py.cli.main import run as atc_run

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
PLUGIN = ROOT / "plugins" / "example_custom_ops.py"
SAMPLES = sorted(p.stem for p in MODELS.glob("*.onnx"))
ORT_SAMPLES = ["small_cnn", "small_transformer", "inception_block"]   # the others use the ascend/custom domains ORT cannot run


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="regenerate tests/golden/*.json")


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")


ORIGIN_DTYPE = {"ge.exec.precision_mode": "must_keep_origin_dtype"}  # fp32 kernels vs fp32 references


def compile_om(model, soc="Ascend910B1", **options) -> bytes:
    opts = {"ge.socVersion": soc, **ORIGIN_DTYPE, "om_name": pathlib.Path(str(model)).stem if isinstance(model, (str, pathlib.Path)) else "m"}
    opts.update(options)
    return atc_py.build(str(model) if isinstance(model, pathlib.Path) else model, opts).om


@pytest.fixture
def atc(capsys):
    """Run atc-py in-process: returns (exit code, stdout, stderr)."""
    def _run(*argv: str):
        code = atc_run(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err
    return _run


@pytest.fixture
def om_run():
    from om_run.cli.main import main

    def _run(*argv: str):
        res = CliRunner().invoke(main, list(argv))
        return res.exit_code, res.stdout, res.stderr
    return _run
