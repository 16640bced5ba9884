"""Integer index math (arith dims) as 64-bit LLVM integer expressions.

A dim is read through ``arith.to_python`` (the contract's code-generation form:
Python source over symbol names with ``+ - * // %``, unary minus, ``min`` and
``max``), parsed once per dim and emitted over the symbol values in scope.
``//`` and ``%`` follow Python's floor semantics for negative and symbolic
operands (see :mod:`.numeric`).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping

from llvmlite import ir

from ... import arith
from ...errors import LoweringError
from .numeric import I64, floordiv_int, mod_int

__all__ = ["emit_dim"]

Dim = arith.Dim


@functools.lru_cache(maxsize=4096)
def _parsed(dim: Dim) -> ast.expr:
    source = arith.to_python(dim)
    try:
        return ast.parse(source, mode="eval").body
    except SyntaxError as err:
        raise LoweringError(f"internal error: arith.to_python({dim}) gave {source!r}") from err


def emit_dim(builder: ir.IRBuilder, dim: Dim, symbols: Mapping[str, ir.Value]) -> ir.Value:
    """Emit ``dim`` as an ``i64`` value; ``symbols`` maps symbol names to ``i64`` values.

    Raises:
        LoweringError: the dim uses a symbol that is not in scope.
    """
    if isinstance(dim, int):
        return ir.Constant(I64, dim)
    return _Emitter(builder, symbols, dim).visit(_parsed(dim))


class _Emitter:
    def __init__(self, builder: ir.IRBuilder, symbols: Mapping[str, ir.Value], dim: Dim) -> None:
        self.builder = builder
        self.symbols = symbols
        self.dim = dim

    def visit(self, node: ast.expr) -> ir.Value:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise LoweringError(f"unsupported construct {ast.dump(node)} in index {self.dim}")
        return method(node)

    def visit_Constant(self, node: ast.Constant) -> ir.Value:
        if not isinstance(node.value, int) or isinstance(node.value, bool):
            raise LoweringError(f"non-integer constant {node.value!r} in index {self.dim}")
        return ir.Constant(I64, node.value)

    def visit_Name(self, node: ast.Name) -> ir.Value:
        value = self.symbols.get(node.id)
        if value is None:
            in_scope = ", ".join(sorted(self.symbols)) or "none"
            raise LoweringError(
                f"symbol {node.id!r} of index {self.dim} is not bound here "
                f"(symbols in scope: {in_scope})"
            )
        return value

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ir.Value:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.USub):
            return self.builder.sub(ir.Constant(I64, 0), operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        raise LoweringError(f"unsupported unary operator in index {self.dim}")

    def visit_BinOp(self, node: ast.BinOp) -> ir.Value:
        left, right = self.visit(node.left), self.visit(node.right)
        op, builder = node.op, self.builder
        if isinstance(op, ast.Add):
            return builder.add(left, right)
        if isinstance(op, ast.Sub):
            return builder.sub(left, right)
        if isinstance(op, ast.Mult):
            return builder.mul(left, right)
        if isinstance(op, ast.FloorDiv):
            return floordiv_int(builder, left, right, signed=True)
        if isinstance(op, ast.Mod):
            return mod_int(builder, left, right, signed=True)
        if isinstance(op, ast.Pow):
            return _power(builder, left, right)
        raise LoweringError(f"unsupported operator {type(op).__name__} in index {self.dim}")

    def visit_Call(self, node: ast.Call) -> ir.Value:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in ("min", "max") or node.keywords or len(node.args) < 2:
            raise LoweringError(f"unsupported call {ast.dump(node)} in index {self.dim}")
        predicate = "<" if name == "min" else ">"
        values = [self.visit(arg) for arg in node.args]
        result = values[0]
        for value in values[1:]:
            keep = self.builder.icmp_signed(predicate, result, value)
            result = self.builder.select(keep, result, value)
        return result


def _power(builder: ir.IRBuilder, base: ir.Value, exponent: ir.Value) -> ir.Value:
    if not isinstance(exponent, ir.Constant) or exponent.constant < 0:
        raise LoweringError("an index power must have a constant non-negative exponent")
    result: ir.Value = ir.Constant(I64, 1)
    for _ in range(exponent.constant):
        result = builder.mul(result, base)
    return result
