"""Calls between graph functions: matching a callee's signature against the arguments.

A binding ``lv = mod.layer(x, w)`` calls the graph function ``layer`` of the same
module. Its info is deduced by matching ``layer``'s parameters against the infos of
the arguments, as a caller's symbols meet the callee's own::

    def layer(h: Tensor((n, 4), "float32"), w: Tensor((4, 4), "float32")) -> Tensor((n, 4), ...)
    ...
    lv0: Tensor((a + 1, 4), "float32") = mod.layer(y, w)     # n := a + 1

1. **Kinds, dtypes, ranks** must agree: a tensor for a tensor, the same dtype
   (``TypeError`` otherwise), the same rank (``ShapeError``).
2. **Binding**: each callee symbol takes the caller's dim at its first occurrence
   alone as a dim (parameter order, then axis order), as arguments bind symbols at
   run time; a symbol that appears only in dims linear in it (``2 * n + 1``) is then
   solved from one of them (with a ``divides`` check).
3. **Relations**: every other parameter dim must equal the argument's dim once the
   callee's symbols are substituted, and every symbol must lie within its declared
   bounds; the callee's own run-time checks over its parameters' symbols (its
   *preconditions*, e.g. a broadcast its body could not prove) are carried to the
   call too. Each relation is decided in the caller's symbols: proven relations are
   dropped, a relation false for every value raises ``ShapeError`` naming the call,
   the rest become the call's run-time ``checks``.
4. The **result** is the callee's return info with its symbols substituted.

So a caller checks, before running anything, everything the callee assumes of its
arguments; the callee itself runs without checking them again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim, Sym
from relaxjax.errors import ShapeError, SourceLocation
from relaxjax.ir.infer import InferContext
from relaxjax.ir.nodes import Binding, Call, Check, Function
from relaxjax.ir.struct_info import (
    ObjectInfo,
    PrimInfo,
    ShapeInfo,
    StructInfo,
    TensorInfo,
    TupleInfo,
    info_dims,
    subs_info,
)

__all__ = ["CallMatch", "match_call", "preconditions", "signature_symbols"]


@dataclass(frozen=True, slots=True)
class CallMatch:
    """The outcome of matching a call: each callee symbol's value as a caller dim
    (``mapping``, by name, in :func:`signature_symbols` order), the result's info in
    the caller's symbols and the run-time checks the call needs."""

    mapping: Mapping[str, Dim]
    info: StructInfo
    checks: tuple[Check, ...]


@dataclass(frozen=True, slots=True)
class _Pair:
    """One parameter dim against the argument's dim, and where it is (for messages)."""

    param: Dim
    arg: Dim
    where: str
    is_size: bool


def signature_symbols(function: Function) -> tuple[Sym, ...]:
    """The symbols of ``function``'s parameters, by first occurrence (parameter order,
    then dim order): the values a caller hands over with the arrays."""
    seen: dict[str, Sym] = {}
    for param in function.params:
        for dim in info_dims(param.info):
            for symbol in sorted(arith.free_symbols(dim), key=lambda s: s.name):
                seen.setdefault(symbol.name, symbol)
    return tuple(seen.values())


def preconditions(function: Function) -> tuple[Check, ...]:
    """The run-time checks of ``function``'s calls that only involve its parameters'
    symbols: what it assumes of its arguments, which a caller can check for it."""
    names = {s.name for s in signature_symbols(function)}
    found: list[Check] = []
    for block in function.body.blocks:
        for binding in block.bindings:
            if not isinstance(binding, Binding) or not isinstance(binding.value, Call):
                continue
            for check in binding.value.checks:
                symbols = {s.name for a in check.args for s in arith.free_symbols(a)}
                if symbols <= names and check not in found:
                    found.append(check)
    return tuple(found)


def match_call(
    callee: Function,
    arg_infos: Sequence[StructInfo],
    location: SourceLocation | None = None,
    with_preconditions: bool = True,
) -> CallMatch:
    """Match a call of ``callee`` with arguments of ``arg_infos`` (see the module doc).

    ``with_preconditions=False`` leaves the callee's preconditions to the callee, which
    checks them when it runs: a control op does so for its regions, since a branch not
    taken or a loop body run zero times must not fail on them.

    Raises:
        TypeError: wrong argument count, kind or dtype, or an argument whose info is too
            coarse to determine the callee's symbols (``match_cast`` it first).
        ShapeError: a rank differs, or a relation is false for every value of the symbols.
    """
    name = callee.name
    params = callee.params
    if len(arg_infos) != len(params):
        raise TypeError(f"{name}() takes {len(params)} arguments, got {len(arg_infos)}")
    pairs: list[_Pair] = []
    for param, info in zip(params, arg_infos):
        where = f"argument {param.name_hint!r}"
        _collect(param.info, info, where, f"{name}(): {where}", pairs, location)
    mapping, binders, solved = _bind(name, callee, pairs)
    ctx = InferContext(name, tuple(arg_infos), location)
    for index, pair in enumerate(pairs):
        message = f"{name}: {pair.where} is {pair.param} in its signature"
        if index in binders:
            continue
        if index in solved:
            step, offset = solved[index]
            ctx.require(Check("divides", (step, offset), message))
            continue
        ctx.require(Check("eq", (pair.arg, arith.subs(pair.param, mapping)), message))
    sizes = _defined_by_size(pairs, binders)
    for symbol in signature_symbols(callee):
        _require_bounds(ctx, name, symbol, mapping[symbol.name], symbol.name in sizes)
    for check in preconditions(callee) if with_preconditions else ():
        args = tuple(arith.subs(a, mapping) for a in check.args)
        ctx.require(Check(check.kind, args, f"{name}: {check.message}"))
    info = subs_info(callee.ret_info, mapping)
    ordered = {s.name: mapping[s.name] for s in signature_symbols(callee)}
    return CallMatch(ordered, info, tuple(ctx.checks))


def _kind(info: StructInfo) -> str:
    if isinstance(info, TensorInfo):
        return "a tensor"
    if isinstance(info, PrimInfo):
        return "a scalar"
    if isinstance(info, TupleInfo):
        return "a tuple"
    return "a shape"


def _collect(
    param: StructInfo,
    arg: StructInfo,
    where: str,
    what: str,
    pairs: list[_Pair],
    location: SourceLocation | None,
) -> None:
    """Check kinds, dtypes and ranks; append the (parameter dim, argument dim) pairs."""
    if isinstance(param, ObjectInfo):
        return
    if type(param) is not type(arg):
        raise TypeError(f"{what} must be {_kind(param)} ({param!r}), got {arg!r}")
    if isinstance(param, TupleInfo):
        assert isinstance(arg, TupleInfo)
        if len(param.fields) != len(arg.fields):
            raise TypeError(
                f"{what} must be a tuple of {len(param.fields)} ({param!r}), got {arg!r}"
            )
        for index, (p, a) in enumerate(zip(param.fields, arg.fields)):
            _collect(p, a, f"{where}[{index}]", f"{what}[{index}]", pairs, location)
        return
    if isinstance(param, PrimInfo):
        assert isinstance(arg, PrimInfo)
        _same_dtype(param.dtype, arg.dtype, what)
        if param.value is not None:
            if arg.value is None:
                raise TypeError(
                    f"{what}: the signature {param!r} names its value, but the value of "
                    f"{arg!r} is not known at compile time"
                )
            pairs.append(_Pair(param.value, arg.value, where, False))
        return
    if isinstance(param, TensorInfo):
        assert isinstance(arg, TensorInfo)
        _same_dtype(param.dtype, arg.dtype, what)
        dims, arg_dims, ndim, arg_ndim = param.shape, arg.shape, param.ndim, arg.ndim
    else:
        assert isinstance(param, ShapeInfo) and isinstance(arg, ShapeInfo)
        dims, arg_dims, ndim, arg_ndim = param.values, arg.values, param.ndim, arg.ndim
    if ndim is None:
        return
    if arg_ndim is None:
        raise TypeError(
            f"{what}: the rank of {arg!r} is not known at compile time; match_cast it to a "
            f"spec of rank {ndim} ({param!r}) first"
        )
    if arg_ndim != ndim:
        raise ShapeError(
            f"{what}: expected rank {ndim} ({param!r}), got rank {arg_ndim} ({arg!r})",
            location=location,
        )
    if dims is None:
        return
    if arg_dims is None:
        raise TypeError(
            f"{what}: the dims of {arg!r} are not known at compile time; match_cast it to "
            f"{param!r} (or to a spec naming its dims) first"
        )
    for axis, (dim, arg_dim) in enumerate(zip(dims, arg_dims)):
        pairs.append(_Pair(dim, arg_dim, f"{where} axis {axis}", True))


def _same_dtype(expected: str, given: str, what: str) -> None:
    if expected != given:
        raise TypeError(f"{what}: expected dtype {expected}, got {given}")


def _linear(dim: Dim, symbol: Sym) -> tuple[int, Dim] | None:
    """``(a, rest)`` with ``dim == a * symbol + rest``, ``a > 0`` an int, or None."""
    found = arith.linear_in(dim, symbol)
    if found is None or not isinstance(found[0], int) or found[0] <= 0:
        return None
    return found


def _bind(
    name: str, callee: Function, pairs: Sequence[_Pair]
) -> tuple[dict[str, Dim], set[int], dict[int, tuple[int, Dim]]]:
    """Each callee symbol's value: ``(mapping, indices of the binding pairs, solved pairs
    -> (step, offset))``; a solved symbol is ``offset // step``."""
    mapping: dict[str, Dim] = {}
    binders: set[int] = set()
    for index, pair in enumerate(pairs):
        if isinstance(pair.param, Sym) and pair.param.name not in mapping:
            mapping[pair.param.name] = pair.arg
            binders.add(index)
    solved: dict[int, tuple[int, Dim]] = {}
    progress = True
    while progress:
        progress = False
        for index, pair in enumerate(pairs):
            unknown = [s for s in arith.free_symbols(pair.param) if s.name not in mapping]
            if index in binders or index in solved or len(unknown) != 1:
                continue
            linear = _linear(pair.param, unknown[0])
            if linear is None:
                continue
            step, rest = linear
            offset = pair.arg - arith.subs(rest, mapping)
            mapping[unknown[0].name] = offset // step
            solved[index] = (step, offset)
            progress = True
    missing = [s.name for s in signature_symbols(callee) if s.name not in mapping]
    if missing:
        raise TypeError(
            f"{name}(): the symbol {missing[0]} of its signature cannot be determined from the "
            "arguments (it appears in no parameter dim alone or linearly)"
        )
    return mapping, binders, solved


def _require_bounds(ctx: InferContext, name: str, symbol: Sym, value: Dim, from_size: bool) -> None:
    """The callee's declared bounds on ``symbol`` hold for ``value`` (a size is never
    negative, so the default lower bound 0 needs no check for one)."""
    if symbol.lower is not None and (symbol.lower != 0 or not from_size):
        message = f"{name}: {symbol.name} must be >= {symbol.lower}"
        ctx.require(Check("le", (symbol.lower, value), message))
    if symbol.upper is not None:
        message = f"{name}: {symbol.name} must be <= {symbol.upper}"
        ctx.require(Check("le", (value, symbol.upper), message))


def _defined_by_size(pairs: Sequence[_Pair], binders: set[int]) -> set[str]:
    """The symbols bound directly from a tensor (or shape) dim."""
    return {
        pairs[i].param.name  # type: ignore[union-attr]
        for i in binders
        if pairs[i].is_size
    }
