"""Tiny fake operators for the IR tests (the real ones live in relaxjax.ops).

Each has ``name``, ``Attrs`` and ``infer`` — all the IR needs of an op.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from relaxjax import dtypes
from relaxjax.ir import (
    Check,
    ObjectInfo,
    PrimInfo,
    ShapeInfo,
    TensorInfo,
    TupleInfo,
)


def as_tensor(info):
    if isinstance(info, PrimInfo):
        return TensorInfo((), info.dtype)
    assert isinstance(info, TensorInfo), info
    return info


def operand(info):
    return info.weak_operand if isinstance(info, PrimInfo) else info.dtype


class Relu:
    name = "relu"
    Attrs = None

    def infer(self, args, attrs, ctx):
        return as_tensor(args[0])


@dataclass(frozen=True)
class GeluAttrs:
    approximate: bool = False


class Gelu:
    name = "gelu"
    Attrs = GeluAttrs

    def infer(self, args, attrs, ctx):
        return as_tensor(args[0])


class Add:
    """numpy broadcasting; unproven pairs become broadcast checks."""

    name = "add"
    Attrs = None

    def infer(self, args, attrs, ctx):
        a, b = (as_tensor(x) for x in args)
        dtype = dtypes.result_type(operand(args[0]), operand(args[1]))
        if a.shape is None or b.shape is None:
            return TensorInfo(dtype=dtype)
        rank = max(len(a.shape), len(b.shape))
        sa = (1,) * (rank - len(a.shape)) + a.shape
        sb = (1,) * (rank - len(b.shape)) + b.shape
        out = []
        for x, y in zip(sa, sb):
            ctx.require(Check("broadcast", (x, y), "add: shapes must broadcast"))
            if x == 1:
                out.append(y)
            elif y == 1 or x == y:
                out.append(x)
            else:
                out.append(None)
        if any(d is None for d in out):
            return TensorInfo(dtype=dtype, ndim=rank)
        return TensorInfo(tuple(out), dtype)


class Matmul:
    name = "matmul"
    Attrs = None

    def infer(self, args, attrs, ctx):
        a, b = args
        if a.ndim != 2 or b.ndim != 2:
            ctx.fail(f"expects 2-d operands, got {a!r} and {b!r}")
        ctx.require(Check("eq", (a.shape[1], b.shape[0]), "matmul: contraction dims must match"))
        return TensorInfo((a.shape[0], b.shape[1]), dtypes.promote(a.dtype, b.dtype))


class Reshape:
    name = "reshape"
    Attrs = None

    def infer(self, args, attrs, ctx):
        x, shape = args
        assert isinstance(shape, ShapeInfo)
        ctx.require(
            Check("eq", (math.prod(x.shape), math.prod(shape.values)), "reshape: sizes differ")
        )
        return TensorInfo(shape.values, x.dtype)


@dataclass(frozen=True)
class SplitAttrs:
    sections: int
    axis: int = 0


class Split:
    name = "split"
    Attrs = SplitAttrs

    def infer(self, args, attrs, ctx):
        (x,) = args
        n = x.shape[attrs.axis]
        ctx.require(Check("divides", (attrs.sections, n), "split: sections must divide the axis"))
        part = list(x.shape)
        part[attrs.axis] = n // attrs.sections
        return TupleInfo([TensorInfo(part, x.dtype)] * attrs.sections)


@dataclass(frozen=True)
class SumAttrs:
    axis: tuple | None = None
    keepdims: bool = False
    scale: float = 1.0
    label: str = ""


class Sum:
    name = "nn.sum"
    Attrs = SumAttrs

    def infer(self, args, attrs, ctx):
        (x,) = args
        axes = range(x.ndim) if attrs.axis is None else attrs.axis
        shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
        if not attrs.keepdims:
            shape = [d for i, d in enumerate(x.shape) if i not in axes]
        return TensorInfo(shape, x.dtype)


class Opaque:
    """An op whose result is unknown."""

    name = "opaque"
    Attrs = None

    def infer(self, args, attrs, ctx):
        return ObjectInfo()


relu, gelu, add, matmul, reshape, split, nsum, opaque = (
    Relu(),
    Gelu(),
    Add(),
    Matmul(),
    Reshape(),
    Split(),
    Sum(),
    Opaque(),
)
OPS = {op.name: op for op in (relu, gelu, add, matmul, reshape, split, nsum, opaque)}
for _op in OPS.values():  # pickle as the singleton, like the real ops
    type(_op).__reduce__ = lambda self: (_op_named, (self.name,))


def _op_named(name):
    return OPS[name]


@dataclass(frozen=True)
class FakeKernel:
    """Stands in for a tir.PrimFunc: a name and a text form."""

    name: str
    body: str = "pass"

    def __str__(self):
        return f"kernel {self.name}:\n    {self.body}"


def parse_fake_kernel(text):
    head, body = text.split("\n", 1)
    return FakeKernel(head.removeprefix("kernel ").removesuffix(":"), body.strip())
