"""One lowering function per TIR expression node, each returning a register value.

Semantics follow ``relaxjax.tir.expr`` (the reference interpreter is the spec):
integer ``+ - *`` wrap; ``//`` and ``%`` floor (numpy's rules for floats);
``min``/``max`` propagate NaN (``llvm.minimum``/``llvm.maximum``); comparisons of
floats are ordered except ``!=``; float16 arithmetic is LLVM ``half`` arithmetic
(which rounds each result exactly like computing in float32 and rounding), and
bfloat16 computes in float32 and rounds each result to nearest even.
``Select`` evaluates both operands; the ``if_then_else`` intrinsic only the chosen one.
"""

from __future__ import annotations

from llvmlite import ir

from ... import dtypes
from ...errors import LoweringError
from ...tir.expr import (
    BinOp,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IndexExpr,
    IntImm,
    PrimExpr,
    Select,
    UnaryOp,
    Var,
)
from ...tir.intrinsics import LAZY_SELECT
from . import numeric
from .dialect import declare, dialect_of
from .emitter import FunctionEmitter, lowers_expr
from .index import emit_dim
from .intrinsics import emit_math
from .memory import element_pointer
from .numeric import F16, F32

__all__ = ["emit_binary"]

_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
_FLOAT_SUFFIX = {numeric.F16: "f16", numeric.F32: "f32", numeric.F64: "f64"}


@lowers_expr(IntImm)
def lower_int_imm(emitter: FunctionEmitter, node: IntImm) -> ir.Value:
    """An integer or bool constant."""
    return numeric.constant(node.value, node.dtype)


@lowers_expr(FloatImm)
def lower_float_imm(emitter: FunctionEmitter, node: FloatImm) -> ir.Value:
    """A float constant (already rounded to its dtype)."""
    return numeric.constant(node.value, node.dtype)


@lowers_expr(IndexExpr)
def lower_index_expr(emitter: FunctionEmitter, node: IndexExpr) -> ir.Value:
    """An arith dim used as an int64 value."""
    return emit_dim(emitter.builder, node.dim, emitter.scope.symbols)


@lowers_expr(Var)
def lower_var(emitter: FunctionEmitter, node: Var) -> ir.Value:
    """A value variable bound by an enclosing ``LetStmt``."""
    value = emitter.scope.vars.get(node)
    if value is None:
        raise LoweringError(f"variable {node.name} is used outside the let that binds it")
    return value


@lowers_expr(BufferLoad)
def lower_buffer_load(emitter: FunctionEmitter, node: BufferLoad) -> ir.Value:
    """``buffer[indices]``."""
    pointer = element_pointer(emitter, node.buffer, node.indices)
    return numeric.load(emitter.builder, pointer, node.buffer.dtype)


@lowers_expr(BinOp)
def lower_binop(emitter: FunctionEmitter, node: BinOp) -> ir.Value:
    """``a op b``."""
    a, b = emitter.expr(node.a), emitter.expr(node.b)
    return emit_binary(emitter, node.op, a, b, node.a.dtype)


@lowers_expr(UnaryOp)
def lower_unary(emitter: FunctionEmitter, node: UnaryOp) -> ir.Value:
    """``-a`` or ``not a``."""
    value = emitter.expr(node.a)
    builder = emitter.builder
    if node.op == "not":
        return builder.xor(value, ir.Constant(value.type, 1))
    if dtypes.is_floating(node.dtype):
        return dialect_of(emitter.module).negate(builder, value, emitter.flags)
    return builder.sub(ir.Constant(value.type, 0), value)


@lowers_expr(Select)
def lower_select(emitter: FunctionEmitter, node: Select) -> ir.Value:
    """``true_value if condition else false_value``, both evaluated. Marked
    ``!unpredictable``: a select in a kernel chooses by data (a merge, a masked value),
    so the x86 backend keeps it a conditional move instead of a branch that would
    mispredict half the time."""
    condition = emitter.expr(node.condition)
    true_value = emitter.expr(node.true_value)
    false_value = emitter.expr(node.false_value)
    value = emitter.builder.select(condition, true_value, false_value)
    value.set_metadata("unpredictable", emitter.builder.module.add_metadata([]))
    return value


@lowers_expr(Cast)
def lower_cast(emitter: FunctionEmitter, node: Cast) -> ir.Value:
    """``value`` converted to ``dtype``."""
    value = emitter.expr(node.value)
    return numeric.cast(emitter.builder, value, node.value.dtype, node.dtype)


@lowers_expr(Call)
def lower_call(emitter: FunctionEmitter, node: Call) -> ir.Value:
    """A math intrinsic, the lazy ``if_then_else``, or an intrinsic of the target."""
    special = emitter.context.calls.get(node.intrinsic)
    if special is not None:
        return special(emitter, node)
    if node.intrinsic == LAZY_SELECT:
        return _lazy_select(emitter, *node.args)
    args = [emitter.expr(arg) for arg in node.args]
    return emit_math(emitter.builder, node.intrinsic, args, node.args[0].dtype, emitter.flags)


def _lazy_select(
    emitter: FunctionEmitter, condition: PrimExpr, true_value: PrimExpr, false_value: PrimExpr
) -> ir.Value:
    builder = emitter.builder
    chosen = emitter.expr(condition)
    with builder.if_else(chosen) as (then, otherwise):
        with then:
            true_result = emitter.expr(true_value)
            true_block = builder.block
        with otherwise:
            false_result = emitter.expr(false_value)
            false_block = builder.block
    merged = builder.phi(true_result.type)
    merged.add_incoming(true_result, true_block)
    merged.add_incoming(false_result, false_block)
    return merged


def emit_binary(
    emitter: FunctionEmitter, op: str, a: ir.Value, b: ir.Value, dtype: str
) -> ir.Value:
    """``a op b`` for register values of operand dtype ``dtype``."""
    builder = emitter.builder
    if op == "and":
        return builder.and_(a, b)
    if op == "or":
        return builder.or_(a, b)
    if dtypes.is_floating(dtype):
        return _float_binary(emitter, op, a, b, dtype)
    return _integer_binary(builder, op, a, b, signed=not dtypes.is_unsigned(dtype))


def _float_binary(
    emitter: FunctionEmitter, op: str, a: ir.Value, b: ir.Value, dtype: str
) -> ir.Value:
    builder, flags = emitter.builder, emitter.flags
    if op in _COMPARISONS:
        if op == "!=":
            return builder.fcmp_unordered("!=", a, b, flags=flags)
        return builder.fcmp_ordered(op, a, b, flags=flags)
    if op in ("min", "max"):
        name = f"llvm.{'minimum' if op == 'min' else 'maximum'}.{_FLOAT_SUFFIX[a.type]}"
        function = declare(emitter.module, name, a.type, [a.type, a.type])
        return builder.call(function, [a, b], fastmath=flags)
    if op in ("//", "%"):
        wide_a, wide_b = _widen_half(builder, a), _widen_half(builder, b)
        compute = numeric.floordiv_float if op == "//" else numeric.mod_float
        result = compute(builder, wide_a, wide_b, flags)
        if a.type == F16:
            result = builder.fptrunc(result, F16)
        return numeric.round_to_dtype(builder, result, dtype)
    arithmetic = {"+": builder.fadd, "-": builder.fsub, "*": builder.fmul, "/": builder.fdiv}
    if op not in arithmetic:
        raise LoweringError(f"binary op {op!r} is not defined for {dtype}")
    if a.type == F16 and dialect_of(emitter.module).half_in_float:
        # Exact: float has 2 * 11 + 2 bits, so rounding its result to half again is the
        # correctly rounded half result (no double-rounding error).
        wide = arithmetic[op](_widen_half(builder, a), _widen_half(builder, b), flags=flags)
        return builder.fptrunc(wide, F16)
    result = arithmetic[op](a, b, flags=flags if op == "/" else emitter.arithmetic_flags(dtype))
    return numeric.round_to_dtype(builder, result, dtype)


def _widen_half(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    return numeric.widen(builder, value, F32) if value.type == F16 else value


def _integer_binary(
    builder: ir.IRBuilder, op: str, a: ir.Value, b: ir.Value, signed: bool
) -> ir.Value:
    if op in _COMPARISONS:
        compare = builder.icmp_signed if signed else builder.icmp_unsigned
        return compare(op, a, b)
    if op in ("min", "max"):
        compare = builder.icmp_signed if signed else builder.icmp_unsigned
        keep_a = compare("<" if op == "min" else ">", a, b)
        return builder.select(keep_a, a, b)
    if op == "+":
        return builder.add(a, b)
    if op == "-":
        return builder.sub(a, b)
    if op == "*":
        return builder.mul(a, b)
    if op == "//":
        return numeric.floordiv_int(builder, a, b, signed)
    if op == "%":
        return numeric.mod_int(builder, a, b, signed)
    raise LoweringError(f"binary op {op!r} is not defined for integers")
