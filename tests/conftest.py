"""Fixtures: both command lines run in-process, the golden-file switch (shared helpers live in tests/helpers)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from atc_py.cli.main import run as atc_run


def pytest_collection_modifyitems(items):
    """Tests marked heavy (each runs for seconds) go first: spread over the xdist workers from the start, none is
    left to run alone after the others have finished. The order is otherwise the collection's."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="regenerate tests/golden/*.json")


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")


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
