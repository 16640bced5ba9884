"""Unary elementwise math: ``negative abs exp log sqrt rsqrt tanh sin cos logical_not``,
and the unary op classes that ``astype`` and the activations of :mod:`relaxjax.ops.nn`
build on.

Each op's dtype rule is one method, ``result_dtype(x)``, shared by ``infer`` and by the
numpy ``reference`` so the two can never disagree. An op that applies one function
names it twice: ``numpy_function`` for the reference, ``tir_function`` for the kernel.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np

from relaxjax import dtypes, tir
from relaxjax.ir import StructInfo
from relaxjax.ops.base import (
    InferContext,
    Op,
    as_tensor_info,
    in_compute_dtype,
    operand_type,
    register,
    tensor_args,
    to_inexact,
    unsupported_dtype,
    value_type,
    weak_result,
    with_dtype,
)
from relaxjax.ops.kernel import convert, single_input
from relaxjax.tir import PrimExpr, PrimFunc, te

OperandType = dtypes.Operand


class UnaryOp(Op):
    """``f(x)`` applied to every element; the shape is unchanged."""

    pattern = "elementwise"
    folds_scalars = True
    num_inputs = 1
    #: Whether a weakly typed operand gives a weakly typed result (jax's ``lax`` unary
    #: functions keep ``weak_type``; compositions with array constants, such as
    #: ``jax.nn.gelu``, do not).
    keeps_weak: ClassVar[bool] = True

    def input_dtype(self, x: OperandType) -> str:
        """The dtype the operand is converted to before the computation."""
        return dtypes.result_type(x)

    def result_dtype(self, x: OperandType) -> str:
        """The dtype of the result (raises ``TypeError`` for an unsupported dtype)."""
        return self.input_dtype(x)

    #: The numpy and loop-level functions of one operand that ``compute`` and ``scalar``
    #: apply, for ops that need nothing else.
    numpy_function: ClassVar[Callable[[np.ndarray], np.ndarray]]
    tir_function: ClassVar[Callable[[PrimExpr], PrimExpr]]

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        """The numpy computation on the converted operand."""
        return self.numpy_function(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        """The loop-level computation of one element (operand already converted)."""
        return self.tir_function(x)

    def promotion_operands(self, x: OperandType) -> tuple[OperandType, ...]:
        """The operands whose promotion gives the result's dtype (and its weak type)."""
        return (x,)

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        (x,) = tensor_args(self.name, args, 1)
        operand = operand_type(args[0])
        dtype = self.result_dtype(operand)
        weak = self.keeps_weak and weak_result(self.promotion_operands(operand), dtype)
        return with_dtype(x, dtype, weak)

    def lower(
        self, arg_infos: Sequence[StructInfo], attrs: object, out_info: StructInfo
    ) -> PrimFunc:
        """``out[i] = scalar(x[i])``; the result has the operand's (kernel) shape."""
        work = self.input_dtype(operand_type(arg_infos[0]))
        out_dtype = as_tensor_info(out_info).dtype
        _, x = single_input(arg_infos)

        def body(*i: object) -> PrimExpr:
            return convert(self.scalar(convert(x[i], work), attrs), out_dtype)

        out = te.compute(x.shape, body, name=self.name)
        return te.create_prim_func([x, out], name=self.name)

    def reference(self, *arrays: object, attrs: object = None) -> np.ndarray:
        (x,) = arrays
        kind = value_type(x)
        out = self.result_dtype(kind)
        with np.errstate(all="ignore"):
            result = self.compute(in_compute_dtype(x, self.input_dtype(kind)), attrs)
        return np.asarray(result).astype(dtypes.to_numpy(out))


class FloatUnaryOp(UnaryOp):
    """A transcendental function: integer and bool operands are converted to float."""

    def input_dtype(self, x: OperandType) -> str:
        return to_inexact(dtypes.result_type(x))


class FloatOnlyUnaryOp(UnaryOp):
    """A function defined on floating operands only (as ``jax.lax.rsqrt`` and jax's
    ``logistic``)."""

    def input_dtype(self, x: OperandType) -> str:
        dtype = dtypes.result_type(x)
        if not dtypes.is_floating(dtype):
            raise unsupported_dtype(self.name, dtype, "a floating dtype")
        return dtype


class SignedUnaryOp(UnaryOp):
    """An arithmetic unary op that rejects bool (as jax does)."""

    def input_dtype(self, x: OperandType) -> str:
        dtype = dtypes.result_type(x)
        if dtypes.is_bool(dtype):
            raise unsupported_dtype(self.name, dtype, "an integer or floating dtype")
        return dtype


@register
class Negative(SignedUnaryOp):
    """``-x`` (unsigned integers wrap around)."""

    name = "negative"
    numpy_function = staticmethod(np.negative)
    tir_function = staticmethod(operator.neg)


@register
class Abs(UnaryOp):
    """``|x|``; bool stays bool."""

    name = "abs"

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return np.abs(x)

    def scalar(self, x: PrimExpr, attrs: object) -> PrimExpr:
        return x if x.dtype == "bool" else tir.abs(x)


@register
class Exp(FloatUnaryOp):
    """``e ** x``."""

    name = "exp"
    numpy_function = staticmethod(np.exp)
    tir_function = staticmethod(tir.exp)


@register
class Log(FloatUnaryOp):
    """The natural logarithm."""

    name = "log"
    numpy_function = staticmethod(np.log)
    tir_function = staticmethod(tir.log)


@register
class Sqrt(FloatUnaryOp):
    """The square root."""

    name = "sqrt"
    numpy_function = staticmethod(np.sqrt)
    tir_function = staticmethod(tir.sqrt)


@register
class Rsqrt(FloatOnlyUnaryOp):
    """``1 / sqrt(x)`` with ``jax.lax.rsqrt`` semantics: floating operands only."""

    name = "rsqrt"
    tir_function = staticmethod(tir.rsqrt)

    def compute(self, x: np.ndarray, attrs: object) -> np.ndarray:
        return 1 / np.sqrt(x)


@register
class Tanh(FloatUnaryOp):
    """The hyperbolic tangent."""

    name = "tanh"
    numpy_function = staticmethod(np.tanh)
    tir_function = staticmethod(tir.tanh)


@register
class Sin(FloatUnaryOp):
    """The sine."""

    name = "sin"
    numpy_function = staticmethod(np.sin)
    tir_function = staticmethod(tir.sin)


@register
class Cos(FloatUnaryOp):
    """The cosine."""

    name = "cos"
    numpy_function = staticmethod(np.cos)
    tir_function = staticmethod(tir.cos)


@register
class LogicalNot(UnaryOp):
    """``not x`` (nonzero is true); the result is bool."""

    name = "logical_not"
    numpy_function = staticmethod(np.logical_not)
    tir_function = staticmethod(tir.logical_not)

    def input_dtype(self, x: OperandType) -> str:
        return "bool"


__all__ = [
    "FloatOnlyUnaryOp",
    "FloatUnaryOp",
    "OperandType",
    "SignedUnaryOp",
    "UnaryOp",
]
