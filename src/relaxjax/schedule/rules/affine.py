"""Whether fusing two loops keeps a block's memory accesses affine in the fused loop.

Fusing ``for i in range(a): for j in range(b)`` into ``for f in range(a * b)`` rewrites
``i -> f // b`` and ``j -> f % b``. An access whose element offset is
``... + ci * i + cj * j`` becomes ``ci * (f // b) + cj * (f % b)``, which is the affine
``cj * f`` exactly when ``ci == cj * b`` (the two axes are one contiguous run of the
buffer, as in a row-major tensor). When some buffer is read through other strides (a
view: a transpose, a slice of an inner axis), the fused loop would divide per
element, and a vectorised fused loop would gather; the two loops stay apart instead::

    x: Buffer((3, n, 4), strides=(4, 36, 1))       out: Buffer((3, n, 4))
    for i1_i2 in vectorized(n * 4):                for i1 in range(n):
        out[.., i1_i2 // 4, i1_i2 % 4] =    ->         for i2 in vectorized(4):
            x[.., i1_i2 // 4, i1_i2 % 4]                    out[.., i1, i2] = x[.., i1, i2]

Offsets are compared as polynomials (:func:`relaxjax.arith.linear_in`), so symbolic
extents and strides are decided for every value of the symbols.

The other way round, a loop whose variable an access divides (a reshape that merges
axes a view keeps apart reads ``x[.., i // 64, i % 64]`` with strides ``(n * 64, 1)``)
becomes two loops: :func:`split_divided_loop` splits it by the divisor, and once the
indices are simplified under the loops' ranges (:mod:`relaxjax.tir.simplify`) the inner
loop indexes affinely::

    for i in vectorized(768):                   for i_0 in range(12):
        .. = x[.., i // 64, i % 64]      ->         for i_1 in vectorized(64):
                                                        .. = x[.., i_0, i_1]
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.schedule.handles import BlockRV, LoopRV
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.analysis import collect_accesses
from relaxjax.tir.expr import PrimExpr

__all__ = ["fuse_keeps_affine", "split_divided_loop"]


def _coefficient(offset: arith.Dim, var: arith.Sym) -> arith.Dim | None:
    """``c`` with ``offset == c * var + (terms free of var)``; 0 when ``var`` does not
    occur; None when it occurs other than linearly."""
    if var not in arith.free_symbols(offset):
        return 0
    linear = arith.linear_in(offset, var)
    return None if linear is None else linear[0]


def _offsets(sch: Schedule, block: BlockRV) -> list[arith.Dim]:
    """The element offset of each access of ``block`` with data-independent indices, in
    terms of the loop variables around it."""
    realize = sch.get_realize(block)
    binding = {iv.var.name: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    offsets = []
    for access in collect_accesses(realize.block.body):
        if any(isinstance(index, PrimExpr) for index in access.indices):
            continue
        indices = [arith.subs(index, binding) for index in access.indices]
        offsets.append(access.buffer.offset_of(indices))
    return offsets


def _divisors(dim: arith.Dim, var: arith.Sym) -> list[arith.Dim]:
    """The divisors ``c`` of the atoms ``(var + r) // c`` and ``(var + r) % c`` of ``dim``
    (``r`` free of ``var``)."""
    found = []
    if isinstance(dim, (arith.FloorDiv, arith.Mod)):
        linear = arith.linear_in(dim.a, var)
        if linear is not None and linear[0] == 1:
            found.append(dim.b)
    if isinstance(dim, arith.Expr):
        for child in dim.children():
            found += _divisors(child, var)
    return found


def split_divided_loop(
    sch: Schedule, block: BlockRV, loop: LoopRV, min_inner: int = 1
) -> tuple[LoopRV, LoopRV] | None:
    """Split ``loop`` (the innermost loop of ``block``) by the smallest divisor ``c`` of
    its variable in an access offset, when ``c`` divides the loop's extent exactly and
    is not below ``min_inner``; returns the two loops, or None when nothing is split."""
    node = sch.get_loop_node(loop)
    if node.start != 0:
        return None
    candidates = []
    for offset in _offsets(sch, block):
        for divisor in _divisors(offset, node.var):
            if isinstance(divisor, int) and (divisor < max(min_inner, 2)):
                continue
            if (
                arith.prove_equal(divisor, node.extent)
                or arith.exact_div(node.extent, divisor) is None
            ):
                continue
            candidates.append(divisor)
    if not candidates:
        return None
    ints = sorted(c for c in candidates if isinstance(c, int))
    factor = ints[0] if ints else candidates[0]
    try:
        outer, inner = sch.split(loop, factors=[None, factor], tail="exact")
    except ScheduleError:
        return None
    return outer, inner


def fuse_keeps_affine(sch: Schedule, block: BlockRV, outer: LoopRV, inner: LoopRV) -> bool:
    """Whether fusing ``outer`` with ``inner`` (the loop directly inside it) leaves every
    access of ``block`` that is affine in the two loops affine in the fused loop."""
    outer_loop, inner_loop = sch.get_loop_node(outer), sch.get_loop_node(inner)
    for offset in _offsets(sch, block):  # data-dependent indices: no fusion makes them affine
        a = _coefficient(offset, outer_loop.var)
        b = _coefficient(offset, inner_loop.var)
        if a is None or b is None:
            continue  # already not affine in the two loops
        if not arith.prove_equal(a, b * inner_loop.extent):
            return False
    return True
