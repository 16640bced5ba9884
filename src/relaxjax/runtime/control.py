"""Running control flow: a Python ``if``/``while``/``for`` around the regions' generated code.

A control op (:mod:`relaxjax.ir.control`) is, to the program that binds it, one launch
like a call of a graph function: its checks run in the program's shape phase, its
results are planned in the memory phase (their shapes are known: a loop's carries and
stacked outputs, a switch's results when every branch's are known), and the kernel phase
calls a *runner* with the input arrays, the result arrays and the symbol values of each
region. The runner is plain Python over the regions' generated functions
(:mod:`relaxjax.runtime.calls`), which run their own kernels with their own memory::

    def while_loop(*carries, *consts, *results, *symbols):
        carries = [copy(c) for c in carries]          # the loop owns its carries
        while cond(*carries, *consts, None, *cond_symbols)[0]:
            carries = body(*carries, *consts, None, ..., *body_symbols)
        copyto(results, carries)

- a body receives its carries *donated*: it may update them in place
  (``call_tir_inplace``) and return them without a copy; it returns fresh arrays for the
  others (``None`` destinations), so each iteration holds one set of carries and the
  previous set is freed: no allocation grows with the trip count;
- ``scan`` hands its body views of ``xs[t]`` and writes each output straight into
  ``ys[t]`` (a view passed as the destination): no copy per step;
- ``fori_loop`` counts in Python, passing the index as a 0-d array of its dtype;
- ``switch`` converts its index to int32 as jax does, then clamps it into range. When a
  branch's result shape is not known at the call, the branch allocates its results and
  the program reads their shapes after it ran (a new segment, as for calls).

The runners touch arrays only through an :class:`ArrayOps` (copy, copy into, the slice
``x[t]``, a 0-d index array): numpy's for the CPU (:data:`HOST_OPS`), the device's for a
GPU program (:mod:`relaxjax.runtime.cuda.program`), whose regions run their kernels on
the GPU while the loop itself runs here, on the host.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from relaxjax import dtypes
from relaxjax.arith import Dim
from relaxjax.errors import LoweringError
from relaxjax.ir import Call, Expr, StructInfo, Tuple, match_call
from relaxjax.ir.control import ScanAttrs

if TYPE_CHECKING:
    from relaxjax.runtime.program import CalleeCode

__all__ = ["HOST_OPS", "ArrayOps", "ControlLaunch", "plan_control"]


@dataclass(frozen=True, slots=True)
class ArrayOps:
    """How a runner copies and slices the arrays it handles (see the module doc)."""

    copy: Callable[[object], object]
    copyto: Callable[[object, object], None]
    row: Callable[[object, int], object]  # x[t, ...]: a view
    index: Callable[[int, np.dtype], object]  # the 0-d array of a fori_loop index
    #: Whether a view can be a kernel's buffer as it is (else a copy stands in for it).
    aligned: Callable[[object], bool] = lambda array: True


#: The runners' array operations on numpy arrays (the CPU runtime).
HOST_OPS = ArrayOps(
    copy=np.array,
    copyto=np.copyto,
    row=lambda x, t: x[t, ...],  # type: ignore[index]
    index=lambda t, dtype: np.array(t, dtype),
)


@dataclass(frozen=True, slots=True)
class ControlLaunch:
    """What the program passes a control op's runner: ``inputs`` (graph operands, in
    order), then the result arrays, then the values of ``symbols`` (caller dims)."""

    runner: Callable[..., object]
    inputs: tuple[Expr, ...]
    symbols: tuple[Dim, ...]


def _fields(expr: Expr) -> tuple[Expr, ...]:
    return expr.fields if isinstance(expr, Tuple) else (expr,)


@dataclass(frozen=True, slots=True)
class _Region:
    """A region's generated function, the caller dims of its symbols and the info of its
    first argument (a ``fori_loop`` body's index)."""

    run: Callable[..., tuple]
    symbols: tuple[Dim, ...]
    index: StructInfo | None


def _regions(call: Call, callees: Mapping[str, CalleeCode], where: str) -> list[_Region]:
    functions = {name: code.function for name, code in callees.items()}
    regions = []
    for function, infos in call.op.region_calls(call.args, call.attrs, functions.get):  # type: ignore[union-attr]
        code = callees.get(function.name)
        if code is None:
            raise LoweringError(f"{where}: no generated code for the region {function.name}")
        mapping = match_call(function, infos).mapping
        regions.append(_Region(code.run, tuple(mapping.values()), infos[0] if infos else None))
    return regions


def plan_control(
    call: Call,
    callees: Mapping[str, CalleeCode],
    returns: bool,
    where: str,
    ops: ArrayOps = HOST_OPS,
) -> ControlLaunch:
    """The runner of the control call ``call`` and what to pass it. ``returns``: the
    results' shapes are unknown to the caller, so the runner returns them (only for
    ``switch``); ``ops``: how the runner handles the arrays."""
    op = call.op.name  # type: ignore[union-attr]
    parts = call.op.parts(call.args)  # type: ignore[union-attr]
    regions = _regions(call, callees, where)
    symbols = tuple(d for r in regions for d in r.symbols)
    if op == "switch":
        operands = _fields(parts["operands"])
        runner = _SwitchRunner(regions, len(operands), returns)
        return ControlLaunch(runner, (parts["index"], *operands), symbols)
    if returns:
        raise LoweringError(f"{where}: a loop's results have known shapes")
    carries, consts = _fields(parts["carries"]), _fields(parts["consts"])
    if op == "while_loop":
        cond, body = regions
        runner = _WhileRunner(cond, body, len(carries), len(consts), ops)
        return ControlLaunch(runner, (*carries, *consts), symbols)
    if op == "fori_loop":
        (body,) = regions
        runner = _ForiRunner(body, _index_dtype(body.index), len(carries), len(consts), ops)
        return ControlLaunch(runner, (parts["lower"], parts["upper"], *carries, *consts), symbols)
    if op == "scan":
        (body,) = regions
        attrs = call.attrs
        assert isinstance(attrs, ScanAttrs)
        xs = _fields(parts["xs"])
        ys = len(call.info.fields) - len(carries)  # type: ignore[union-attr]
        runner = _ScanRunner(body, len(carries), len(xs), len(consts), ys, attrs.reverse, ops)
        return ControlLaunch(runner, (*carries, *xs, *consts), (attrs.length, *symbols))
    raise LoweringError(f"{where}: the runtime does not run control op {op}")


def _index_dtype(info: StructInfo) -> np.dtype:
    return dtypes.to_numpy(info.dtype)  # type: ignore[attr-defined]


class _SwitchRunner:
    """``(index, *operands, *results, *symbols)``: the clamped branch, run."""

    def __init__(self, regions: Sequence[_Region], num_operands: int, returns: bool) -> None:
        self.runs = [r.run for r in regions]
        self.num_operands = num_operands
        self.returns = returns
        counts = [len(r.symbols) for r in regions]
        self.offsets = [sum(counts[:k]) for k in range(len(counts) + 1)]
        self.last = len(regions) - 1

    def __call__(self, index: object, *rest: object) -> object:
        chosen = int(np.asarray(index).astype(np.int32))  # jax converts the index to int32
        chosen = 0 if chosen < 0 else (self.last if chosen > self.last else chosen)
        total = self.offsets[-1]
        data = rest[: len(rest) - total] if total else rest
        symbols = rest[len(rest) - total :] if total else ()
        own = symbols[self.offsets[chosen] : self.offsets[chosen + 1]]
        return self.runs[chosen](*data, *own)


class _WhileRunner:
    """``(*carries, *consts, *results, *cond_symbols, *body_symbols)``."""

    def __init__(
        self, cond: _Region, body: _Region, carries: int, consts: int, ops: ArrayOps
    ) -> None:
        self.cond, self.body = cond.run, body.run
        self.cond_count = len(cond.symbols)
        self.carries, self.consts = carries, consts
        self.ops = ops

    def __call__(self, *args: object) -> None:
        k, c = self.carries, self.consts
        carries = [self.ops.copy(a) for a in args[:k]]  # owned: the body may update them
        consts = args[k : k + c]
        results = args[k + c : 2 * k + c]
        symbols = args[2 * k + c :]
        cond_symbols, body_symbols = symbols[: self.cond_count], symbols[self.cond_count :]
        nones = (None,) * k
        cond, body = self.cond, self.body
        while cond(*carries, *consts, None, *cond_symbols)[0]:
            carries = body(*carries, *consts, *nones, *body_symbols)
        for result, carry in zip(results, carries):
            self.ops.copyto(result, carry)


class _ForiRunner:
    """``(lower, upper, *carries, *consts, *results, *body_symbols)``."""

    def __init__(
        self, body: _Region, index: np.dtype, carries: int, consts: int, ops: ArrayOps
    ) -> None:
        self.body = body.run
        self.index = index
        self.carries, self.consts = carries, consts
        self.ops = ops

    def __call__(self, lower: object, upper: object, *args: object) -> None:
        k, c = self.carries, self.consts
        carries = [self.ops.copy(a) for a in args[:k]]
        consts = args[k : k + c]
        results = args[k + c : 2 * k + c]
        symbols = args[2 * k + c :]
        nones = (None,) * k
        body, dtype, index = self.body, self.index, self.ops.index
        for t in range(int(lower), int(upper)):  # type: ignore[call-overload]
            carries = body(index(t, dtype), *carries, *consts, *nones, *symbols)
        for result, carry in zip(results, carries):
            self.ops.copyto(result, carry)


class _ScanRunner:
    """``(*carries, *xs, *consts, *final_carries, *ys, length, *body_symbols)``."""

    def __init__(
        self,
        body: _Region,
        carries: int,
        xs: int,
        consts: int,
        ys: int,
        reverse: bool,
        ops: ArrayOps,
    ) -> None:
        self.body = body.run
        self.carries, self.xs, self.consts, self.ys = carries, xs, consts, ys
        self.reverse = reverse
        self.ops = ops

    def __call__(self, *args: object) -> None:
        k, m, c, q = self.carries, self.xs, self.consts, self.ys
        carries = [self.ops.copy(a) for a in args[:k]]
        xs = args[k : k + m]
        consts = args[k + m : k + m + c]
        finals = args[k + m + c : 2 * k + m + c]
        ys = args[2 * k + m + c : 2 * k + m + c + q]
        length = int(args[2 * k + m + c + q])  # type: ignore[call-overload]
        symbols = args[2 * k + m + c + q + 1 :]
        nones = (None,) * k
        body, ops = self.body, self.ops
        steps = range(length - 1, -1, -1) if self.reverse else range(length)
        for t in steps:
            x_t = [ops.row(x, t) for x in xs]
            x_t = [x if ops.aligned(x) else ops.copy(x) for x in x_t]
            y_t = [ops.row(y, t) for y in ys]
            # an unaligned row of ys: the body allocates the output, copied into the row
            into = [y if ops.aligned(y) else None for y in y_t]
            results = body(*carries, *x_t, *consts, *nones, *into, *symbols)
            carries = results[:k]
            for y, given, result in zip(y_t, into, results[k:]):
                if given is None:
                    ops.copyto(y, result)
        for result, carry in zip(finals, carries):
            ops.copyto(result, carry)
