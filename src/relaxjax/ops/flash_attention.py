"""The fused attention kernel: one pass over tiles of keys with an online softmax.

``dot_product_attention`` lowers to this kernel (and the hand-written pattern
``softmax(where(mask, -inf, q @ k.T * scale)) @ v`` is rewritten to that op by
:mod:`relaxjax.passes.attention`). No ``(T, S)`` tensor exists: for a tile of
``TILE_Q`` query rows of one batch and head, the keys are visited ``TILE_S`` at a
time; each tile's logits live in a local row, and the running max ``m``, running
sum ``l`` and the unnormalised output row ``acc`` are rescaled when the max grows::

    for task in range(B * N * ceil(T / TILE_Q)):     # parallel (batch x heads x q tiles)
        m[:] = -inf; l[:] = 0; acc[:, :] = 0
        for each key tile s0 .. s0 + cols (causal: only up to the tile's last row)
            kt[h, j] = key[b, s0 + j, n // G, h]      # the tile, transposed
            for i in range(rows):                    # the query rows of the task
                sc[j] = sum_h q[b, t0 + i, n, h] * kt[h, j]           # vector over j
                sc[j] = where(keep, sc[j] * scale + bias, LARGE_NEGATIVE)
                top = max(m[i], max_j sc[j]); alpha = exp(m[i] - top)
                p[j] = exp(sc[j] - top); l[i] = l[i] * alpha + sum_j p[j]
                acc[i, :] = acc[i, :] * alpha + sum_j p[j] * value[b, s0 + j, n // G, :]
                m[i] = top
        out[b, t0 + i, n, :] = acc[i, :] / l[i]

Semantics are ``jax.nn.dot_product_attention``'s (see :mod:`.attention`): logits in
``promote(dtype, float32)``, masked logits ``-0.7 * finfo.max`` (so a row with every key
masked averages the values, as jax does), the softmax in float32, the weighted sum in
the accumulation dtype. Only the order of the float operations differs (the softmax is
normalised at the end), within a few ulps. With ``is_causal`` and no boolean mask,
key tiles after a query tile's last row are skipped: their weights are exactly zero,
since every causal row attends to key 0. Grouped-query heads read key/value head
``n // G``. All dims may be symbolic, 0 and 1 included.

The loops carry the CPU loop kind as the annotation ``cpu_kind`` (``parallel`` over
the tasks, ``vectorized`` over the key tile and the head dim); the schedule rule
:func:`relaxjax.schedule.rules.annotated.annotated_rule` applies them. The kernel also
carries the op itself as the attr ``flash_attention`` (:class:`AttentionForm`), from
which a target with its own form of the algorithm rebuilds it (the GPU rule
:mod:`relaxjax.schedule.rules.gpu.attention`); the helpers below serve both forms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from relaxjax import arith, tir
from relaxjax.ir import StructInfo
from relaxjax.ops.base import nonzero_floordiv
from relaxjax.ops.kernel import KernelDims, broadcast_indices, convert, placeholders
from relaxjax.ops.reduction import accumulator_dtype
from relaxjax.tir import Allocate, Buffer, BufferStore, For, IfThenElse, PrimExpr, PrimFunc, Stmt
from relaxjax.tir import seq as tir_seq
from relaxjax.tir.expr import as_expr

__all__ = [
    "CPU_KIND",
    "FORM_ATTR",
    "TILE_Q",
    "TILE_S",
    "AttentionForm",
    "attention_form",
    "ceil_div",
    "flash_attention_kernel",
    "logit_scale",
    "masked_logit",
    "read4",
    "task_divisor",
    "write_index",
]

Dim = arith.Dim

#: Query rows per task and keys per tile.
TILE_Q = 16
TILE_S = 64

#: The loop annotation naming the kind a CPU schedule gives the loop.
CPU_KIND = "cpu_kind"

#: The kernel attr holding the op's :class:`AttentionForm`.
FORM_ATTR = "flash_attention"


@dataclass(frozen=True, slots=True)
class AttentionForm:
    """What a kernel of the op computes, beyond its buffers: the operand ``names``
    (``query, key, value``, then ``bias`` and ``mask`` when given), ``is_causal``, the
    logit ``scale`` (None: ``1/sqrt(H)``), the logits' dtype ``logit`` and the masked
    logit ``large_negative``."""

    names: tuple[str, ...]
    is_causal: bool
    scale: float | None
    logit: str
    large_negative: float

    def to_attr(self) -> tuple:
        """The form as a kernel attr value (scalars and tuples)."""
        scale = () if self.scale is None else (float(self.scale),)
        return (self.names, self.is_causal, scale, self.logit, self.large_negative)

    @classmethod
    def from_attr(cls, value: tuple) -> AttentionForm:
        names, is_causal, scale, logit, large_negative = value
        return cls(tuple(names), is_causal, scale[0] if scale else None, logit, large_negative)


def attention_form(func: PrimFunc) -> AttentionForm | None:
    """The form a kernel of :func:`flash_attention_kernel` carries; None for others."""
    value = dict(func.attrs).get(FORM_ATTR)
    return None if value is None else AttentionForm.from_attr(value)


class _Loops:
    """Loops with names unique in the kernel (``j0``, ``j0_1``, ...)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def __call__(
        self, name: str, extent: Dim, body: Callable[[arith.Sym], Stmt], kind: str = "serial"
    ) -> For:
        unique, count = name, 0
        while unique in self.taken:
            count += 1
            unique = f"{name}_{count}"
        self.taken.add(unique)
        var = arith.sym(unique)
        annotations = ((CPU_KIND, kind),) if kind != "serial" else ()
        return For(var, 0, extent, "serial", body(var), annotations)


def logit_scale(attrs, width: Dim, logit: str) -> PrimExpr:
    """The logit scale of ``attrs`` (its ``scale``, else ``1/sqrt(width)``) in ``logit``."""
    if attrs.scale is not None:
        return as_expr(attrs.scale, logit)
    if isinstance(width, int):
        return as_expr(1.0 / math.sqrt(width) if width else 1.0, logit)
    return convert(1.0 / tir.sqrt(convert(as_expr(width), "float64")), logit)


def task_divisor(dim: Dim) -> Dim:
    """``dim`` as the divisor of a task index: a constant 0 means no task runs (any
    divisor will do, and arith refuses a division by 0)."""
    return 1 if isinstance(dim, int) and dim == 0 else dim


def ceil_div(a: Dim, b: int) -> Dim:
    """``ceil(a / b)``."""
    return arith.floordiv(a + (b - 1), b)


def flash_attention_kernel(
    names: Sequence[str],
    arg_infos: Sequence[StructInfo],
    attrs,
    logit: str,
    large_negative: float,
) -> PrimFunc:
    """The kernel ``[query, key, value, (bias), (mask), out]`` (see the module doc);
    ``logit`` is the logits' dtype and ``large_negative`` the masked logit."""
    inputs = placeholders(KernelDims(), arg_infos, names)
    by_name = dict(zip(names, inputs))
    _loop = _Loops()
    query, key, value = inputs[:3]
    dtype = key.dtype
    work = accumulator_dtype(dtype).name
    batch, target, heads, width = (1,) * (4 - query.ndim) + tuple(query.shape)
    source, kv_heads = ((1,) * (4 - key.ndim) + tuple(key.shape))[1:3]
    groups = nonzero_floordiv(heads, kv_heads)
    full = (batch, heads, target, source)
    scale = logit_scale(attrs, width, logit)
    skip = attrs.is_causal and "mask" not in by_name
    q_tiles = ceil_div(target, TILE_Q)
    out = Buffer("dot_product_attention", tuple(query.shape), dtype)

    m = Buffer("m", (TILE_Q,), "float32", scope="local")
    total = Buffer("l", (TILE_Q,), "float32", scope="local")
    acc = Buffer("acc", (TILE_Q, width), work, scope="local")
    kt = Buffer("kt", (width, TILE_S), logit, scope="local")
    dots = Buffer("dots", (TILE_Q, TILE_S), logit, scope="local")
    probs = Buffer("probs", (TILE_Q, TILE_S), "float32", scope="local")
    top = Buffer("top", (1,), "float32", scope="local")
    psum = Buffer("psum", (1,), "float32", scope="local")

    def task_body(task: arith.Sym) -> Stmt:
        b = arith.floordiv(task, task_divisor(heads * q_tiles))
        n = arith.mod(arith.floordiv(task, task_divisor(q_tiles)), task_divisor(heads))
        t0 = arith.mod(task, task_divisor(q_tiles)) * TILE_Q
        rows = arith.min_(TILE_Q, target - t0)
        kv = arith.floordiv(n, groups) if groups != 1 else n
        keys = arith.min_(source, t0 + rows) if skip else source

        def init(i: arith.Sym) -> Stmt:
            zero = _loop(
                "h", width, lambda h: BufferStore(acc, as_expr(0, work), (i, h)), "vectorized"
            )
            return tir_seq(
                BufferStore(m, as_expr(-math.inf, "float32"), (i,)),
                BufferStore(total, as_expr(0.0, "float32"), (i,)),
                zero,
            )

        def key_tile(st: arith.Sym) -> Stmt:
            s0 = st * TILE_S

            def tile(cols: Dim) -> Stmt:

                def load(h: arith.Sym) -> Stmt:
                    return _loop(
                        "j0",
                        cols,
                        lambda j: BufferStore(
                            kt, convert(read4(key, b, s0 + j, kv, h), logit), (h, j)
                        ),
                        "vectorized",
                    )

                def zero(i: arith.Sym) -> Stmt:
                    store = lambda j: BufferStore(dots, as_expr(0, logit), (i, j))  # noqa: E731
                    return _loop("j1", cols, store, "vectorized")

                def dot(h: arith.Sym) -> Stmt:
                    # every row of the task at once: 16 x 4 independent vector sums
                    def row(i: arith.Sym) -> Stmt:
                        q_h = convert(read4(query, b, t0 + i, n, h), logit)
                        return _loop(
                            "j2",
                            cols,
                            lambda j: BufferStore(dots, dots[i, j] + q_h * kt[h, j], (i, j)),
                            "vectorized",
                        )

                    return _loop("i2", rows, row)

                def softmax(i: arith.Sym) -> Stmt:
                    t = t0 + i

                    def logits(j: arith.Sym) -> Stmt:
                        value_ = masked_logit(
                            by_name, attrs, full, dots[i, j] * scale, (b, n, t, s0 + j),
                            logit, large_negative,
                        )  # fmt: skip
                        return BufferStore(probs, convert(value_, "float32"), (i, j))

                    def peak(j: arith.Sym) -> Stmt:
                        return BufferStore(top, tir.max(top[0], probs[i, j]), (0,))

                    def weight(j: arith.Sym) -> Stmt:
                        p = tir.exp(probs[i, j] - top[0])
                        return tir_seq(
                            BufferStore(probs, p, (i, j)),
                            BufferStore(psum, psum[0] + probs[i, j], (0,)),
                        )

                    alpha = tir.exp(m[i] - top[0])

                    def rescale(h: arith.Sym) -> Stmt:
                        return BufferStore(acc, acc[i, h] * convert(alpha, work), (i, h))

                    return tir_seq(
                        _loop("j3", cols, logits, "vectorized"),
                        BufferStore(top, m[i], (0,)),
                        _loop("j4", cols, peak, "vectorized"),
                        BufferStore(psum, as_expr(0.0, "float32"), (0,)),
                        _loop("j5", cols, weight, "vectorized"),
                        BufferStore(total, total[i] * alpha + psum[0], (i,)),
                        _loop("h3", width, rescale, "vectorized"),
                        BufferStore(m, top[0], (i,)),
                    )

                def accumulate(j: arith.Sym) -> Stmt:
                    # one value row for every query row of the task
                    def row(i: arith.Sym) -> Stmt:
                        p = convert(convert(probs[i, j], dtype), work)
                        return _loop(
                            "h4",
                            width,
                            lambda h: BufferStore(
                                acc,
                                acc[i, h] + p * convert(read4(value, b, s0 + j, kv, h), work),
                                (i, h),
                            ),
                            "vectorized",
                        )

                    return _loop("i4", rows, row)

                return tir_seq(
                    _loop("h0", width, load),
                    _loop("i1", rows, zero),
                    _loop("h1", width, dot),
                    _loop("i3", rows, softmax),
                    _loop("j6", cols, accumulate),
                )

            # a whole tile gets loops of constant extent (no vector remainders)
            whole = as_expr(keys - s0) >= as_expr(TILE_S)
            return IfThenElse(whole, tile(TILE_S), tile(arith.min_(TILE_S, keys - s0)))

        def finish(i: arith.Sym) -> Stmt:
            # l > 0 whenever there is a key (each tile has a weight exp(0) = 1).
            def store(h: arith.Sym) -> Stmt:
                ratio = acc[i, h] / convert(total[i], work)
                result = tir.select(total[i] > as_expr(0.0, "float32"), ratio, as_expr(0, work))
                return BufferStore(
                    out, convert(result, dtype), tuple(write_index(query.ndim, b, t0 + i, n, h))
                )

            return _loop("h5", width, store, "vectorized")

        body = tir_seq(
            _loop("i0", rows, init),
            _loop("st", ceil_div(keys, TILE_S), key_tile),
            _loop("i2", rows, finish),
        )
        for buffer in (psum, top, probs, dots, kt, acc, total, m):
            body = Allocate(buffer, body)
        return body

    nest = _loop("task", batch * heads * q_tiles, task_body, "parallel")
    buffers = tuple(t.buffer for t in inputs)
    form = AttentionForm(tuple(names), attrs.is_causal, attrs.scale, logit, large_negative)
    func = PrimFunc("dot_product_attention", (*buffers, out), nest)
    return func.with_attrs({FORM_ATTR: form.to_attr()})


def write_index(ndim: int, b: Dim, t: Dim, n: Dim, h: Dim) -> tuple[Dim, ...]:
    """The index of ``(b, t, n, h)`` in an operand of rank ``ndim`` (leading axes of
    size 1 missing)."""
    return (b, t, n, h)[4 - ndim :]


def read4(tensor, b: Dim, s_or_t: Dim, n: Dim, h: Dim) -> PrimExpr:
    """``tensor`` (query, key or value) read at ``(b, s_or_t, n, h)``."""
    return tensor[write_index(tensor.ndim, b, s_or_t, n, h)]


def masked_logit(
    by_name: Mapping[str, object],
    attrs,
    full: tuple[Dim, ...],
    scaled: PrimExpr,
    indices: tuple[Dim, ...],
    logit: str,
    large_negative: float,
) -> PrimExpr:
    """The logit at ``indices = (b, n, t, s)`` of ``full = (B, N, T, S)`` from the scaled
    product ``scaled``: plus the bias, ``large_negative`` where the mask or causality
    (``attrs.is_causal``: ``s <= t``) drops the key; operands by name."""
    value = scaled
    if "bias" in by_name:
        bias = by_name["bias"]
        value = value + convert(bias[broadcast_indices(bias.shape, full, indices)], logit)
    keep = None
    if "mask" in by_name:
        mask = by_name["mask"]
        keep = mask[broadcast_indices(mask.shape, full, indices)]
    if attrs.is_causal:
        t, s = indices[2], indices[3]
        causal = as_expr(s) <= as_expr(t)
        keep = causal if keep is None else keep & causal
    if keep is not None:
        value = tir.select(keep, value, as_expr(large_negative, logit))
    return value
