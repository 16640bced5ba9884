"""Matrix factorisations and what follows from them, with jax.numpy.linalg semantics:
``det slogdet inv solve cholesky qr eigh svd``, batched over leading axes.

These need pivoting and iterative algorithms (LU, Householder QR, symmetric
eigensolvers, SVD), which no loop-level kernel of relaxjax implements: they are
**library calls**. ``relax.jit`` dispatches each to LAPACK through ``numpy.linalg``
(``passes/dispatch.py``: ``call_extern`` in the IR, run by ``runtime/externs.py``),
for float32 and float64 operands; the op's ``reference`` is the same numpy call, used
eagerly. Without library dispatch (``library=False``, the reference interpreter,
``Jitted.lower()``) they have no lowering and raise ``LoweringError``.

Where LAPACK reports a failure jax returns NaNs (on and below the diagonal for
``cholesky`` of a matrix that is not positive definite, as here) or infinities and NaNs
(``inv`` and ``solve`` of a singular matrix, which give NaNs here).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith
from relaxjax.errors import LoweringError
from relaxjax.ir import StructInfo, TensorInfo, TupleInfo
from relaxjax.ops.attr_checks import check_flag
from relaxjax.ops.base import (
    InferContext,
    Op,
    broadcast_shapes,
    fail,
    info_text,
    reference_input,
    register,
    require_equal,
    tensor_args,
)
from relaxjax.tir import PrimFunc

Dim = arith.Dim

#: The dtypes LAPACK factorises (the wrappers convert integers to float first).
FLOATS = ("float32", "float64")

QR_MODES = ("reduced", "complete", "r")


def _matrix(op_name: str, info: TensorInfo, square: bool, ctx: InferContext) -> tuple:
    """``(batch, rows, columns)`` of a stack of matrices; ``None`` when the shape is not
    known. Checks the dtype, the rank and (for ``square``) the last two dims."""
    if info.dtype not in FLOATS:
        raise TypeError(
            f"{op_name}: LAPACK factorises float32 and float64 matrices, got {info.dtype}"
        )
    if info.ndim is not None and info.ndim < 2:
        fail(op_name, f"expected a matrix (at least 2 dimensions), got shape {info_text(info)}")
    if info.shape is None:
        return None
    batch, (rows, columns) = info.shape[:-2], info.shape[-2:]
    if square:
        require_equal(ctx, columns, rows, f"expected square matrices, got shape {info_text(info)}")
    return batch, rows, columns


class _Factorization(Op):
    """A library call on a stack of matrices (see the module doc)."""

    pattern = "opaque"
    num_inputs = 1
    square = True

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        parts = _matrix(self.name, x, self.square, ctx)
        if parts is None:  # the ranks are known when the input's is
            ranks = [len(s) for s in self.shapes((), 1, 1, attrs)]
            batch = None if x.ndim is None else x.ndim - 2
            leaves = [
                TensorInfo(dtype=x.dtype, ndim=None if batch is None else batch + r) for r in ranks
            ]
            return leaves[0] if len(leaves) == 1 else TupleInfo(leaves)
        batch, rows, columns = parts
        leaves = [TensorInfo(batch + s, x.dtype) for s in self.shapes(batch, rows, columns, attrs)]
        return leaves[0] if len(leaves) == 1 else TupleInfo(leaves)

    @abstractmethod
    def shapes(self, batch: tuple, rows: Dim, columns: Dim, attrs) -> list[tuple]:
        """The result shapes after the batch dims."""

    @abstractmethod
    def compute(self, x: np.ndarray, attrs) -> np.ndarray | tuple:
        """The numpy computation (also what the library call runs)."""

    def reference(self, *arrays: object, attrs=None) -> object:
        attrs = self.default_attrs() if attrs is None else attrs
        x = reference_input(arrays[0])
        return self.compute(x, attrs)

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        raise LoweringError(
            f"op {self.name!r} is a library call (LAPACK through numpy.linalg): it runs "
            "under relax.jit with library dispatch, and has no loop-level kernel"
        )


def _nan_on_failure(compute, x: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """``compute(x)``, or ``failed`` where LAPACK reports a failure."""
    try:
        with np.errstate(all="ignore"):
            return compute(x)
    except np.linalg.LinAlgError:
        return failed


@register
class Det(_Factorization):
    """``jnp.linalg.det``: determinants (LU)."""

    name = "det"

    def shapes(self, batch, rows, columns, attrs):
        return [()]

    def compute(self, x, attrs):
        with np.errstate(all="ignore"):
            return np.asarray(np.linalg.det(x), x.dtype)


@register
class Slogdet(_Factorization):
    """``jnp.linalg.slogdet``: the sign and the log of the absolute determinant."""

    name = "slogdet"

    def shapes(self, batch, rows, columns, attrs):
        return [(), ()]

    def compute(self, x, attrs):
        with np.errstate(all="ignore"):
            sign, logdet = np.linalg.slogdet(x)
        return np.asarray(sign, x.dtype), np.asarray(logdet, x.dtype)


@register
class Inv(_Factorization):
    """``jnp.linalg.inv``: inverses (NaN for a singular matrix)."""

    name = "inv"

    def shapes(self, batch, rows, columns, attrs):
        return [(rows, columns)]

    def compute(self, x, attrs):
        return _batched(lambda m: _nan_on_failure(np.linalg.inv, m, np.full_like(m, np.nan)), x)


@dataclass(frozen=True, slots=True)
class CholeskyAttrs:
    """Attributes of ``cholesky``: the upper factor instead of the lower one."""

    upper: bool = False

    def __post_init__(self) -> None:
        check_flag("CholeskyAttrs", "upper", self.upper)


@register
class Cholesky(_Factorization):
    """``jnp.linalg.cholesky``: ``L`` with ``a = L L^T`` (NaN if not positive definite)."""

    name = "cholesky"
    Attrs = CholeskyAttrs

    def shapes(self, batch, rows, columns, attrs):
        return [(rows, columns)]

    def compute(self, x, attrs):
        failed = np.tril(np.full(x.shape[-2:], np.nan, x.dtype))  # jax: NaN on and below
        lower = _batched(lambda m: _nan_on_failure(np.linalg.cholesky, m, failed), x)
        return np.swapaxes(lower, -1, -2).copy() if attrs.upper else lower


@dataclass(frozen=True, slots=True)
class QrAttrs:
    """Attributes of ``qr``: ``mode`` ``reduced``, ``complete`` or ``r``."""

    mode: str = "reduced"

    def __post_init__(self) -> None:
        if self.mode not in QR_MODES:
            raise ValueError(f"Unsupported QR decomposition mode '{self.mode}'")


@register
class Qr(_Factorization):
    """``jnp.linalg.qr``: ``q`` with orthonormal columns and upper-triangular ``r``."""

    name = "qr"
    Attrs = QrAttrs
    square = False

    def shapes(self, batch, rows, columns, attrs):
        k = arith.min_(rows, columns)
        if attrs.mode == "r":
            return [(k, columns)]
        if attrs.mode == "complete":
            return [(rows, rows), (rows, columns)]
        return [(rows, k), (k, columns)]

    def compute(self, x, attrs):
        if attrs.mode == "r":
            return np.asarray(np.linalg.qr(x, mode="r"), x.dtype)
        q, r = np.linalg.qr(x, mode=attrs.mode)
        return np.asarray(q, x.dtype), np.asarray(r, x.dtype)


@dataclass(frozen=True, slots=True)
class EighAttrs:
    """Attributes of ``eigh``: which triangle is read (``lower``), whether the input is
    symmetrised first (jax's default) and whether the eigenvectors are returned."""

    lower: bool = True
    symmetrize: bool = True
    vectors: bool = True

    def __post_init__(self) -> None:
        for name in ("lower", "symmetrize", "vectors"):
            check_flag("EighAttrs", name, getattr(self, name))


@register
class Eigh(_Factorization):
    """``jnp.linalg.eigh``: eigenvalues (ascending) and eigenvectors of symmetric
    matrices."""

    name = "eigh"
    Attrs = EighAttrs

    def shapes(self, batch, rows, columns, attrs):
        return [(rows,), (rows, columns)] if attrs.vectors else [(rows,)]

    def compute(self, x, attrs):
        if attrs.symmetrize:
            x = (x + np.swapaxes(x, -1, -2)) / 2
        uplo = "L" if attrs.lower else "U"
        if not attrs.vectors:
            return np.asarray(np.linalg.eigvalsh(x, UPLO=uplo), x.dtype)
        w, v = np.linalg.eigh(x, UPLO=uplo)
        return np.asarray(w, x.dtype), np.asarray(v, x.dtype)


@dataclass(frozen=True, slots=True)
class SvdAttrs:
    """Attributes of ``svd``: full or reduced ``u``/``vh``, and whether they are computed."""

    full_matrices: bool = True
    compute_uv: bool = True

    def __post_init__(self) -> None:
        check_flag("SvdAttrs", "full_matrices", self.full_matrices)
        check_flag("SvdAttrs", "compute_uv", self.compute_uv)


@register
class Svd(_Factorization):
    """``jnp.linalg.svd``: ``u``, the singular values (descending) and ``vh``."""

    name = "svd"
    Attrs = SvdAttrs
    square = False

    def shapes(self, batch, rows, columns, attrs):
        k = arith.min_(rows, columns)
        if not attrs.compute_uv:
            return [(k,)]
        if attrs.full_matrices:
            return [(rows, rows), (k,), (columns, columns)]
        return [(rows, k), (k,), (k, columns)]

    def compute(self, x, attrs):
        if not attrs.compute_uv:
            return np.asarray(np.linalg.svd(x, compute_uv=False), x.dtype)
        u, s, vh = np.linalg.svd(x, full_matrices=attrs.full_matrices)
        return np.asarray(u, x.dtype), np.asarray(s, x.dtype), np.asarray(vh, x.dtype)


def _batched(compute, x: np.ndarray) -> np.ndarray:
    """``compute`` applied to every matrix of a stack (LAPACK failures are per matrix)."""
    flat = x.reshape((-1,) + x.shape[-2:])
    out = np.stack([compute(m) for m in flat]) if len(flat) else np.zeros(flat.shape, x.dtype)
    return np.asarray(out, x.dtype).reshape(x.shape[:-2] + out.shape[1:])


@register
class Solve(Op):
    """``jnp.linalg.solve(a, b)``: ``x`` with ``a @ x == b``; a 1-d ``b`` is a vector,
    otherwise ``b`` is a stack of matrices whose batch axes broadcast with ``a``'s."""

    name = "solve"
    pattern = "opaque"
    num_inputs = 2

    def infer(self, args: Sequence[StructInfo], attrs, ctx: InferContext) -> StructInfo:
        a, b = tensor_args(self.name, args, 2)
        if a.dtype != b.dtype:
            raise TypeError(f"solve: a and b must have one dtype, got {a.dtype} and {b.dtype}")
        parts = _matrix(self.name, a, True, ctx)
        if b.ndim is not None and b.ndim < 1:
            fail(self.name, "b must have at least one dimension")
        if parts is None or b.shape is None:
            return TensorInfo(
                dtype=a.dtype, ndim=None if b.ndim is None else max(a.ndim or 0, b.ndim)
            )
        batch, rows, _ = parts
        if b.ndim == 1:
            require_equal(
                ctx, b.shape[0], rows, f"b of shape {info_text(b)} does not match a {info_text(a)}"
            )
            return TensorInfo(batch + (rows,), a.dtype)
        require_equal(
            ctx, b.shape[-2], rows, f"b of shape {info_text(b)} does not match a {info_text(a)}"
        )
        shape = broadcast_shapes(ctx, [batch, b.shape[:-2]])
        if shape is None:
            return TensorInfo(dtype=a.dtype, ndim=max(len(batch), b.ndim - 2) + 2)
        return TensorInfo(shape + (rows, b.shape[-1]), a.dtype)

    def reference(self, *arrays: object, attrs=None) -> np.ndarray:
        a, b = (reference_input(x) for x in arrays)
        if b.ndim == 1:
            b = np.broadcast_to(b, a.shape[:-1])[..., None]
            return _solve(a, b)[..., 0]
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, batch + a.shape[-2:])
        return _solve(a, np.broadcast_to(b, batch + b.shape[-2:]))

    def lower(self, arg_infos: Sequence[StructInfo], attrs, out_info: StructInfo) -> PrimFunc:
        raise LoweringError(
            "op 'solve' is a library call (LAPACK through numpy.linalg): it runs under "
            "relax.jit with library dispatch, and has no loop-level kernel"
        )


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Batched ``solve`` of matrices, NaN for the singular ones."""
    flat_a = a.reshape((-1,) + a.shape[-2:])
    flat_b = b.reshape((-1,) + b.shape[-2:])
    out = np.empty(flat_b.shape, a.dtype)
    for k, (m, r) in enumerate(zip(flat_a, flat_b)):
        try:
            out[k] = np.linalg.solve(m, r)
        except np.linalg.LinAlgError:
            out[k] = np.nan
    return out.reshape(b.shape)


#: The ops that are library calls, and every value of their attributes.
LIBRARY_OPS: dict[str, tuple] = {
    "det": (None,),
    "slogdet": (None,),
    "inv": (None,),
    "solve": (None,),
    "cholesky": tuple(CholeskyAttrs(upper) for upper in (False, True)),
    "qr": tuple(QrAttrs(mode) for mode in QR_MODES),
    "eigh": tuple(
        EighAttrs(lower, symmetrize, vectors)
        for lower in (False, True)
        for symmetrize in (False, True)
        for vectors in (False, True)
    ),
    "svd": tuple(SvdAttrs(full, uv) for full in (False, True) for uv in (False, True)),
}


def library_symbol(op_name: str, attrs: object) -> str:
    """The symbol of the library call of ``op_name`` with ``attrs``, e.g.
    ``numpy.linalg.qr.mode_reduced`` (a dotted name: the IR prints and parses it)."""
    parts = [f"numpy.linalg.{op_name}"]
    if attrs is not None:
        parts += [f"{f}_{getattr(attrs, f)}" for f in type(attrs).__dataclass_fields__]
    return ".".join(parts)


__all__ = [
    "CholeskyAttrs",
    "EighAttrs",
    "FLOATS",
    "LIBRARY_OPS",
    "QR_MODES",
    "QrAttrs",
    "SvdAttrs",
    "library_symbol",
]
