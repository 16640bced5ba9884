"""TIR as Python-syntax text that :mod:`relaxjax.tir.parser` reads back.

A row-sum kernel prints as::

    @prim_func(outputs=1)
    def rowsum(A: Buffer((n, m), "float32"), B: Buffer((n,), "float32")):
        with block("root"):
            for i in range(n):
                for k in range(m):
                    with block("B"):
                        v_i = axis.spatial(n, i)
                        v_k = axis.reduce(m, k)
                        reads(A[v_i, v_k])
                        writes(B[v_i])
                        with init():
                            B[v_i] = float32(0.0)
                        B[v_i] = B[v_i] + A[v_i, v_k]

Index math prints in arith's canonical text; constants carry their dtype
(``float32(0.5)``, ``int32(3)``; a bare ``3`` is an int64 index value); casts print as
``cast(x, "float16")``; loops other than plain serial ones name their kind
(``parallel(n)``, ``thread_binding(n, thread="threadIdx.x")``).
"""

from __future__ import annotations

import html
import json
import math
import re

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.tir.buffer import Buffer, BufferRegion
from relaxjax.tir.expr import (
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
from relaxjax.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

INDENT = "    "

# Python precedence levels (higher binds tighter).
_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _ATOM = range(8)
_BINARY_PREC = {
    "or": _OR,
    "and": _AND,
    "==": _CMP,
    "!=": _CMP,
    "<": _CMP,
    "<=": _CMP,
    ">": _CMP,
    ">=": _CMP,
    "+": _ADD,
    "-": _ADD,
    "*": _MUL,
    "/": _MUL,
    "//": _MUL,
    "%": _MUL,
}


def dim_text(dim: Dim) -> str:
    """A dim in arith's canonical text."""
    return str(dim)


def _dim_prec(dim: Dim) -> int:
    if isinstance(dim, int):
        return _ATOM if dim >= 0 else _UNARY
    if isinstance(dim, (arith.Sym, arith.Min, arith.Max)):
        return _ATOM
    if isinstance(dim, (arith.FloorDiv, arith.Mod)):
        return _MUL
    return _ADD


def float_text(value: float) -> str:
    """A float literal that reads back exactly (``"inf"``/``"nan"`` quoted)."""
    if math.isnan(value):
        return '"nan"'
    if math.isinf(value):
        return '"inf"' if value > 0 else '"-inf"'
    return repr(float(value))


def _expr(expr: PrimExpr) -> tuple[str, int]:
    """``(text, precedence)`` of an expression."""
    if isinstance(expr, IndexExpr):
        return dim_text(expr.dim), _dim_prec(expr.dim)
    if isinstance(expr, IntImm):
        if expr.dtype == "bool":
            return ("True" if expr.value else "False"), _ATOM
        return f"{expr.dtype}({expr.value})", _ATOM
    if isinstance(expr, FloatImm):
        return f"{expr.dtype}({float_text(expr.value)})", _ATOM
    if isinstance(expr, Var):
        return expr.name, _ATOM
    if isinstance(expr, BufferLoad):
        return _subscript(expr.buffer, expr.indices), _ATOM
    if isinstance(expr, BinOp):
        return _binop(expr)
    if isinstance(expr, UnaryOp):
        if expr.op == "not":
            return f"not {_wrap(expr.a, _NOT)}", _NOT
        return f"-{_wrap(expr.a, _UNARY)}", _UNARY
    if isinstance(expr, Select):
        args = (expr.condition, expr.true_value, expr.false_value)
        return f"select({', '.join(expr_text(a) for a in args)})", _ATOM
    if isinstance(expr, Cast):
        return f'cast({expr_text(expr.value)}, "{expr.dtype}")', _ATOM
    if isinstance(expr, Call):
        return f"{expr.intrinsic}({', '.join(expr_text(a) for a in expr.args)})", _ATOM
    raise TypeError(f"cannot print {type(expr).__name__}")


def _wrap(expr: PrimExpr, needed: int) -> str:
    text, prec = _expr(expr)
    return text if prec >= needed else f"({text})"


def _binop(expr: BinOp) -> tuple[str, int]:
    if expr.op in ("min", "max"):
        return f"{expr.op}({expr_text(expr.a)}, {expr_text(expr.b)})", _ATOM
    prec = _BINARY_PREC[expr.op]
    # Left-associative: the right operand binds tighter; comparisons never chain.
    left_needed = prec + 1 if prec == _CMP else prec
    return f"{_wrap(expr.a, left_needed)} {expr.op} {_wrap(expr.b, prec + 1)}", prec


def expr_text(expr: PrimExpr) -> str:
    """An expression as text."""
    return _expr(expr)[0]


def _index_text(index: Dim | PrimExpr) -> str:
    return expr_text(index) if isinstance(index, PrimExpr) else dim_text(index)


def _subscript(buffer: Buffer, indices) -> str:
    if not indices:
        return f"{buffer.name}[()]"
    return f"{buffer.name}[{', '.join(_index_text(i) for i in indices)}]"


def region_text(region: BufferRegion) -> str:
    """``A[v_i, 0:n]``: a point where the extent is 1, ``start:stop`` otherwise."""
    if not region.region:
        return f"{region.buffer.name}[()]"
    parts = []
    for r in region.region:
        if isinstance(r.extent, int) and r.extent == 1:
            parts.append(dim_text(r.start))
        else:
            parts.append(f"{dim_text(r.start)}:{dim_text(r.stop)}")
    return f"{region.buffer.name}[{', '.join(parts)}]"


def _tuple_text(dims) -> str:
    inner = ", ".join(dim_text(d) for d in dims)
    return f"({inner},)" if len(dims) == 1 else f"({inner})"


def _attr_text(annotations) -> str:
    return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in annotations) + "}"


def buffer_decl_text(buffer: Buffer, head: str) -> str:
    """``head((shape), "dtype", strides=..., scope=...)``."""
    extra = "" if buffer.strides is None else f", strides={_tuple_text(buffer.strides)}"
    extra += "" if buffer.scope == "global" else f', scope="{buffer.scope}"'
    return f'{head}({_tuple_text(buffer.shape)}, "{buffer.dtype}"{extra})'


class _StmtPrinter:
    def __init__(self):
        self.lines: list[str] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def stmt(self, stmt: Stmt, depth: int) -> None:
        method = getattr(self, "print_" + type(stmt).__name__, None)
        if method is None:
            raise TypeError(f"cannot print {type(stmt).__name__}")
        method(stmt, depth)

    def print_SeqStmt(self, stmt: SeqStmt, depth: int) -> None:
        for s in stmt.stmts:
            self.stmt(s, depth)

    def print_For(self, stmt: For, depth: int) -> None:
        if isinstance(stmt.start, int) and stmt.start == 0:
            bounds = dim_text(stmt.extent)
        else:
            bounds = f"{dim_text(stmt.start)}, {dim_text(stmt.start + stmt.extent)}"
        kind = stmt.kind
        if kind == "serial":
            kind = "serial" if stmt.annotations else "range"
        extra = "" if stmt.thread_tag is None else f', thread="{stmt.thread_tag}"'
        if stmt.annotations:
            extra += f", annotations={_attr_text(stmt.annotations)}"
        self.emit(depth, f"for {stmt.var.name} in {kind}({bounds}{extra}):")
        self.stmt(stmt.body, depth + 1)

    def print_BlockRealize(self, stmt: BlockRealize, depth: int) -> None:
        block = stmt.block
        self.emit(depth, f"with block({json.dumps(block.name)}):")
        inner = depth + 1
        for iv, value in zip(block.iter_vars, stmt.iter_values):
            self.emit(
                inner, f"{iv.var.name} = axis.{iv.kind}({dim_text(iv.extent)}, {dim_text(value)})"
            )
        if not (isinstance(stmt.predicate, IntImm) and stmt.predicate.value == 1):
            self.emit(inner, f"where({expr_text(stmt.predicate)})")
        if block.reads:
            self.emit(inner, f"reads({', '.join(region_text(r) for r in block.reads)})")
        if block.writes:
            self.emit(inner, f"writes({', '.join(region_text(r) for r in block.writes)})")
        if block.annotations:
            self.emit(inner, f"block_attr({_attr_text(block.annotations)})")
        for buffer in block.alloc_buffers:
            self.emit(inner, f"{buffer.name} = {buffer_decl_text(buffer, 'alloc_buffer')}")
        if block.init is not None:
            self.emit(inner, "with init():")
            self.stmt(block.init, inner + 1)
        self.stmt(block.body, inner)

    def print_Block(self, stmt: Block, depth: int) -> None:
        # A bare Block (outside a BlockRealize) prints with its iterators unbound.
        self.print_BlockRealize(
            BlockRealize(tuple(iv.var for iv in stmt.iter_vars), True, stmt), depth
        )

    def print_BufferStore(self, stmt: BufferStore, depth: int) -> None:
        self.emit(depth, f"{_subscript(stmt.buffer, stmt.indices)} = {expr_text(stmt.value)}")

    def print_LetStmt(self, stmt: LetStmt, depth: int) -> None:
        head = "let" if isinstance(stmt.var, Var) else "let_sym"
        self.emit(depth, f"with {head}({stmt.var.name}, {expr_text(stmt.value)}):")
        self.stmt(stmt.body, depth + 1)

    def print_IfThenElse(self, stmt: IfThenElse, depth: int) -> None:
        self.emit(depth, f"if {expr_text(stmt.condition)}:")
        self.stmt(stmt.then_case, depth + 1)
        if stmt.else_case is not None:
            self.emit(depth, "else:")
            self.stmt(stmt.else_case, depth + 1)

    def print_Allocate(self, stmt: Allocate, depth: int) -> None:
        decl = buffer_decl_text(stmt.buffer, "allocate")
        self.emit(depth, f"with {decl} as {stmt.buffer.name}:")
        self.stmt(stmt.body, depth + 1)

    def print_Evaluate(self, stmt: Evaluate, depth: int) -> None:
        self.emit(depth, f"evaluate({expr_text(stmt.value)})")


def stmt_text(stmt: Stmt, depth: int = 0) -> str:
    """A statement as text (indented by ``depth`` levels)."""
    printer = _StmtPrinter()
    printer.stmt(stmt, depth)
    return "\n".join(printer.lines)


def _header(func) -> str:
    options = [f"outputs={func.num_outputs}"]
    bounds = {s.name: (s.lower, s.upper) for s in func.symbols() if (s.lower, s.upper) != (0, None)}
    if bounds:
        options.append(f"bounds={bounds!r}")
    if func.attrs:
        options.append(f"attrs={_attr_text(func.attrs)}")
    params = [f"{p.name}: {buffer_decl_text(p, 'Buffer')}" for p in func.params]
    params += [f"{s.name}: int64" for s in func.scalar_params]
    return f"@prim_func({', '.join(options)})\ndef {func.name}({', '.join(params)}):"


def func_text(func) -> str:
    """A PrimFunc as text."""
    return f"{_header(func)}\n{stmt_text(func.body, 1)}"


_KEYWORDS = ("for", "in", "with", "if", "else", "def", "as", "not", "and", "or")


def func_html(func) -> str:
    """The text of a PrimFunc as HTML for notebooks (keywords in bold)."""
    escaped = html.escape(func_text(func))
    for word in _KEYWORDS:
        escaped = _bold_word(escaped, word)
    return f'<pre class="relaxjax-tir">{escaped}</pre>'


def _bold_word(text: str, word: str) -> str:
    return re.sub(rf"(?<![\w.]){word}(?![\w])", f"<b>{word}</b>", text)
