"""Attention written out by hand becomes the fused ``dot_product_attention`` op.

Within a dataflow block, the pattern a user writes for causal self-attention over
``(B, N, T, H)`` heads (or ``(N, T, H)``, or one head ``(T, H)``)::

    s = (q @ k.transpose(0, 1, 3, 2)) * scale          # or / scale, or no scale
    s = where(tril(ones((T, T), bool)), s, -inf)        # or where(triu(ones, 1), -inf, s)
    #   or a comparison of aranges: where(arange(T)[:, None] >= arange(T), s, -inf),
    #   where(arange(T)[:, None] < arange(T)[None, :], -inf, s), where(tril(ones) == 0,
    #   -inf, s) (nanoGPT's masked_fill), logical_not or astype of those, or
    #   an additive mask: s + (1 - tri(T)) * -1e10 (picoGPT)
    p = softmax(s, axis=-1)                             # or exp(s - max) / sum(exp(s - max))
    y = p @ v

becomes ``transpose(dot_product_attention(q', k', v', scale=scale, is_causal=True))``
with ``q', k', v'`` the ``(B, T, N, H)`` transposes (one head, as picoGPT writes each:
``(T, 1, H)``), so no ``(T, T)`` tensor is built (:mod:`relaxjax.ops.flash_attention`);
without a mask it is the non-causal op.
The transposes are copies fusion merges with the ones around them.

It applies to float32 and float16 operands (the op's softmax runs in float32: for
float64 it would lose precision, so float64 stays as written), when the logits,
probabilities and statistics of the pattern have no other use. Only masks proven
causal are recognised: with a general boolean mask a row whose keys are all masked
gives ``nan`` as written but the mean of the values in the op (jax's semantics), so
such programs stay as written. The masked value is ``-inf`` or a constant at or below
``-1e9`` (picoGPT writes ``-1e10``): ``exp`` of it minus the row's maximum is 0 in
float32 and float16 unless the logits themselves reach ``-1e9``, so the op (which drops
masked keys) gives the written result. The result equals the written program up to the
order of the float operations. Run it before :func:`~relaxjax.passes.dispatch_library` and
:func:`~relaxjax.passes.legalize`.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.dtypes import is_integer
from relaxjax.ir import (
    Binding,
    Call,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    IRModule,
    PrimValue,
    TensorInfo,
    Var,
)
from relaxjax.ir.builder import infer_call
from relaxjax.ops import get
from relaxjax.ops.attention import AttentionAttrs
from relaxjax.passes.legalize import is_op_call
from relaxjax.passes.walk import rebuild_function, used_vars, var_uses

__all__ = ["fuse_attention"]

_DTYPES = ("float32", "float16")


@dataclass(frozen=True, slots=True)
class _Match:
    """A recognised attention: operands in the written layout, and the intermediates."""

    query: Expr
    keys_t: Expr  # (..., H, S)
    value: Expr
    scale: float
    causal: bool
    inside: tuple[Var, ...]  # the pattern's intermediate variables


class _Block:
    """The op calls bound in one dataflow block and every variable's uses."""

    def __init__(self, bindings, uses: Counter):
        self.calls = {
            b.var: b.value for b in bindings if isinstance(b, Binding) and is_op_call(b.value)
        }
        self.uses = uses

    def call(self, expr: Expr, name: str) -> Call | None:
        value = self.calls.get(expr) if isinstance(expr, Var) else None
        return value if value is not None and value.op.name == name else None


def _last_axis(call: Call) -> bool:
    rank = call.args[0].info.ndim
    axes = getattr(call.attrs, "axis", None)
    if axes is None:
        axes = getattr(call.attrs, "axes", None)
    return axes is not None and tuple(a % rank for a in axes) == (rank - 1,)


def _softmax_input(block: _Block, probs: Expr) -> tuple[Expr, list[Var]] | None:
    """The logits ``s`` of ``softmax(s, -1)`` written as the op or by hand."""
    op = block.call(probs, "softmax")
    if op is not None and _last_axis(op):
        return op.args[0], [probs]
    divide = block.call(probs, "divide")
    if divide is None:
        return None
    exps, total = divide.args
    summed = block.call(total, "sum")
    exp = block.call(exps, "exp")
    if summed is None or exp is None or summed.args[0] is not exps or not _last_axis(summed):
        return None
    if not summed.attrs.keepdims or summed.attrs.dtype is not None:
        return None
    shifted = block.call(exp.args[0], "subtract")
    if shifted is None:
        return None
    logits, peak = shifted.args
    top = block.call(peak, "max")
    if top is None or top.args[0] is not logits or not _last_axis(top) or not top.attrs.keepdims:
        return None
    return logits, [probs, exps, total, exp.args[0], peak]


def _constant(expr: Expr) -> float | None:
    if isinstance(expr, PrimValue) and isinstance(expr.value, (int, float)):
        return float(expr.value)
    return None


def _ones(block: _Block, expr: Expr, size: arith.Dim) -> bool:
    ones = block.call(expr, "ones")
    return (
        ones is not None
        and len(ones.attrs.shape) == 2
        and all(arith.prove_equal(d, size) for d in ones.attrs.shape)
    )


#: A constant at or below this masks a logit as ``-inf`` does (see the module doc).
_MASKED = -1e9
#: Dtypes of an additive mask ``mask * c`` that hold such a ``c`` as a finite number.
_FINITE_MASK_DTYPES = ("float32", "float64")

#: ``compare(a, b)`` of a row index ``i`` and a column index ``j``: the (a, b) order
#: for which the comparison is true exactly on the kept entries ``j <= i`` ("keep") or
#: exactly on the dropped ones ``j > i`` ("drop").
_COMPARISONS = {
    "greater_equal": ((0, 1), True),
    "less_equal": ((1, 0), True),
    "less": ((0, 1), False),
    "greater": ((1, 0), False),
}


def _masked_value(expr: Expr) -> bool:
    value = _constant(expr)
    return value is not None and value <= _MASKED


def _plus_zero(block: _Block, expr: Expr) -> Expr:
    """``x`` for ``x + 0`` (``tri``'s diagonal offset 0), else ``expr``."""
    call = block.call(expr, "add")
    if call is not None:
        for x, y in (call.args, call.args[::-1]):
            if _constant(y) == 0:
                return x
    return expr


def _grid_axis(block: _Block, expr: Expr, size: arith.Dim) -> int | None:
    """0 when ``expr`` is the row index ``arange(size)[:, None]`` of a (size, size) grid,
    1 when it is the column index ``arange(size)[None, :]`` (or the 1-D arange, which
    broadcasts as one); None otherwise."""
    same = arith.prove_equal
    shape = expr.info.shape if isinstance(expr.info, TensorInfo) else None
    source = _plus_zero(block, expr)
    for name in ("expand_dims", "reshape"):
        call = block.call(source, name)
        if call is not None:
            source = _plus_zero(block, call.args[0])
    arange = block.call(source, "arange")
    if arange is None or shape is None or not is_integer(arange.info.dtype):
        return None
    attrs = arange.attrs
    if not (isinstance(attrs.start, int) and attrs.start == 0 and attrs.step == 1):
        return None
    if len(arange.info.shape) != 1 or not same(arange.info.shape[0], size):
        return None
    if len(shape) == 1:
        return 1
    if len(shape) != 2 or (same(shape[0], 1) and same(shape[1], 1)):
        return None  # not a grid index, or a 1 x 1 one whose axis is ambiguous
    if same(shape[0], size) and same(shape[1], 1):
        return 0
    return 1 if same(shape[0], 1) and same(shape[1], size) else None


def _compared_aranges(block: _Block, condition: Expr, size: arith.Dim) -> bool | None:
    """True when ``condition`` is true exactly on the kept entries of a causal mask
    (``arange(size)[:, None] >= arange(size)[None, :]``), False when exactly on the
    dropped ones (``... < ...``), None when it is neither."""
    for name, (order, keeps) in _COMPARISONS.items():
        call = block.call(condition, name)
        if call is None:
            continue
        axes = tuple(_grid_axis(block, arg, size) for arg in call.args)
        return keeps if axes == order else None
    return None


def _keeps(block: _Block, mask: Expr, size: arith.Dim) -> bool | None:
    """True when ``mask`` (bool, or 0/1 numbers) is true exactly on the kept entries
    ``j <= i`` of a causal (size, size) mask, False when exactly on the dropped ones,
    None when it is neither: ``tril(ones)``, ``triu(ones, 1)``, comparisons of aranges
    (``tri`` is one), and their ``astype``, ``1 - mask``, ``logical_not``, ``mask == 0``
    (nanoGPT's ``masked_fill(tril(ones) == 0, -inf)``) and ``mask != 0``."""
    for triangle, k, keeps in (("tril", 0, True), ("triu", 1, False)):
        call = block.call(mask, triangle)
        if call is not None:
            return keeps if call.attrs.k == k and _ones(block, call.args[0], size) else None
    cast = block.call(mask, "astype")
    if cast is not None:
        return _keeps(block, cast.args[0], size)
    negated = _negated(block, mask)
    if negated is not None:
        inner = _keeps(block, negated, size)
        return None if inner is None else not inner
    for name, keeps in (("not_equal", True), ("equal", False)):  # mask != 0, mask == 0
        call = block.call(mask, name)
        if call is not None:
            for other, zero in (call.args, call.args[::-1]):
                if _constant(zero) == 0:
                    inner = _keeps(block, other, size)
                    return None if inner is None else inner == keeps
            return None
    return _compared_aranges(block, mask, size)


def _negated(block: _Block, mask: Expr) -> Expr | None:
    """``m`` for ``1 - m`` (of 0/1 numbers) or ``logical_not(m)``, else None."""
    flipped = block.call(mask, "subtract")
    if flipped is not None and _constant(flipped.args[0]) == 1:
        return flipped.args[1]
    negation = block.call(mask, "logical_not")
    return negation.args[0] if negation is not None else None


def _causal_mask(block: _Block, where: Call, size: arith.Dim) -> tuple[Expr, bool] | None:
    """``(logits, True)`` for ``where(mask, s, c)``/``where(not mask, c, s)`` with a
    causal ``mask`` (:func:`_keeps`) and ``c`` ``-inf`` or at or below ``_MASKED``."""
    condition, a, b = where.args
    keeps = _keeps(block, condition, size)
    if keeps is None:
        return None
    kept, dropped = (a, b) if keeps else (b, a)
    return (kept, True) if _masked_value(dropped) else None


def _additive_mask(block: _Block, total: Call, size: arith.Dim) -> Expr | None:
    """``s`` for ``s + mask * c`` (either order), where ``mask`` is 1 exactly on the
    dropped entries of a causal mask and ``c`` at or below ``_MASKED``: picoGPT's
    ``s + (1 - tri(n)) * -1e10``."""
    for logits, mask in (total.args, total.args[::-1]):
        scaled = block.call(mask, "multiply")
        if scaled is None:
            continue
        if scaled.info.dtype not in _FINITE_MASK_DTYPES:
            continue  # -1e10 rounds to -inf there, and 0 * -inf is nan as written
        for indicator, factor in (scaled.args, scaled.args[::-1]):
            value = _constant(factor)
            if value is None or not math.isfinite(value) or value > _MASKED:
                continue
            if _keeps(block, indicator, size) is False:
                return logits
    return None


def _same_shape(a: Expr, b: Expr) -> bool:
    sa, sb = a.info.shape, b.info.shape
    return len(sa) == len(sb) and all(arith.prove_equal(x, y) for x, y in zip(sa, sb))


def _scaled(block: _Block, logits: Expr) -> tuple[Expr, float, list[Var]]:
    for name in ("multiply", "divide"):
        call = block.call(logits, name)
        if call is None:
            continue
        x, y = call.args
        factor = _constant(y)
        if factor is None and name == "multiply":
            x, y = y, x
            factor = _constant(y)
        if factor is not None and factor != 0:
            return x, (factor if name == "multiply" else 1.0 / factor), [logits]
    return logits, 1.0, []


def _match(block: _Block, product: Call) -> _Match | None:
    probs, value = product.args
    found = _softmax_input(block, probs)
    if found is None:
        return None
    logits, inside = found
    causal = False
    size = logits.info.shape[-1] if logits.info.shape else None
    where = block.call(logits, "where")
    total = block.call(logits, "add")
    if where is not None or total is not None:
        if where is not None:
            masked = _causal_mask(block, where, size) if size is not None else None
            unmasked = masked[0] if masked is not None else None
        else:
            unmasked = _additive_mask(block, total, size) if size is not None else None
        if unmasked is None or not _same_shape(unmasked, logits):
            return None  # a mask that is not causal, or one broadcasting the logits
        inside.append(logits)
        logits, causal = unmasked, True
    scores, scale, scaled = _scaled(block, logits)
    inside += scaled
    matmul = block.call(scores, "matmul")
    if matmul is None:
        return None
    inside.append(scores)
    query, keys_t = matmul.args
    match = _Match(query, keys_t, value, scale, causal, tuple(inside))
    return match if _operands_fit(match) and _private(block, match, product) else None


def _operands_fit(match: _Match) -> bool:
    infos = [e.info for e in (match.query, match.keys_t, match.value)]
    if not all(isinstance(i, TensorInfo) and i.shape is not None for i in infos):
        return False
    query, keys_t, value = (i.shape for i in infos)
    if len({len(query), len(keys_t), len(value)}) != 1 or len(query) not in (2, 3, 4):
        return False
    if len({i.dtype for i in infos}) != 1 or infos[0].dtype not in _DTYPES:
        return False
    same = arith.prove_equal
    lead = len(query) - 2
    if not all(same(a, b) and same(a, c) for a, b, c in zip(query[:lead], keys_t, value)):
        return False  # heads and batch equal (no broadcasting between them)
    width, source = keys_t[-2:]
    return same(query[-1], width) and same(value[-2], source) and same(value[-1], width)


def _private(block: _Block, match: _Match, product: Call) -> bool:
    """Every intermediate is used only inside the pattern."""
    inside: Counter = Counter(used_vars(product))
    for var in match.inside:
        inside.update(used_vars(block.calls[var]))
    return all(block.uses[var] == inside[var] for var in match.inside)


def _axes(rank: int, keys: bool) -> tuple[int, ...]:
    """``(B, N, T, H) -> (B, T, N, H)``; the transposed keys ``(B, N, H, S) -> (B, S, N, H)``
    (rank 3: without ``B``)."""
    if rank == 4:
        return (0, 3, 1, 2) if keys else (0, 2, 1, 3)
    return (2, 0, 1) if keys else (1, 0, 2)


class _Emitter:
    """New bindings (op calls on fresh dataflow variables), in order."""

    def __init__(self, location):
        self.bindings: list[Binding] = []
        self.location = location

    def call(self, name: str, args: tuple[Expr, ...], attrs, checks=()) -> tuple[Call, Var]:
        op = get(name)
        info, own = infer_call(op, args, attrs)
        call = Call(op, args, attrs, info, (*own, *checks))
        var = DataflowVar(f"attention_{name}", info)
        return call, var

    def bind(self, name: str, args: tuple[Expr, ...], attrs, checks=()) -> Var:
        call, var = self.call(name, args, attrs, checks)
        self.bindings.append(Binding(var, call, self.location))
        return var


def _rewrite(block: _Block, binding: Binding, match: _Match) -> list[Binding]:
    """The bindings replacing the pattern's last one; the op call keeps the run-time
    checks of the calls it replaces (a written ``max`` over no keys still raises)."""
    emit = _Emitter(binding.location)
    rank = len(match.query.info.shape)
    transpose = get("transpose").Attrs
    checks = [c for var in (binding.var, *match.inside) for c in block.calls[var].checks]
    if rank == 2:  # one head: (T, H) as the op's (T, 1, H); the keys (H, S) as (1, H, S)
        expand = get("expand_dims").Attrs
        query = emit.bind("expand_dims", (match.query,), expand((1,)))
        keys_t = emit.bind("expand_dims", (match.keys_t,), expand((0,)))
        keys = emit.bind("transpose", (keys_t,), transpose(_axes(3, True)))
        value = emit.bind("expand_dims", (match.value,), expand((1,)))
    else:
        query = emit.bind("transpose", (match.query,), transpose(_axes(rank, False)))
        keys = emit.bind("transpose", (match.keys_t,), transpose(_axes(rank, True)))
        value = emit.bind("transpose", (match.value,), transpose(_axes(rank, False)))
    attrs = AttentionAttrs(scale=match.scale, is_causal=match.causal)
    out = emit.bind("dot_product_attention", (query, keys, value), attrs, tuple(checks))
    if rank == 2:
        reshape = get("reshape").Attrs
        back, _ = emit.call("reshape", (out,), reshape(tuple(match.query.info.shape)))
    else:
        back, _ = emit.call("transpose", (out,), transpose(_axes(rank, False)))
    return [*emit.bindings, Binding(binding.var, back, binding.location)]


def _rewrite_function(function: Function) -> Function:
    uses = var_uses(function)
    blocks, changed = [], False
    for block in function.body.blocks:
        bindings = list(block.bindings)
        if isinstance(block, DataflowBlock):
            calls = _Block(bindings, uses)
            replaced: dict[Var, list[Binding]] = {}
            dropped: set[Var] = set()
            for binding in bindings:
                if isinstance(binding, Binding) and calls.call(binding.var, "matmul") is not None:
                    match = _match(calls, binding.value)
                    if match is not None and not dropped & set(match.inside):
                        replaced[binding.var] = _rewrite(calls, binding, match)
                        dropped |= set(match.inside)
            if replaced:
                changed = True
                bindings = [
                    new
                    for b in bindings
                    if b.var not in dropped
                    for new in replaced.get(b.var, [b])
                ]
        blocks.append(bindings)
    return rebuild_function(function, blocks) if changed else function


def fuse_attention(mod: IRModule) -> IRModule:
    """``mod`` with hand-written attention replaced by the fused op (see the module doc);
    the old intermediates are left for :func:`~relaxjax.passes.eliminate_dead_code`."""
    result = mod
    for name, function in mod.graph_functions().items():
        rewritten = _rewrite_function(function)
        if rewritten is not function:
            result = result.with_function(name, rewritten)
    return result
