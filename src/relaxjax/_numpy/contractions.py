"""Products of arrays with jax.numpy's names and semantics: ``outer inner tensordot vdot
vecdot matvec vecmat kron cross``.

The contractions are one ``einsum`` each (its subscripts built from the axes), so they
share its kernel, its broadcasting of batch axes and its checks of contracted sizes;
``outer`` and ``kron`` are broadcast products, ``cross`` combines components.
``precision`` (jax's hint for TPU matrix units) is accepted and has no effect: products
are computed in the result dtype (half precisions accumulate in float32).
``preferred_element_type`` converts the operands to that dtype first.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda a, b: rnp.tensordot(a, b, axes=([1], [0])),
...                  relax.Tensor(("n", 4), "float32"), relax.Tensor((4, "m"), "float32"))
Tensor((n, m), "float32")
"""

from __future__ import annotations

import string

import numpy as np

from relaxjax import arith, dtypes
from relaxjax._numpy.arraylike import (
    array_operand,
    astype,
    converted,
    ndim_of,
    reshaped,
    shape_of,
    static_index,
)
from relaxjax._numpy.core import zeros_like
from relaxjax._numpy.manipulation import moveaxis, ravel
from relaxjax._numpy.shape import expand_dims, stack
from relaxjax.ops.base import normalize_axis
from relaxjax.ops.linalg import EinsumAttrs
from relaxjax.trace import emit

__all__ = [
    "cross",
    "inner",
    "kron",
    "matvec",
    "outer",
    "tensordot",
    "vdot",
    "vecdot",
    "vecmat",
]

LETTERS = string.ascii_letters


def contract(subscripts: str, *operands: object, preferred_element_type=None) -> object:
    """``einsum(subscripts, *operands)``, the operands converted to
    ``preferred_element_type`` when given."""
    if preferred_element_type is not None:
        dtype = dtypes.canonical(preferred_element_type)
        operands = tuple(astype(o, dtype) for o in operands)
    return emit("einsum", operands, EinsumAttrs(subscripts))


def outer(a, b, out=None):
    """``jnp.outer``: ``ravel(a)[:, None] * ravel(b)[None, :]``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
    a, b = array_operand(a), array_operand(b)
    a, b = (ravel(x) for x in converted(a, b))
    return expand_dims(a, 1) * expand_dims(b, 0)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """``jnp.tensordot``: contract the last ``axes`` axes of ``a`` with the first of
    ``b``, or the axes listed in ``axes = (a_axes, b_axes)`` (ints or sequences)."""
    del precision
    a, b = array_operand(a), array_operand(b)
    ndim_a, ndim_b = ndim_of(a, "tensordot"), ndim_of(b, "tensordot")
    contracted_a, contracted_b = _contracted_axes(axes, ndim_a, ndim_b, shape_of(a), shape_of(b))
    letters = iter(LETTERS)
    term_a = [next(letters) for _ in range(ndim_a)]
    term_b = [next(letters) for _ in range(ndim_b)]
    for i, j in zip(contracted_a, contracted_b):
        term_b[j] = term_a[i]
    kept = [term_a[i] for i in range(ndim_a) if i not in contracted_a]
    kept += [term_b[j] for j in range(ndim_b) if j not in contracted_b]
    subscripts = f"{''.join(term_a)},{''.join(term_b)}->{''.join(kept)}"
    return contract(subscripts, a, b, preferred_element_type=preferred_element_type)


def _contracted_axes(axes, ndim_a, ndim_b, shape_a, shape_b):
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = int(axes)
        if axes > min(ndim_a, ndim_b) or axes < 0:
            raise TypeError(
                f"Number of tensordot axes (axes {axes}) exceeds input ranks ({shape_a} and "
                f"{shape_b})"
            )
        return tuple(range(ndim_a - axes, ndim_a)), tuple(range(axes))
    if not isinstance(axes, (tuple, list)) or len(axes) != 2:
        raise TypeError(
            "tensordot axes argument must be an int, a pair of ints, or a pair of "
            "lists/tuples of ints."
        )
    ax1, ax2 = axes
    if isinstance(ax1, (int, np.integer)) and isinstance(ax2, (int, np.integer)):
        ax1, ax2 = (ax1,), (ax2,)
    elif not (isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list))):
        raise TypeError(
            "tensordot requires both axes lists to be either ints, tuples or lists, got "
            f"{ax1} and {ax2}"
        )
    if len(ax1) != len(ax2):
        raise TypeError(f"tensordot requires axes lists to have equal length, got {ax1} and {ax2}.")
    first = tuple(
        normalize_axis("tensordot", static_index(i, "tensordot axes"), ndim_a) for i in ax1
    )
    second = tuple(
        normalize_axis("tensordot", static_index(i, "tensordot axes"), ndim_b) for i in ax2
    )
    return first, second


def inner(a, b, *, precision=None, preferred_element_type=None):
    """``jnp.inner``: contract the last axes of ``a`` and ``b`` (a product for 0-d)."""
    a, b = array_operand(a), array_operand(b)
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        if preferred_element_type is not None:
            a, b = astype(a, preferred_element_type), astype(b, preferred_element_type)
        return a * b
    return tensordot(
        a, b, (-1, -1), precision=precision, preferred_element_type=preferred_element_type
    )


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """``jnp.vdot``: the dot product of the flattened arrays."""
    del precision
    a, b = ravel(array_operand(a)), ravel(array_operand(b))
    return contract("i,i->", a, b, preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """``jnp.vecdot``: the dot product along ``axis``, the other axes broadcast."""
    del precision
    x1, x2 = array_operand(x1), array_operand(x2)
    size1 = shape_of(x1)[normalize_axis("vecdot", axis, ndim_of(x1))]
    size2 = shape_of(x2)[normalize_axis("vecdot", axis, ndim_of(x2))]
    if arith.compare(size1, "==", size2) is False:
        raise ValueError(
            f"axes must match; got shapes {shape_of(x1)} and {shape_of(x2)} with axis={axis}"
        )
    x1, x2 = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    return contract("...i,...i->...", x1, x2, preferred_element_type=preferred_element_type)


def matvec(x1, x2, /):
    """``jnp.matvec``: matrix-vector products over broadcast batch axes."""
    x1, x2 = array_operand(x1), array_operand(x2)
    _require_rank("matvec", x1, 2), _require_rank("matvec", x2, 1)
    return contract("...ij,...j->...i", x1, x2)


def vecmat(x1, x2, /):
    """``jnp.vecmat``: vector-matrix products over broadcast batch axes."""
    x1, x2 = array_operand(x1), array_operand(x2)
    _require_rank("vecmat", x1, 1), _require_rank("vecmat", x2, 2)
    return contract("...i,...ij->...j", x1, x2)


def _require_rank(name: str, x: object, rank: int) -> None:
    if ndim_of(x) < rank:
        raise ValueError(
            f"{name}: operand of shape {shape_of(x)} needs at least {rank} dimension(s)"
        )


def kron(a, b):
    """``jnp.kron``: the Kronecker product (block ``(i, j)`` is ``a[i, j] * b``)."""
    a, b = converted(a, b)
    rank = max(ndim_of(a), ndim_of(b))
    a = reshaped(a, (1,) * (rank - ndim_of(a)) + shape_of(a))
    b = reshaped(b, (1,) * (rank - ndim_of(b)) + shape_of(b))
    shape_a, shape_b = shape_of(a), shape_of(b)
    spread_a = reshaped(a, tuple(d for dim in shape_a for d in (dim, 1)))
    spread_b = reshaped(b, tuple(d for dim in shape_b for d in (1, dim)))
    return reshaped(spread_a * spread_b, tuple(x * y for x, y in zip(shape_a, shape_b)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``jnp.cross``: the cross product of 3-vectors (or 2-vectors, padded with a zero
    component; two 2-vectors give the scalar ``z`` component) along the vector axes."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(array_operand(a), axisa, -1), moveaxis(array_operand(b), axisb, -1)
    size_a, size_b = shape_of(a)[-1], shape_of(b)[-1]
    if size_a not in (2, 3) or size_b not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    a, b = converted(a, b)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    if size_a == 2 and size_b == 2:
        return a0 * b1 - a1 * b0
    a2 = a[..., 2] if size_a == 3 else zeros_like(a0)
    b2 = b[..., 2] if size_b == 3 else zeros_like(b0)
    components = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]
    return moveaxis(stack(components), 0, axisc)
