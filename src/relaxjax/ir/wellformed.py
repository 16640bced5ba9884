"""The well-formedness checker: ``verify(mod)`` raises ``VerifyError`` on the first violation.

Rules (the name starts the message, followed by the function and the binding):

- ``symbol-defined``: every symbol is defined before use, by a parameter (every symbol
  a parameter's info mentions, whatever the expression) or a ``match_cast`` dim that
  determines it (the symbol alone, or linear in it once its other symbols are known;
  also the symbols of a symbolic upper bound, ``k <= n * 4``, when ``k`` is defined).
- ``var-bound-once``: no var is defined twice (as a parameter or by a binding).
- ``var-defined``: every var is defined before it is used.
- ``dataflow-scope``: dataflow vars are bound only in dataflow blocks and not used after
  their block ends.
- ``normal-form``: call operands and tuple fields are vars, constants, scalars, shapes,
  global names or tuples of those.
- ``info-consistent``: each binding's info is consistent with its value, each call's info
  with what ``op.infer`` deduces again (equal or coarser, with every deduced run-time check
  recorded), and the function's ``ret_info`` with its body.
- ``callee-exists``: a call of a ``GlobalVar`` names a graph function of the module, and
  ``call_tir`` names a kernel of the module (``call_extern`` calls an ``ExternFunc``); the
  regions of a control op (``switch``, loops: :mod:`relaxjax.ir.control`) are graph functions.
- ``control-consistent``: a control op's info and checks are those its regions give
  (re-deduced: every loop carry keeps its dtype, rank and dims, branches agree); only a loop
  body (the region that receives the carries) may donate parameters, and only carries;
  a function that donates parameters is never called directly.
- ``inplace-owned``: ``call_tir_inplace`` updates tensors the function owns and that are
  dead after the update (:mod:`relaxjax.ir.inplace`).
- ``view-layout``: the base of a ``call_view`` is not itself a view, and a kernel reads
  each operand with the operand's strides (a view's, else row-major;
  :mod:`relaxjax.ir.view`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import NoReturn

from relaxjax import arith
from relaxjax.arith import Sym
from relaxjax.errors import RelaxError, VerifyError
from relaxjax.ir.builder import infer_call, is_leaf
from relaxjax.ir.builtin import CALL_EXTERN, CALL_TIR, CALL_TIR_INPLACE
from relaxjax.ir.calls import match_call
from relaxjax.ir.control import control_regions, deduce_control, donated_params, is_control_call
from relaxjax.ir.inplace import BufferFacts
from relaxjax.ir.module import IRModule, is_kernel
from relaxjax.ir.nodes import (
    Binding,
    BindingBlock,
    Call,
    Check,
    DataflowBlock,
    DataflowVar,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    MatchCast,
    PrimValue,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from relaxjax.ir.printer import Printer
from relaxjax.ir.struct_info import (
    StructInfo,
    TupleInfo,
    determined_symbols,
    free_symbols,
    is_base_of,
)
from relaxjax.ir.view import CALL_VIEW, ViewFacts, kernel_symbols, param_mismatch


def verify(mod: IRModule) -> None:
    """Raise ``VerifyError`` naming the rule and the binding if ``mod`` is not well formed."""
    seen: set[Var] = set()
    for name, item in mod.functions.items():
        if isinstance(item, Function):
            _FunctionChecker(mod, name, item, seen).run()


class _FunctionChecker:
    def __init__(self, mod: IRModule, name: str, func: Function, seen: set[Var]) -> None:
        self.mod = mod
        self.name = name
        self.func = func
        self.seen = seen  # every var defined so far in the module
        self.in_scope: set[Var] = set()
        self.symbols: set[str] = set()
        self.printer = Printer(locations=False)
        self.where = "the signature"
        self.binding: Binding | MatchCast | None = None
        self.position = -1  # the binding's index in the function (for in-place updates)
        self._buffers: BufferFacts | None = None
        self._views: ViewFacts | None = None

    def fail(self, rule: str, detail: str) -> NoReturn:
        message = f"{rule}: function {self.name}, {self.where}: {detail}"
        nodes = (self.binding,) if self.binding is not None else (self.func,)
        raise VerifyError(message, nodes=nodes)

    # -- walking ----------------------------------------------------------------------

    def run(self) -> None:
        for param in self.func.params:
            self.define_var(param)
        for param in self.func.params:
            self.symbols |= {s.name for s in free_symbols(param.info)}
        param_symbols = set(self.symbols)
        for block in self.func.body.blocks:
            self.block(block)
        body = self.func.body.body
        self.where = f"return {self.printer.expr(body)}"
        self.binding = None
        self.operand(body)
        self.symbols = param_symbols  # a caller knows only the parameters' symbols
        self.use_symbols(free_symbols(self.func.ret_info), "a parameter (in the return info)")
        if is_base_of(self.func.ret_info, body.info) is not True:
            self.fail(
                "info-consistent",
                f"declared return info {self.func.ret_info!r} is not a base of the returned "
                f"{body.info!r}",
            )

    def block(self, block: BindingBlock) -> None:
        dataflow = isinstance(block, DataflowBlock)
        local: list[Var] = []
        for binding in block.bindings:
            self.binding = binding
            self.position += 1
            self.where = "binding " + self.printer.binding(binding, dataflow)[0]
            if isinstance(binding.var, DataflowVar):
                if not dataflow:
                    self.fail("dataflow-scope", "a dataflow var is bound outside a dataflow block")
                local.append(binding.var)
            if isinstance(binding, MatchCast):
                self.match_cast(binding)
            else:
                self.plain_binding(binding)
        self.in_scope -= set(local)  # dataflow vars end with their block

    def define_var(self, var: Var) -> None:
        if var in self.seen:
            self.fail("var-bound-once", f"var {self.printer.namer(var)} is defined twice")
        self.seen.add(var)
        self.in_scope.add(var)

    def use_var(self, var: Var) -> None:
        if var in self.in_scope:
            return
        name = self.printer.namer(var)
        if isinstance(var, DataflowVar) and var in self.seen:
            self.fail("dataflow-scope", f"dataflow var {name} is used after its block ended")
        self.fail("var-defined", f"var {name} is used before it is defined")

    def use_symbols(
        self, symbols: Iterable[Sym], definers: str = "a parameter or match_cast"
    ) -> None:
        for symbol in sorted(symbols, key=lambda s: s.name):
            if symbol.name not in self.symbols:
                self.fail(
                    "symbol-defined", f"symbol {symbol.name} is used but not defined by {definers}"
                )

    # -- bindings -------------------------------------------------------------------------

    def match_cast(self, binding: MatchCast) -> None:
        self.operand(binding.value)
        new = {s.name for s in free_symbols(binding.info)} - self.symbols
        determined = determined_symbols(binding.info, self.symbols)
        defined = [s for s in determined if s.name in new]
        for symbol in defined:  # a symbolic bound (k <= n * 4) uses symbols defined before
            if not isinstance(symbol.upper, arith.Expr):
                continue
            for used in sorted(arith.free_symbols(symbol.upper), key=lambda s: s.name):
                if used.name not in self.symbols:
                    self.fail(
                        "symbol-defined",
                        f"symbol {used.name} in the bound {symbol.name} <= {symbol.upper} is not "
                        "defined by a parameter or an earlier match_cast",
                    )
        self.symbols |= {s.name for s in defined}
        self.use_symbols(free_symbols(binding.info))
        if binding.var.info != binding.info:
            self.fail(
                "info-consistent",
                f"the var's info {binding.var.info!r} differs from the cast {binding.info!r}",
            )
        self.define_var(binding.var)

    def plain_binding(self, binding: Binding) -> None:
        value = binding.value
        if isinstance(value, Call):
            self.call(value)
        elif isinstance(value, TupleGetItem):
            self.operand(value.tuple_value)
        else:
            self.operand(value)
        self.use_symbols(free_symbols(binding.var.info))
        if value.info is not None and is_base_of(binding.var.info, value.info) is not True:
            self.fail(
                "info-consistent",
                f"the var's info {binding.var.info!r} is not a base of its value's {value.info!r}",
            )
        self.define_var(binding.var)

    def operand(self, expr: Expr) -> None:
        if not is_leaf(expr):
            self.fail(
                "normal-form",
                f"{type(expr).__name__} {self.printer.expr(expr)} must be bound to a var "
                "before it is used as an operand",
            )
        for node in _leaves(expr):
            if isinstance(node, Var):
                self.use_var(node)
            elif isinstance(node, (PrimValue, ShapeExpr)):
                values = node.values if isinstance(node, ShapeExpr) else (node.value,)
                self.use_symbols(_dims_symbols(values))

    def call(self, call: Call) -> None:
        if isinstance(call.op, Expr):
            self.callee(call)
        for arg in call.args:
            self.operand(arg)
        if call.info is None:
            self.fail("info-consistent", "the call has no info (it was never normalised)")
        self.use_symbols(free_symbols(call.info))
        self.use_symbols(_attrs_symbols(call.attrs))
        for check in call.checks:
            self.use_symbols(_dims_symbols(check.args))
        if call.op is CALL_TIR or call.op is CALL_EXTERN or call.op is CALL_TIR_INPLACE:
            self.builtin_callee(call)
        if call.op is CALL_TIR_INPLACE:
            self.inplace(call)
        if call.op is CALL_VIEW or call.op is CALL_TIR or call.op is CALL_TIR_INPLACE:
            self.view_layout(call)
        if isinstance(call.op, GlobalVar):
            self.rematch(call)
        elif not isinstance(call.op, ExternFunc):
            self.rededuce(call)
        if is_control_call(call):
            self.control(call)

    def callee(self, call: Call) -> None:
        if isinstance(call.op, GlobalVar):
            target = self.mod.functions.get(call.op.name)
            if not isinstance(target, Function):
                self.fail("callee-exists", f"{call.op.name} is not a graph function of the module")
            if len(call.args) != len(target.params):
                self.fail(
                    "info-consistent",
                    f"{call.op.name} takes {len(target.params)} arguments, got {len(call.args)}",
                )
            if donated_params(target):
                self.fail(
                    "control-consistent",
                    f"{call.op.name} donates parameters (it is a loop body): only a loop calls it",
                )

    def builtin_callee(self, call: Call) -> None:
        target = call.args[0] if call.args else None
        if call.op is CALL_TIR or call.op is CALL_TIR_INPLACE:
            if not isinstance(target, GlobalVar) or not is_kernel(
                self.mod.functions.get(target.name)
            ):
                shown = self.printer.expr(target) if target is not None else "nothing"
                self.fail(
                    "callee-exists",
                    f"{call.op.name} of {shown}, which is not a kernel of the module",
                )
        elif not isinstance(target, ExternFunc):
            self.fail("callee-exists", "call_extern must call an ExternFunc")

    def inplace(self, call: Call) -> None:
        """Each target of ``call_tir_inplace`` is owned and dead after the update."""
        if len(call.args) < 3:
            return  # the op's own infer reports the arity
        if self._buffers is None:
            self._buffers = BufferFacts(self.func)
        inputs = [call.args[1], *call.args[3:]]
        targets = call.args[2]
        for target in targets.fields if isinstance(targets, Tuple) else (targets,):
            reason = self._buffers.why_not_update(self.position, target, inputs)
            if reason is not None:
                shown = self.printer.expr(target)
                self.fail("inplace-owned", f"cannot update {shown} in place: {reason}")

    def view_layout(self, call: Call) -> None:
        """A view's base is not a view; a kernel reads its operands with their strides."""
        if self._views is None:
            self._views = ViewFacts(self.func)
        views = self._views
        if call.op is CALL_VIEW:
            if call.args and views.view(call.args[0]) is not None:
                shown = self.printer.expr(call.args[0])
                self.fail("view-layout", f"the base {shown} of the view is a view itself")
            return
        kernel = self.mod.functions.get(call.args[0].name)  # type: ignore[union-attr]
        inputs = call.args[1]
        if not isinstance(inputs, Tuple) or not hasattr(kernel, "params"):
            return
        operands = list(inputs.fields)
        if call.op is CALL_TIR_INPLACE and isinstance(call.args[2], Tuple):
            operands += list(call.args[2].fields)
        position = 2 if call.op is CALL_TIR else 3  # of the scalar arguments, if any
        extra = call.args[position] if len(call.args) > position else None
        scalars = extra.values if isinstance(extra, ShapeExpr) else ()
        results = [] if call.op is CALL_TIR_INPLACE else _leaves_info(call.info)
        if len(operands) > len(kernel.params):  # type: ignore[union-attr]
            return  # the runtime names the count mismatch
        symbols = kernel_symbols(kernel, operands, results, scalars)
        for position, operand in enumerate(operands):
            reason = param_mismatch(kernel, position, operand, views.view(operand), symbols)
            if reason is not None:
                name = call.args[0].name  # type: ignore[union-attr]
                shown = self.printer.expr(operand)
                self.fail("view-layout", f"kernel {name} cannot read {shown}: {reason}")

    def control(self, call: Call) -> None:
        """A control op: regions exist, donate only what they may, and give the info."""
        try:
            deduced, checks = deduce_control(call, self.mod.functions.get)
        except (RelaxError, TypeError, ValueError) as err:
            rule = "callee-exists" if "not a graph function" in str(err) else "control-consistent"
            self.fail(rule, str(err))
        allowed = call.op.donatable(call.args)  # type: ignore[union-attr]
        for ref in control_regions(call):
            donated = donated_params(self.mod.functions[ref.name])  # type: ignore[arg-type]
            if not donated <= allowed.get(ref.name, frozenset()):
                owned = sorted(allowed.get(ref.name, ())) or "none"
                self.fail(
                    "control-consistent",
                    f"{ref.name} donates parameters {sorted(donated)}, but "
                    f"{call.op.name} owns only {owned} of its arguments",  # type: ignore[union-attr]
                )
        self.consistent(call, deduced, checks, call.op.name)  # type: ignore[union-attr]

    def rematch(self, call: Call) -> None:
        """A call of a graph function: its info and checks against a fresh match."""
        callee = self.mod.functions[call.op.name]  # type: ignore[union-attr]
        assert isinstance(callee, Function)
        try:
            match = match_call(callee, [a.info for a in call.args])
        except (RelaxError, TypeError, ValueError) as err:
            self.fail("info-consistent", f"{callee.name} rejects its arguments: {err}")
        self.consistent(call, match.info, match.checks, callee.name)

    def rededuce(self, call: Call) -> None:
        try:
            deduced, checks = infer_call(call.op, call.args, call.attrs)
        except (RelaxError, TypeError, ValueError) as err:
            self.fail("info-consistent", f"{call.op.name} rejects its operands: {err}")
        self.consistent(call, deduced, checks, call.op.name)

    def consistent(
        self, call: Call, deduced: StructInfo, checks: Iterable[Check], callee: str
    ) -> None:
        """The recorded info is a base of the deduced one; every deduced check is recorded."""
        if is_base_of(call.info, deduced) is not True:
            self.fail(
                "info-consistent",
                f"recorded info {call.info!r} is not a base of the re-deduced {deduced!r}",
            )
        recorded = {(c.kind, c.args) for c in call.checks}
        for check in checks:
            if (check.kind, check.args) not in recorded:
                self.fail(
                    "info-consistent",
                    f"the run-time check {check.relation()} that {callee} needs is "
                    "not recorded on the call",
                )


def _leaves_info(info: StructInfo | None) -> list[StructInfo]:
    if isinstance(info, TupleInfo):
        return [leaf for field in info.fields for leaf in _leaves_info(field)]
    return [] if info is None else [info]


def _leaves(expr: Expr) -> Iterator[Expr]:
    if isinstance(expr, Tuple):
        for field in expr.fields:
            yield from _leaves(field)
    else:
        yield expr


def _dims_symbols(dims: Iterable[object]) -> set[Sym]:
    found: set[Sym] = set()
    for dim in dims:
        if isinstance(dim, arith.Expr):
            found |= arith.free_symbols(dim)
    return found


def _attrs_symbols(value: object) -> set[Sym]:
    """Symbols mentioned in op attributes (dims, tuples of them, struct infos)."""
    if isinstance(value, arith.Expr):
        return set(arith.free_symbols(value))
    if isinstance(value, StructInfo):
        return set(free_symbols(value))
    if isinstance(value, (tuple, list)):
        return {s for v in value for s in _attrs_symbols(v)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            s for f in dataclasses.fields(value) for s in _attrs_symbols(getattr(value, f.name))
        }
    return set()
