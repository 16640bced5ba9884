"""docs/gpu_schedule.md: every Python listing runs, and prints exactly the listing after it."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).parents[3] / "docs" / "gpu_schedule.md"


def _blocks(text: str) -> list[tuple[str, str]]:
    """``(kind, body)`` of every fenced block, in order (kind "python" or "")."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S)]


def test_the_gpu_schedule_page_prints_what_it_shows():
    blocks = _blocks(DOC.read_text())
    namespace: dict = {}
    checked = 0
    for index, (kind, body) in enumerate(blocks):
        if kind != "python":
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(body, f"{DOC.name} listing {index}", "exec"), namespace)
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        if following is not None and following[0] == "":
            assert out.getvalue() == following[1], f"listing {index} prints something else"
            checked += 1
    assert checked == 4
