"""Read the printer's text back into IR: ``parse_module(str(mod), ops) == mod``.

The text is Python syntax (see :mod:`relaxjax.ir.printer` for the forms), so it is read
with :mod:`ast`. Operators are looked up by name in the ``ops`` mapping the caller passes
(ir does not know the op registry); ``call_tir`` and ``call_extern`` are always known.
Each call's info is the annotation of its binding. Kernels are handed, as text, to the
``parse_kernel`` function the caller passes (ir does not know the loop-level IR).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.arith import Dim, Sym
from relaxjax.ir.builtin import BUILTIN_OPS
from relaxjax.ir.module import IRModule
from relaxjax.ir.nodes import (
    AnyBinding,
    Binding,
    BindingBlock,
    Call,
    Check,
    Constant,
    DataflowBlock,
    DataflowVar,
    Expr,
    ExternDecl,
    ExternFunc,
    Function,
    GlobalVar,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from relaxjax.ir.struct_info import (
    ObjectInfo,
    PrimInfo,
    ShapeInfo,
    StructInfo,
    TensorInfo,
    TupleInfo,
)

_KERNEL_FENCE = re.compile(r"^# kernel (\w+)\n(.*?)\n# end kernel \1[ \t]*$", re.M | re.S)
_INFO_FORMS = {"Object", "Tensor", "Tuple", "Shape", "Prim"}
_CHECK_CALLS = {"broadcast", "divides"}
# Call forms of the text that are not ops (see the printer).
RESERVED_NAMES = frozenset({"output", "match_cast", "prim", "shape", "const", "extern", "float"})


def _error(node: ast.AST | None, message: str) -> ValueError:
    line = getattr(node, "lineno", None)
    return ValueError(f"line {line}: {message}" if line is not None else message)


def parse_module(
    text: str,
    ops: Mapping[str, object] | None = None,
    *,
    meta: Sequence[np.ndarray] = (),
    parse_kernel: Callable[[str], object] | None = None,
) -> IRModule:
    """Parse a module printed by :func:`~relaxjax.ir.module_to_text`.

    ``ops`` maps op names to op objects (with their ``Attrs``); ``meta`` holds the large
    constants printed as ``meta[i]``; ``parse_kernel`` reads a kernel's text.
    """
    registry = {**dict(ops or {}), **BUILTIN_OPS}
    clashes = sorted(set(registry) & RESERVED_NAMES)
    if clashes:
        raise ValueError(f"op names {clashes} clash with forms of the IR text; rename the ops")
    items: list[tuple[int, str, object]] = []

    def take_kernel(match: re.Match) -> str:
        line = text.count("\n", 0, match.start()) + 1
        if parse_kernel is None:
            raise ValueError(
                f"line {line}: the text holds kernel {match.group(1)}; pass parse_kernel "
                "(e.g. the tir parser) to read it"
            )
        items.append((line, match.group(1), parse_kernel(match.group(2))))
        return "\n" * match.group(0).count("\n")

    source = _KERNEL_FENCE.sub(take_kernel, text)
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise ValueError(f"line {err.lineno}: {err.msg}") from None
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            items.append((stmt.lineno, stmt.name, _FunctionReader(registry, meta).function(stmt)))
        elif isinstance(stmt, ast.Assign):
            items.append((stmt.lineno, *_extern_decl(stmt)))
        else:
            raise _error(stmt, "expected a @function definition or an extern_decl")
    items.sort(key=lambda item: item[0])
    return IRModule({name: item for _, name, item in items})


def parse_info(text: str) -> StructInfo:
    """Parse struct info text such as ``Tensor((n, 4), "float32")``."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as err:
        raise ValueError(f"cannot parse struct info {text!r}: {err.msg}") from None
    return _Reader({}).info(node)


def _extern_decl(stmt: ast.Assign) -> tuple[str, ExternDecl]:
    call = stmt.value
    target = stmt.targets[0] if len(stmt.targets) == 1 else None
    if not (isinstance(target, ast.Name) and _call_name(call) == "extern_decl"):
        raise _error(stmt, 'expected `name = extern_decl("symbol", library=...)`')
    assert isinstance(call, ast.Call)
    symbol = _literal_str(call.args[0] if call.args else None, "extern_decl symbol")
    library = ""
    for keyword in call.keywords:
        if keyword.arg != "library":
            raise _error(keyword, f"unknown extern_decl option {keyword.arg!r}")
        library = _literal_str(keyword.value, "extern_decl library")
    return target.id, ExternDecl(target.id, symbol, library)


def _call_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a call of a (dotted) name, else None."""
    if not isinstance(node, ast.Call):
        return None
    return _dotted(node.func)


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _literal_str(node: ast.AST | None, what: str) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise _error(node, f"{what} must be a string literal")


class _Reader:
    """Reads the value-level pieces: dims, struct infos, attribute values, numbers."""

    def __init__(self, symbols: dict[str, Sym]) -> None:
        self.symbols = symbols

    def dim(self, node: ast.AST) -> Dim:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        try:
            return arith.parse_dim(ast.unparse(node), self.symbols)
        except (ValueError, TypeError, SyntaxError) as err:
            raise _error(node, f"bad dimension {ast.unparse(node)!r}: {err}") from None

    def dims(self, node: ast.AST) -> tuple[Dim, ...]:
        if not isinstance(node, (ast.Tuple, ast.List)):
            raise _error(node, f"expected a tuple of dims, got {ast.unparse(node)!r}")
        return tuple(self.dim(e) for e in node.elts)

    def number(self, node: ast.AST) -> int | float | bool:
        """A literal number: ``2``, ``-2.5``, ``True``, ``float("inf")``."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = self.number(node.operand)
            if isinstance(value, bool):
                raise _error(node, "cannot negate a bool")
            return -value
        if _call_name(node) == "float":
            assert isinstance(node, ast.Call)
            return float(_literal_str(node.args[0] if node.args else None, "float()"))
        raise _error(node, f"expected a number, got {ast.unparse(node)!r}")

    def is_number(self, node: ast.AST) -> bool:
        try:
            self.number(node)
        except ValueError:
            return False
        return True

    def info(self, node: ast.AST) -> StructInfo:
        form = _call_name(node)
        if form not in _INFO_FORMS:
            raise _error(node, f"expected struct info, got {ast.unparse(node)!r}")
        assert isinstance(node, ast.Call)
        kwargs = {k.arg: k.value for k in node.keywords}
        if form == "Object":
            return ObjectInfo()
        if form == "Tuple":
            return TupleInfo(self.info(a) for a in node.args)
        try:
            if form == "Tensor":
                return self.tensor_info(node.args, kwargs)
            if form == "Shape":
                values = node.args[0] if node.args else kwargs.get("values")
                dims = None if values is None else self.dims(values)
                ndim = kwargs.get("ndim")
                return ShapeInfo(dims, None if ndim is None else self.number(ndim))
            return self.prim_info(node.args, kwargs)
        except (TypeError, ValueError) as err:
            if str(err).startswith("line "):
                raise
            raise _error(node, f"bad {form}: {err}") from None

    def tensor_info(self, args: list[ast.expr], kwargs: dict[str, ast.expr]) -> TensorInfo:
        shape_node = args[0] if args else kwargs.get("shape")
        dtype_node = args[1] if len(args) > 1 else kwargs.get("dtype")
        ndim_node = kwargs.get("ndim")
        shape = None
        if shape_node is not None and not _is_none(shape_node):
            shape = self.dims(shape_node)
        dtype = "float32" if dtype_node is None else _literal_str(dtype_node, "dtype")
        ndim = None if ndim_node is None else self.number(ndim_node)
        weak_node = kwargs.get("weak")
        weak = False if weak_node is None else bool(self.number(weak_node))
        return TensorInfo(shape, dtype, ndim, weak)  # type: ignore[arg-type]

    def prim_info(self, args: list[ast.expr], kwargs: dict[str, ast.expr]) -> PrimInfo:
        dtype = _literal_str(args[0] if args else kwargs.get("dtype"), "Prim dtype")
        value_node = kwargs.get("value")
        weak_node = kwargs.get("weak")
        value = None if value_node is None else self.dim(value_node)
        weak = False if weak_node is None else bool(self.number(weak_node))
        return PrimInfo(dtype, value, weak)

    def attr_value(self, node: ast.AST) -> object:
        """An op attribute: a literal, a tuple of attributes, a dim or a struct info."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.attr_value(e) for e in node.elts)
        if _call_name(node) in _INFO_FORMS:
            return self.info(node)
        if self.is_number(node):
            return self.number(node)
        return self.dim(node)


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


class _FunctionReader(_Reader):
    """Reads one ``@function`` definition."""

    def __init__(self, registry: Mapping[str, object], meta: Sequence[np.ndarray]) -> None:
        super().__init__({})
        self.registry = registry
        self.meta = meta
        self.vars: dict[str, Var] = {}

    def function(self, node: ast.FunctionDef) -> Function:
        attrs = self.decorator(node)
        params = []
        for arg in node.args.args:
            if arg.annotation is None:
                raise _error(arg, f"parameter {arg.arg} needs its struct info as annotation")
            params.append(self.define(Var(arg.arg, self.info(arg.annotation))))
        if node.returns is None:
            raise _error(node, f"function {node.name} needs its return info as annotation")
        ret_info = self.info(node.returns)
        blocks, body = self.body(node.body)
        return Function(params, SeqExpr(blocks, body), ret_info, node.name, attrs)

    def decorator(self, node: ast.FunctionDef) -> dict[str, object]:
        if len(node.decorator_list) != 1:
            raise _error(node, f"function {node.name} needs exactly one @function decorator")
        deco = node.decorator_list[0]
        if isinstance(deco, ast.Name) and deco.id == "function":
            return {}
        if _call_name(deco) != "function":
            raise _error(deco, "expected @function")
        assert isinstance(deco, ast.Call)
        attrs: dict[str, object] = {}
        for keyword in deco.keywords:
            if not isinstance(keyword.value, ast.Dict):
                raise _error(keyword, f"@function {keyword.arg}= takes a dict literal")
            entries = zip(keyword.value.keys, keyword.value.values)
            if keyword.arg == "attrs":
                for key, value in entries:
                    attrs[_literal_str(key, "attribute name")] = self.attr_value(value)
            elif keyword.arg == "bounds":
                for key, value in entries:
                    name = _literal_str(key, "symbol name")
                    lower, upper = self.attr_value(value)  # type: ignore[misc]
                    self.symbols[name] = Sym(name, lower, upper)
            else:
                raise _error(keyword, f"unknown @function option {keyword.arg!r}")
        return attrs

    def define(self, var: Var) -> Var:
        self.vars[var.name_hint] = var
        return var

    def body(self, stmts: list[ast.stmt]) -> tuple[list[BindingBlock], Expr]:
        blocks: list[BindingBlock] = []
        plain: list[AnyBinding] = []
        for index, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                if index != len(stmts) - 1 or stmt.value is None:
                    raise _error(stmt, "`return value` must be the last statement")
                if plain:
                    blocks.append(BindingBlock(plain))
                return blocks, self.operand(stmt.value)
            if isinstance(stmt, ast.With):
                if plain:
                    blocks.append(BindingBlock(plain))
                    plain = []
                blocks.append(self.dataflow(stmt))
            elif isinstance(stmt, ast.Pass):
                if plain:
                    blocks.append(BindingBlock(plain))
                    plain = []
            else:
                self.statement(stmt, plain, dataflow=False)
        raise _error(stmts[-1] if stmts else None, "a function must end with `return value`")

    def dataflow(self, stmt: ast.With) -> DataflowBlock:
        if len(stmt.items) != 1 or _call_name(stmt.items[0].context_expr) != "dataflow":
            raise _error(stmt, "expected `with dataflow():`")
        bindings: list[AnyBinding] = []
        for inner in stmt.body:
            if not isinstance(inner, ast.Pass):
                self.statement(inner, bindings, dataflow=True)
        return DataflowBlock(bindings)

    def statement(self, stmt: ast.stmt, bindings: list[AnyBinding], dataflow: bool) -> None:
        if isinstance(stmt, ast.AnnAssign):
            bindings.append(self.binding(stmt, dataflow))
        elif isinstance(stmt, ast.Assert):
            self.attach_check(stmt, bindings)
        else:
            raise _error(
                stmt, f"expected a binding `name: info = value`, got {ast.unparse(stmt)!r}"
            )

    def binding(self, stmt: ast.AnnAssign, dataflow: bool) -> AnyBinding:
        if not isinstance(stmt.target, ast.Name) or stmt.value is None:
            raise _error(stmt, "expected a binding `name: info = value`")
        info = self.info(stmt.annotation)
        value = stmt.value
        escapes = dataflow and _call_name(value) == "output"
        if escapes:
            assert isinstance(value, ast.Call)
            if len(value.args) != 1:
                raise _error(value, "output() takes one value")
            value = value.args[0]
        var_type = DataflowVar if dataflow and not escapes else Var
        var = var_type(stmt.target.id, info)
        if _call_name(value) == "match_cast":
            assert isinstance(value, ast.Call)
            if len(value.args) != 2:
                raise _error(value, "match_cast takes a value and a struct info")
            cast = MatchCast(var, self.operand(value.args[0]), self.info(value.args[1]))
            self.define(var)
            return cast
        bound = self.value(value, info)
        self.define(var)
        return Binding(var, bound)

    def attach_check(self, stmt: ast.Assert, bindings: list[AnyBinding]) -> None:
        last = bindings[-1] if bindings else None
        if not isinstance(last, Binding) or not isinstance(last.value, Call):
            raise _error(stmt, "an assert (run-time check) must follow the binding of a call")
        message = "" if stmt.msg is None else _literal_str(stmt.msg, "check message")
        check = self.check(stmt.test, message)
        call = last.value
        new_call = Call(call.op, call.args, call.attrs, call.info, call.checks + (check,))
        bindings[-1] = Binding(last.var, new_call, last.location)

    def check(self, test: ast.expr, message: str) -> Check:
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, right, op = test.left, test.comparators[0], test.ops[0]
            if isinstance(op, ast.Eq):
                return Check("eq", (self.dim(left), self.dim(right)), message)
            if isinstance(op, ast.LtE):
                return Check("le", (self.dim(left), self.dim(right)), message)
            if isinstance(op, ast.GtE) and self.dim(right) == 0:
                return Check("nonneg", (self.dim(left),), message)
        name = _call_name(test)
        if name in _CHECK_CALLS:
            assert isinstance(test, ast.Call)
            return Check(name, tuple(self.dim(a) for a in test.args), message)
        raise _error(test, f"unknown run-time check {ast.unparse(test)!r}")

    # -- expressions ------------------------------------------------------------------

    def value(self, node: ast.expr, info: StructInfo) -> Expr:
        """A binding's value; a call takes the binding's annotation as its info."""
        name = _call_name(node)
        if name is not None and name not in _OPERAND_FORMS:
            return self.call(node, info)  # type: ignore[arg-type]
        return self.operand(node)

    def call(self, node: ast.Call, info: StructInfo) -> Call:
        callee: object
        if isinstance(node.func, ast.Attribute) and _dotted(node.func.value) == "mod":
            callee = GlobalVar(node.func.attr)
        else:
            name = _dotted(node.func)
            if name not in self.registry:
                raise _error(node, f"unknown op {name!r} (not in the op registry given)")
            callee = self.registry[name]
        args = [self.operand(a) for a in node.args]
        attrs = self.attrs(node, callee)
        return Call(callee, args, attrs, info)  # type: ignore[arg-type]

    def attrs(self, node: ast.Call, callee: object) -> object:
        attrs_type = getattr(callee, "Attrs", None)
        values = {k.arg: self.attr_value(k.value) for k in node.keywords}
        if attrs_type is None:
            if values:
                raise _error(node, f"{_dotted(node.func)} takes no attributes, got {list(values)}")
            return None
        try:
            return attrs_type(**values)
        except TypeError as err:
            raise _error(node, f"bad attributes for {_dotted(node.func)}: {err}") from None

    def operand(self, node: ast.expr) -> Expr:
        if isinstance(node, ast.Name):
            if node.id not in self.vars:
                raise _error(node, f"undefined variable {node.id}")
            return self.vars[node.id]
        if isinstance(node, ast.Tuple):
            return Tuple(self.operand(e) for e in node.elts)
        if isinstance(node, ast.Subscript):
            index = node.slice
            if not (isinstance(index, ast.Constant) and type(index.value) is int):
                raise _error(node, "a tuple index must be an int literal")
            return TupleGetItem(self.operand(node.value), index.value)
        if isinstance(node, ast.Attribute) and _dotted(node.value) == "mod":
            return GlobalVar(node.attr)
        name = _call_name(node)
        if name in _OPERAND_FORMS:
            assert isinstance(node, ast.Call)
            return _OPERAND_FORMS[name](self, node)
        if self.is_number(node):
            value = self.number(node)
            return PrimValue(value, weak=True)
        raise _error(
            node, f"expected an operand (a var, tuple or literal), got {ast.unparse(node)!r}"
        )

    def prim(self, node: ast.Call) -> PrimValue:
        if not 2 <= len(node.args) <= 2:
            raise _error(node, 'expected prim(value, "dtype", weak=...)')
        value_node, dtype_node = node.args
        value: object = self.number(value_node) if self.is_number(value_node) else None
        if value is None:
            value = self.dim(value_node)
        weak = any(k.arg == "weak" and self.number(k.value) for k in node.keywords)
        return PrimValue(value, _literal_str(dtype_node, "prim dtype"), weak)  # type: ignore[arg-type]

    def shape(self, node: ast.Call) -> ShapeExpr:
        return ShapeExpr(self.dim(a) for a in node.args)

    def const(self, node: ast.Call) -> Constant:
        if len(node.args) != 2:
            raise _error(node, 'expected const(data, "dtype")')
        data_node, dtype_node = node.args
        dtype = dtypes.to_numpy(_literal_str(dtype_node, "const dtype"))
        if isinstance(data_node, ast.Subscript) and _dotted(data_node.value) == "meta":
            index = self.number(data_node.slice)
            if not isinstance(index, int) or not 0 <= index < len(self.meta):
                raise _error(node, f"meta[{index}] is not among the {len(self.meta)} given arrays")
            return Constant(np.asarray(self.meta[index], dtype=dtype))
        data = np.array(self.nested(data_node), dtype=dtype)
        for keyword in node.keywords:
            if keyword.arg == "shape":
                data = data.reshape(tuple(self.number(e) for e in keyword.value.elts))  # type: ignore[attr-defined]
        return Constant(data)

    def nested(self, node: ast.expr) -> object:
        if isinstance(node, ast.List):
            return [self.nested(e) for e in node.elts]
        return self.number(node)

    def extern(self, node: ast.Call) -> ExternFunc:
        return ExternFunc(_literal_str(node.args[0] if node.args else None, "extern symbol"))


_OPERAND_FORMS: dict[str, Callable[[_FunctionReader, ast.Call], Expr]] = {
    "prim": _FunctionReader.prim,
    "shape": _FunctionReader.shape,
    "const": _FunctionReader.const,
    "extern": _FunctionReader.extern,
    "float": lambda reader, node: PrimValue(reader.number(node), weak=True),
}
