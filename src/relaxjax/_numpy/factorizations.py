"""The factorisations of ``jax.numpy.linalg`` and what is built on them: ``det slogdet inv
solve cholesky qr eigh eigvalsh svd svdvals`` (library calls, see
:mod:`relaxjax.ops.decompositions`), ``pinv lstsq matrix_rank`` (from ``svd``),
``matrix_power multi_dot tensorinv tensorsolve``.

Integer inputs are converted to their inexact dtype first, as jax does; LAPACK then
works in float32 or float64 (half precisions raise ``TypeError``). Results with several
parts are the named tuples jax returns (``EighResult``, ``QRResult``, ``SVDResult``,
``SlogdetResult``). ``cond`` and the norms that need singular values are in
:mod:`relaxjax._numpy.linalg`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.arraylike import (
    array_operand,
    astype,
    converted,
    dtype_of,
    ndim_of,
    reshaped,
    shape_of,
    size_of,
    static_index,
)
from relaxjax._numpy.core import arange, divide, multiply, where
from relaxjax._numpy.manipulation import matrix_transpose, moveaxis, ravel
from relaxjax._numpy.reduction import max as _max
from relaxjax._numpy.reduction import sum as _sum
from relaxjax._numpy.shape import broadcast_to, expand_dims, matmul
from relaxjax.ops.decompositions import CholeskyAttrs, EighAttrs, QrAttrs, SvdAttrs
from relaxjax.trace import emit

__all__ = [
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "lstsq",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
]


class EighResult(NamedTuple):
    """``eigh``'s result: ascending eigenvalues and the eigenvectors (columns)."""

    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    """``qr``'s result."""

    Q: object  # noqa: N815 - jax's field names
    R: object  # noqa: N815


class SVDResult(NamedTuple):
    """``svd``'s result: ``U``, the singular values ``S`` (descending) and ``Vh``."""

    U: object  # noqa: N815
    S: object  # noqa: N815
    Vh: object  # noqa: N815


class SlogdetResult(NamedTuple):
    """``slogdet``'s result."""

    sign: object
    logabsdet: object


def _inexact(*xs: object) -> list:
    """The operands in their promoted inexact dtype, with known shapes (a library call
    needs them: dims of a rank-only tensor are named by a ``match_cast``)."""
    operands = converted(*xs, inexact=True)
    for x in operands:
        shape_of(x)
    return operands


def _eps(x: object) -> float:
    return float(np.finfo(dtypes.to_numpy(dtype_of(x))).eps)


def _scaled(factor: float, dim: object) -> object:
    """``factor * dim`` for a dim that may be symbolic (then a traced scalar)."""
    return factor * dim if isinstance(dim, int) else multiply(factor, dim)


# --------------------------------------------------------------------------- library calls


def det(a):
    """``jnp.linalg.det``: the determinants of the matrices in the last two axes."""
    (a,) = _inexact(a)
    return emit("det", (a,))


def slogdet(a, *, method=None):
    """``jnp.linalg.slogdet``: ``(sign, log|det|)``; ``method`` ``"lu"`` or ``"qr"`` (both
    give LAPACK's LU result)."""
    if method not in (None, "lu", "qr"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' and 'qr'.")
    (a,) = _inexact(a)
    return SlogdetResult(*emit("slogdet", (a,)))


def inv(a):
    """``jnp.linalg.inv``: the inverses (NaN for a singular matrix)."""
    (a,) = _inexact(a)
    return emit("inv", (a,))


def solve(a, b):
    """``jnp.linalg.solve``: ``x`` with ``a @ x == b`` (``b`` a vector when 1-d, else a
    stack of matrices broadcasting with ``a``)."""
    a, b = _inexact(a, b)
    return emit("solve", (a, b))


def cholesky(a, *, upper=False, symmetrize_input=True):
    """``jnp.linalg.cholesky``: the lower (or ``upper``) Cholesky factor of symmetric
    positive definite matrices (symmetrised first by default; NaN when not positive
    definite)."""
    (a,) = _inexact(a)
    if symmetrize_input:
        a = (a + matrix_transpose(a)) / 2
    return emit("cholesky", (a,), CholeskyAttrs(bool(upper)))


def qr(a, mode="reduced"):
    """``jnp.linalg.qr``: ``QRResult(Q, R)`` (``mode`` ``reduced`` or ``complete``), or
    ``R`` alone (``mode="r"``)."""
    (a,) = _inexact(a)
    result = emit("qr", (a,), QrAttrs(mode))
    return result if mode == "r" else QRResult(*result)


def eigh(a, UPLO=None, symmetrize_input=True):  # noqa: N803 - jax's name
    """``jnp.linalg.eigh``: ``EighResult(eigenvalues, eigenvectors)`` of symmetric
    matrices (reading the ``UPLO`` triangle, ``"L"`` by default)."""
    return EighResult(*emit("eigh", _inexact(a), _eigh_attrs(UPLO, symmetrize_input, True)))


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):  # noqa: N803
    """``jnp.linalg.eigvalsh``: the ascending eigenvalues of symmetric matrices."""
    return emit("eigh", _inexact(a), _eigh_attrs(UPLO, symmetrize_input, False))


def _eigh_attrs(uplo: object, symmetrize: bool, vectors: bool) -> EighAttrs:
    if uplo not in (None, "L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {uplo!r}")
    return EighAttrs(uplo != "U", bool(symmetrize), vectors)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    """``jnp.linalg.svd``: ``SVDResult(U, S, Vh)``, or the singular values alone
    (``compute_uv=False``). ``hermitian`` is accepted (the general algorithm gives the same
    singular values; singular vectors may differ in sign from jax's eigh-based ones)."""
    del hermitian
    if subset_by_index is not None:
        raise NotImplementedError("svd: subset_by_index is not supported")
    (a,) = _inexact(a)
    result = emit("svd", (a,), SvdAttrs(bool(full_matrices), bool(compute_uv)))
    return SVDResult(*result) if compute_uv else result


def svdvals(x, /):
    """``jnp.linalg.svdvals``: the singular values, descending."""
    return svd(x, compute_uv=False)


# --------------------------------------------------------------------------- from svd


def pinv(a, rtol=None, hermitian=False):
    """``jnp.linalg.pinv``: the pseudo-inverse; singular values at or below ``rtol`` times
    the largest are dropped (default ``10 * max(m, n) * eps``)."""
    (a,) = _inexact(a)
    rows, columns = shape_of(a)[-2:]
    if rtol is None:
        rtol = _scaled(10.0 * _eps(a), arith.max_(rows, columns))
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    rtol = array_operand(rtol)
    if ndim_of(rtol) > 0:
        rtol = expand_dims(rtol, -1)
    cutoff = rtol * _max(s, axis=-1, keepdims=True, initial=0)  # s[..., :1], descending
    s = where(s > cutoff, s, np.inf)
    return matmul(matrix_transpose(vh), divide(matrix_transpose(u), expand_dims(s, -1)))


def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):  # noqa: N803 - jax's name
    """``jnp.linalg.matrix_rank``: the number of singular values above the tolerance
    (default ``max(S) * max(m, n) * eps``)."""
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    (M,) = _inexact(M)  # noqa: N806
    if ndim_of(M) < 2:
        return astype(_max(M != 0, initial=False), "int32")
    s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        rtol = _max(s, axis=-1, initial=0) * _scaled(_eps(M), arith.max_(*shape_of(M)[-2:]))
    rtol = array_operand(rtol)
    return _sum(s > expand_dims(rtol, ndim_of(rtol)), axis=-1)


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """``jnp.linalg.lstsq``: ``(x, residuals, rank, s)`` of the least-squares solution of
    ``a @ x = b`` through the SVD (singular values below ``rcond * s[0]`` dropped; the
    residuals are always computed unless ``numpy_resid`` asks for numpy's empty ones)."""
    a, b = _inexact(a, b)
    if arith.compare(shape_of(a)[0], "==", shape_of(b)[0]) is False:
        raise ValueError("Leading dimensions of input arrays must match")
    vector = ndim_of(b) == 1
    if vector:
        b = expand_dims(b, 1)
    if ndim_of(a) != 2:
        raise TypeError(f"{ndim_of(a)}-dimensional array given. Array must be two-dimensional")
    if ndim_of(b) != 2:
        raise TypeError(
            f"{ndim_of(b)}-dimensional array given. Array must be one or two-dimensional"
        )
    m, n = shape_of(a)
    if rcond is None:
        rcond = _scaled(_eps(a), arith.max_(m, n))
    else:
        rcond = where(array_operand(rcond) < 0, _eps(a), rcond)
    u, s, vt = svd(a, full_matrices=False)
    mask = s >= rcond * s[0]
    rank = _sum(mask)
    safe = where(mask, s, 1)
    inverse = expand_dims(where(mask, 1 / safe, 0), 1)
    x = matmul(matrix_transpose(vt), inverse * matmul(matrix_transpose(u), b))
    residual = b - matmul(a, x)
    resid = _sum(residual * residual, axis=0)
    if numpy_resid:
        raise NotImplementedError("lstsq: numpy_resid=True gives a data-dependent shape")
    if vector:
        x = ravel(x)
    return x, resid, rank, s


# --------------------------------------------------------------------------- products


def matrix_power(a, n):
    """``jnp.linalg.matrix_power``: ``a`` to the integer power ``n`` (binary
    exponentiation; ``inv`` first for a negative ``n``, the identity for 0)."""
    a = array_operand(a)
    if ndim_of(a) < 2:
        raise TypeError(
            f"{ndim_of(a)}-dimensional array given. Array must be at least two-dimensional"
        )
    rows, columns = shape_of(a)[-2:]
    if arith.compare(rows, "==", columns) is False:
        raise TypeError("Last 2 dimensions of the array must be square")
    try:
        n = static_index(n, "matrix_power exponent")
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    if n == 0:
        identity = reshaped(arange(rows), (rows, 1)) == reshaped(arange(rows), (1, rows))
        return broadcast_to(astype(identity, dtype_of(a)), shape_of(a))
    if n < 0:
        a, n = inv(a), -n
    result, power = None, a
    while n > 0:
        n, bit = divmod(n, 2)
        if bit:
            result = power if result is None else matmul(result, power)
        if n:
            power = matmul(power, power)
    return result


def multi_dot(arrays, *, precision=None):
    """``jnp.linalg.multi_dot``: the product of a chain of matrices (the first and last
    may be vectors)."""
    del precision
    arrays = [array_operand(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrays)}")
    ranks = [ndim_of(a) for a in arrays]
    if not (ranks[0] in (1, 2) and ranks[-1] in (1, 2) and all(r == 2 for r in ranks[1:-1])):
        raise ValueError(
            "multi_dot: input arrays must all be two-dimensional, except for the first and "
            f"last array which may be 1 or 2 dimensional. Got array shapes "
            f"{[shape_of(a) for a in arrays]}"
        )
    result = arrays[0]
    for a in arrays[1:]:
        result = matmul(result, a)
    return result


def tensorinv(a, ind=2):
    """``jnp.linalg.tensorinv``: the inverse of ``a`` read as a matrix of its first
    ``ind`` axes by the rest."""
    a = array_operand(a)
    ind = static_index(ind, "tensorinv ind")
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    shape = shape_of(a)
    matrix = reshaped(a, (_product(shape[:ind]), _product(shape[ind:])))
    return reshaped(inv(matrix), shape[ind:] + shape[:ind])


def _product(dims: Sequence) -> object:
    result = 1
    for d in dims:
        result = result * d
    return result


def tensorsolve(a, b, axes=None):
    """``jnp.linalg.tensorsolve``: ``x`` with ``tensordot(a, x, x.ndim) == b``."""
    a, b = _inexact(a, b)
    if axes is not None:
        a = moveaxis(a, axes, (ndim_of(a) - 1,) * len(axes))
    out_shape = shape_of(a)[ndim_of(b) :]
    if shape_of(a)[: ndim_of(b)] != shape_of(b):
        raise ValueError(
            "After moving axes to end, leading shape of a must match shape of b. got "
            f"a.shape={shape_of(a)}, b.shape={shape_of(b)}"
        )
    matrix = reshaped(a, (size_of(b), _product(out_shape)))
    return reshaped(solve(matrix, ravel(b)), out_shape)
