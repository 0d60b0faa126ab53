"""The documentation: README.md is the front door, docs/ the MkDocs site (`make docs`).

The reference pages in docs/reference/ are generated from the code by tools/gen_docs.py and must match it (a
new flag or op without regenerated pages fails here); README.md stays short; user documentation names no issue
numbers; every relative link points to a file that exists (and to a heading that exists); the site builds with
`mkdocs build --strict` when MkDocs is installed (the `docs` extra, part of the `test` extra)."""
from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys
import unicodedata

import pytest

from tests.helpers import ROOT

DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_MAX_LINES = 300


def _pages() -> list[pathlib.Path]:
    return [README] + sorted(DOCS.rglob("*.md"))


def test_generated_reference_pages_match_the_code():
    # a fresh process: the op registry of this one may hold the plugins other tests loaded
    res = subprocess.run([sys.executable, "tools/gen_docs.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, ("the generated documentation is stale: run `make docs` (or python tools/gen_docs.py) "
                                 f"and commit docs/reference/\n{res.stdout}{res.stderr}")


def test_every_generated_page_is_in_the_site():
    mkdocs_yml = (ROOT / "mkdocs.yml").read_text()
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_docs
    finally:
        sys.path.pop(0)
    for name in gen_docs.PAGES:
        assert (DOCS / "reference" / name).is_file(), f"docs/reference/{name} is missing: run `make docs`"
        assert f"reference/{name}" in mkdocs_yml, f"docs/reference/{name} is not in mkdocs.yml's nav"


def test_readme_is_the_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move "
                                            "reference material into docs/")
    text = "\n".join(lines)
    assert "make demo" in text and "make test" in text, "README.md's quick start names make demo and make test"


ISSUE_NUMBER = re.compile(r"\bissues?[\s#-]*\d", re.IGNORECASE)


@pytest.mark.parametrize("path", [README, ROOT / "Makefile", *sorted(DOCS.rglob("*.md"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_user_documentation_names_no_issue_numbers(path):
    bad = [f"{path.name}:{i}: {line.strip()}" for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
           if ISSUE_NUMBER.search(line)]
    assert not bad, "say what it is, not which issue asked for it:\n" + "\n".join(bad)


# -- links ---------------------------------------------------------------------------------------------------
_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1", re.DOTALL)
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_HTML_ID = re.compile(r"""<a\s+(?:id|name)=["']([^"']+)["']""")


def _strip_code(text: str) -> str:
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def _slug(heading: str) -> str:
    """Python-Markdown's toc slugify (what MkDocs uses) of a heading's text."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)                      # code spans keep their text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)              # links keep their text
    text = re.sub(r"[*_]{1,2}([^*_]+)[*_]{1,2}", r"\1", text)         # emphasis
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(path: pathlib.Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    anchors = set(_HTML_ID.findall(text))
    for heading in _HEADING.findall(text):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}_{n}")
    return anchors


def _links(path: pathlib.Path) -> list[str]:
    return _LINK.findall(_strip_code(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("path", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_existing_files_and_headings(path):
    bad = []
    for target in _links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):   # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            bad.append(f"{target}: no such file {dest}")
            continue
        if anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: {dest.name} has no heading with the anchor #{anchor}")
    assert not bad, f"broken links in {path.relative_to(ROOT)}:\n" + "\n".join(bad)


def test_docs_pages_are_all_in_the_nav():
    mkdocs_yml = (ROOT / "mkdocs.yml").read_text()
    missing = [str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if str(p.relative_to(DOCS)) not in mkdocs_yml]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


# -- the fidelity tables -------------------------------------------------------------------------------------
def test_make_fidelity_rewrites_only_the_marked_section_of_its_docs_page(tmp_path):
    from bench.fidelity.__main__ import BEGIN, DOCS_PAGE, END, rewrite_section
    text = DOCS_PAGE.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1 and text.index(BEGIN) < text.index(END), \
        f"{DOCS_PAGE.name} needs one {BEGIN} ... {END} section for `make fidelity`"
    page = tmp_path / "fidelity.md"
    page.write_text(f"# head\n\n{BEGIN}\nold table\n{END}\n\ntail\n", encoding="utf-8")
    assert rewrite_section(page, f"{BEGIN}\nnew table\n{END}")
    assert page.read_text(encoding="utf-8") == f"# head\n\n{BEGIN}\nnew table\n{END}\n\ntail\n"
    page.write_text("no markers\n", encoding="utf-8")
    assert not rewrite_section(page, f"{BEGIN}\nnew\n{END}")
    assert page.read_text(encoding="utf-8") == "no markers\n"


# -- the site ------------------------------------------------------------------------------------------------
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="MkDocs is not installed (the docs extra)")
def test_mkdocs_builds_the_site_without_warnings(tmp_path):
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                          "--site-dir", str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, f"mkdocs build --strict failed:\n{res.stdout}{res.stderr}"
    assert "WARNING" not in res.stderr, res.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "operators" / "index.html").is_file()


# -- the fixture tables --------------------------------------------------------------------------------------
def test_the_fixture_tables_list_every_fixture_of_every_directory():
    """docs/real-models.md's tables (python -m tools.real_models.report --docs) have a row for each model file of
    each fixture directory of tests/data, and every directory there either has a table or is named as holding no
    models."""
    from tools.real_models.report import BEGIN, DOCS_PAGE, END
    from tools.real_models.sections import SECTIONS, uncovered
    assert not uncovered(), f"fixture directories without a table in tools/real_models/sections.py: {uncovered()}"
    text = DOCS_PAGE.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    tables = text.split(BEGIN, 1)[1].split(END, 1)[0]
    for directory, section in SECTIONS.items():
        heading = f"### `tests/data/{directory}`"
        assert heading in tables, f"no table for tests/data/{directory}: run python -m tools.real_models.report --docs"
        body = tables.split(heading, 1)[1].split("### ", 1)[0]
        rows = re.findall(r"^\| `([^`]+)` \|", body, re.MULTILINE)
        assert rows == section.fixtures(), (f"the table of tests/data/{directory} is stale: run python -m "
                                            "tools.real_models.report --docs")


@pytest.mark.parametrize("package", ["atc_py", "om_run", "om_sweep"])
def test_the_layout_page_names_every_package_and_root_module(package):
    """docs/layout.md is where a newcomer finds things: each sub-package (as `name/`) and root module (as
    `name.py`) of the three tools is named there."""
    text = (DOCS / "layout.md").read_text()
    root = ROOT / package
    names = [f"`{p.name}/`" for p in sorted(root.iterdir()) if (p / "__init__.py").is_file()]
    names += [f"`{p.name}`" for p in sorted(root.glob("*.py")) if p.name != "__init__.py"]
    missing = [n for n in names if n not in text]
    assert not missing, f"docs/layout.md does not name {missing} of {package}"
