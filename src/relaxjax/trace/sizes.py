"""Data-dependent sizes as fresh symbols: ``k0`` for the length of ``nonzero(x)``.

:func:`data_dependent_size` emits an op computing a count as an int64 scalar and binds
it to a fresh symbol with a ``match_cast``::

    lv0: Prim("int64") = nonzero_count(x)
    lv1: Prim("int64", value=k0) = match_cast(lv0, Prim("int64", value=k0))

The symbol carries its bounds (``0 <= k0 <= n * 4``, the most it can count), so every
deduction downstream can use them (``min(k0, n * 4) == k0``); the runtime reads the
count once its kernel ran and checks the bounds. The same count of the same operands
is bound once per function (``x[m]`` and ``y[m]`` have the same length ``k0``). Outside a
trace the count is computed eagerly and is a plain int.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaxjax import arith, ops
from relaxjax.ir import PrimInfo
from relaxjax.trace.context import current
from relaxjax.trace.source import user_location
from relaxjax.trace.tracer import Tracer, bind_match_cast, emit

__all__ = ["data_dependent_size"]


def data_dependent_size(
    op_name: str,
    args: Sequence[object],
    attrs: object,
    bound: arith.Dim | None,
    hint: str = "k",
) -> arith.Dim:
    """The count ``op_name(*args)`` computes, as a fresh symbol ``0 <= k <= bound`` while
    tracing (an int when evaluating eagerly, or when no operand is traced: constants).
    ``bound=None`` leaves the symbol unbounded above (a sum of counts)."""
    trace = current()
    if trace is not None and not any(isinstance(a, Tracer) for a in args):
        return int(np.asarray(ops.get(op_name).reference(*args, attrs=attrs)))  # known now
    key = None
    if trace is not None and all(isinstance(a, Tracer) for a in args):
        key = (op_name, tuple(a.ir_var for a in args), attrs)  # type: ignore[union-attr]
        if key in trace.sizes:
            return trace.sizes[key]
    count = emit(op_name, args, attrs)
    if trace is None:
        return int(np.asarray(count))
    assert isinstance(count, Tracer)
    upper = bound if bound is None or isinstance(bound, arith.Expr) else int(bound)
    symbol = arith.sym(trace.fresh_symbol_name(hint, internal=False), 0, upper)
    bind_match_cast(trace, count.ir_var, PrimInfo("int64", value=symbol), user_location())
    if key is not None:
        trace.sizes[key] = symbol
    return symbol
