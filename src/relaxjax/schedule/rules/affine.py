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
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.schedule.handles import BlockRV, LoopRV
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.analysis import collect_accesses
from relaxjax.tir.expr import PrimExpr

__all__ = ["fuse_keeps_affine"]


def _coefficient(offset: arith.Dim, var: arith.Sym) -> arith.Dim | None:
    """``c`` with ``offset == c * var + (terms free of var)``; 0 when ``var`` does not
    occur; None when it occurs other than linearly."""
    if var not in arith.free_symbols(offset):
        return 0
    linear = arith.linear_in(offset, var)
    return None if linear is None else linear[0]


def fuse_keeps_affine(sch: Schedule, block: BlockRV, outer: LoopRV, inner: LoopRV) -> bool:
    """Whether fusing ``outer`` with ``inner`` (the loop directly inside it) leaves every
    access of ``block`` that is affine in the two loops affine in the fused loop."""
    realize = sch.get_realize(block)
    binding = {iv.var.name: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    outer_loop, inner_loop = sch.get_loop_node(outer), sch.get_loop_node(inner)
    for access in collect_accesses(realize.block.body):
        if any(isinstance(index, PrimExpr) for index in access.indices):
            continue  # a data-dependent index: no fusion makes it affine
        indices = [arith.subs(index, binding) for index in access.indices]
        offset = access.buffer.offset_of(indices)
        a = _coefficient(offset, outer_loop.var)
        b = _coefficient(offset, inner_loop.var)
        if a is None or b is None:
            continue  # already not affine in the two loops
        if not arith.prove_equal(a, b * inner_loop.extent):
            return False
    return True
