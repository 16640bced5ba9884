"""The operator base class, the registry, and the shape/dtype helpers every op shares.

An op is defined once, as a singleton subclass of :class:`Op` registered by
:func:`register`: its name, its attribute dataclass, its shape/dtype rule
(``infer``), its numpy reference and its lowering to a loop-level kernel.

``infer`` is sound and best effort. A relation it cannot prove for every value of
the symbols is handed to ``ctx.require(Check(...))`` (``ctx`` is a
:class:`relaxjax.ir.InferContext`): proven relations are dropped, provably false ones
raise :class:`~relaxjax.errors.ShapeError`, and the rest are recorded as run-time checks.
Applied to concrete (int) shapes, ``infer`` is exact: it gives the concrete output shape
or raises.

Example::

    >>> from relaxjax import arith
    >>> from relaxjax.ir import TensorInfo
    >>> from relaxjax.ops import get
    >>> n = arith.sym("n")
    >>> get("add").deduce([TensorInfo((n, 4), "float32"), TensorInfo((1, 4), "float32")])
    (Tensor((n, 4), "float32"), ())
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, NoReturn

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.errors import LoweringError, ShapeError
from relaxjax.ir import (
    Check,
    InferContext,
    PrimInfo,
    StructInfo,
    TensorInfo,
    format_dims,
)

Dim = arith.Dim

#: Fusion patterns, from most to least fusable. Passes read ``Op.pattern``.
PATTERNS = ("elementwise", "broadcast", "injective", "reduction", "out_fusable", "opaque")


# --------------------------------------------------------------------------- context


def _shape_text(shape: Sequence[Dim] | None) -> str:
    return "(?)" if shape is None else format_dims(shape)


def info_text(info: StructInfo) -> str:
    """The shape of a tensor info as users write it: ``(n, 4)``, ``(?)`` when unknown."""
    if isinstance(info, TensorInfo):
        if info.shape is not None:
            return _shape_text(info.shape)
        return "(?)" if info.ndim is None else f"(ndim={info.ndim})"
    return repr(info)


def fail(op_name: str, message: str) -> NoReturn:
    """Raise ``ShapeError`` with ``message`` prefixed by the op's name."""
    raise ShapeError(f"{op_name}: {message}")


# --------------------------------------------------------------------------- ops


class Op(ABC):
    """Base of every operator. Subclasses are singletons created by :func:`register`.

    Subclasses set ``name`` (the registry key and the printed name), ``Attrs`` (a
    frozen dataclass type, or None when the op has no attributes), ``pattern`` (one
    of :data:`PATTERNS`, for fusion) and ``num_inputs`` (None when variadic), and
    implement ``infer`` and ``reference``; ``lower`` builds the loop-level kernel.
    """

    name: ClassVar[str] = ""
    Attrs: ClassVar[type | None] = None
    pattern: ClassVar[str] = "opaque"
    #: True for elementwise ops whose result on Python scalars alone is a weakly typed
    #: scalar, as in jax (``sqrt(64)``); the tracer folds such calls to a constant.
    folds_scalars: ClassVar[bool] = False
    num_inputs: ClassVar[int | None] = None
    _instances: ClassVar[dict[type, Op]] = {}

    def __new__(cls) -> Op:
        if cls not in Op._instances:
            Op._instances[cls] = super().__new__(cls)
        return Op._instances[cls]

    @abstractmethod
    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        """The struct info of the result (sound, best effort); see the module docstring."""

    @abstractmethod
    def reference(self, *arrays: np.ndarray, attrs: object = None) -> np.ndarray:
        """The numpy ground truth; Python scalars among ``arrays`` are weakly typed."""

    def lower(self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo) -> object:
        """A shape-generic ``tir.PrimFunc`` computing the op (inputs, then outputs)."""
        raise LoweringError(f"op {self.name!r} has no lowering to a loop-level kernel")

    def deduce(
        self, args: Sequence[StructInfo], attrs: object = None
    ) -> tuple[StructInfo, tuple[Check, ...]]:
        """Run ``infer`` in a fresh context: the result info and the run-time checks.

        ``attrs=None`` stands for the default attributes (``Attrs()``) when they exist,
        as in the graph builder.
        """
        attrs = self.default_attrs() if attrs is None else attrs
        self.check_attrs(attrs)
        args = tuple(args)
        ctx = InferContext(self.name, args)
        info = self.infer(args, attrs, ctx)
        return info, tuple(ctx.checks)

    def default_attrs(self) -> object:
        """``Attrs()`` when every attribute has a default, else None."""
        if self.Attrs is None:
            return None
        try:
            return self.Attrs()
        except TypeError:
            return None

    def check_attrs(self, attrs: object) -> None:
        """Raise ``TypeError`` unless ``attrs`` is an instance of ``Attrs`` (or None)."""
        if self.Attrs is None:
            if attrs is not None:
                raise TypeError(f"op {self.name!r} takes no attributes, got {attrs!r}")
        elif not isinstance(attrs, self.Attrs):
            raise TypeError(
                f"op {self.name!r} expects attributes of type {self.Attrs.__name__}, got {attrs!r}"
            )

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def __reduce__(self) -> tuple:
        return (get, (self.name,))


_REGISTRY: dict[str, Op] = {}


def register(cls: type[Op]) -> type[Op]:
    """Class decorator: create the op's singleton and register it under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.pattern not in PATTERNS:
        raise ValueError(f"{cls.__name__}.pattern must be one of {PATTERNS}, got {cls.pattern!r}")
    if cls.name in _REGISTRY and type(_REGISTRY[cls.name]) is not cls:
        raise ValueError(f"op {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def get(name: str) -> Op:
    """The registered op called ``name``; ``KeyError`` naming it otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no op named {name!r} is registered") from None


def registry() -> dict[str, Op]:
    """A copy of the name -> op mapping of every registered op."""
    return dict(_REGISTRY)


# --------------------------------------------------------------------------- operands


def as_tensor_info(info: StructInfo, op_name: str = "op", position: int = 0) -> TensorInfo:
    """``info`` as a tensor: a ``PrimInfo`` scalar is a 0-d tensor of its dtype."""
    if isinstance(info, TensorInfo):
        return info
    if isinstance(info, PrimInfo):
        return TensorInfo((), info.dtype, weak=info.weak)
    raise TypeError(f"{op_name}: argument {position} must be a tensor or a scalar, got {info!r}")


def tensor_args(
    op_name: str, args: Sequence[StructInfo], count: int | None = None
) -> tuple[TensorInfo, ...]:
    """Check the arity and convert every argument with :func:`as_tensor_info`."""
    if count is not None and len(args) != count:
        raise TypeError(f"{op_name} takes {count} argument(s), got {len(args)}")
    return tuple(as_tensor_info(a, op_name, i) for i, a in enumerate(args))


def promote_types(op_name: str, args: Sequence[StructInfo]) -> str:
    """The jax.numpy (x64) result dtype of ``args``; weak scalars and tensors stay weak."""
    return promote_weak(op_name, args)[0]


def promote_weak(op_name: str, args: Sequence[StructInfo]) -> tuple[str, bool]:
    """The jax.numpy (x64) result dtype of ``args`` and whether it is weakly typed
    (:func:`relaxjax.dtypes.result_type_weak`): ``x_i32 + 2.0`` is a weak float64."""
    tensor_args(op_name, args)
    return dtypes.result_type_weak(*(operand_type(a) for a in args))


def operand_type(info: StructInfo) -> dtypes.Operand:
    """The promotion operand of an argument: its dtype, or ``Weak`` for a weakly typed
    scalar or tensor."""
    if isinstance(info, PrimInfo):
        return info.weak_operand
    return as_tensor_info(info).weak_operand


def weak_result(operands: Sequence[dtypes.Operand], dtype: str) -> bool:
    """Whether an elementwise result of ``dtype`` is weakly typed, as in jax: the promotion
    of ``operands`` ends at a weak kind (``x_i32 + 2.0``, ``exp(x_bool + 2)``), and the op
    keeps that kind's default dtype (an op that computes in a fixed dtype, such as int32
    for bool powers, or bool comparisons, gives a strongly typed result)."""
    weak = dtypes.result_type_weak(*operands)[1]
    return weak and dtype in (dtypes.default_int(), dtypes.default_float())


def value_type(value: object) -> dtypes.Operand:
    """The promotion operand of a reference input: Python scalars are weak."""
    if isinstance(value, (bool, int, float)):
        return dtypes.weak_of(value)
    return dtypes.canonical(np.asarray(value).dtype)


def reference_dtype(value: object) -> str:
    """The dtype of a reference input: a Python scalar takes its weak default dtype."""
    return dtypes.result_type(value_type(value))


def reference_input(value: object) -> np.ndarray:
    """A reference input as an array of its :func:`reference_dtype`."""
    return np.asarray(value, dtype=dtypes.to_numpy(reference_dtype(value)))


def unsupported_dtype(op_name: str, dtype: str, accepted: str) -> TypeError:
    """The ``TypeError`` for an operand dtype the op does not accept."""
    return TypeError(f"{op_name} does not accept dtype {dtype}; expected {accepted}")


def to_inexact(dtype: str) -> str:
    """The float dtype jax computes ``exp``/``divide``/``mean`` of ``dtype`` in.

    Floats stay; int64 becomes float64; narrower ints and bool become float32.
    """
    if dtypes.is_floating(dtype):
        return dtype
    return "float64" if dtype == "int64" else "float32"


def compute_dtype(dtype: str) -> np.dtype:
    """The numpy dtype references compute ``dtype`` in (half precisions in float32)."""
    if dtype in ("float16", "bfloat16"):
        return np.dtype("float32")
    return dtypes.to_numpy(dtype)


def in_compute_dtype(value: object, dtype: str) -> np.ndarray:
    """A reference operand converted to the numpy dtype ``dtype`` computes in."""
    return np.asarray(value).astype(compute_dtype(dtype))


def with_dtype(info: TensorInfo, dtype: str, weak: bool = False) -> TensorInfo:
    """``info``'s shape (or rank) with another dtype (weakly typed when ``weak``)."""
    return TensorInfo(info.shape, dtype, info.ndim, weak)


def normalize_axis(op_name: str, axis: int, ndim: int) -> int:
    """``axis`` in ``[0, ndim)``; negative axes count from the end."""
    if not -ndim <= axis < ndim:
        raise ShapeError(
            f"{op_name}: axis {axis} is out of bounds for an array of rank {ndim} "
            f"(expected -{ndim} <= axis < {ndim})"
        )
    return axis % ndim


# --------------------------------------------------------------------------- broadcasting


def broadcast_dim(ctx: InferContext, a: Dim, b: Dim, shapes_text: str, axis: int) -> Dim | None:
    """The broadcast of two dims, or None when it depends on the symbols' values.

    A relation that is not proven becomes a ``broadcast`` run-time check; a
    provably incompatible pair raises ``ShapeError``.
    """
    if arith.compare(a, "==", 1) is True:
        return b
    if arith.compare(b, "==", 1) is True or arith.compare(a, "==", b) is True:
        return a
    message = (
        f"{ctx.op_name}: cannot broadcast shapes {shapes_text}: "
        f"axis {axis} has incompatible sizes {a} and {b}"
    )
    ctx.require(Check("broadcast", (a, b), message))
    # Unproven: the result is a if a != 1 (then b is a or 1), symmetrically for b.
    if arith.compare(a, "!=", 1) is True:
        return a
    if arith.compare(b, "!=", 1) is True:
        return b
    return None


def broadcast_shapes(ctx: InferContext, shapes: Sequence[Sequence[Dim]]) -> tuple[Dim, ...] | None:
    """numpy broadcasting of known shapes; None when some output dim is not provable.

    Every pair of dims on an axis must be broadcast-compatible (which is equivalent
    to all non-1 sizes being equal), so each unproven pair is checked at run time.
    """
    text = ", ".join(_shape_text(s) for s in shapes)
    ndim = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    result = []
    for axis in range(ndim):
        dims = [p[axis] for p in padded]
        for i, dim in enumerate(dims):
            for earlier in dims[:i]:
                broadcast_dim(ctx, earlier, dim, text, axis)
        result.append(broadcast_result(dims))
    if any(d is None for d in result):
        return None
    return tuple(result)


def broadcast_result(dims: Sequence[Dim]) -> Dim | None:
    """The size of an axis whose dims are pairwise compatible (checked), if provable."""
    candidates = [d for d in dims if arith.compare(d, "==", 1) is not True]
    if not candidates:
        return 1
    for dim in candidates:
        if arith.compare(dim, "!=", 1) is True:
            return dim  # every other candidate equals it or is 1
    first = candidates[0]
    if all(arith.compare(d, "==", first) is True for d in candidates):
        return first  # all 1 together, or all the same size
    for dim in sorted(candidates, key=_simplicity):
        if all(other is dim or _one_implies_one(dim, other) for other in candidates):
            return dim  # where dim is 1 every other is 1; elsewhere the others are 1 or dim
    return None


def _simplicity(dim: Dim) -> tuple[bool, int]:
    """Orders equally valid answers: a bare symbol first, then shorter text."""
    return (not isinstance(dim, arith.Sym), len(str(dim)))


def _one_implies_one(dim: Dim, other: Dim) -> bool:
    """Whether ``dim == 1`` implies ``other == 1`` for every value of the symbols, decided
    by cases on small values (``m == 1`` implies ``min(1, m) == 1``, so ``m`` is the
    broadcast of ``m`` and ``min(1, m)``, the size of ``x[:1]``)."""

    def decide(ranges: dict) -> bool | None:
        if arith.compare(dim, "!=", 1, ranges) is True:
            return True
        return arith.compare(other, "==", 1, ranges) or None

    return arith.decide_by_cases(decide, (dim, other)) is True


def broadcast_infos(
    ctx: InferContext, infos: Sequence[TensorInfo], dtype: str, weak: bool = False
) -> TensorInfo:
    """The broadcast result of tensor operands, with the given dtype (and weak flag)."""
    if any(i.ndim is None for i in infos):
        return TensorInfo(dtype=dtype, weak=weak)
    if any(i.shape is None for i in infos):
        return TensorInfo(dtype=dtype, ndim=max((i.ndim for i in infos), default=0), weak=weak)
    shape = broadcast_shapes(ctx, [i.shape for i in infos])
    if shape is None:
        return TensorInfo(dtype=dtype, ndim=max(i.ndim for i in infos), weak=weak)
    return TensorInfo(shape, dtype, weak=weak)


def broadcast_to_shape(
    ctx: InferContext, source: Sequence[Dim], target: Sequence[Dim], what: str
) -> None:
    """Require that ``source`` broadcasts to exactly ``target`` (as ``np.broadcast_to``).

    Per aligned axis the source dim must be 1 or equal to the target dim; an unproven
    axis becomes the run-time check ``(s - 1) * (s - t) == 0``, which is that relation.
    """
    if len(source) > len(target):
        ctx.fail(
            f"cannot broadcast {what} of shape {_shape_text(source)} to shape "
            f"{_shape_text(target)}: rank {len(source)} > {len(target)}",
        )
    offset = len(target) - len(source)
    for axis, dim in enumerate(source):
        wanted = target[offset + axis]
        if one_or_equal(dim, wanted):
            continue
        message = (
            f"{ctx.op_name}: cannot broadcast {what} of shape {_shape_text(source)} to shape "
            f"{_shape_text(target)}: axis {offset + axis} has size {dim}, expected 1 or {wanted}"
        )
        ctx.require(Check("eq", ((dim - 1) * (dim - wanted), 0), message))


def one_or_equal(dim: Dim, target: Dim) -> bool:
    """Whether ``dim == 1 or dim == target`` holds for every value of the symbols, also
    by cases on small values (``min(1, m)`` is ``m`` at 0 and 1 above)."""
    if arith.compare(dim, "==", 1) is True or arith.compare(dim, "==", target) is True:
        return True

    def decide(ranges: dict) -> bool | None:
        if arith.compare(dim, "==", 1, ranges) is True:
            return True
        return arith.compare(dim, "==", target, ranges) or None

    return arith.decide_by_cases(decide, (dim, target)) is True


def require_one_or(ctx: InferContext, dim: Dim, target: Dim, message: str) -> None:
    """Require ``dim == 1 or dim == target`` (one-sided broadcasting of ``dim`` to ``target``)."""
    if one_or_equal(dim, target):
        return
    if arith.compare(dim, "!=", 1) is True:
        ctx.require(Check("eq", (dim, target), f"{ctx.op_name}: {message}"))
        return
    # (dim - 1) * (dim - target) == 0 holds exactly when dim is 1 or target
    ctx.require(Check("eq", ((dim - 1) * (dim - target), 0), f"{ctx.op_name}: {message}"))


def require_equal(ctx: InferContext, a: Dim, b: Dim, message: str) -> Dim:
    """Require ``a == b`` (proven, or checked at run time) and return ``a``."""
    ctx.require(Check("eq", (a, b), f"{ctx.op_name}: {message}"))
    return a


def nonzero_floordiv(a: Dim, b: Dim) -> Dim:
    """``a // b`` for a divisor that the op's run-time checks require to be non-zero.

    The exact polynomial quotient when there is one (:func:`arith.exact_div`, equal to
    ``a // b`` wherever ``b != 0``), else :func:`arith.floordiv`, which must hold for
    every value and so cannot cancel a divisor that may be zero: for
    ``x.reshape(c, a * b * d, -1)`` of ``(a, b, c, d)`` the ``-1`` is
    ``(a * b * c * d) // (a * b * c * d)``, which is 1 because reshape requires the other
    axes to hold elements.
    """
    quotient = arith.exact_div(a, b)
    return arith.floordiv(a, b) if quotient is None else quotient


def num_elements(shape: Sequence[Dim]) -> Dim:
    """The product of ``shape``'s dims (1 for a scalar)."""
    return math.prod(shape, start=1)


__all__ = [
    "PATTERNS",
    "Dim",
    "InferContext",
    "Op",
    "as_tensor_info",
    "compute_dtype",
    "broadcast_dim",
    "broadcast_infos",
    "broadcast_result",
    "broadcast_shapes",
    "broadcast_to_shape",
    "fail",
    "get",
    "in_compute_dtype",
    "info_text",
    "nonzero_floordiv",
    "normalize_axis",
    "num_elements",
    "one_or_equal",
    "operand_type",
    "promote_types",
    "promote_weak",
    "reference_dtype",
    "reference_input",
    "register",
    "registry",
    "require_equal",
    "require_one_or",
    "tensor_args",
    "to_inexact",
    "unsupported_dtype",
    "value_type",
    "weak_result",
    "with_dtype",
]
