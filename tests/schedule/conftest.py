"""Schedule tests compile (relax.build) into a private cache, never the user's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch) -> Path:
    """A compile cache of the schedule tests, shared by later sessions of the same user."""
    directory = tmp_path_factory.getbasetemp().parent / "relaxjax-schedule-tests-cache"
    monkeypatch.setenv("RELAXJAX_CACHE_DIR", str(directory))
    return directory
