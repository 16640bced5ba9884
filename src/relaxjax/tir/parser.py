"""Reads the text of :mod:`relaxjax.tir.printer` back: ``parse_prim_func(str(f)) == f``.

The text is Python syntax, so it is parsed with :mod:`ast` and interpreted node by
node (never executed). Names resolve in one namespace per kernel: buffers, symbols,
loop variables, block iterators and let variables. Errors are ``ValueError`` naming
the line.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from relaxjax import arith, dtypes
from relaxjax.arith import Dim
from relaxjax.tir.buffer import Buffer, BufferRegion, Range
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
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.intrinsics import INTRINSIC_NAMES
from relaxjax.tir.stmt import (
    FOR_KINDS,
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    IterVar,
    LetStmt,
    Stmt,
    seq,
)

Value = Dim | PrimExpr

_ARITH = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
}
_COMPARE = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_DIM_OPS: dict[str, Callable[[Dim, Dim], Dim]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
}


class ParseError(ValueError):
    """The text is not a kernel this parser understands (the message names the line)."""


@dataclass
class _Scope:
    """What names mean at one point of the text."""

    names: dict[str, object] = field(default_factory=dict)
    kernel_syms: dict[str, arith.Sym] = field(default_factory=dict)

    def child(self) -> _Scope:
        return _Scope(dict(self.names), self.kernel_syms)


def _is_dim(value: object) -> bool:
    return isinstance(value, (int, arith.Expr)) and not isinstance(value, bool)


def _as_prim(value: Value) -> PrimExpr:
    return value if isinstance(value, PrimExpr) else IndexExpr(value)


class _Parser:
    def __init__(self, bounds: dict[str, tuple[int | None, int | None]]):
        self.bounds = bounds

    def fail(self, node: ast.AST, message: str) -> ParseError:
        return ParseError(f"line {getattr(node, 'lineno', '?')}: {message}")

    # expressions -----------------------------------------------------------------------

    def value(self, node: ast.expr, scope: _Scope) -> Value:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.fail(node, f"unsupported expression {ast.unparse(node)!r}")
        try:
            return method(node, scope)
        except ParseError:
            raise
        except (TypeError, ValueError, KeyError) as err:
            raise self.fail(node, f"{ast.unparse(node)}: {err}") from err

    def dim(self, node: ast.expr, scope: _Scope) -> Dim:
        value = self.value(node, scope)
        if isinstance(value, IndexExpr):
            return value.dim
        if not _is_dim(value):
            raise self.fail(node, f"expected an index expression, got {ast.unparse(node)!r}")
        return value

    def prim(self, node: ast.expr, scope: _Scope) -> PrimExpr:
        return _as_prim(self.value(node, scope))

    def expr_Constant(self, node: ast.Constant, scope: _Scope) -> Value:
        if isinstance(node.value, bool):
            return IntImm(node.value, "bool")
        if isinstance(node.value, int):
            return node.value
        raise self.fail(node, f"a bare constant {node.value!r} needs a dtype, e.g. float32(...)")

    def expr_Name(self, node: ast.Name, scope: _Scope) -> Value:
        meaning = scope.names.get(node.id)
        if meaning is None:
            raise self.fail(node, f"name {node.id!r} is not defined here")
        if isinstance(meaning, (arith.Sym, Var)):
            return meaning
        raise self.fail(node, f"{node.id!r} is a buffer; index it, e.g. {node.id}[...]")

    def expr_UnaryOp(self, node: ast.UnaryOp, scope: _Scope) -> Value:
        operand = self.value(node.operand, scope)
        if isinstance(node.op, ast.USub):
            return -operand if _is_dim(operand) else UnaryOp("-", operand)
        if isinstance(node.op, ast.Not):
            return UnaryOp("not", _as_prim(operand))
        raise self.fail(node, f"unsupported unary operator in {ast.unparse(node)!r}")

    def expr_BinOp(self, node: ast.BinOp, scope: _Scope) -> Value:
        op = _ARITH.get(type(node.op))
        if op is None:
            raise self.fail(node, f"unsupported operator in {ast.unparse(node)!r}")
        a, b = self.value(node.left, scope), self.value(node.right, scope)
        if _is_dim(a) and _is_dim(b) and op in _DIM_OPS:
            return _DIM_OPS[op](a, b)
        return BinOp(op, _as_prim(a), _as_prim(b))

    def expr_Compare(self, node: ast.Compare, scope: _Scope) -> Value:
        if len(node.ops) != 1:
            raise self.fail(node, "chained comparisons are not TIR; use 'and'")
        op = _COMPARE[type(node.ops[0])]
        return BinOp(op, self.prim(node.left, scope), self.prim(node.comparators[0], scope))

    def expr_BoolOp(self, node: ast.BoolOp, scope: _Scope) -> Value:
        op = "and" if isinstance(node.op, ast.And) else "or"
        values = [self.prim(v, scope) for v in node.values]
        result = values[0]
        for value in values[1:]:
            result = BinOp(op, result, value)
        return result

    def expr_Subscript(self, node: ast.Subscript, scope: _Scope) -> Value:
        buffer = self.buffer(node.value, scope)
        return BufferLoad(buffer, tuple(self.index(i, scope) for i in _items(node.slice)))

    def index(self, node: ast.expr, scope: _Scope) -> Value:
        value = self.value(node, scope)
        return value.dim if isinstance(value, IndexExpr) else value

    def buffer(self, node: ast.expr, scope: _Scope) -> Buffer:
        if not isinstance(node, ast.Name) or not isinstance(scope.names.get(node.id), Buffer):
            raise self.fail(node, f"{ast.unparse(node)!r} is not a buffer")
        return scope.names[node.id]

    def expr_Call(self, node: ast.Call, scope: _Scope) -> Value:
        if not isinstance(node.func, ast.Name):
            raise self.fail(node, f"unsupported call {ast.unparse(node)!r}")
        name = node.func.id
        if node.keywords:
            raise self.fail(node, f"{name}() takes no keyword arguments here")
        if name in dtypes.DTYPES:
            return self.constant(node, name)
        if name in ("min", "max"):
            a, b = (self.value(arg, scope) for arg in self.args(node, 2))
            if _is_dim(a) and _is_dim(b):
                return arith.min_(a, b) if name == "min" else arith.max_(a, b)
            return BinOp(name, _as_prim(a), _as_prim(b))
        if name == "select":
            return Select(*(self.prim(arg, scope) for arg in self.args(node, 3)))
        if name == "cast":
            value, dtype = self.args(node, 2)
            return Cast(self.literal(dtype), self.prim(value, scope))
        if name in INTRINSIC_NAMES:
            return Call(name, tuple(self.prim(arg, scope) for arg in node.args))
        raise self.fail(node, f"unknown function {name!r}")

    def constant(self, node: ast.Call, dtype: str) -> PrimExpr:
        (arg,) = self.args(node, 1)
        value = self.literal(arg)
        if dtypes.is_floating(dtype):
            return FloatImm(float(value), dtype)
        return IntImm(value, dtype)

    def args(self, node: ast.Call, count: int) -> list[ast.expr]:
        if len(node.args) != count:
            raise self.fail(node, f"{ast.unparse(node.func)}() takes {count} argument(s)")
        return node.args

    def literal(self, node: ast.expr):
        try:
            return ast.literal_eval(node)
        except ValueError as err:
            raise self.fail(node, f"expected a literal, got {ast.unparse(node)!r}") from err

    # declarations ----------------------------------------------------------------------

    def new_sym(self, name: str) -> arith.Sym:
        lower, upper = self.bounds.get(name, (0, None))
        return arith.Sym(name, lower, upper)

    def shape_dim(self, node: ast.expr, scope: _Scope) -> Dim:
        """A dim of a signature shape: unknown names become kernel symbols."""
        for name_node in ast.walk(node):
            if (
                isinstance(name_node, ast.Name)
                and name_node.id not in ("min", "max")
                and name_node.id not in scope.names
            ):
                symbol = self.new_sym(name_node.id)
                scope.names[name_node.id] = symbol
                scope.kernel_syms[name_node.id] = symbol
        return self.dim(node, scope)

    def buffer_decl(self, node: ast.expr, name: str, head: str, scope: _Scope, kernel: bool):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == head
            and len(node.args) == 2
        ):
            raise self.fail(node, f'expected {head}((shape), "dtype", ...) for {name}')
        shape_node, dtype_node = node.args
        if not isinstance(shape_node, ast.Tuple):
            raise self.fail(node, f"the shape of {name} must be a tuple")
        read = self.shape_dim if kernel else self.dim
        shape = tuple(read(d, scope) for d in shape_node.elts)
        options = {kw.arg: kw.value for kw in node.keywords}
        strides = None
        if "strides" in options:
            strides = tuple(read(d, scope) for d in options.pop("strides").elts)
        scope_name = self.literal(options.pop("scope")) if "scope" in options else "global"
        if options:
            raise self.fail(node, f"unknown options {sorted(options)} for {name}")
        return Buffer(name, shape, self.literal(dtype_node), strides, scope_name)

    # statements -----------------------------------------------------------------------

    def body(self, nodes: list[ast.stmt], scope: _Scope) -> Stmt:
        return seq(*(self.stmt(node, scope) for node in nodes))

    def stmt(self, node: ast.stmt, scope: _Scope) -> Stmt:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.fail(node, f"unsupported statement {ast.unparse(node).splitlines()[0]!r}")
        try:
            return method(node, scope)
        except ParseError:
            raise
        except (TypeError, ValueError) as err:
            raise self.fail(node, str(err)) from err

    def stmt_Assign(self, node: ast.Assign, scope: _Scope) -> Stmt:
        (target,) = node.targets
        if not isinstance(target, ast.Subscript):
            raise self.fail(node, "only buffer stores (A[...] = value) are statements")
        buffer = self.buffer(target.value, scope)
        indices = tuple(self.index(i, scope) for i in _items(target.slice))
        return BufferStore(buffer, self.prim(node.value, scope), indices)

    def stmt_Expr(self, node: ast.Expr, scope: _Scope) -> Stmt:
        call = node.value
        if _is_call_stmt(node, "evaluate"):
            return Evaluate(self.prim(self.args(call, 1)[0], scope))
        raise self.fail(node, f"unexpected expression statement {ast.unparse(node)!r}")

    def stmt_If(self, node: ast.If, scope: _Scope) -> Stmt:
        condition = self.prim(node.test, scope)
        then_case = self.body(node.body, scope.child())
        else_case = self.body(node.orelse, scope.child()) if node.orelse else None
        return IfThenElse(condition, then_case, else_case)

    def stmt_For(self, node: ast.For, scope: _Scope) -> Stmt:
        call = node.iter
        if not (
            isinstance(node.target, ast.Name)
            and isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
        ):
            raise self.fail(node, "expected 'for var in kind(...)'")
        kind = "serial" if call.func.id == "range" else call.func.id
        if kind not in FOR_KINDS:
            raise self.fail(node, f"unknown loop kind {call.func.id!r}")
        bounds = [self.dim(arg, scope) for arg in call.args]
        if len(bounds) == 1:
            start, extent = 0, bounds[0]
        elif len(bounds) == 2:
            start, extent = bounds[0], bounds[1] - bounds[0]
        else:
            raise self.fail(node, "a loop takes (extent) or (start, stop)")
        options = {kw.arg: self.literal(kw.value) for kw in call.keywords}
        thread = options.pop("thread", None)
        annotations = options.pop("annotations", ())
        if options:
            raise self.fail(node, f"unknown loop options {sorted(options)}")
        var = self.new_sym(node.target.id)
        inner = scope.child()
        inner.names[var.name] = var
        return For(var, start, extent, kind, self.body(node.body, inner), annotations, thread)

    def stmt_With(self, node: ast.With, scope: _Scope) -> Stmt:
        (item,) = node.items
        call = item.context_expr
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            raise self.fail(node, f"unexpected 'with {ast.unparse(call)}'")
        head = call.func.id
        if head == "block":
            return self.block(node, call, scope)
        if head in ("let", "let_sym"):
            target, value_node = self.args(call, 2)
            if not isinstance(target, ast.Name):
                raise self.fail(node, "a let binds a name")
            value = self.prim(value_node, scope)
            var = Var(target.id, value.dtype) if head == "let" else self.new_sym(target.id)
            inner = scope.child()
            inner.names[target.id] = var
            return LetStmt(var, value, self.body(node.body, inner))
        if head == "allocate":
            if not isinstance(item.optional_vars, ast.Name):
                raise self.fail(node, "expected 'with allocate(...) as name:'")
            name = item.optional_vars.id
            buffer = self.buffer_decl(call, name, "allocate", scope, kernel=False)
            inner = scope.child()
            inner.names[name] = buffer
            return Allocate(buffer, self.body(node.body, inner))
        raise self.fail(node, f"unexpected 'with {head}(...)'")

    def block(self, node: ast.With, call: ast.Call, outer: _Scope) -> Stmt:
        name = self.literal(self.args(call, 1)[0])
        # Block isolation: inside, only the kernel's symbols and buffers stay visible.
        scope = _Scope(
            {k: v for k, v in outer.names.items() if not isinstance(v, (arith.Sym, Var))},
            outer.kernel_syms,
        )
        scope.names.update(outer.kernel_syms)
        iter_vars, values = [], []
        predicate: PrimExpr = IntImm(True, "bool")
        reads, writes, allocs, init = [], [], [], None
        annotations = ()
        statements = list(node.body)
        while statements:
            first = statements[0]
            axis = _axis_call(first)
            if axis is not None:
                target, kind, extent_node, value_node = axis
                if kind not in ("spatial", "reduce"):
                    raise self.fail(first, f"unknown iterator kind axis.{kind}")
                var = self.new_sym(target)
                iter_vars.append(IterVar(var, self.dim(extent_node, outer), kind))
                values.append(self.dim(value_node, outer))
                scope.names[target] = var
            elif _is_call_stmt(first, "where"):
                predicate = self.prim(self.args(first.value, 1)[0], outer)
            elif _is_call_stmt(first, "reads") or _is_call_stmt(first, "writes"):
                regions = [self.region(arg, scope) for arg in first.value.args]
                (reads if first.value.func.id == "reads" else writes).extend(regions)
            elif _is_call_stmt(first, "block_attr"):
                annotations = self.literal(self.args(first.value, 1)[0])
            elif _is_alloc(first):
                target = first.targets[0].id
                buffer = self.buffer_decl(first.value, target, "alloc_buffer", scope, kernel=False)
                allocs.append(buffer)
                scope.names[target] = buffer
            elif _is_init(first):
                init = self.body(first.body, scope.child())
            else:
                break
            statements.pop(0)
        body = self.body(statements, scope)
        block = Block(
            name,
            tuple(iter_vars),
            tuple(reads),
            tuple(writes),
            init,
            body,
            tuple(allocs),
            annotations,
        )
        return BlockRealize(tuple(values), predicate, block)

    def region(self, node: ast.expr, scope: _Scope) -> BufferRegion:
        if not isinstance(node, ast.Subscript):
            raise self.fail(node, f"expected a buffer region, got {ast.unparse(node)!r}")
        buffer = self.buffer(node.value, scope)
        ranges = []
        for item in _items(node.slice):
            if isinstance(item, ast.Slice):
                start, stop = self.dim(item.lower, scope), self.dim(item.upper, scope)
                ranges.append(Range(start, stop - start))
            else:
                ranges.append(Range(self.dim(item, scope), 1))
        return BufferRegion(buffer, tuple(ranges))

    # the kernel --------------------------------------------------------------------------

    def function(self, node: ast.FunctionDef) -> PrimFunc:
        scope = _Scope()
        params, scalars = [], []
        for arg in node.args.args:
            annotation = arg.annotation
            if annotation is None:
                raise self.fail(arg, f"parameter {arg.arg} needs an annotation")
            if isinstance(annotation, ast.Name) and annotation.id == "int64":
                symbol = scope.kernel_syms.get(arg.arg) or self.new_sym(arg.arg)
                scope.names[arg.arg] = scope.kernel_syms[arg.arg] = symbol
                scalars.append(symbol)
                continue
            buffer = self.buffer_decl(annotation, arg.arg, "Buffer", scope, kernel=True)
            scope.names[arg.arg] = buffer
            params.append(buffer)
        options = _decorator_options(node, self)
        body = self.body(node.body, scope)
        return PrimFunc(
            node.name,
            tuple(params),
            body,
            options.get("outputs", 1),
            tuple(scalars),
            options.get("attrs", ()),
        )


def _items(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.Tuple):
        return list(node.elts)
    return [node]


def _axis_call(node: ast.stmt):
    """``v = axis.kind(extent, value)`` as ``(name, kind, extent, value)``, else None."""
    if not (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Call)
    ):
        return None
    func = node.value.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "axis"
        and len(node.value.args) == 2
    ):
        return None
    return node.targets[0].id, func.attr, node.value.args[0], node.value.args[1]


def _is_call_stmt(node: ast.stmt, name: str) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == name
    )


def _is_alloc(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "alloc_buffer"
    )


def _is_init(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.With) and len(node.items) == 1):
        return False
    call = node.items[0].context_expr
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "init"
        and not call.args
    )


def _decorator_options(node: ast.FunctionDef, parser: _Parser) -> dict:
    for decorator in node.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and isinstance(decorator.func, ast.Name)
            and decorator.func.id == "prim_func"
        ):
            return {kw.arg: parser.literal(kw.value) for kw in decorator.keywords}
        if isinstance(decorator, ast.Name) and decorator.id == "prim_func":
            return {}
    raise parser.fail(node, "a kernel is decorated with @prim_func(...)")


def parse_prim_func(text: str) -> PrimFunc:
    """The PrimFunc printed as ``text`` (see :mod:`relaxjax.tir.printer`)."""
    try:
        module = ast.parse(text)
    except SyntaxError as err:
        raise ParseError(f"line {err.lineno}: {err.msg}") from err
    functions = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    if len(functions) != 1 or len(module.body) != 1:
        raise ParseError("expected exactly one @prim_func definition")
    node = functions[0]
    probe = _Parser({})
    options = _decorator_options(node, probe)
    bounds = {name: tuple(b) for name, b in options.get("bounds", {}).items()}
    return _Parser(bounds).function(node)


def parse_expr(text: str, names: dict[str, object] | None = None) -> PrimExpr:
    """An expression in printed form; ``names`` maps names to Syms, Vars and Buffers."""
    node = ast.parse(text, mode="eval").body
    scope = _Scope(dict(names or {}))
    return _Parser({}).prim(node, scope)
