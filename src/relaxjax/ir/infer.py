"""The context an operator's ``infer`` runs in: where it records what it cannot prove.

``op.infer(arg_infos, attrs, ctx)`` calls ``ctx.require(Check(...))`` for each relation
the result depends on: a proven relation is dropped, a provably false one raises
``ShapeError``, and the rest are recorded in ``ctx.checks`` and end up on the ``Call``,
to be checked at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from relaxjax.errors import ShapeError, SourceLocation
from relaxjax.ir.nodes import Check
from relaxjax.ir.struct_info import StructInfo


class InferContext:
    """Collects the run-time checks of one call while its op deduces the result's info.

    ``op_name`` and ``arg_infos`` are used in error messages; ``location`` is the user's
    source line, attached to the errors raised.
    """

    def __init__(
        self,
        op_name: str,
        arg_infos: Sequence[StructInfo] = (),
        location: SourceLocation | None = None,
    ) -> None:
        self.op_name = op_name
        self.arg_infos = tuple(arg_infos)
        self.location = location
        self.checks: list[Check] = []

    def require(self, check: Check) -> None:
        """Drop ``check`` if proven, raise ``ShapeError`` if it never holds, else record it."""
        verdict = check.decide()
        if verdict is True:
            return
        if verdict is False:
            raise ShapeError(self._violation(check), location=self.location)
        if all(not _same_relation(check, seen) for seen in self.checks):
            self.checks.append(check)

    def fail(self, message: str) -> NoReturn:
        """Raise ``ShapeError`` with ``message`` prefixed by the op's name."""
        raise ShapeError(self._prefixed(message), location=self.location)

    def _prefixed(self, message: str) -> str:
        if message.startswith(f"{self.op_name}:"):
            return message
        return f"{self.op_name}: {message}"

    def _violation(self, check: Check) -> str:
        symbolic = any(not isinstance(a, int) for a in check.args)
        never = "which is false for every value of the symbols" if symbolic else "which is false"
        head = self._prefixed(check.message) if check.message else self.op_name
        text = f"{head}: requires {check.relation()}, {never}"
        if self.arg_infos:
            text += " (operands: " + ", ".join(repr(i) for i in self.arg_infos) + ")"
        return text


def _same_relation(a: Check, b: Check) -> bool:
    return a.kind == b.kind and a.args == b.args
