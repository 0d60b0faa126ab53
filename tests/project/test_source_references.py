"""Comments and docstrings say the behaviour they mean, not which issue, seed document or design section asked
for it: none of those travels with the repository, so a reader could not follow the reference."""
from __future__ import annotations

import re

from tests.helpers import ROOT

# an issue of another public repository ("owner/name issue #N") is a source anyone can open: not matched
UNFOLLOWABLE = re.compile(r"\bissues? *#?\d|\bseeds? 00\d|DESIGN ?§|DESIGN\.md", re.IGNORECASE)
TREES = ("atc_py", "om_run", "om_sweep", "atc_conformance", "tools", "bench", "tests", "models", "plugins")


def _unfollowable(line: str) -> bool:
    return any(not re.search(r"\S+/\S+ $", line[:m.start()]) for m in UNFOLLOWABLE.finditer(line))


def test_no_comment_refers_to_an_issue_a_seed_or_a_design_section():
    bad = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
           for tree in TREES for path in sorted((ROOT / tree).rglob("*.py"))
           for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
           if _unfollowable(line) and path.name != "test_source_references.py"]
    assert not bad, "say the behaviour instead:\n" + "\n".join(bad)
