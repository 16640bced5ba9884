"""Scaled dot-product attention with ``jax.nn.dot_product_attention``'s semantics.

Layout ``(B, T, N, H)`` for the query and ``(B, S, K, H)`` for key and value (the
leading axes may be missing, as jax allows: an operand of rank < 4 gets leading size-1
axes). ``K`` key/value heads serve ``N`` query heads (grouped-query attention when
``K`` divides ``N``: query head ``n`` reads key/value head ``n // (N // K)``).

For each batch and head, ``softmax(scale * q @ k.T + bias, masked) @ v`` where the
logits are computed in ``promote(dtype, float32)``, masked-out logits become a large
negative number, the softmax runs in float32 and its probabilities are converted to
the key's dtype before the product with the value, exactly as jax does. The bias and
the boolean mask (True: attend) broadcast to ``(B, N, T, S)``; ``is_causal`` keeps
``s <= t``. The result has the query's shape and dtype.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes, tir
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ops.base import (
    InferContext,
    Op,
    info_text,
    nonzero_floordiv,
    register,
    require_equal,
    require_one_or,
    tensor_args,
)
from relaxjax.ops.flash_attention import flash_attention_kernel
from relaxjax.ops.kernel import (
    KernelDims,
    as_tensor_info,
    broadcast_indices,
    convert,
    index_dims,
    placeholders,
)
from relaxjax.ops.reduction import accumulator_dtype, nonempty_stage, when_nonempty
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir.expr import as_expr

Dim = arith.Dim


@dataclass(frozen=True, slots=True)
class AttentionAttrs:
    """Attributes of ``dot_product_attention``: the logit ``scale`` (None: ``1/sqrt(H)``),
    ``is_causal``, and whether the optional ``bias`` and ``mask`` operands follow
    ``query, key, value`` (in that order)."""

    scale: float | None = None
    is_causal: bool = False
    has_bias: bool = False
    has_mask: bool = False

    def __post_init__(self) -> None:
        if self.scale is not None:
            if isinstance(self.scale, bool) or not isinstance(self.scale, (int, float)):
                raise TypeError(f"AttentionAttrs.scale must be a float or None, got {self.scale!r}")
            object.__setattr__(self, "scale", float(self.scale))
        for name in ("is_causal", "has_bias", "has_mask"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(
                    f"AttentionAttrs.{name} must be a bool, got {getattr(self, name)!r}"
                )

    @property
    def num_inputs(self) -> int:
        """How many operands the op takes with these attributes."""
        return 3 + self.has_bias + self.has_mask


def as_4d(shape: Sequence[Dim]) -> tuple[Dim, ...]:
    """``shape`` with leading size-1 axes up to rank 4."""
    return (1,) * (4 - len(shape)) + tuple(shape)


def logits_dtype(dtype: str) -> str:
    """The dtype jax computes attention logits in: ``promote(dtype, float32)``."""
    return dtypes.promote(dtype, "float32")


def _operands(attrs: AttentionAttrs, infos: Sequence[TensorInfo]) -> dict[str, TensorInfo]:
    named = dict(zip(("query", "key", "value"), infos))
    rest = list(infos[3:])
    if attrs.has_bias:
        named["bias"] = rest.pop(0)
    if attrs.has_mask:
        named["mask"] = rest.pop(0)
    return named


def _check_dtypes(named: dict[str, TensorInfo]) -> None:
    key = named["key"].dtype
    for name in ("query", "value"):
        if named[name].dtype != key:
            raise TypeError(
                f"dot_product_attention: {name} dtype must equal the key dtype {key}, "
                f"got {named[name].dtype}"
            )
    if "mask" in named and named["mask"].dtype != "bool":
        raise TypeError(
            f"dot_product_attention: mask dtype must be bool, got {named['mask'].dtype}"
        )


@register
class DotProductAttention(Op):
    """``jax.nn.dot_product_attention(query, key, value, bias, mask, scale=, is_causal=)``."""

    name = "dot_product_attention"
    Attrs = AttentionAttrs
    pattern = "opaque"
    num_inputs = None

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        infos = tensor_args(self.name, args, attrs.num_inputs)
        named = _operands(attrs, infos)
        _check_dtypes(named)
        query = named["query"]
        for name, info in named.items():
            if info.ndim is not None and info.ndim > 4:
                ctx.fail(f"{name} must have rank <= 4, got shape {info_text(info)}")
        if any(info.shape is None for info in infos):
            return TensorInfo(dtype=query.dtype, ndim=query.ndim)
        self._require_shapes(ctx, named)
        return query

    def _require_shapes(self, ctx: InferContext, named: dict[str, TensorInfo]) -> None:
        batch, source, heads, width = as_4d(named["key"].shape)
        value = as_4d(named["value"].shape)
        text = ", ".join(f"{n} {info_text(i)}" for n, i in named.items())
        for axis, (k, v) in enumerate(zip((batch, source, heads, width), value)):
            require_equal(ctx, v, k, f"value shape must equal key shape, got {text} (axis {axis})")
        q_batch, target, q_heads, q_width = as_4d(named["query"].shape)
        require_equal(ctx, q_batch, batch, f"query and key batch sizes differ: {text}")
        require_equal(ctx, q_width, width, f"query and key head dims differ: {text}")
        heads_message = (
            f"{self.name}: the number of query heads {q_heads} must be a multiple of "
            f"the number of key/value heads {heads}: {text}"
        )
        ctx.require(Check("le", (1, heads), heads_message))
        if arith.compare(heads, "==", q_heads) is not True:
            ctx.require(Check("divides", (heads, q_heads), heads_message))
        full = (batch, q_heads, target, source)
        for name in ("bias", "mask"):
            if name in named:
                for axis, (dim, want) in enumerate(zip(as_4d(named[name].shape), full)):
                    message = (
                        f"{name} must broadcast to (B, N, T, S) = {tuple(map(str, full))}, "
                        f"got {text} (axis {axis} has size {dim}, expected 1 or {want})"
                    )
                    require_one_or(ctx, dim, want, message)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """The fused kernel of :mod:`relaxjax.ops.flash_attention` (no ``(T, S)`` tensor)."""
        names = ["query", "key", "value"]
        names += ["bias"] if attrs.has_bias else []
        names += ["mask"] if attrs.has_mask else []
        logit = logits_dtype(as_tensor_info(arg_infos[1]).dtype)
        return flash_attention_kernel(names, arg_infos, attrs, logit, _large_negative(logit))

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        attrs = AttentionAttrs() if attrs is None else attrs
        named = dict(zip(("query", "key", "value"), arrays[:3]))
        rest = list(arrays[3:])
        bias = rest.pop(0) if attrs.has_bias else None
        mask = rest.pop(0) if attrs.has_mask else None
        return attention_reference(
            np.asarray(named["query"]),
            np.asarray(named["key"]),
            np.asarray(named["value"]),
            bias=None if bias is None else np.asarray(bias),
            mask=None if mask is None else np.asarray(mask),
            scale=attrs.scale,
            is_causal=attrs.is_causal,
        )


def _trailing(tensor: te.Tensor, indices: Sequence[object]) -> PrimExpr:
    """``tensor`` read at the last ``tensor.ndim`` of four ``(B, ., ., .)`` indices."""
    return tensor[tuple(indices[4 - tensor.ndim :])]


def _large_negative(dtype: str) -> float:
    """The masked-out logit value jax uses: ``-0.7`` times the largest finite value of
    ``dtype`` (capped at float32's)."""
    finfo = np.finfo(dtypes.to_numpy(dtype))
    return -0.7 * min(float(finfo.max), float(np.finfo(np.float32).max))


def attention_kernel(
    names: Sequence[str], arg_infos: Sequence[StructInfo], attrs: AttentionAttrs
) -> PrimFunc:
    """Six stages: the scaled (biased) logits in ``promote(dtype, float32)``, the masked
    float32 logits, their row max, the row sum of exponentials, the probabilities in
    the key's dtype and their product with the value."""
    inputs = placeholders(KernelDims(), arg_infos, names)
    by_name = dict(zip(names, inputs))
    query, key, value = inputs[:3]
    dtype = key.dtype
    logit = logits_dtype(dtype)
    batch, target, heads, width = as_4d(query.shape)
    source, kv_heads = as_4d(key.shape)[1:3]
    groups = nonzero_floordiv(heads, kv_heads)  # infer requires 1 <= kv_heads
    full = (batch, heads, target, source)
    if attrs.scale is not None:
        scale = as_expr(attrs.scale, logit)
    elif isinstance(width, int):
        scale = as_expr(1.0 / math.sqrt(width) if width else 1.0, logit)  # 0: no elements
    else:
        scale = convert(1.0 / tir.sqrt(convert(as_expr(width), "float64")), logit)

    def kv_index(b, s, n, h) -> tuple:
        return (b, s, n // groups if groups != 1 else n, h)

    def scores(b, n, t, s):
        h = te.reduce_axis(width, "h")
        q = convert(_trailing(query, (b, t, n, h)), logit)
        k = convert(_trailing(key, kv_index(b, s, n, h)), logit)
        return te.sum(q * k, axis=h)

    raw = te.compute(full, scores, name="scores")

    def masked(*indices: object) -> PrimExpr:
        b, n, t, s = index_dims(indices)
        logits = when_nonempty(width, raw[indices], as_expr(0, logit)) * scale
        if "bias" in by_name:
            bias = by_name["bias"]
            logits = logits + convert(bias[broadcast_indices(bias.shape, full, indices)], logit)
        keep = None
        if "mask" in by_name:
            mask = by_name["mask"]
            keep = mask[broadcast_indices(mask.shape, full, indices)]
        if attrs.is_causal:
            causal = as_expr(s) <= as_expr(t)
            keep = causal if keep is None else keep & causal
        if keep is not None:
            logits = tir.select(keep, logits, as_expr(_large_negative(logit), logit))
        return convert(logits, "float32")

    logits = te.compute(full, masked, name="logits")
    rows = full[:3]

    def row_max(b, n, t):
        s = te.reduce_axis(source, "s")
        return te.max(logits[b, n, t, s], axis=s)

    peak = te.compute(rows, row_max, name="peak")

    def row_sum(b, n, t):
        s = te.reduce_axis(source, "s")
        return te.sum(tir.exp(logits[b, n, t, s] - peak[b, n, t]), axis=s)

    total = te.compute(rows, row_sum, name="total")

    def probability(b, n, t, s):
        return convert(tir.exp(logits[b, n, t, s] - peak[b, n, t]) / total[b, n, t], dtype)

    probs = te.compute(full, probability, name="probs")
    work = accumulator_dtype(dtype).name

    def weighted(*indices: object) -> PrimExpr:
        b, t, n, h = (0,) * (4 - query.ndim) + tuple(indices)
        s = te.reduce_axis(source, "s")
        p = convert(probs[b, n, t, s], work)
        v = convert(_trailing(value, kv_index(b, s, n, h)), work)
        return te.sum(p * v, axis=s)

    name = "dot_product_attention"
    empty = arith.compare(source, ">=", 1) is not True
    out = te.compute(query.shape, weighted, name=name if work == dtype and not empty else "acc")
    if work != dtype or empty:
        out = nonempty_stage(name, out, source, as_expr(0, work), dtype)
    return te.create_prim_func([*inputs, out], name=name)


def attention_reference(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    bias: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    scale: float | None = None,
    is_causal: bool = False,
) -> np.ndarray:
    """The numpy ground truth of :class:`DotProductAttention` (jax's algorithm)."""
    dtype = dtypes.canonical(key.dtype)
    q = query.reshape(as_4d(query.shape))
    k = key.reshape(as_4d(key.shape))
    v = value.reshape(as_4d(value.shape))
    batch, target, heads, width = q.shape
    if k.shape[1] == 0 or q.size == 0:  # no keys: an empty weighted sum
        return np.zeros(query.shape, dtypes.to_numpy(dtype))
    groups = heads // k.shape[2]
    compute = dtypes.to_numpy(logits_dtype(dtype))
    wide = np.float64
    k_heads = np.repeat(k.astype(wide), groups, axis=2)
    v_heads = np.repeat(v.astype(wide), groups, axis=2)
    logits = np.einsum("btnh,bsnh->bnts", q.astype(wide), k_heads).astype(compute)
    factor = 1.0 / math.sqrt(width) if scale is None else scale
    logits = (logits * np.asarray(factor).astype(compute)).astype(compute)
    if bias is not None:
        logits = (logits + bias.reshape(as_4d(bias.shape))).astype(compute)
    keep = np.ones(logits.shape, dtype=bool)
    if mask is not None:
        keep &= mask.reshape(as_4d(mask.shape)).astype(bool)
    if is_causal:
        keep &= np.tril(np.ones((target, k.shape[1]), dtype=bool))
    if mask is not None or is_causal:
        largest = min(float(np.finfo(compute).max), float(np.finfo(np.float32).max))
        logits = np.where(keep, logits, np.asarray(-0.7 * largest).astype(compute))
    shifted = logits.astype(np.float32)
    shifted = shifted - np.max(shifted, axis=-1, keepdims=True)
    weights = np.exp(shifted)
    probs = (weights / np.sum(weights, axis=-1, keepdims=True)).astype(dtypes.to_numpy(dtype))
    out = np.einsum("bnts,bsnh->btnh", probs.astype(wide), v_heads)
    return out.astype(dtypes.to_numpy(dtype)).reshape(query.shape)


__all__ = ["attention_kernel", "AttentionAttrs", "as_4d", "attention_reference", "logits_dtype"]
