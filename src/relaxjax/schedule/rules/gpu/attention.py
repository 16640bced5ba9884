"""The GPU rule for fused attention (``dot_product_attention``): flash-attention 2 on
thread blocks.

The op's kernel (:mod:`relaxjax.ops.flash_attention`) carries the op as its
:class:`~relaxjax.ops.flash_attention.AttentionForm`; its CPU loops (a task per query
tile, the tile's rows in one thread) do not suit a GPU, so this rule writes the GPU
form from the form and the kernel's buffers, in the loop form of a scheduled kernel
(thread loops, shared and local buffers), and finishes it like every GPU rule
(:func:`relaxjax.schedule.gpu.finish_gpu`: launches, per-thread registers, barriers,
checks). One block per (batch x head, ``ROWS`` query rows); ``R`` threads per query
row (``threads = ROWS * R``), each owning ``C = H / R`` contiguous columns of the head
dim (``r * C + c``: a thread's reads of a shared row merge into 128-bit loads, and the
rows of a warp read the same words, a broadcast; 16-bit types interleave them, see
:class:`AttentionPlan`)::

    for bh in thread_binding(B * N, thread="blockIdx.y"):          # b = bh // N, n = bh % N
      for qt in thread_binding(ceil(T / ROWS), thread="blockIdx.x"):   # t0 = qt * ROWS
        # row = tx // R, r = tx % R, t = t0 + row; q, acc: C registers; m, l: the row's
        q[c] = query[b, t, n, r * C + c]; m = -inf; l = 0; acc[:] = 0
        for st in range(ceil(keys / KEYS)):        # causal: no tile after the last row
            K_s[j, h], V_s[j, h] = key/value[b, s0 + j, n // G, h]   # all threads,
            syncthreads()                                  # coalesced, zero past the end
            dots[j] = sum_c q[c] * K_s[j, r * C + c]       # the thread's share of the row's
            P_s[tx, j] = dots[j]; syncthreads()            # logits, summed over the R threads
            dots[j] = sum_r' P_s[row * R + r', j]          # (through shared memory)
            p[j] = logit(dots[j] * scale, bias, mask, causal)   or -inf past the end
            top = max(m, max_j p[j]); alpha = exp(m - top); p[j] = exp(p[j] - top)
            l = l * alpha + sum_j p[j]
            acc[c] = acc[c] * alpha + sum_j p[j] * V_s[j, r * C + c]
            m = top; syncthreads()
        out[b, t, n, r * C + c] = acc[c] / l

The loops over ``j`` (``KEYS`` keys) and ``c`` are unrolled (expanded with constant
indices after ``finish_gpu``), so that ``q``, ``acc``, ``dots`` and ``p`` live in
registers. Rows past the end (``t >= T``) load nothing and store nothing; they take
part in the barriers. The numerics are the CPU kernel's (logits in
``promote(dtype, float32)``, the softmax in float32, the weighted sum in the
accumulation dtype): only the order of the sums differs.

The rule applies when the head dim ``H`` is a constant, ``C <= 64`` and the tiles fit
in the static shared memory (``KEYS`` is halved down to 8 until they do); other
attention kernels are left to the fallback rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial as partial_fn

from relaxjax import arith, dtypes, tir
from relaxjax.arith import Dim
from relaxjax.ops.base import nonzero_floordiv
from relaxjax.ops.flash_attention import (
    AttentionForm,
    attention_form,
    ceil_div,
    logit_scale,
    masked_logit,
    read4,
    task_divisor,
    write_index,
)
from relaxjax.ops.kernel import convert
from relaxjax.ops.reduction import accumulator_dtype
from relaxjax.schedule.gpu import finish_gpu
from relaxjax.schedule.rules.gpu.target import GpuParams, gpu_params
from relaxjax.tir import (
    Allocate,
    Buffer,
    BufferStore,
    For,
    IfThenElse,
    LetStmt,
    PrimExpr,
    PrimFunc,
    Stmt,
)
from relaxjax.tir import seq as tir_seq
from relaxjax.tir.expr import as_expr
from relaxjax.tir.functor import StmtMutator, substitute

__all__ = ["ROWS", "AttentionPlan", "attention_plan", "attention_rule"]

#: Query rows per block.
ROWS = 32
#: Keys per shared-memory tile, at most (halved while the tiles do not fit).
KEYS = 32
#: Columns of the head dim a thread owns, at most (they are unrolled registers).
MOST_COLUMNS = 64


@dataclass(frozen=True, slots=True)
class AttentionPlan:
    """The sizes of one GPU attention kernel: ``R`` threads per row, ``C`` columns per
    thread, ``keys`` per tile (``threads = ROWS * R`` per block); a thread's columns
    are ``r * C + c`` when ``contiguous``, else ``c * R + r`` (interleaved: 16-bit
    outputs, whose merged stores libnvvm 13.0 rejects with "unsupported operation")."""

    R: int
    C: int
    keys: int
    contiguous: bool = True

    @classmethod
    def of(cls, width: int, keys: int) -> AttentionPlan:
        rows = _threads_per_row(width)
        return cls(rows, width // rows, keys)

    def column(self, lane: Dim, c: Dim) -> Dim:
        """The column of the head dim that thread ``lane`` of a row holds as its ``c``-th."""
        return lane * self.C + c if self.contiguous else c * self.R + lane

    @property
    def threads(self) -> int:
        return ROWS * self.R

    def shared_bytes(self, width: int, logit: str, work: str) -> int:
        """Shared memory of the key, value and partial-logit tiles."""
        partials = self.threads * (self.keys + 1) if self.R > 1 else 0
        return self.keys * width * (
            dtypes.itemsize(logit) + dtypes.itemsize(work)
        ) + partials * dtypes.itemsize(logit)


#: Threads per query row, at most (``ROWS * MOST_SPLIT`` threads a block).
MOST_SPLIT = 8


def _threads_per_row(width: int) -> int:
    """The largest power of two that divides ``width``, at most ``width // 16`` (about 16
    columns a thread) and ``MOST_SPLIT``; 1 for narrow heads."""
    most = max(1, min(MOST_SPLIT, width // 16))
    size = 1
    while size * 2 <= most and width % (size * 2) == 0:
        size *= 2
    return size


def attention_plan(width: Dim, logit: str, work: str, params: GpuParams) -> AttentionPlan | None:
    """The plan for a head dim ``width``; None when the rule does not apply (see the
    module doc)."""
    if not isinstance(width, int) or width < 1:
        return None
    keys = KEYS
    while keys >= 8:
        plan = AttentionPlan.of(width, keys)
        if plan.C > MOST_COLUMNS or plan.threads > params.limits.max_threads_per_block:
            return None
        if plan.shared_bytes(width, logit, work) <= params.limits.max_shared_bytes:
            return plan
        keys //= 2
    return None


class _Loops:
    """Loops with fresh names (``j``, ``j_1``, ...)."""

    def __init__(self) -> None:
        self.taken: dict[str, int] = {}

    def __call__(
        self,
        name: str,
        extent: Dim,
        body: Callable[[arith.Sym], Stmt],
        kind: str = "serial",
        tag: str | None = None,
    ) -> For:
        var = self.fresh(name)
        return For(var, 0, extent, kind, body(var), thread_tag=tag)

    def fresh(self, name: str) -> arith.Sym:
        count = self.taken.get(name, 0)
        self.taken[name] = count + 1
        return arith.sym(name if count == 0 else f"{name}_{count}")

    def let(self, name: str, value: Dim, body: Callable[[arith.Sym], Stmt]) -> Stmt:
        """``body`` with ``value`` bound to a variable: computed once, where the unrolled
        accesses of a thread would repeat it (only read indices use one: the launch
        checks see a let as any value)."""
        var = self.fresh(name)
        return LetStmt(var, as_expr(value), body(var))

    def lets(self, values: dict[str, Dim], body: Callable[..., Stmt]) -> Stmt:
        """``body(**bound)`` with each of ``values`` bound by :meth:`let`."""

        def bind(names: list[str], bound: dict[str, Dim]) -> Stmt:
            if not names:
                return body(**bound)
            name = names[0]
            return self.let(name, values[name], lambda v: bind(names[1:], {**bound, name: v}))

        return bind(list(values), {})

    def threads(self, count: int, body: Callable[[arith.Sym], Stmt]) -> For:
        return self("tx", count, body, "thread_binding", "threadIdx.x")

    def unrolled(self, name: str, extent: int, body: Callable[[arith.Sym], Stmt]) -> For:
        return self(name, extent, body, "unrolled")


class _Unroll(StmtMutator):
    """Every ``unrolled`` loop of constant range as a copy of its body per value, the
    value substituted: the indices of register arrays and the offsets into the shared
    tiles become constants before code generation (rather than index arithmetic that
    the GPU compiler folds, emitted thousands of times)."""

    def visit_For(self, stmt: For) -> Stmt:
        node = super().visit_For(stmt)
        if not (node.kind == "unrolled" and isinstance(node.extent, int)):
            return node
        if not isinstance(node.start, int):
            return node
        values = range(node.start, node.start + node.extent)
        return tir_seq(*(substitute(node.body, {node.var: value}) for value in values))


def _kernel(func: PrimFunc, form: AttentionForm, plan: AttentionPlan) -> PrimFunc:
    """The GPU form of the attention kernel ``func`` (see the module doc)."""
    by_name = dict(zip(form.names, func.params))
    query, key, value = (by_name[name] for name in ("query", "key", "value"))
    out = func.params[len(form.names)]
    dtype, logit = key.dtype, form.logit
    work = accumulator_dtype(dtype).name
    batch, target, heads, width = (1,) * (4 - query.ndim) + tuple(query.shape)
    source, kv_heads = ((1,) * (4 - key.ndim) + tuple(key.shape))[1:3]
    groups = nonzero_floordiv(heads, kv_heads)
    full = (batch, heads, target, source)
    scale = logit_scale(form, width, logit)
    skip = form.is_causal and "mask" not in by_name
    q_tiles = ceil_div(target, ROWS)
    R, C, KEYS_, threads = plan.R, plan.C, plan.keys, plan.threads
    loads = ceil_div(KEYS_ * width, threads)
    loop = _Loops()

    k_s = Buffer("K_shared", (KEYS_ * width,), logit, scope="shared")
    v_s = Buffer("V_shared", (KEYS_ * width,), work, scope="shared")
    # rows padded by one word: thread tx's row starts in bank tx % 32 (no conflicts)
    stride = KEYS_ + 1
    p_s = Buffer("P_shared", (threads * stride,), logit, scope="shared")
    q = Buffer("q", (threads, C), logit, scope="local")
    acc = Buffer("acc", (threads, C), work, scope="local")
    m = Buffer("m", (threads,), "float32", scope="local")
    total = Buffer("l", (threads,), "float32", scope="local")
    dots = Buffer("dots", (threads, KEYS_), logit, scope="local")
    probs = Buffer("p", (threads, KEYS_), "float32", scope="local")
    top = Buffer("top", (threads,), "float32", scope="local")
    psum = Buffer("psum", (threads,), "float32", scope="local")
    alphas = Buffer("alpha", (threads,), "float32", scope="local")

    def block_body(bh: arith.Sym, qt: arith.Sym) -> Stmt:
        # (no division by the symbolic tile count: every load and store computes b and n)
        b = arith.floordiv(bh, task_divisor(heads))
        n = arith.mod(bh, task_divisor(heads))
        t0 = qt * ROWS
        rows = arith.min_(ROWS, target - t0)
        kv = arith.floordiv(n, groups) if groups != 1 else n
        keys = arith.min_(source, t0 + rows) if skip else source

        def lane_of(tx: Dim) -> Dim:
            return arith.mod(tx, R) if R > 1 else 0

        def column(tx: Dim, c: Dim) -> Dim:
            return plan.column(lane_of(tx), c)

        def row_of(tx: Dim) -> Dim:
            return arith.floordiv(tx, R) if R > 1 else tx

        def in_rows(tx: Dim) -> PrimExpr:
            return as_expr(row_of(tx)) < as_expr(rows)

        def init(tx: arith.Sym) -> Stmt:
            def load(b: Dim, n: Dim, t: Dim, lane: Dim) -> Stmt:
                return loop.unrolled(
                    "c",
                    C,
                    lambda c: BufferStore(
                        q, convert(read4(query, b, t, n, plan.column(lane, c)), logit), (tx, c)
                    ),
                )

            values = {"b": b, "n": n, "t": t0 + row_of(tx), "lane": lane_of(tx)}
            load_q = loop.lets(values, load)
            zero_q = loop.unrolled("c", C, lambda c: BufferStore(q, as_expr(0, logit), (tx, c)))
            return tir_seq(
                BufferStore(m, as_expr(-math.inf, "float32"), (tx,)),
                BufferStore(total, as_expr(0.0, "float32"), (tx,)),
                loop.unrolled("c", C, lambda c: BufferStore(acc, as_expr(0, work), (tx, c))),
                IfThenElse(in_rows(tx), load_q, zero_q),
            )

        def key_tile(st: arith.Sym) -> Stmt:
            s0 = st * KEYS_

            def load(tx: arith.Sym) -> Stmt:
                def one(e: arith.Sym) -> Stmt:
                    index = e * threads + tx
                    j, h = arith.floordiv(index, width), arith.mod(index, width)
                    inside = as_expr(s0 + j) < as_expr(source)
                    fill = tir_seq(
                        BufferStore(k_s, convert(read4(key, b, s0 + j, kv, h), logit), (index,)),
                        BufferStore(v_s, convert(read4(value, b, s0 + j, kv, h), work), (index,)),
                    )
                    zero = tir_seq(
                        BufferStore(k_s, as_expr(0, logit), (index,)),
                        BufferStore(v_s, as_expr(0, work), (index,)),
                    )
                    stmt: Stmt = IfThenElse(inside, fill, zero)
                    if loads * threads != KEYS_ * width:
                        stmt = IfThenElse(as_expr(index) < as_expr(KEYS_ * width), stmt)
                    return stmt

                return loop.unrolled("e", loads, one) if loads <= 64 else loop("e", loads, one)

            def partial(tx: arith.Sym) -> Stmt:
                return loop.let("lane", lane_of(tx), lambda lane: partial_at(tx, lane))

            def partial_at(tx: arith.Sym, lane: Dim) -> Stmt:
                def term(c: arith.Sym) -> Stmt:
                    return loop.unrolled(
                        "j",
                        KEYS_,
                        lambda j: BufferStore(
                            dots,
                            dots[tx, j] + q[tx, c] * k_s[j * width + plan.column(lane, c)],
                            (tx, j),
                        ),
                    )

                stmts = [
                    loop.unrolled(
                        "j", KEYS_, lambda j: BufferStore(dots, as_expr(0, logit), (tx, j))
                    ),
                    loop.unrolled("c", C, term),
                ]
                if R > 1:
                    stmts.append(
                        loop.unrolled(
                            "j", KEYS_, lambda j: BufferStore(p_s, dots[tx, j], (tx * stride + j,))
                        )
                    )
                return tir_seq(*stmts)

            def combine(tx: arith.Sym) -> Stmt:
                first = row_of(tx) * R

                def one(j: arith.Sym) -> Stmt:
                    total_: PrimExpr = p_s[first * stride + j]
                    for other in range(1, R):
                        total_ = total_ + p_s[(first + other) * stride + j]
                    return BufferStore(dots, total_, (tx, j))

                return loop.unrolled("j", KEYS_, one)

            def update(tx: arith.Sym) -> Stmt:
                values = {"t": t0 + row_of(tx), "b": b, "n": n, "lane": lane_of(tx)}
                return IfThenElse(
                    in_rows(tx),
                    loop.lets({**values, "left": source - s0}, partial_fn(update_at, tx)),
                )

            def update_at(tx: arith.Sym, t: Dim, b: Dim, n: Dim, lane: Dim, left: Dim) -> Stmt:
                def logits(j: arith.Sym) -> Stmt:
                    value_ = masked_logit(
                        by_name, form, full, dots[tx, j] * scale, (b, n, t, s0 + j),
                        logit, form.large_negative,
                    )  # fmt: skip
                    return IfThenElse(
                        as_expr(j) < as_expr(left),
                        BufferStore(probs, convert(value_, "float32"), (tx, j)),
                        BufferStore(probs, as_expr(-math.inf, "float32"), (tx, j)),
                    )

                def weight(j: arith.Sym) -> Stmt:
                    return tir_seq(
                        BufferStore(probs, tir.exp(probs[tx, j] - top[tx]), (tx, j)),
                        BufferStore(psum, psum[tx] + probs[tx, j], (tx,)),
                    )

                alpha = alphas[tx]

                def weighted(j: arith.Sym) -> Stmt:
                    p = convert(convert(probs[tx, j], dtype), work)
                    return loop.unrolled(
                        "c",
                        C,
                        lambda c: BufferStore(
                            acc, acc[tx, c] + p * v_s[j * width + plan.column(lane, c)], (tx, c)
                        ),
                    )

                return tir_seq(
                    loop.unrolled("j", KEYS_, logits),
                    BufferStore(top, m[tx], (tx,)),
                    loop.unrolled(
                        "j",
                        KEYS_,
                        lambda j: BufferStore(top, tir.max(top[tx], probs[tx, j]), (tx,)),
                    ),
                    BufferStore(psum, as_expr(0.0, "float32"), (tx,)),
                    loop.unrolled("j", KEYS_, weight),
                    BufferStore(alphas, tir.exp(m[tx] - top[tx]), (tx,)),
                    BufferStore(total, total[tx] * alpha + psum[tx], (tx,)),
                    loop.unrolled(
                        "c",
                        C,
                        lambda c: BufferStore(acc, acc[tx, c] * convert(alpha, work), (tx, c)),
                    ),
                    BufferStore(m, top[tx], (tx,)),
                    loop.unrolled("j", KEYS_, weighted),
                )

            stages = [loop.threads(threads, load), loop.threads(threads, partial)]
            if R > 1:
                stages.append(loop.threads(threads, combine))
            stages.append(loop.threads(threads, update))
            return tir_seq(*stages)

        def finish(tx: arith.Sym) -> Stmt:
            t = t0 + row_of(tx)

            def store(c: arith.Sym) -> Stmt:
                ratio = acc[tx, c] / convert(total[tx], work)
                result = tir.select(total[tx] > as_expr(0.0, "float32"), ratio, as_expr(0, work))
                index = write_index(out.ndim, b, t, n, column(tx, c))
                return BufferStore(out, convert(result, dtype), index)

            return IfThenElse(in_rows(tx), loop.unrolled("c", C, store))

        body = tir_seq(
            loop.threads(threads, init),
            loop("st", ceil_div(keys, KEYS_), key_tile),
            loop.threads(threads, finish),
        )
        buffers = [
            k_s,
            v_s,
            *([p_s] if R > 1 else []),
            q,
            acc,
            m,
            total,
            dots,
            probs,
            top,
            psum,
            alphas,
        ]
        for buffer in reversed(buffers):
            body = Allocate(buffer, body)
        return body

    def tiles(bh: arith.Sym) -> Stmt:
        return loop("qt", q_tiles, partial_fn(block_body, bh), "thread_binding", "blockIdx.x")

    nest = loop("bh", batch * heads, tiles, "thread_binding", "blockIdx.y")
    return PrimFunc(func.name, func.params, nest, func.num_outputs, func.scalar_params, func.attrs)


def attention_rule(func: PrimFunc, target: object = "cuda") -> PrimFunc | None:
    """The GPU form of a fused attention kernel, finished (see the module doc); None
    for other kernels and heads the rule does not take."""
    form = attention_form(func)
    if form is None or len(func.params) != len(form.names) + 1 or func.num_outputs != 1:
        return None
    params = gpu_params(target)
    query, key = func.params[0], func.params[1]
    work = accumulator_dtype(key.dtype).name
    plan = attention_plan(query.shape[-1], form.logit, work, params)
    if plan is None:
        return None
    plan = replace(plan, contiguous=dtypes.itemsize(key.dtype) >= 4)
    done = finish_gpu(_kernel(func, form, plan), params.limits)
    return done.with_body(_Unroll().visit_stmt(done.body))
