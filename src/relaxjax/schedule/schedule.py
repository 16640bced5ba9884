"""``Schedule``: transform a loop-level kernel step by step, soundly, with a trace.

>>> from relaxjax import arith, tir, schedule
>>> from relaxjax.tir import te
>>> n = arith.sym("n")
>>> A = te.placeholder((n, 64), "float32", "A")
>>> B = te.compute((n, 64), lambda i, j: A[i, j] * 2.0, name="B")
>>> sch = schedule.Schedule(te.create_prim_func([A, B], name="scale"))
>>> i, j = sch.get_loops(sch.get_block("B"))
>>> io, ii = sch.split(i, factors=[None, 32])
>>> sch.parallel(io)
>>> print(sch.trace)
b_B = sch.get_block('B')
i, j = sch.get_loops(b_B)
i_0, i_1 = sch.split(i, factors=[None, 32])
sch.parallel(i_0)

Every primitive keeps the kernel's meaning or raises
:class:`~relaxjax.errors.ScheduleError` naming the loops or blocks and the reason.
Handles (:class:`LoopRV`, :class:`BlockRV`) stay valid across steps until a step
removes what they name.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from relaxjax.errors import ScheduleError
from relaxjax.schedule import cache as cache_prims
from relaxjax.schedule import compute_at as compute_at_prims
from relaxjax.schedule import inline as inline_prims
from relaxjax.schedule import layout as layout_prims
from relaxjax.schedule import loops as loop_prims
from relaxjax.schedule import reduction as reduction_prims
from relaxjax.schedule.handles import BlockRV, LoopRV
from relaxjax.schedule.step import Step, check_parallel_loops, complete_blocks
from relaxjax.schedule.trace import Instruction, Trace
from relaxjax.schedule.tree import Namer, Site, block_site, loop_site, names_in
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.stmt import Block, BlockRealize, For

_ids = itertools.count(1)


def _plain(value: object) -> object:
    """A trace argument as plain Python (numpy scalars become ints/floats/bools), so
    that the printed trace is valid Python."""
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


class Schedule:
    """A kernel being scheduled: ``sch.func`` is the current kernel, ``sch.trace`` the
    steps so far (replayable on another kernel with ``sch.trace.apply``)."""

    def __init__(self, func: PrimFunc):
        if not isinstance(func, PrimFunc):
            raise TypeError(f"Schedule expects a tir.PrimFunc, got {type(func).__name__}")
        self._id = next(_ids)
        self._func = func
        self._original = func
        self._namer = Namer(names_in(func))
        self._removed: dict[str, str] = {}
        self._trace = Trace()
        self._touched: tuple[str, ...] = ()
        self._complete: set[str] = complete_blocks(func)

    # state ------------------------------------------------------------------------

    @property
    def func(self) -> PrimFunc:
        """The kernel after the steps so far."""
        return self._func

    @property
    def original(self) -> PrimFunc:
        """The kernel the schedule started from."""
        return self._original

    @property
    def trace(self) -> Trace:
        """The steps so far (``print`` it to see Python that replays them)."""
        return self._trace

    def copy(self) -> Schedule:
        """An independent schedule in the same state (handles stay valid in both)."""
        other = Schedule.__new__(Schedule)
        other._id = self._id
        other._func = self._func
        other._original = self._original
        other._namer = Namer(self._namer.used)
        other._removed = dict(self._removed)
        other._trace = self._trace
        other._touched = self._touched
        other._complete = set(self._complete)
        return other

    def __repr__(self) -> str:
        return f"# Schedule after {len(self._trace)} step(s)\n{self._func}"

    def _repr_html_(self) -> str:
        from relaxjax.schedule.html import schedule_html

        return schedule_html(self._func, self._trace, self._touched)

    # handles ----------------------------------------------------------------------

    def _check_handle(self, primitive: str, handle: object, kind: type) -> None:
        if not isinstance(handle, kind):
            raise ScheduleError(
                f"{primitive}: expected a {kind.__name__} handle, got "
                f"{type(handle).__name__} {handle!r}"
            )
        if handle.schedule_id != self._id:
            raise ScheduleError(f"{primitive}: {handle!r} belongs to another schedule")

    def _gone(self, primitive: str, what: str, name: str) -> ScheduleError:
        reason = self._removed.get(name)
        detail = f": it was {reason}" if reason else ""
        shown = repr(name) if what == "block" else name
        return ScheduleError(f"{primitive}: {what} {shown} no longer exists{detail}")

    def _loop(self, primitive: str, handle: object) -> Site:
        self._check_handle(primitive, handle, LoopRV)
        site = loop_site(self._func.body, handle.name)
        if site is None:
            raise self._gone(primitive, "loop", handle.name)
        return site

    def _block(self, primitive: str, handle: object) -> Site:
        self._check_handle(primitive, handle, BlockRV)
        site = block_site(self._func.body, handle.name)
        if site is None:
            raise self._gone(primitive, "block", handle.name)
        return site

    def _loop_rv(self, name: str) -> LoopRV:
        return LoopRV(name, self._id)

    def _block_rv(self, name: str) -> BlockRV:
        return BlockRV(name, self._id)

    def _apply(self, step: Step, touched: Sequence[str] = (), primitive: str = "") -> None:
        if primitive:
            check_parallel_loops(primitive, step.func)
        self._func = step.func
        self._removed.update(step.removed)
        self._touched = tuple(touched) + step.outputs

    def _record(self, name: str, args: Sequence[object], kwargs: dict, outputs: object) -> None:
        args = tuple(_plain(a) for a in args)
        kwargs = {k: _plain(v) for k, v in kwargs.items()}
        inst = Instruction(name, args, tuple(sorted(kwargs.items())), outputs)
        self._trace = self._trace.append(inst)

    # queries ----------------------------------------------------------------------

    def get_block(self, name: str) -> BlockRV:
        """The block called ``name``; ``ScheduleError`` listing the blocks otherwise."""
        if not isinstance(name, str):
            raise ScheduleError(f"get_block: expected a block name, got {name!r}")
        if block_site(self._func.body, name) is None:
            if name in self._removed:
                raise self._gone("get_block", "block", name)
            known = ", ".join(repr(n) for n in self._block_names())
            raise ScheduleError(f"get_block: no block named {name!r}; blocks: {known}")
        rv = self._block_rv(name)
        self._record("get_block", (name,), {}, rv)
        return rv

    def _block_names(self) -> list[str]:
        from relaxjax.tir.analysis import iter_blocks

        return [r.block.name for r in iter_blocks(self._func.body) if r.block.name != "root"]

    def get_loops(self, block: BlockRV) -> tuple[LoopRV, ...]:
        """The loops around ``block`` (inside its enclosing block), outermost first."""
        site = self._block("get_loops", block)
        rvs = tuple(self._loop_rv(lp.var.name) for lp in site.loops())
        self._record("get_loops", (block,), {}, rvs)
        return rvs

    def get_child_blocks(self, parent: BlockRV | LoopRV) -> tuple[BlockRV, ...]:
        """The blocks directly under a block or a loop (not nested in other blocks)."""
        if isinstance(parent, LoopRV):
            node = self._loop("get_child_blocks", parent).node
        else:
            node = self._block("get_child_blocks", parent).node.block
        from relaxjax.schedule.tree import child_realizes

        rvs = tuple(self._block_rv(r.block.name) for r in child_realizes(node))
        self._record("get_child_blocks", (parent,), {}, rvs)
        return rvs

    def get_block_node(self, block: BlockRV) -> Block:
        """The current :class:`~relaxjax.tir.Block` a handle names (for rules)."""
        return self._block("get_block_node", block).node.block

    def get_loop_node(self, loop: LoopRV) -> For:
        """The current :class:`~relaxjax.tir.For` a handle names (for rules)."""
        return self._loop("get_loop_node", loop).node

    def get_realize(self, block: BlockRV) -> BlockRealize:
        """The current BlockRealize of a block (its iter values and predicate)."""
        return self._block("get_realize", block).node

    # loop transformations -----------------------------------------------------------

    def split(
        self, loop: LoopRV, factors: Sequence[int | None | object], *, tail: str = "predicate"
    ) -> tuple[LoopRV, ...]:
        """Splits ``loop`` into ``len(factors)`` nested loops, outermost first.

        At most one factor is ``None``: it is inferred as ``ceildiv(extent, product of
        the others)``. Factors are positive ints or symbolic dims (strings are parsed).
        When the product may exceed the extent (a symbolic ``n`` split by 32), the
        tail is handled by ``tail``: ``"predicate"`` (default: a guard on each block
        under the loop), ``"peel"`` (factors ``[None, f]``: a main nest of
        ``n // f`` full tiles, then a copy of the body for the ``n % f`` rest, with
        renamed blocks) or ``"exact"`` (refuse unless the product is provably the
        extent).

        Before::

            for i in range(n):
                with block("B"):
                    v_i = axis.spatial(n, i)
                    B[v_i] = A[v_i] * float32(2.0)

        After ``sch.split(i, factors=[None, 32])``::

            for i_0 in range((n + 31) // 32):
                for i_1 in range(32):
                    with block("B"):
                        v_i = axis.spatial(n, i_0 * 32 + i_1)
                        where(i_0 * 32 + i_1 < n)
                        B[v_i] = A[v_i] * float32(2.0)

        Raises ScheduleError for more than one None, zero or negative factors, factors
        that do not cover the loop, a remainder under ``tail="exact"``, or a loop that
        is not serial.
        """
        site = self._loop("split", loop)
        factors_list = list(factors) if isinstance(factors, (list, tuple)) else factors
        step = loop_prims.split(self._func, self._namer, site, factors_list, tail)
        self._apply(step)
        rvs = tuple(self._loop_rv(n) for n in step.outputs)
        kwargs = {"factors": factors_list}
        if tail != "predicate":
            kwargs["tail"] = tail
        self._record("split", (loop,), kwargs, rvs)
        return rvs

    def fuse(self, *loops: LoopRV) -> LoopRV:
        """Fuses adjacent loops (each the whole body of the previous) into one.

        Before::

            for i in range(n):
                for j in range(64):
                    with block("B"):
                        v_i = axis.spatial(n, i)
                        v_j = axis.spatial(64, j)

        After ``sch.fuse(i, j)``::

            for i_j_fused in range(n * 64):
                with block("B"):
                    v_i = axis.spatial(n, i_j_fused // 64)
                    v_j = axis.spatial(64, i_j_fused % 64)

        Raises ScheduleError for fewer than two loops or loops that are not adjacent.
        """
        sites = [self._loop("fuse", lp) for lp in loops]
        step = loop_prims.fuse(self._func, self._namer, sites)
        self._apply(step)
        rv = self._loop_rv(step.outputs[0])
        self._record("fuse", loops, {}, rv)
        return rv

    def reorder(self, *loops: LoopRV) -> None:
        """Puts ``loops`` (of one perfect nest) in the given order; loops of the nest
        that are not given keep their places.

        Before::

            for i in range(n):
                for j in range(m):
                    for k in range(K):
                        with block("C"): ...

        After ``sch.reorder(k, i)``::

            for k in range(K):
                for j in range(m):
                    for i in range(n):
                        with block("C"): ...

        Raises ScheduleError for loops of different subtrees, a nest that is not
        perfect (a loop whose body is not exactly the next loop), a loop range that
        uses a loop it would move out of, or loops carrying dependences that would
        swap (reductions may swap when their updates are commutative: ``+ * min max``).
        """
        sites = [self._loop("reorder", lp) for lp in loops]
        step = loop_prims.reorder(self._func, sites)
        self._apply(step, [lp.name for lp in loops], "reorder")
        self._record("reorder", loops, {}, None)

    def tile(self, *loops: LoopRV, factors: Sequence[int | object]) -> tuple[LoopRV, ...]:
        """Tiles adjacent loops: splits each by its inner factor and moves the outer
        parts out (sugar for split + reorder; the trace shows those steps).

        ``sch.tile(i, j, factors=[32, 8])`` gives ``(i_0, j_0, i_1, j_1)``::

            for i_0 in range((n + 31) // 32):
                for j_0 in range((m + 7) // 8):
                    for i_1 in range(32):
                        for j_1 in range(8):
                            ...
        """
        if len(factors) != len(loops):
            raise ScheduleError(
                f"tile: give one factor per loop: {len(loops)} loop(s), {len(factors)} factor(s)"
            )
        pairs = [self.split(lp, factors=[None, f]) for lp, f in zip(loops, factors)]
        outers = [p[0] for p in pairs]
        inners = [p[1] for p in pairs]
        self.reorder(*outers, *inners)
        return tuple(outers + inners)

    def parallel(self, loop: LoopRV) -> None:
        """Runs the iterations of ``loop`` in parallel threads.

        ``for i in range(n)`` becomes ``for i in parallel(n)``. Raises ScheduleError
        when iterations may touch the same element (a reduction loop, a loop a block
        does not depend on, or a loop whose writes cannot be proven disjoint).
        """
        self._kind("parallel", loop, "parallel")

    def vectorize(self, loop: LoopRV) -> None:
        """Marks ``loop`` for SIMD execution (``for j in vectorized(64)``); same
        conditions as :meth:`parallel`."""
        self._kind("vectorize", loop, "vectorized")

    def unroll(self, loop: LoopRV) -> None:
        """Marks ``loop`` to be unrolled (``for k in unrolled(4)``); always sound."""
        self._kind("unroll", loop, "unrolled")

    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Binds ``loop`` to a GPU thread axis (``"blockIdx.x"``, ``"threadIdx.x"``...):
        ``for i in thread_binding(n, thread="blockIdx.x")``. Same conditions as
        :meth:`parallel`, except that a reduction loop with a ``+ * min max`` update may
        be bound to ``threadIdx`` (a cross-thread reduction), and shared (local) buffers
        private to the iterations of a ``blockIdx`` (thread) loop are no conflict
        (:mod:`relaxjax.schedule.privatize`). :func:`relaxjax.schedule.gpu.finish_gpu`
        turns the bound kernel into launches and checks the launch limits."""
        self._kind("bind", loop, "thread_binding", thread_axis)

    def _kind(self, primitive: str, loop: LoopRV, kind: str, tag: str | None = None) -> None:
        site = self._loop(primitive, loop)
        step = loop_prims.set_kind(self._func, site, kind, primitive, tag)
        self._apply(step, [loop.name])
        self._record(primitive, (loop,) if tag is None else (loop, tag), {}, None)

    def annotate(self, target: LoopRV | BlockRV, key: str, value: object) -> None:
        """Attaches ``key = value`` (bool, int, float, str or tuples of them) to a loop
        or a block; annotations never change the meaning."""
        if not isinstance(key, str):
            raise ScheduleError(f"annotate: the key must be a str, got {key!r}")
        if isinstance(target, LoopRV):
            step = loop_prims.annotate_loop(self._func, self._loop("annotate", target), key, value)
        else:
            step = loop_prims.annotate_block(
                self._func, self._block("annotate", target), key, value
            )
        self._apply(step, [target.name])
        self._record("annotate", (target, key, value), {}, None)

    # block placement ----------------------------------------------------------------

    def compute_at(self, block: BlockRV, loop: LoopRV) -> None:
        """Moves producer ``block`` to the start of ``loop``'s body, computing there the
        region that the blocks under ``loop`` read in one iteration.

        Before::

            for i in range(n):
                with block("B"):
                    v_i = axis.spatial(n, i)
                    B[v_i] = A[v_i] + float32(1.0)
            for i_1 in range(n):
                with block("C"):
                    v_i_1 = axis.spatial(n, i_1)
                    C[v_i_1] = B[v_i_1] * float32(2.0)

        After ``sch.compute_at(sch.get_block("B"), i_1)``::

            for i_1 in range(n):
                with block("B"):
                    v_i = axis.spatial(n, i_1)
                    B[v_i] = A[v_i] + float32(1.0)
                with block("C"):
                    v_i_1 = axis.spatial(n, i_1)
                    C[v_i_1] = B[v_i_1] * float32(2.0)

        ``block`` and ``loop`` may sit inside common loops (a tile loop an earlier
        compute_at made, a batch loop): ``block`` must then come before the loop's nest
        in their common body, and the consumers read, in one iteration of the common
        loops, only what ``block`` wrote in that iteration.

        Raises ScheduleError when ``block`` writes a kernel output, is not before the
        loop, has consumers outside the loop, shares its buffer with another writer,
        when a block between writes what it reads, when values would cross iterations
        of common loops, or when a block without init that updates in place would run
        twice for an element.
        """
        bsite = self._block("compute_at", block)
        lsite = self._loop("compute_at", loop)
        name = bsite.node.block.name
        step = compute_at_prims.compute_at(
            self._func, self._namer, bsite, lsite, name in self._complete
        )
        self._apply(step, [name], "compute_at")
        self._complete.discard(name)
        self._record("compute_at", (block, loop), {}, None)

    def reverse_compute_at(self, block: BlockRV, loop: LoopRV) -> None:
        """Moves consumer ``block`` to the end of ``loop``'s body, computing there the
        region that the producers under ``loop`` write in one iteration.

        Before::

            for i_0 in range((n + 31) // 32):
                for i_1 in range(32):
                    with block("B"): ...   # B[v_i] = A[v_i] + 1, v_i = i_0 * 32 + i_1
            for i in range(n):
                with block("C"): ...       # C[v_i] = B[v_i] * 2

        After ``sch.reverse_compute_at(sch.get_block("C"), i_0)``::

            for i_0 in range((n + 31) // 32):
                for i_1 in range(32):
                    with block("B"): ...
                for ax_v_i in range(32):
                    with block("C"):
                        v_i = axis.spatial(n, i_0 * 32 + ax_v_i)
                        where(i_0 * 32 + ax_v_i < n)
                        ...

        Inside common loops, ``block`` must come after the loop's nest in their common
        body and run, in one iteration of them, exactly the points whose inputs that
        iteration makes.

        Raises ScheduleError when ``block`` does not cover its domain, is not after
        the loop, reads a region that one iteration does not produce, when a block
        in between touches what it reads or writes, or when it would move across
        iterations of common loops.
        """
        bsite = self._block("reverse_compute_at", block)
        lsite = self._loop("reverse_compute_at", loop)
        name = bsite.node.block.name
        step = compute_at_prims.reverse_compute_at(
            self._func, self._namer, bsite, lsite, self._complete
        )
        self._apply(step, [name], "reverse_compute_at")
        self._record("reverse_compute_at", (block, loop), {}, None)

    # inlining ---------------------------------------------------------------------

    def compute_inline(self, block: BlockRV) -> None:
        """Inlines an elementwise producer into its consumers and drops its buffer.

        Before::

            with block("B"):
                B[v_i] = A[v_i] + float32(1.0)
            ...
            with block("C"):
                C[v_i_1] = B[v_i_1] * float32(2.0)

        After ``sch.compute_inline(sch.get_block("B"))``::

            with block("C"):
                C[v_i_1] = (A[v_i_1] + float32(1.0)) * float32(2.0)

        Raises ScheduleError for a reduction, a block that is not one store at its
        iterators, a kernel output, a buffer with another writer, or inputs that are
        overwritten before a consumer.
        """
        site = self._block("compute_inline", block)
        step = inline_prims.compute_inline(self._func, site)
        self._apply(step, (), "compute_inline")
        self._record("compute_inline", (block,), {}, None)

    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Folds an elementwise consumer into the producer of its input.

        Before::

            with block("B"):
                B[v_i] = A[v_i] + float32(1.0)
            ...
            with block("C"):
                C[v_i_1] = B[v_i_1] * float32(2.0)

        After ``sch.reverse_compute_inline(sch.get_block("C"))``::

            with block("B"):
                C[v_i] = (A[v_i] + float32(1.0)) * float32(2.0)

        The consumer may read other buffers (parameters, intermediates complete before
        the producer): they are read in the producer's block at the same points. It
        folds into the writer of the last-written intermediate it reads.

        Raises ScheduleError unless the consumer reads that intermediate (with one
        producer and no other consumer) exactly at its iterators, over its whole
        extent, and nothing from the producer to the consumer writes its other inputs.
        """
        site = self._block("reverse_compute_inline", block)
        step = inline_prims.reverse_compute_inline(self._func, site, self._complete)
        self._apply(step, (), "reverse_compute_inline")
        self._record("reverse_compute_inline", (block,), {}, None)

    # caching ----------------------------------------------------------------------

    def cache_read(self, block: BlockRV, read_buffer: int | str, scope: str) -> BlockRV:
        """Makes ``block`` read ``read_buffer`` (an index into its reads, or a name)
        from a copy in ``scope``; returns the copy block (named ``A_local``...).

        Before::

            for i in range(n):
                with block("B"):
                    B[v_i] = A[v_i] * float32(2.0)

        After ``sch.cache_read(b, 0, "local")``::

            for ax0 in range(n):
                with block("A_local"):
                    A_local[v_ax0] = A[v_ax0]
            for i in range(n):
                with block("B"):
                    B[v_i] = A_local[v_i] * float32(2.0)

        Raises ScheduleError for an unknown buffer or scope, or when a block of the
        same loop nest writes the buffer.
        """
        site = self._block("cache_read", block)
        step = cache_prims.cache_read(self._func, self._namer, site, read_buffer, scope)
        self._apply(step, (), "cache_read")
        self._complete.add(step.outputs[0])
        rv = self._block_rv(step.outputs[0])
        self._record("cache_read", (block, read_buffer, scope), {}, rv)
        return rv

    def cache_write(self, block: BlockRV, write_buffer: int | str, scope: str) -> BlockRV:
        """Makes ``block`` write ``write_buffer`` into a copy in ``scope``, copied back
        after its loop nest; returns the copy-back block.

        After ``sch.cache_write(b, 0, "local")`` on ``B[v_i] = A[v_i] * 2``::

            for i in range(n):
                with block("B"):
                    B_local[v_i] = A[v_i] * float32(2.0)
            for ax0 in range(n):
                with block("B_local"):
                    B[v_ax0] = B_local[v_ax0]

        Raises ScheduleError unless ``block`` alone writes the whole buffer.
        """
        site = self._block("cache_write", block)
        step = cache_prims.cache_write(
            self._func, self._namer, site, write_buffer, scope, self._complete
        )
        self._apply(step, (), "cache_write")
        self._complete.add(step.outputs[0])
        rv = self._block_rv(step.outputs[0])
        self._record("cache_write", (block, write_buffer, scope), {}, rv)
        return rv

    # reductions -------------------------------------------------------------------

    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Moves the init of reduction ``block`` into a new block placed before
        ``loop`` (one of its loops); returns the init block.

        Before::

            for i in range(n):
                for k in range(K):
                    with block("C"):
                        with init():
                            C[v_i] = float32(0.0)
                        C[v_i] = C[v_i] + A[v_i, v_k]

        After ``sch.decompose_reduction(c, k)``::

            for i in range(n):
                with block("C_init"):
                    C[v_i_init] = float32(0.0)
                for k in range(K):
                    with block("C"):
                        C[v_i] = C[v_i] + A[v_i, v_k]
        """
        site = self._block("decompose_reduction", block)
        lsite = self._loop("decompose_reduction", loop)
        step = reduction_prims.decompose_reduction(self._func, self._namer, site, lsite)
        self._apply(step, (), "decompose_reduction")
        if site.node.block.name in self._complete:
            self._complete.add(step.outputs[0])
        rv = self._block_rv(step.outputs[0])
        self._record("decompose_reduction", (block, loop), {}, rv)
        return rv

    def rfactor(self, loop: LoopRV, factor_axis: int = 0) -> BlockRV:
        """Factors the reduction under ``loop`` over it: partial results, one per
        iteration of ``loop`` (which becomes a spatial, parallelisable loop), go to a new
        buffer ``C_rf`` (with ``loop``'s extent inserted at ``factor_axis``); a
        write-back block, which keeps the original name, combines them. Returns the
        partial-result block.

        Before (``k`` split into ``k_0, k_1``)::

            for k_0 in range(16):
                for k_1 in range(4):
                    with block("C"):
                        with init():
                            C[()] = float32(0.0)
                        C[()] = C[()] + A[k_0 * 4 + k_1]

        After ``sch.rfactor(k_1)``::

            for ax0 in range(4):
                with block("C_rf_init"):
                    C_rf[v_ax0] = float32(0.0)
            for k_0 in range(16):
                for k_1 in range(4):
                    with block("C_rf"):
                        C_rf[v_k_1] = C_rf[v_k_1] + A[v_k_0 * 4 + v_k_1]
            for ax_v_C_rf in range(4):
                with block("C"):
                    with init():
                        C[()] = float32(0.0)
                    C[()] = C[()] + C_rf[v_C_rf]

        Raises ScheduleError unless ``loop`` holds one complete reduction block whose
        update is ``W = W op rhs`` (op in + * min max) and binds only its reduction
        iterators.
        """
        lsite = self._loop("rfactor", loop)
        step = reduction_prims.rfactor(self._func, self._namer, lsite, factor_axis, self._complete)
        self._apply(step, (), "rfactor")
        self._complete.update(step.outputs)
        rv = self._block_rv(step.outputs[0])
        self._record("rfactor", (loop,), {"factor_axis": factor_axis}, rv)
        return rv

    def storage_align(
        self, block: BlockRV, buffer_index: int, axis: int, factor: int, offset: int
    ) -> None:
        """Pads the strides of the intermediate buffer ``block`` writes
        (``writes[buffer_index]``) so that the stride of ``axis`` is ``offset`` modulo
        ``factor``: ``B = alloc_buffer((n, 64), "float32")`` becomes
        ``alloc_buffer((n, 64), "float32", strides=(65, 1))`` for
        ``storage_align(b, 0, 0, 32, 1)``. Only the layout changes.

        One call aligns one axis; calls on other axes of the same buffer add to it
        (padding inner axes grows the outer strides) and a call on the same axis
        replaces its request. The requests are recorded on the allocating block as
        ``block_attr({'storage_align': (('B', 0, 32, 1),)})``."""
        site = self._block("storage_align", block)
        step = layout_prims.storage_align(self._func, site, buffer_index, axis, factor, offset)
        self._apply(step, (), "storage_align")
        self._record("storage_align", (block, buffer_index, axis, factor, offset), {}, None)

    def set_scope(self, block: BlockRV, buffer_index: int, scope: str) -> None:
        """Moves the intermediate buffer ``block`` writes (``writes[buffer_index]``) to
        ``scope`` (``"global"``, ``"shared"``, ``"local"``):
        ``S = alloc_buffer((n,), "float32")`` becomes ``alloc_buffer((n,), "float32",
        scope="shared")``. The loop form means the same; on the GPU a shared buffer is
        per thread block and a local one per thread, which ``bind`` and
        :func:`relaxjax.schedule.gpu.finish_gpu` check. Raises ScheduleError for a
        parameter, an unknown scope, or a result that makes a thread-bound loop unsound."""
        site = self._block("set_scope", block)
        step = layout_prims.set_scope(self._func, site, buffer_index, scope)
        self._apply(step, (), "set_scope")
        self._record("set_scope", (block, buffer_index, scope), {}, None)
