"""Notebook rendering of a schedule: the kernel with the last step's loops and blocks
highlighted, and the trace."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from relaxjax.tir.function import PrimFunc

_HIGHLIGHT = "background:#fff3b0"


def _highlight_line(line: str, names: Sequence[str]) -> bool:
    for name in names:
        if re.search(rf"^\s*for {re.escape(name)} in ", line):
            return True
        if re.search(rf'^\s*with block\("{re.escape(name)}"\)', line):
            return True
    return False


def kernel_html(func: PrimFunc, touched: Sequence[str] = ()) -> str:
    """The kernel's text as HTML; lines opening a loop or block in ``touched`` are
    highlighted, keywords bold."""
    lines = []
    for line in str(func).splitlines():
        escaped = html.escape(line)
        escaped = re.sub(r"(?<![\w.])(for|in|with|if|else|def)(?!\w)", r"<b>\1</b>", escaped)
        if _highlight_line(line, touched):
            escaped = f'<span style="{_HIGHLIGHT}">{escaped}</span>'
        lines.append(escaped)
    return '<pre class="relaxjax-tir">' + "\n".join(lines) + "</pre>"


def schedule_html(func: PrimFunc, trace, touched: Sequence[str]) -> str:
    """A schedule as HTML: the kernel (last step highlighted) and the trace."""
    steps = f"<details><summary>trace ({len(trace)} steps)</summary>{trace._repr_html_()}</details>"
    return f'<div class="relaxjax-schedule">{kernel_html(func, touched)}{steps}</div>'
