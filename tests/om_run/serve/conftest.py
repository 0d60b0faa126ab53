"""Every serving test builds into its own cache folder (the user's ~/.cache is never touched)."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def serve_cache(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.getbasetemp() / "om-run-serve-cache"
    monkeypatch.setenv("OM_RUN_SERVE_CACHE", str(path))
    return path
