"""Readable text for the graph IR, with struct info on every binding. The text is Python
syntax and :func:`relaxjax.ir.parse_module` reads it back::

    @function
    def main(x: Tensor((n, 4), "float32")) -> Tensor((n, 4), "float32"):
        with dataflow():
            lv0: Tensor((n, 4), "float32") = relu(x)
            gv: Tensor((n, 4), "float32") = output(lv0)
        return gv

Forms: ``output(v)`` binds a var that outlives its dataflow block; ``match_cast(v, info)``;
``assert <relation>, "message"`` after a binding lists the run-time checks of its call;
``mod.f`` names a module item, ``extern("sym")`` an external function; operands print as
``2`` / ``2.0`` / ``True`` (weak Python scalars), ``prim(n, "int64", weak=True)``,
``shape(n, 4)``, ``const([1.0, 2.0], "float32")`` (arrays over
:data:`INLINE_CONSTANT_LIMIT` elements print as ``const(meta[i], "float32")``). Kernels
print with their own ``__str__`` between ``# kernel NAME`` and ``# end kernel NAME``.
"""

from __future__ import annotations

import dataclasses
import html
import json
import keyword
import math
import os
from collections.abc import Iterable

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.ir.module import IRModule, is_kernel
from relaxjax.ir.nodes import (
    Binding,
    BindingBlock,
    Call,
    Check,
    Constant,
    DataflowBlock,
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
from relaxjax.ir.struct_info import StructInfo, free_symbols

INLINE_CONSTANT_LIMIT = 16
INDENT = "    "


class Namer:
    """Gives each var a unique identifier within one function, based on its name hint."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._vars: list[Var] = []  # keeps named vars alive so their ids stay unique
        self._taken: set[str] = set()

    def __call__(self, var: Var) -> str:
        name = self._names.get(id(var))
        if name is not None:
            return name
        base = _identifier(var.name_hint)
        name, suffix = base, 1
        while name in self._taken:
            name = f"{base}_{suffix}"
            suffix += 1
        self._names[id(var)] = name
        self._vars.append(var)
        self._taken.add(name)
        return name


def _identifier(hint: str) -> str:
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "v"
    if text[0].isdigit():
        text = "v" + text
    return text + "_" if keyword.iskeyword(text) else text


class Printer:
    """Renders one function (or loose expressions) with consistent var names."""

    def __init__(self, meta: list[np.ndarray] | None = None, locations: bool = True) -> None:
        self.namer = Namer()
        self.meta = meta if meta is not None else []
        self.locations = locations

    # -- expressions ------------------------------------------------------------------

    def expr(self, expr: Expr) -> str:
        """One expression as an operand or binding value."""
        if isinstance(expr, Var):
            return self.namer(expr)
        if isinstance(expr, Call):
            return self.call(expr)
        if isinstance(expr, Tuple):
            return tuple_text(self.expr(f) for f in expr.fields)
        if isinstance(expr, TupleGetItem):
            return f"{self.expr(expr.tuple_value)}[{expr.index}]"
        if isinstance(expr, PrimValue):
            return prim_text(expr)
        if isinstance(expr, ShapeExpr):
            return "shape(" + ", ".join(str(v) for v in expr.values) + ")"
        if isinstance(expr, Constant):
            return self.constant(expr)
        if isinstance(expr, GlobalVar):
            return f"mod.{expr.name}"
        if isinstance(expr, ExternFunc):
            return f"extern({json.dumps(expr.symbol)})"
        if isinstance(expr, SeqExpr):
            lines = [line for block in expr.blocks for line in self.block(block)]
            return "\n".join(lines + [f"return {self.expr(expr.body)}"])
        raise TypeError(f"cannot print {type(expr).__name__}")

    def call(self, call: Call) -> str:
        """``op(args, attr=value, ...)``."""
        if isinstance(call.op, (GlobalVar, ExternFunc)):
            callee = self.expr(call.op)
        else:
            callee = call.op.name
        parts = [self.expr(a) for a in call.args]
        parts += [f"{k}={attr_text(v)}" for k, v in attrs_items(call.attrs)]
        return f"{callee}(" + ", ".join(parts) + ")"

    def constant(self, const: Constant) -> str:
        data = const.data
        dtype = dtypes.canonical(data.dtype)
        if data.size > INLINE_CONSTANT_LIMIT:
            index = next((i for i, a in enumerate(self.meta) if a is data), None)
            if index is None:
                index = len(self.meta)
                self.meta.append(data)
            return f'const(meta[{index}], "{dtype}")'
        text = _nested_text(data.tolist() if data.ndim else data.item())
        if data.size == 0:
            return f'const({text}, "{dtype}", shape={tuple_text(map(str, data.shape))})'
        return f'const({text}, "{dtype}")'

    # -- bindings and blocks ------------------------------------------------------------

    def binding(self, binding: Binding | MatchCast, in_dataflow: bool) -> list[str]:
        """The binding's line, then one ``assert`` line per run-time check of its call."""
        if isinstance(binding, MatchCast):
            value = f"match_cast({self.expr(binding.value)}, {binding.info!r})"
        else:
            value = self.expr(binding.value)
        escapes = in_dataflow and type(binding.var) is Var
        if escapes:
            value = f"output({value})"
        line = f"{self.namer(binding.var)}: {binding.var.info!r} = {value}"
        if self.locations and binding.location is not None:
            line += f"  # {os.path.basename(binding.location.filename)}:{binding.location.lineno}"
        lines = [line]
        if isinstance(binding, Binding) and isinstance(binding.value, Call):
            lines += [check_text(c) for c in binding.value.checks]
        return lines

    def block(self, block: BindingBlock) -> list[str]:
        """A dataflow block as a ``with dataflow():`` suite; a plain block as its lines."""
        dataflow = isinstance(block, DataflowBlock)
        lines = [line for b in block.bindings for line in self.binding(b, dataflow)]
        if dataflow:
            return ["with dataflow():"] + [INDENT + line for line in (lines or ["pass"])]
        return lines

    def function(self, func: Function, name: str | None = None) -> str:
        """A whole graph function."""
        params = ", ".join(f"{self.namer(p)}: {p.info!r}" for p in func.params)
        body: list[str] = []
        previous_plain = False
        for block in func.body.blocks:
            plain = not isinstance(block, DataflowBlock)
            if plain and previous_plain:
                body.append("pass")  # keeps two adjacent plain blocks apart
            body += self.block(block)
            previous_plain = plain
        body.append(f"return {self.expr(func.body.body)}")
        header = f"def {name or func.name}({params}) -> {func.ret_info!r}:"
        lines = [_decorator(func), header] + [INDENT + line for line in body]
        return "\n".join(lines)


def _decorator(func: Function) -> str:
    options = []
    if func.attrs:
        items = ", ".join(f"{json.dumps(k)}: {attr_text(v)}" for k, v in func.attrs)
        options.append(f"attrs={{{items}}}")
    bounds = _symbol_bounds(func)
    if bounds:
        items = ", ".join(f'"{s.name}": ({s.lower}, {s.upper})' for s in bounds)
        options.append(f"bounds={{{items}}}")
    return "@function" + (f"({', '.join(options)})" if options else "")


def _symbol_bounds(func: Function) -> list[arith.Sym]:
    """Symbols with bounds other than the default ``>= 0``, first occurrence first."""
    seen: dict[str, arith.Sym] = {}
    for info in _function_infos(func):
        for symbol in sorted(free_symbols(info), key=lambda s: s.name):
            seen.setdefault(symbol.name, symbol)
    return [s for s in seen.values() if (s.lower, s.upper) != (0, None)]


def _function_infos(func: Function) -> Iterable[StructInfo]:
    yield from (p.info for p in func.params)
    for block in func.body.blocks:
        for binding in block.bindings:
            yield binding.var.info
    yield func.ret_info


def tuple_text(items: Iterable[str]) -> str:
    """A Python tuple literal of already printed items."""
    items = list(items)
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def float_text(value: float) -> str:
    """A float literal that reads back exactly (``float("inf")`` for non-finite values)."""
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    return repr(float(value))


def _nested_text(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_nested_text(v) for v in value) + "]"
    if isinstance(value, float):
        return float_text(value)
    return repr(value)


def prim_text(prim: PrimValue) -> str:
    """A scalar operand; weak Python scalars print as plain literals."""
    value = prim.value
    plain = {"bool": bool, "int64": int, "float64": float}.get(prim.dtype)
    if prim.weak and plain is not None and type(value) is plain:
        return float_text(value) if isinstance(value, float) else repr(value)
    shown = float_text(value) if isinstance(value, float) else str(value)
    weak = ", weak=True" if prim.weak else ""
    return f'prim({shown}, "{prim.dtype}"{weak})'


def attrs_items(attrs: object) -> list[tuple[str, object]]:
    """An op's attributes as (name, value) pairs, in field order."""
    if attrs is None:
        return []
    if not dataclasses.is_dataclass(attrs):
        raise TypeError(f"op attributes must be a dataclass instance, got {attrs!r}")
    return [(f.name, getattr(attrs, f.name)) for f in dataclasses.fields(attrs)]


def attr_text(value: object) -> str:
    """An attribute value as Python source."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (tuple, list)):
        return tuple_text(attr_text(v) for v in value)
    if isinstance(value, arith.Expr):
        return str(value)
    if isinstance(value, StructInfo):
        return repr(value)
    raise TypeError(f"cannot print attribute value {value!r} of type {type(value).__name__}")


def check_text(check: Check) -> str:
    """``assert <relation>, "message"``."""
    message = f", {json.dumps(check.message)}" if check.message else ""
    return f"assert {check.relation()}{message}"


def extern_text(name: str, decl: ExternDecl) -> str:
    """``name = extern_decl("symbol", library="lib")``."""
    library = f", library={json.dumps(decl.library)}" if decl.library else ""
    return f"{name} = extern_decl({json.dumps(decl.symbol)}{library})"


def kernel_text(name: str, kernel: object) -> str:
    """A kernel's own text between fence comments."""
    return f"# kernel {name}\n{str(kernel).rstrip()}\n# end kernel {name}"


def module_to_text(
    mod: IRModule, meta: list[np.ndarray] | None = None, locations: bool = True
) -> str:
    """The whole module: functions, extern declarations and kernels, in insertion order.

    Large constants are appended to ``meta`` (when given) and printed as ``meta[i]``.
    """
    meta = meta if meta is not None else []
    parts = []
    for name, item in mod.functions.items():
        if isinstance(item, Function):
            parts.append(Printer(meta, locations).function(item, name))
        elif isinstance(item, ExternDecl):
            parts.append(extern_text(name, item))
        elif is_kernel(item):
            parts.append(kernel_text(name, item))
    return "\n\n".join(parts) + "\n"


def function_to_text(func: Function, locations: bool = True) -> str:
    """One graph function."""
    return Printer(locations=locations).function(func)


def expr_to_text(expr: Expr) -> str:
    """One expression, vars named by their hints."""
    return Printer().expr(expr)


def module_to_html(mod: IRModule) -> str:
    """The module text for notebooks."""
    return f"<pre>{html.escape(module_to_text(mod))}</pre>"
