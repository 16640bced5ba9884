"""``dot_product_attention``, the jax.nn-named wrapper of the attention op (re-exported by
:mod:`relaxjax.nn`).

>>> import relaxjax as relax, relaxjax.nn as rnn
>>> q = relax.Tensor(("b", "t", 8, 64), "float32")
>>> kv = relax.Tensor(("b", "s", 2, 64), "float32")
>>> relax.eval_shape(lambda q, k, v: rnn.dot_product_attention(q, k, v), q, kv, kv)
Tensor((b, t, 8, 64), "float32")
"""

from __future__ import annotations

from relaxjax.ops.attention import AttentionAttrs
from relaxjax.trace import emit

__all__ = ["dot_product_attention"]


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None, is_causal=False):
    """``jax.nn.dot_product_attention`` (the XLA implementation's semantics).

    ``query`` is ``(B, T, N, H)`` (or ``(T, N, H)``), ``key`` and ``value`` are
    ``(B, S, K, H)`` with ``K`` dividing ``N`` (grouped-query attention); ``bias`` is
    added to the logits and the boolean ``mask`` (True: attend) selects them, both
    broadcasting to ``(B, N, T, S)``; ``is_causal`` keeps key positions ``s <= t``.
    ``scale`` defaults to ``1 / sqrt(H)``. The result has the query's shape.
    """
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
    return emit("dot_product_attention", tuple(operands), attrs)
