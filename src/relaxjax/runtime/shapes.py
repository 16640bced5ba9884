"""Run-time shape logic the generated code calls: checks, and coarse shapes.

- :func:`check_condition` writes a recorded ``Check`` as a Python condition that is
  true when the check *fails*; :func:`check_error` builds its ``ShapeError``.
- :func:`concrete_infer` re-runs an op's own shape rule (``op.infer``) on the concrete
  shapes of its operands, for results whose deduced shape was coarse (e.g.
  broadcasting ``(n,)`` with ``(m,)``); the op's ``ShapeError`` is the user's error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace

from relaxjax import arith, ops
from relaxjax.arith import Dim
from relaxjax.errors import LoweringError, ShapeError, SourceLocation
from relaxjax.ir import (
    Check,
    InferContext,
    PrimInfo,
    ShapeInfo,
    StructInfo,
    TensorInfo,
    TupleInfo,
    subs_info,
)
from relaxjax.passes.legalize import LegalizedAttrs
from relaxjax.runtime import messages
from relaxjax.runtime.values import Value

__all__ = [
    "check_condition",
    "check_error",
    "concrete_infer",
    "concretize",
    "data_leaves",
    "original_tensors",
    "tensor_leaves",
]


def check_condition(check: Check, code: Callable[[Dim], str]) -> str:
    """Python source that is true when ``check`` FAILS."""
    args = [f"({code(a)})" for a in check.args]
    if check.kind == "nonneg":
        return f"{args[0]} < 0"
    a, b = args
    if check.kind == "eq":
        return f"{a} != {b}"
    if check.kind == "le":
        return f"{a} > {b}"
    if check.kind == "broadcast":
        return f"not ({a} == {b} or {a} == 1 or {b} == 1)"
    return f"({b} != 0 if {a} == 0 else {b} % {a} != 0)"


def tensor_leaves(info: StructInfo, where: str) -> list[TensorInfo]:
    """The tensors a kernel writes for a result of ``info`` (a scalar is a 0-d tensor)."""
    if isinstance(info, TensorInfo):
        return [info]
    if isinstance(info, PrimInfo):
        return [TensorInfo((), info.dtype)]
    if isinstance(info, TupleInfo):
        return [leaf for field in info.fields for leaf in tensor_leaves(field, where)]
    raise LoweringError(f"{where}: a kernel can only produce tensors, not {info!r}")


def check_error(
    check: Check, names: Sequence[str], sites: Mapping, location: SourceLocation | None
) -> Callable[[tuple], ShapeError]:
    def check_error(env_values: tuple) -> ShapeError:
        env = dict(zip(names, env_values))
        return ShapeError(messages.failed_check(check, env, sites), location=location)

    return check_error


def data_leaves(infos: Sequence[StructInfo]) -> list[StructInfo]:
    """Tensor and scalar infos in operand order (tuples flattened, shapes skipped)."""
    leaves: list[StructInfo] = []
    for info in infos:
        if isinstance(info, TupleInfo):
            leaves.extend(data_leaves(info.fields))
        elif isinstance(info, (TensorInfo, PrimInfo)):
            leaves.append(info)
    return leaves


def original_tensors(
    arg_infos: Sequence[StructInfo], inputs: Sequence[Value], where: str
) -> list[Value]:
    """The kernel inputs that were tensor operands of the original op call.

    Legalisation passes every data operand (scalars as 0-d buffers) or only the tensors.
    """
    leaves = data_leaves(arg_infos)
    if len(leaves) == len(inputs):
        return [v for v, leaf in zip(inputs, leaves) if isinstance(leaf, TensorInfo)]
    tensors = [leaf for leaf in leaves if isinstance(leaf, TensorInfo)]
    if len(tensors) != len(inputs):
        raise LoweringError(
            f"{where}: the call_tir passes {len(inputs)} buffers for an op call with "
            f"{len(leaves)} operands"
        )
    return list(inputs)


def concrete_infer(
    attrs: LegalizedAttrs,
    symbol_names: Sequence[str],
    num_leaves: int,
    location: SourceLocation | None,
) -> Callable:
    """A function of (symbol values, input shapes) -> the output leaves' concrete shapes."""
    op = ops.get(attrs.op_name)
    op_attrs = op.Attrs(**dict(attrs.op_attrs)) if op.Attrs is not None else None
    arg_infos = attrs.arg_infos

    def infer(env_values: tuple, shapes: tuple) -> tuple:
        env = dict(zip(symbol_names, env_values))
        concrete = iter(shapes)
        infos = [concretize(info, concrete, env) for info in arg_infos]
        ctx = InferContext(op.name, infos, location)
        result = op.infer(infos, concrete_attrs(op_attrs, env), ctx)
        leaves = tensor_leaves(result, op.name)
        if len(leaves) != num_leaves or any(
            leaf.shape is None or not all(isinstance(d, int) for d in leaf.shape) for leaf in leaves
        ):
            raise LoweringError(
                f"{op.name}: its shape rule gave {result!r} for concrete operands {infos!r}"
            )
        return tuple(leaf.shape for leaf in leaves)

    return infer


def concrete_attrs(attrs: object, env: Mapping[str, int]) -> object:
    """``attrs`` (an op's frozen dataclass) with every symbolic dim in it evaluated in ``env``."""
    if attrs is None or not any(_has_dims(getattr(attrs, f.name)) for f in fields(attrs)):
        return attrs
    changes = {f.name: _concrete_value(getattr(attrs, f.name), env) for f in fields(attrs)}
    return replace(attrs, **changes)


def _has_dims(value: object) -> bool:
    if isinstance(value, arith.Expr):
        return True
    return isinstance(value, tuple) and any(_has_dims(v) for v in value)


def _concrete_value(value: object, env: Mapping[str, int]) -> object:
    if isinstance(value, arith.Expr):
        return arith.evaluate(value, env)
    if isinstance(value, tuple):
        return tuple(_concrete_value(v, env) for v in value)
    return value


def concretize(info: StructInfo, shapes, env: Mapping[str, int]) -> StructInfo:
    """``info`` with each tensor's shape taken from ``shapes`` and symbols from ``env``."""
    if isinstance(info, TensorInfo):
        return TensorInfo(next(shapes), info.dtype)
    if isinstance(info, TupleInfo):
        return TupleInfo(concretize(f, shapes, env) for f in info.fields)
    if isinstance(info, (PrimInfo, ShapeInfo)):
        return subs_info(info, env)
    return info
