"""Linear algebra: ``matmul``, ``dot`` and ``einsum``, with jax.numpy semantics.

``matmul`` contracts the last axis of ``a`` with the second-to-last of ``b`` (the
only axis of a 1-D operand, which is then dropped) and broadcasts the leading batch
axes. ``dot`` contracts the last axis of ``a`` with the second-to-last axis of ``b``
(its only axis when 1-D) and keeps every other axis of both; a 0-d operand scales.
``einsum`` takes numpy subscripts (with ``...`` and the implicit output form) and,
like jax, lets a size-1 axis broadcast against the other occurrences of its label.

Dtypes promote as in jax.numpy; bool products are logical (``any(a and b)``) and
integer products wrap in the result dtype. A contraction whose sizes cannot be
proven equal is checked at run time; one that is provably unequal, e.g.
``(3, k) @ (k + 1, 5)``, raises :class:`~relaxjax.errors.ShapeError` at trace time.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.errors import ShapeError
from relaxjax.ir import Check, StructInfo, TensorInfo
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    broadcast_result,
    broadcast_shapes,
    info_text,
    num_elements,
    promote_weak,
    register,
    require_equal,
    tensor_args,
    value_type,
)
from relaxjax.ops.kernel import KernelDims, convert, placeholders
from relaxjax.ops.reduction import accumulator_dtype, nonempty_stage
from relaxjax.tir import PrimExpr, PrimFunc, te
from relaxjax.tir.expr import as_expr

Dim = arith.Dim

ELLIPSIS = "."  # one character standing for "..." inside parsed terms


def _promoted_inputs(arrays: Sequence[object]) -> tuple[list[np.ndarray], str]:
    """The reference inputs converted to their accumulation dtype, and the result dtype."""
    out = dtypes.result_type(*(value_type(a) for a in arrays))
    acc = accumulator_dtype(out)
    return [np.asarray(a).astype(acc) for a in arrays], out


def _finish(result: np.ndarray, out: str) -> np.ndarray:
    if dtypes.is_bool(out):
        return np.asarray(result != 0)
    return np.asarray(result).astype(dtypes.to_numpy(out))


def _shapes_text(*infos: TensorInfo) -> str:
    return ", ".join(info_text(i) for i in infos)


# --------------------------------------------------------------------------- matmul


@register
class Matmul(Op):
    """``jnp.matmul`` / ``a @ b``: batched matrix products with broadcast batch axes."""

    name = "matmul"
    pattern = "out_fusable"
    num_inputs = 2

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        a, b = tensor_args(self.name, args, 2)
        dtype, weak = promote_weak(self.name, args)
        for position, info in enumerate((a, b)):
            if info.ndim == 0:
                ctx.fail(f"operand {position} must have rank >= 1, got shape {info_text(info)}")
        if a.ndim is None or b.ndim is None:
            return TensorInfo(dtype=dtype, weak=weak)
        batch_rank = max(a.ndim - 2, b.ndim - 2, 0)
        rows = () if a.ndim == 1 else (None,)
        cols = () if b.ndim == 1 else (None,)
        out_ndim = batch_rank + len(rows) + len(cols)
        if a.shape is None or b.shape is None:
            return TensorInfo(dtype=dtype, ndim=out_ndim, weak=weak)
        k_a = a.shape[-1]
        k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
        require_equal(
            ctx,
            k_a,
            k_b,
            f"contraction dims must match: {info_text(a)} @ {info_text(b)} "
            f"contracts {k_a} with {k_b}",
        )
        batch = broadcast_shapes(ctx, [a.shape[:-2], b.shape[:-2]])
        if batch is None:
            return TensorInfo(dtype=dtype, ndim=out_ndim, weak=weak)
        rows = () if a.ndim == 1 else (a.shape[-2],)
        cols = () if b.ndim == 1 else (b.shape[-1],)
        return TensorInfo(batch + rows + cols, dtype, weak=weak)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        (a, b), out = _promoted_inputs(arrays)
        return _finish(np.matmul(a, b), out)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[..., i, j] = sum_k a[..., i, k] * b[..., k, j]`` (batch axes broadcast)."""
        return _lower_contraction(self.name, arg_infos, out_info, matmul_subscripts)


# --------------------------------------------------------------------------- dot


@register
class Dot(Op):
    """``jnp.dot``: sum over the last axis of ``a`` and the second-to-last of ``b``."""

    name = "dot"
    pattern = "out_fusable"
    num_inputs = 2

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        a, b = tensor_args(self.name, args, 2)
        dtype, weak = promote_weak(self.name, args)
        if a.ndim == 0 or b.ndim == 0:
            other = b if a.ndim == 0 else a
            return TensorInfo(other.shape, dtype, other.ndim, weak=weak)
        if a.ndim is None or b.ndim is None:
            return TensorInfo(dtype=dtype, weak=weak)
        out_ndim = a.ndim - 1 + max(b.ndim - 1, 0)
        if a.shape is None or b.shape is None:
            return TensorInfo(dtype=dtype, ndim=out_ndim, weak=weak)
        k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
        require_equal(
            ctx,
            a.shape[-1],
            k_b,
            f"contraction dims must match: dot of {info_text(a)} and {info_text(b)} "
            f"contracts {a.shape[-1]} with {k_b}",
        )
        tail = () if b.ndim == 1 else b.shape[:-2] + b.shape[-1:]
        return TensorInfo(a.shape[:-1] + tail, dtype, weak=weak)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        (a, b), out = _promoted_inputs(arrays)
        return _finish(np.dot(a, b), out)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """``out[a..., b..., j] = sum_k a[a..., k] * b[b..., k, j]``."""
        return _lower_contraction(self.name, arg_infos, out_info, dot_subscripts)


# --------------------------------------------------------------------------- einsum


@dataclass(frozen=True, slots=True)
class EinsumSpec:
    """Parsed einsum subscripts: one term per operand and the output term; each term is
    a string of single-letter labels where ``"."`` stands for the ellipsis."""

    inputs: tuple[str, ...]
    output: str

    @property
    def text(self) -> str:
        """The explicit subscripts, e.g. ``"...ij,jk->...ik"``."""
        terms = ",".join(t.replace(ELLIPSIS, "...") for t in self.inputs)
        return f"{terms}->{self.output.replace(ELLIPSIS, '...')}"


def _parse_term(term: str, subscripts: str) -> str:
    if term.count("...") > 1:
        raise ValueError(f"einsum: more than one ellipsis in term {term!r} of {subscripts!r}")
    parsed = term.replace("...", ELLIPSIS)
    for char in parsed:
        if char != ELLIPSIS and char not in string.ascii_letters:
            raise ValueError(
                f"einsum: invalid character {char!r} in subscripts {subscripts!r} "
                "(expected letters, ',', '->' and '...')"
            )
    return parsed


def parse_subscripts(subscripts: str) -> EinsumSpec:
    """Parse numpy einsum subscripts; the implicit form gets numpy's output term (the
    ellipsis, then the labels used exactly once, sorted)."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum subscripts must be a str, got {subscripts!r}")
    text = subscripts.replace(" ", "")
    if text.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} contain '->' more than once")
    lhs, arrow, rhs = text.partition("->")
    inputs = tuple(_parse_term(t, subscripts) for t in lhs.split(","))
    labels = "".join(inputs).replace(ELLIPSIS, "")
    if not arrow:
        once = sorted(c for c in set(labels) if labels.count(c) == 1)
        prefix = ELLIPSIS if any(ELLIPSIS in t for t in inputs) else ""
        return EinsumSpec(inputs, prefix + "".join(once))
    output = _parse_term(rhs, subscripts)
    for char in output:
        if output.count(char) > 1:
            raise ValueError(f"einsum: output label {char!r} appears more than once in {text!r}")
        if char != ELLIPSIS and char not in labels:
            raise ValueError(
                f"einsum: output label {char!r} does not appear in the inputs of {text!r}"
            )
    if ELLIPSIS in output and not any(ELLIPSIS in t for t in inputs):
        raise ValueError(f"einsum: output has '...' but no input does in {text!r}")
    return EinsumSpec(inputs, output)


@dataclass(frozen=True, slots=True)
class EinsumAttrs:
    """Attributes of ``einsum``: the subscripts, stored in explicit canonical form."""

    subscripts: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "subscripts", parse_subscripts(self.subscripts).text)

    @property
    def spec(self) -> EinsumSpec:
        """The parsed subscripts."""
        return parse_subscripts(self.subscripts)


def _ellipsis_rank(term: str, ndim: int, position: int, spec: EinsumSpec) -> int:
    """The number of axes the ellipsis of ``term`` covers in an operand of rank ``ndim``."""
    letters = len(term.replace(ELLIPSIS, ""))
    if ELLIPSIS in term and ndim >= letters:
        return ndim - letters
    if ELLIPSIS not in term and ndim == letters:
        return 0
    raise ShapeError(
        f"einsum: term {term.replace(ELLIPSIS, '...')!r} of {spec.text!r} does not match "
        f"operand {position} of rank {ndim}"
    )


def merge_sizes(ctx: InferContext, sizes: Sequence[Dim], what: str) -> Dim | None:
    """The common size of several occurrences that may each be 1 (broadcast) or the size;
    unproven pairs become run-time ``broadcast`` checks. None when not provable."""
    for i, size in enumerate(sizes):
        for earlier in sizes[:i]:
            message = f"{ctx.op_name}: {what} has incompatible sizes {earlier} and {size}"
            ctx.require(Check("broadcast", (earlier, size), message))
    return broadcast_result(sizes)


def _label_sizes(
    ctx: InferContext, spec: EinsumSpec, infos: Sequence[TensorInfo]
) -> dict[str, Dim | None]:
    """The size of every label: a label repeated within one operand (a diagonal) needs
    equal sizes there, as in numpy; across operands a size of 1 broadcasts, as in jax."""
    text = f"{spec.text!r} on {_shapes_text(*infos)}"
    occurrences: dict[str, list[Dim]] = {}
    for position, (term, info) in enumerate(zip(spec.inputs, infos)):
        letters = term.replace(ELLIPSIS, "")
        start = term.index(ELLIPSIS) if ELLIPSIS in term else len(term)
        skip = info.ndim - len(letters)
        dims = info.shape[:start] + info.shape[start + skip :]
        first: dict[str, Dim] = {}
        for label, dim in zip(letters, dims):
            if label in first:
                message = (
                    f"label {label!r} of {text} repeats in operand {position} "
                    f"with sizes {first[label]} and {dim}"
                )
                require_equal(ctx, dim, first[label], message)
            else:
                first[label] = dim
                occurrences.setdefault(label, []).append(dim)
    return {
        label: merge_sizes(ctx, dims, f"label {label!r} of {text}")
        for label, dims in occurrences.items()
    }


def _ellipsis_shapes(spec: EinsumSpec, infos: Sequence[TensorInfo]) -> list[tuple[Dim, ...]]:
    shapes = []
    for term, info in zip(spec.inputs, infos):
        if ELLIPSIS in term:
            start = term.index(ELLIPSIS)
            shapes.append(info.shape[start : start + info.ndim - len(term) + 1])
    return shapes


@register
class Einsum(Op):
    """``jnp.einsum``: a generalised contraction described by subscripts."""

    name = "einsum"
    Attrs = EinsumAttrs
    pattern = "out_fusable"
    num_inputs = None

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        spec = attrs.spec
        infos = tensor_args(self.name, args)
        if len(infos) != len(spec.inputs):
            raise TypeError(
                f"einsum: subscripts {spec.text!r} name {len(spec.inputs)} operand(s), "
                f"got {len(infos)}"
            )
        dtype, weak = promote_weak(self.name, args)
        ell_ranks = [
            _ellipsis_rank(term, info.ndim, position, spec)
            for position, (term, info) in enumerate(zip(spec.inputs, infos))
            if info.ndim is not None
        ]
        out_ndim: int | None = len(spec.output.replace(ELLIPSIS, ""))
        if ELLIPSIS in spec.output:
            all_known = len(ell_ranks) == len(infos)
            out_ndim = out_ndim + max(ell_ranks, default=0) if all_known else None
        if any(i.shape is None for i in infos):
            return TensorInfo(dtype=dtype, ndim=out_ndim, weak=weak)
        sizes = _label_sizes(ctx, spec, infos)
        ellipsis = broadcast_shapes(ctx, _ellipsis_shapes(spec, infos))
        shape: list[Dim | None] = []
        for label in spec.output:
            if label == ELLIPSIS:
                shape.extend(ellipsis if ellipsis is not None else [None])
            else:
                shape.append(sizes[label])
        if any(d is None for d in shape):
            return TensorInfo(dtype=dtype, ndim=out_ndim, weak=weak)
        return TensorInfo(tuple(shape), dtype, weak=weak)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        """One stage: the output labels are loops, the other labels are summed."""
        return _lower_contraction(self.name, arg_infos, out_info, lambda ranks: attrs.subscripts)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        spec = attrs.spec
        inputs, out = _promoted_inputs(arrays)
        explicit, operands = _explicit_operands(spec, inputs)
        return _finish(np.einsum(explicit, *operands), out)


def _explicit_operands(
    spec: EinsumSpec, arrays: Sequence[np.ndarray]
) -> tuple[str, list[np.ndarray]]:
    """Subscripts without ellipsis (spare letters stand for its axes) and the operands
    broadcast so that every occurrence of a label has the label's full size."""
    used = set("".join(spec.inputs) + spec.output)
    spare = [c for c in string.ascii_letters if c not in used]
    ell_rank = max(
        (a.ndim - len(t) + 1 for t, a in zip(spec.inputs, arrays) if ELLIPSIS in t), default=0
    )
    ell_letters = "".join(spare[:ell_rank])
    terms = []
    for term, array in zip(spec.inputs, arrays):
        if ELLIPSIS in term:
            rank = array.ndim - len(term) + 1
            term = term.replace(ELLIPSIS, ell_letters[ell_rank - rank :])
        terms.append(term)
    size: dict[str, int] = {}
    for term, array in zip(terms, arrays):
        for label, dim in zip(term, array.shape):
            if dim != 1:
                size[label] = dim
            else:
                size.setdefault(label, 1)
    operands = [
        np.broadcast_to(a, tuple(size[label] for label in term)) for term, a in zip(terms, arrays)
    ]
    output = spec.output.replace(ELLIPSIS, ell_letters)
    return ",".join(terms) + "->" + output, operands


# --------------------------------------------------------------------------- kernels


def common_size(sizes: Sequence[Dim]) -> Dim:
    """The size of a label whose occurrences are each 1 or the size (checked at run time):
    a provable one, else ``a * b // max(min(a, b), 1)`` folded over the occurrences
    (exact for any compatible pair, 0 included)."""
    provable = broadcast_result(sizes)
    if provable is not None:
        return provable
    size: Dim = 1
    for dim in sizes:
        size = arith.floordiv(size * dim, arith.max_(arith.min_(size, dim), 1))
    return size


def _explicit_terms(spec: EinsumSpec, ranks: Sequence[int]) -> tuple[list[str], str]:
    """The terms with each ellipsis spelled out in spare letters (right-aligned)."""
    used = set("".join(spec.inputs) + spec.output)
    spare = [c for c in string.ascii_letters if c not in used]
    ell_ranks = [r - len(t) + 1 for t, r in zip(spec.inputs, ranks) if ELLIPSIS in t]
    ell_rank = max(ell_ranks, default=0)
    letters = "".join(spare[:ell_rank])
    terms = [
        t.replace(ELLIPSIS, letters[ell_rank - (r - len(t) + 1) :]) if ELLIPSIS in t else t
        for t, r in zip(spec.inputs, ranks)
    ]
    return terms, spec.output.replace(ELLIPSIS, letters)


def _operand_index(dim: Dim, size: Dim, index: Dim) -> Dim:
    """The index of a label's iterator into an axis of ``dim`` that broadcasts to ``size``."""
    if arith.compare(dim, "==", size) is True:
        return index
    if arith.compare(dim, "==", 1) is True:
        return 0
    return arith.min_(index, dim - 1)  # right for dim == size and for dim == 1


def contraction_kernel(
    name: str, spec: EinsumSpec, inputs: Sequence[te.Tensor], out_dtype: str
) -> PrimFunc:
    """The kernel ``[*inputs, out]`` of an einsum: the output labels are the spatial axes,
    the others are summed (in the accumulator dtype of ``out_dtype``)."""
    terms, output = _explicit_terms(spec, [t.ndim for t in inputs])
    occurrences: dict[str, list[Dim]] = {}
    for term, tensor in zip(terms, inputs):
        for label, dim in zip(term, tensor.shape):
            occurrences.setdefault(label, []).append(dim)
    sizes = {label: common_size(dims) for label, dims in occurrences.items()}
    contracted = [label for label in occurrences if label not in output]
    work = accumulator_dtype(out_dtype).name

    def product(iterators: dict[str, Dim]) -> PrimExpr:
        value: PrimExpr | None = None
        for term, tensor in zip(terms, inputs):
            index = tuple(
                _operand_index(dim, sizes[label], iterators[label])
                for label, dim in zip(term, tensor.shape)
            )
            load = convert(tensor[index], work)
            value = load if value is None else value * load
        return value if value is not None else convert(1, work)

    count = num_elements([sizes[label] for label in contracted])
    empty = bool(contracted) and arith.compare(count, ">=", 1) is not True
    direct = work == out_dtype and not empty
    stage_name = name if direct else "acc"

    def body(*indices: object) -> object:
        iterators = {label: i.index_dim for label, i in zip(output, indices)}
        if not contracted:
            return product(iterators)
        ks = [te.reduce_axis(sizes[label], label) for label in contracted]
        iterators.update({label: k.index_dim for label, k in zip(contracted, ks)})
        return te.sum(product(iterators), axis=ks)

    stage = te.compute(tuple(sizes[label] for label in output), body, name=stage_name)
    if not direct:
        stage = nonempty_stage(name, stage, count, as_expr(0, work), out_dtype)
    return te.create_prim_func([*inputs, stage], name=name)


def _lower_contraction(
    name: str, arg_infos: Sequence[StructInfo], out_info: StructInfo, subscripts
) -> PrimFunc:
    names = ("a", "b") if len(arg_infos) == 2 else tuple(f"x{k}" for k in range(len(arg_infos)))
    inputs = placeholders(KernelDims(), arg_infos, names)
    spec = parse_subscripts(subscripts([t.ndim for t in inputs]))
    return contraction_kernel(name, spec, inputs, as_tensor_info(out_info).dtype)


def matmul_subscripts(ranks: Sequence[int]) -> str:
    """``jnp.matmul`` as einsum subscripts for operands of ``ranks``."""
    rank_a, rank_b = ranks
    a = "k" if rank_a == 1 else "...ik"
    b = "k" if rank_b == 1 else "...kj"
    out = ("..." if max(rank_a, rank_b) > 2 else "") + ("i" if rank_a > 1 else "")
    out += "j" if rank_b > 1 else ""
    if "..." not in a + b:
        out = out.replace("...", "")
    return f"{a},{b}->{out}"


def dot_subscripts(ranks: Sequence[int]) -> str:
    """``jnp.dot`` as einsum subscripts for operands of ``ranks``."""
    rank_a, rank_b = ranks
    letters = iter("abcdefghilmnopqrstuvwxyz")
    if rank_a == 0 or rank_b == 0:
        a = "".join(next(letters) for _ in range(rank_a))
        b = "".join(next(letters) for _ in range(rank_b))
        return f"{a},{b}->{a}{b}"
    lead_a = "".join(next(letters) for _ in range(rank_a - 1))
    if rank_b == 1:
        return f"{lead_a}k,k->{lead_a}"
    lead_b = "".join(next(letters) for _ in range(rank_b - 2))
    return f"{lead_a}k,{lead_b}kj->{lead_a}{lead_b}j"


__all__ = [
    "EinsumAttrs",
    "EinsumSpec",
    "merge_sizes",
    "parse_subscripts",
]
