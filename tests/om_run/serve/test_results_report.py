"""The HTML report: one self-contained page with its four charts as PNG data URIs, the summary and the settings;
the same run gives the same bytes; without matplotlib a clear error names the extra to install."""
from __future__ import annotations

import builtins
import re

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.results import ResultFlags, compute, write_results
from om_run.serve.results.report_html import report_html, require_matplotlib

from .results_cases import RUN_INFO, records, steps


def _page():
    return report_html(records(), steps(), RUN_INFO, compute(records(), RUN_INFO).summary)


def test_report_has_the_charts_and_tables(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install 'atc-py[report]')")
    page = _page()
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', page)
    assert [alt for alt, _ in images] == ["TTFT CDF", "TPOT CDF", "Batch size over time", "KV blocks in use over time"]
    assert all(data.startswith("iVBORw0KGgo") for _, data in images)          # PNG signature, base64
    assert "<td>Successful requests:</td><td>3</td>" in page
    assert "<th colspan=\"2\">Time to First Token</th>" in page
    assert "<td>settings.block_size</td><td>128</td>" in page
    assert "http" not in page.replace("http-equiv", "")                         # nothing fetched from elsewhere
    assert page == _page()                                                      # deterministic
    path = tmp_path / "report.html"
    assert write_results(records(), steps(), RUN_INFO, ResultFlags(report=path)).files == [path]
    assert path.read_text(encoding="utf-8") == page


def test_without_matplotlib(monkeypatch, tmp_path):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(AtcError) as e:
        require_matplotlib()
    assert e.value.code == "E30008" and "pip install 'atc-py[report]'" in str(e.value)
    with pytest.raises(AtcError, match="matplotlib"):        # checked before any file is written
        write_results(records(), steps(), RUN_INFO, ResultFlags(report=tmp_path / "r.html", trace=tmp_path / "t"))
    assert not list(tmp_path.iterdir())


def test_an_empty_run_still_draws():
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install 'atc-py[report]')")
    page = report_html([], [], {}, [])
    assert page.count("data:image/png;base64,") == 4
