"""Small lowerable ops for the pass tests (unregistered: the registry stays untouched).

Each is an ``ops.base.Op`` with ``infer`` (via the shared helpers) and ``lower``
building a shape-generic kernel with ``tir.compute`` (symbols d0, d1, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relaxjax import arith, tir
from relaxjax.ir import BlockBuilder, IRModule, TensorInfo, Var
from relaxjax.ops.base import Op, broadcast_infos, promote_types, tensor_args


def kernel_dims(info: TensorInfo, first: int = 0) -> tuple:
    """Static dims stay ints; the others (and unknown ones) become kernel symbols d{first}..."""
    shape = info.shape if info.shape is not None else (None,) * info.ndim
    return tuple(
        d if isinstance(d, int) else arith.Sym(f"d{first + i}") for i, d in enumerate(shape)
    )


class FakeAdd(Op):
    """Same-shape (or broadcasting, at the graph level) addition."""

    name = "fake_add"
    pattern = "elementwise"

    def infer(self, args, attrs, ctx):
        infos = tensor_args(self.name, args, 2)
        return broadcast_infos(ctx, infos, promote_types(self.name, args))

    def lower(self, arg_infos, attrs, out_info):
        shape = kernel_dims(out_info)
        a = tir.placeholder(shape, out_info.dtype, "A")
        b = tir.placeholder(shape, out_info.dtype, "B")
        c = tir.compute(shape, lambda *i: a[i] + b[i], name="C")
        return tir.create_prim_func([a, b, c], name="fake_add")

    def reference(self, a, b, attrs=None):
        return np.add(a, b)


@dataclass(frozen=True)
class ScaleAttrs:
    factor: float = 2.0


class FakeScale(Op):
    """``x * factor``: the factor is an attribute, baked into the kernel."""

    name = "fake_scale"
    Attrs = ScaleAttrs
    pattern = "elementwise"

    def infer(self, args, attrs, ctx):
        return tensor_args(self.name, args, 1)[0]

    def lower(self, arg_infos, attrs, out_info):
        shape = kernel_dims(out_info)
        a = tir.placeholder(shape, out_info.dtype, "A")
        c = tir.compute(shape, lambda *i: a[i] * attrs.factor, name="C")
        return tir.create_prim_func([a, c], name="fake_scale")

    def reference(self, a, attrs=None):
        return a * (attrs or ScaleAttrs()).factor


class FakeAxpy(Op):
    """``x * s + 1`` with a scalar operand ``s``, which the kernel takes as a 0-d buffer."""

    name = "fake_axpy"
    pattern = "elementwise"

    def infer(self, args, attrs, ctx):
        return tensor_args(self.name, args, 2)[0]

    def lower(self, arg_infos, attrs, out_info):
        shape = kernel_dims(out_info)
        a = tir.placeholder(shape, out_info.dtype, "A")
        s = tir.placeholder((), out_info.dtype, "S")
        c = tir.compute(shape, lambda *i: a[i] * s[()] + 1.0, name="C")
        return tir.create_prim_func([a, s, c], name="fake_axpy")

    def reference(self, a, s, attrs=None):
        return a * s + 1.0


class FakeNoLowering(Op):
    name = "fake_opaque"

    def infer(self, args, attrs, ctx):
        return tensor_args(self.name, args, 1)[0]

    def reference(self, a, attrs=None):
        return np.array(a)


ADD, SCALE, AXPY, OPAQUE = FakeAdd(), FakeScale(), FakeAxpy(), FakeNoLowering()


def module(params, body, name="main", kernels=None) -> IRModule:
    """A module whose function ``name`` returns ``body(bb, *params)``."""
    bb = BlockBuilder(IRModule(kernels or {}))
    with bb.function(name, list(params)):
        with bb.dataflow():
            result = body(bb, *params)
            out = bb.emit_output(result)
        bb.emit_func_output(out)
    return bb.finalize()


def var(name: str, shape, dtype: str = "float32") -> Var:
    return Var(name, TensorInfo(shape, dtype))
