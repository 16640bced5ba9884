"""Error messages for bad arguments and failed run-time shape checks.

Only called once something is wrong, so they may be slow; they say what was
expected and what was given, naming the argument and the axis, e.g.::

    argument 'y' axis 0: expected n = 3 (bound by argument 'x' axis 0), got 5
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from relaxjax import arith
from relaxjax.arith import Dim, Sym
from relaxjax.errors import ShapeError
from relaxjax.ir import Check, PrimInfo, StructInfo, TensorInfo, format_dims
from relaxjax.runtime.env import BindingSite
from relaxjax.trace.spec import describe_value

#: The range of the int64 values kernels take for symbols.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

__all__ = [
    "dim_mismatch",
    "expected_text",
    "failed_check",
    "no_solution",
    "zero_coefficient",
    "range_text",
    "rank_mismatch",
    "shape_text",
    "symbol_out_of_range",
    "type_name",
]


def shape_text(shape: Sequence[int]) -> str:
    """A concrete shape as numpy prints it: ``(2, 3)``, ``(5,)``, ``()``."""
    return format_dims(tuple(shape))


def type_name(value: object) -> str:
    """What a value is, for "got ..." in messages (``trace.spec.describe_value``)."""
    return describe_value(value)


def expected_text(info: StructInfo) -> str:
    """What an argument of ``info`` must be: ``an array of shape (n, 4) and dtype float32``."""
    if isinstance(info, PrimInfo):
        return f"a scalar of dtype {info.dtype}"
    if isinstance(info, TensorInfo):
        if info.shape is not None:
            return f"an array of shape {format_dims(info.shape)} and dtype {info.dtype}"
        if info.ndim is not None:
            return f"an array of rank {info.ndim} and dtype {info.dtype}"
        return f"an array of dtype {info.dtype}"
    return repr(info)


def rank_mismatch(what: str, info: TensorInfo, shape: Sequence[int]) -> ShapeError:
    """``what: expected rank 2 (shape (n, 4)), got rank 3 (shape (2, 3, 4))``."""
    expected = f"rank {info.ndim}"
    if info.shape is not None:
        expected += f" (shape {format_dims(info.shape)})"
    return ShapeError(
        f"{what}: expected {expected}, got rank {len(shape)} (shape {shape_text(shape)})"
    )


def _symbol_origin(symbol: str, env: Mapping[str, int], sites: Mapping[str, BindingSite]) -> str:
    site = sites.get(symbol)
    where = f" bound by {site.where}" if site is not None else ""
    return f"{symbol} = {env[symbol]}{where}"


def dim_mismatch(
    what: str,
    axis: int,
    expected: Dim,
    got: int,
    env: Mapping[str, int],
    sites: Mapping[str, BindingSite],
) -> ShapeError:
    """The message for an axis whose size breaks the declared (symbolic) dim.

    - static: ``argument 'x' axis 1: expected 4, got 5``
    - a symbol: ``... expected n = 3 (bound by argument 'x' axis 0), got 5``
    - an expression: ``... expected n * 2 = 6 (n = 3 bound by argument 'x' axis 0), got 5``
    """
    if isinstance(expected, int):
        return ShapeError(f"{what} axis {axis}: expected {expected}, got {got}")
    value = arith.evaluate(expected, env)
    if isinstance(expected, Sym):
        site = sites.get(expected.name)
        origin = f" (bound by {site.where})" if site is not None else ""
        return ShapeError(f"{what} axis {axis}: expected {expected} = {value}{origin}, got {got}")
    symbols = sorted(s.name for s in arith.free_symbols(expected))
    origins = ", ".join(_symbol_origin(s, env, sites) for s in symbols)
    return ShapeError(f"{what} axis {axis}: expected {expected} = {value} ({origins}), got {got}")


def range_text(symbol: Sym) -> str:
    """The values a symbol may take: ``n >= 0``, ``1 <= n <= 8``, ``n <= 8``, ``n``."""
    name, lower, upper = symbol.name, symbol.lower, symbol.upper
    if lower is not None and upper is not None:
        return f"{lower} <= {name} <= {upper}"
    if lower is not None:
        return f"{name} >= {lower}"
    return name if upper is None else f"{name} <= {upper}"


def no_solution(
    where: str,
    dim: Dim,
    symbol: Sym,
    got: int,
    env: Mapping[str, int],
    sites: Mapping[str, BindingSite],
) -> ShapeError:
    """A size that fits no value of the symbol it determines::

    argument 'x' axis 0: expected n * 2, got 7, which is not n * 2 for any integer n >= 0
    argument 'x' axis 0: expected m + n, got 2, which is not m + n for any integer n >= 0
    given m = 5 (bound by argument 'y' axis 0)
    """
    if not INT64_MIN <= got <= INT64_MAX:
        return ShapeError(f"{where}: expected {dim}, got {got}, which does not fit in int64")
    text = f"{where}: expected {dim}, got {got}, which is not {dim} for any integer "
    text += range_text(symbol)
    others = sorted(s.name for s in arith.free_symbols(dim) if s.name != symbol.name)
    if others:
        given = ", ".join(f"{s} = {env[s]}" for s in others)
        origins = "; ".join(f"{s} bound by {sites[s].where}" for s in others if s in sites)
        text += f" given {given}" + (f" ({origins})" if origins else "")
    return ShapeError(text)


def zero_coefficient(
    where: str,
    dim: Dim,
    symbol: Sym,
    coeff: Dim,
    got: int,
    env: Mapping[str, int],
    sites: Mapping[str, BindingSite],
) -> ShapeError:
    """A dim ``coeff * n + b`` whose coefficient is 0 at this call::

    argument 'x' axis 1: m * n cannot determine m when n = 0 (bound by argument 'x'
    axis 0); give m a dim of its own or make it a symbolic scalar parameter

    (or, when the size is not ``b`` either, :func:`no_solution`).
    """
    if got != arith.evaluate(dim - coeff * symbol, env):
        return no_solution(where, dim, symbol, got, env, sites)
    if isinstance(coeff, Sym):
        site = sites.get(coeff.name)
        given = f" (bound by {site.where})" if site is not None else ""
    else:
        names = sorted(s.name for s in arith.free_symbols(coeff))
        given = f" ({', '.join(_symbol_origin(name, env, sites) for name in names)})"
    return ShapeError(
        f"{where}: {dim} cannot determine {symbol.name} when {coeff} = 0{given}; give "
        f"{symbol.name} a dim of its own or make it a symbolic scalar parameter"
    )


def symbol_out_of_range(
    symbol: Sym, value: int, where: str, upper_value: int | None = None
) -> ShapeError:
    """A symbol's value outside its declared bounds (or outside int64); ``upper_value`` is
    the value of a symbolic upper bound (``0 <= k <= n * 4 = 12``)."""
    if not INT64_MIN <= value <= INT64_MAX:
        return ShapeError(f"{where}: {symbol.name} = {value} does not fit in int64")
    upper = "" if symbol.upper is None else f" <= {symbol.upper}"
    if isinstance(symbol.upper, arith.Expr) and upper_value is not None:
        upper += f" = {upper_value}"
    return ShapeError(
        f"{where}: {symbol.name} = {value} is outside its declared range "
        f"{symbol.lower} <= {symbol.name}{upper}"
    )


def failed_check(check: Check, env: Mapping[str, int], sites: Mapping[str, BindingSite]) -> str:
    """A run-time check that does not hold, with the values that break it::

    add: cannot broadcast shapes (n,), (m,): requires broadcast(n, m), got n = 3, m = 5
    (n bound by argument 'x' axis 0; m bound by argument 'y' axis 0)
    """
    head = check.message or "run-time shape check failed"
    values = [
        f"{arg} = {arith.evaluate(arg, env)}" for arg in check.args if not isinstance(arg, int)
    ]
    text = f"{head}: requires {check.relation()}, got {', '.join(values)}"
    symbols = sorted({s.name for a in check.args for s in arith.free_symbols(a)})
    origins = [f"{s} bound by {sites[s].where}" for s in symbols if s in sites]
    if origins:
        text += f" ({'; '.join(origins)})"
    return text
