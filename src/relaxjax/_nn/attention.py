"""``dot_product_attention``, the jax.nn-named wrapper of the attention op (re-exported by
:mod:`relaxjax.nn`).

jax's masking keywords compose into the op's boolean mask exactly as jax's XLA
implementation builds its combined mask: ``local_window_size=(left, right)`` keeps key
positions ``t - left <= s <= t + right``; ``query_seq_lengths`` and
``key_value_seq_lengths`` (int32, shape ``(B,)``) keep ``t < q_len[b]`` and
``s < kv_len[b]``, and query rows past ``q_len[b]`` of the result are zeroed. A row
with no key kept attends uniformly to every key, as in jax. ``return_residual=True``
also returns jax's logsumexp of the masked logits, recomputed from its definition by a
short composition of ops (einsum, masking, max, exp, sum, log).

>>> import relaxjax as relax, relaxjax.nn as rnn
>>> q = relax.Tensor(("b", "t", 8, 64), "float32")
>>> kv = relax.Tensor(("b", "s", 2, 64), "float32")
>>> relax.eval_shape(lambda q, k, v: rnn.dot_product_attention(q, k, v), q, kv, kv)
Tensor((b, t, 8, 64), "float32")
"""

from __future__ import annotations

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.errors import ShapeError
from relaxjax.ops.attention import AttentionAttrs, logits_dtype
from relaxjax.ops.base import nonzero_floordiv
from relaxjax.ops.creation import ArangeAttrs
from relaxjax.ops.elementwise import AstypeAttrs
from relaxjax.ops.linalg import EinsumAttrs
from relaxjax.ops.manipulate import (
    ExpandDimsAttrs,
    ReshapeAttrs,
    SqueezeAttrs,
    TransposeAttrs,
)
from relaxjax.ops.reduction import AccumulateAttrs, ReduceAttrs
from relaxjax.trace import Tracer, emit

__all__ = ["dot_product_attention"]

Dim = arith.Dim


def _shape(x: object) -> tuple[Dim, ...]:
    return tuple(x.shape) if isinstance(x, Tracer) else np.shape(x)


def _dtype(x: object) -> str:
    return x.dtype if isinstance(x, Tracer) else dtypes.canonical(np.asarray(x).dtype)


def _positions(length: Dim) -> object:
    """``arange(length)`` as an int64 tensor (``length`` may be symbolic)."""
    return emit("arange", (), ArangeAttrs(0, length, 1, dtypes.default_int()))


def _expand(x: object, axes: tuple[int, ...]) -> object:
    return emit("expand_dims", (x,), ExpandDimsAttrs(axes))


def _window(local_window_size: object) -> tuple[int, int] | None:
    """jax's ``local_window_size``: an int (symmetric) or a ``(left, right)`` pair."""
    if local_window_size is None:
        return None
    if isinstance(local_window_size, (int, np.integer)) and not isinstance(local_window_size, bool):
        return int(local_window_size), int(local_window_size)
    pair = tuple(local_window_size) if isinstance(local_window_size, (tuple, list)) else ()
    if len(pair) != 2 or not all(
        isinstance(w, (int, np.integer)) and not isinstance(w, bool) for w in pair
    ):
        raise TypeError(
            "dot_product_attention: local_window_size must be an int or a (left, right) "
            f"pair of ints, got {local_window_size!r}"
        )
    return int(pair[0]), int(pair[1])


def _window_mask(target: Dim, source: Dim, window: tuple[int, int]) -> object:
    """``(1, 1, T, S)``: ``t <= s + left`` and ``t >= s - right``."""
    left, right = window
    t = _expand(_positions(target), (1,))
    s = _expand(_positions(source), (0,))
    after_left = emit("less_equal", (t, emit("add", (s, left))))
    before_right = emit("greater_equal", (t, emit("subtract", (s, right))))
    return _expand(emit("logical_and", (after_left, before_right)), (0, 1))


def _seq_lengths(name: str, lengths: object, batch: Dim) -> object:
    """A ``(B,)`` int32 lengths operand, checked as jax checks it."""
    if not isinstance(lengths, Tracer):
        lengths = np.asarray(lengths)
    if _dtype(lengths) != "int32":
        raise TypeError(
            f"dot_product_attention: {name} dtype should be int32, got {_dtype(lengths)}"
        )
    shape = _shape(lengths)
    if len(shape) != 1:
        raise ShapeError(
            f"dot_product_attention: {name} should have shape (B,) = ({batch},), got shape {shape}"
        )
    if arith.compare(shape[0], "!=", batch) is True:
        raise ShapeError(
            f"dot_product_attention: {name} should have shape (B,) = ({batch},), got shape {shape}"
        )
    return lengths


def _below(lengths: object, length: Dim) -> object:
    """``(B, T)`` (or ``(B, S)``) bools ``position < lengths[b]``."""
    positions = _expand(_positions(length), (0,))
    return emit("less", (positions, _expand(lengths, (1,))))


def _padding_mask(target, source, q_lengths, kv_lengths) -> object:
    """``(B, 1, T, S)``: ``t < q_len[b]`` and ``s < kv_len[b]``."""
    mask = None
    if q_lengths is not None:
        mask = _expand(_below(q_lengths, target), (2,))  # (B, T, 1)
    if kv_lengths is not None:
        keep = _expand(_below(kv_lengths, source), (1,))  # (B, 1, S)
        mask = keep if mask is None else emit("logical_and", (mask, keep))
    return _expand(mask, (1,))


def _ensure_4d(mask: object) -> object:
    ndim = len(_shape(mask))
    return mask if ndim >= 4 else _expand(mask, tuple(range(4 - ndim)))


def _combined_mask(query, key, mask, window, q_lengths, kv_lengths) -> object:
    """The user's mask and-ed with the window and padding masks (None when none)."""
    q_shape, k_shape = _shape(query), _shape(key)
    target, source = q_shape[-3], k_shape[-3]
    parts = [] if mask is None else [mask]
    if window is not None:
        parts.append(_window_mask(target, source, window))
    if q_lengths is not None or kv_lengths is not None:
        parts.append(_padding_mask(target, source, q_lengths, kv_lengths))
    if not parts:
        return None
    combined = parts[0]
    for part in parts[1:]:
        combined = emit("logical_and", (_ensure_4d(combined), part))
    return combined


def _check_implementation(implementation: object) -> None:
    if implementation in (None, "xla"):
        return
    if implementation == "cudnn":
        raise ValueError(
            "dot_product_attention: implementation='cudnn' (cuDNN flash attention) is not "
            "available in relaxjax; use implementation=None or 'xla' (the same semantics)"
        )
    raise ValueError(
        f"dot_product_attention: unsupported implementation {implementation!r} "
        "(expected None or 'xla')"
    )


def dot_product_attention(
    query,
    key,
    value,
    bias=None,
    mask=None,
    *,
    scale=None,
    is_causal=False,
    query_seq_lengths=None,
    key_value_seq_lengths=None,
    local_window_size=None,
    implementation=None,
    return_residual=False,
):
    """``jax.nn.dot_product_attention`` (the XLA implementation's semantics).

    ``query`` is ``(B, T, N, H)`` (or ``(T, N, H)``), ``key`` and ``value`` are
    ``(B, S, K, H)`` with ``K`` dividing ``N`` (grouped-query attention); ``bias`` is
    added to the logits and the boolean ``mask`` (True: attend) selects them, both
    broadcasting to ``(B, N, T, S)``; ``is_causal`` keeps key positions ``s <= t``;
    ``local_window_size`` (an int or ``(left, right)``) keeps ``t - left <= s <= t +
    right``; ``query_seq_lengths``/``key_value_seq_lengths`` (int32, ``(B,)``) keep
    ``t < q_len[b]``/``s < kv_len[b]`` and zero the result's query rows past
    ``q_len[b]``. ``scale`` defaults to ``1 / sqrt(H)``. The result has the query's
    shape; with ``return_residual`` it is ``(result, residual)``, the residual being the
    logsumexp of the masked logits over the keys, of shape ``query.shape[:-1]``.
    ``implementation`` may be None or ``"xla"``.
    """
    _check_implementation(implementation)
    window = _window(local_window_size)
    batch = (1, 1, 1, *_shape(key))[-4]  # jax gives a rank-3 key a batch axis of 1
    q_lengths = kv_lengths = None
    if query_seq_lengths is not None:
        q_lengths = _seq_lengths("query_seq_lengths", query_seq_lengths, batch)
    if key_value_seq_lengths is not None:
        kv_lengths = _seq_lengths("key_value_seq_lengths", key_value_seq_lengths, batch)
    mask = _combined_mask(query, key, mask, window, q_lengths, kv_lengths)
    operands = [query, key, value]
    if bias is not None:
        operands.append(bias)
    if mask is not None:
        operands.append(mask)
    attrs = AttentionAttrs(
        scale=None if scale is None else float(scale),
        is_causal=bool(is_causal),
        has_bias=bias is not None,
        has_mask=mask is not None,
    )
    out = emit("dot_product_attention", tuple(operands), attrs)
    if q_lengths is not None:
        out = _zero_padded_queries(out, query, q_lengths)
    if not return_residual:
        return out
    return out, _residual(query, key, bias, mask, attrs)


def _zero_padded_queries(out: object, query: object, q_lengths: object) -> object:
    """``out`` times ``t < q_len[b]`` (as jax does after attending), ``(B, T, 1, 1)``."""
    keep = _expand(_below(q_lengths, _shape(query)[-3]), (2, 3))
    if len(_shape(query)) < 4:
        keep = emit("squeeze", (keep,), SqueezeAttrs((0,)))
    return emit("multiply", (out, emit("astype", (keep,), AstypeAttrs(_dtype(query)))))


# --------------------------------------------------------------------------- residual


def _astype(x: object, dtype: str) -> object:
    return x if _dtype(x) == dtype else emit("astype", (x,), AstypeAttrs(dtype))


def _as_4d(x: object) -> object:
    ndim = len(_shape(x))
    return x if ndim == 4 else _expand(x, tuple(range(4 - ndim)))


def _logits(query: object, key: object, dtype: str) -> object:
    """``(B, N, T, S)`` products of queries and keys in ``dtype``, query head ``n``
    meeting key head ``n // (N // K)``."""
    query, key = _astype(_as_4d(query), dtype), _astype(_as_4d(key), dtype)
    batch, target, heads, width = _shape(query)
    kv_heads = _shape(key)[2]
    if arith.compare(heads, "==", kv_heads) is True:
        return emit("einsum", (query, key), EinsumAttrs("btnh,bsnh->bnts"))
    groups = nonzero_floordiv(heads, kv_heads)  # the attention op requires 1 <= kv_heads
    grouped = emit("reshape", (query,), ReshapeAttrs((batch, target, kv_heads, groups, width)))
    logits = emit("einsum", (grouped, key), EinsumAttrs("btkgh,bskh->bkgts"))
    return emit("reshape", (logits,), ReshapeAttrs((batch, heads, target, _shape(key)[1])))


def _scale(width: Dim, scale: float | None, dtype: str) -> object:
    """The logit scale as a ``dtype`` scalar (``1 / sqrt(H)`` by default)."""
    if scale is not None:
        return np.asarray(scale).astype(dtypes.to_numpy(dtype))
    if isinstance(width, int):
        return np.asarray(1.0 / np.sqrt(width)).astype(dtypes.to_numpy(dtype))
    root = emit("sqrt", (emit("astype", (width,), AstypeAttrs("float64")),))
    return _astype(emit("divide", (1.0, root)), dtype)


def _large_negative(dtype: str) -> np.ndarray:
    """jax's masked-out logit: ``-0.7`` times the largest finite value of ``dtype``,
    capped at float32's."""
    largest = min(float(np.finfo(dtypes.to_numpy(dtype)).max), float(np.finfo(np.float32).max))
    return np.asarray(-0.7 * largest).astype(dtypes.to_numpy(dtype))


def _causal_mask(target: Dim, source: Dim) -> object:
    """``(1, 1, T, S)``: ``s <= t``."""
    t = _expand(_positions(target), (1,))
    s = _expand(_positions(source), (0,))
    return _expand(emit("less_equal", (s, t)), (0, 1))


def _masked_logits(query, key, bias, mask, attrs: AttentionAttrs) -> object:
    """jax's padded logits: scaled, biased, masked by the large negative number, as
    float32 ``(B, N, T, S)``."""
    dtype = logits_dtype(_dtype(key))
    logits = _logits(query, key, dtype)
    logits = emit("multiply", (logits, _scale(_shape(query)[-1], attrs.scale, dtype)))
    if bias is not None:
        logits = _astype(emit("add", (logits, bias)), dtype)
    keep = mask
    if attrs.is_causal:
        causal = _causal_mask(_shape(query)[-3], _shape(key)[-3])
        keep = causal if keep is None else emit("logical_and", (_ensure_4d(keep), causal))
    if keep is not None:
        logits = emit("where", (keep, logits, _large_negative(dtype)))
    return _astype(logits, "float32")


def _residual(query, key, bias, mask, attrs: AttentionAttrs) -> object:
    """jax's residual: ``logsumexp`` of the padded float32 logits over the keys, in the
    key's dtype, laid out as ``query.shape[:-1]``."""
    logits = _masked_logits(query, key, bias, mask, attrs)
    peak = emit("max", (logits,), ReduceAttrs((3,), True, -np.inf))
    finite = emit("less", (emit("abs", (peak,)), np.inf))
    peak = emit("where", (finite, peak, np.float32(0)))
    exps = emit("exp", (emit("subtract", (logits, peak)),))
    total = emit("sum", (exps,), AccumulateAttrs((3,), False))
    peak = emit("squeeze", (peak,), SqueezeAttrs((3,)))
    lse = _astype(emit("add", (emit("log", (total,)), peak)), _dtype(key))
    lse = emit("transpose", (lse,), TransposeAttrs((0, 2, 1)))  # (B, N, T) -> (B, T, N)
    return emit("reshape", (lse,), ReshapeAttrs(tuple(_shape(query)[:-1])))
