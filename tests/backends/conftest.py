"""Fixtures for backend tests: a private compile cache and isolated child processes.

Native code can crash the interpreter, and a process that has run a libgomp
parallel region must never ``fork``; so parallel loops and deliberately risky
cases run in a fresh ``python -c`` child (the ``isolated`` fixture) whose exit
status fails the test instead of taking pytest down.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch) -> Path:
    """Backend tests compile into a cache of their own, shared by later test sessions of
    the same user (pytest's temporary root), never into the user's real cache."""
    directory = tmp_path_factory.getbasetemp().parent / "relaxjax-backend-tests-cache"
    monkeypatch.setenv("RELAXJAX_CACHE_DIR", str(directory))
    return directory


class Isolated:
    """Runs Python source in a fresh interpreter; returns its stdout (asserts exit 0)."""

    def __call__(self, source: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
        result = self.run(source, env, timeout)
        assert result.returncode == 0, (
            f"child exited with {result.returncode}\n--- stdout\n{result.stdout}"
            f"\n--- stderr\n{result.stderr}"
        )
        return result.stdout

    def run(
        self, source: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        """Run without asserting: the completed process (exit status, stdout, stderr)."""
        child_env = dict(os.environ)
        child_env["PYTHONPATH"] = SRC + os.pathsep + child_env.get("PYTHONPATH", "")
        child_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(source)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=child_env,
        )


@pytest.fixture
def isolated() -> Isolated:
    """Run code in a child interpreter (see :class:`Isolated`)."""
    return Isolated()
