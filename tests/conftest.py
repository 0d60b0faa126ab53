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


@pytest.fixture
def tool_line():
    """Run `python -m om_run.ais_bench ...` or `python -m om_run.msame ...` in-process: tool_line("ais_bench",
    *argv) returns (exit code, stdout, stderr)."""
    from om_run.cli import ais_bench_line, msame_line
    from om_run.cli.main import tool_main

    def _run(tool: str, *argv: str):
        line = {"ais_bench": ais_bench_line, "msame": msame_line}[tool]
        with CliRunner().isolation() as (out, err, _):
            try:
                tool_main(line.translate, line.help_text, f"python -m om_run.{tool}", list(argv))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
            return code, out.getvalue().decode(), err.getvalue().decode()
    return _run
