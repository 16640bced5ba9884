"""Control flow in the graph IR: branches and loops whose bodies are graph functions.

A branch or a loop body is a *region*: a graph function of the same module, traced
once, that the control op calls as many times as the program needs (never unrolled).
Unlike a plain call, the control op does not take over its regions' preconditions (the
run-time checks of their bodies): a region checks them itself when it runs, so a branch
not taken or a loop run zero times never fails on them.
Its parameters are the values it receives (loop carries first, then the values it
closes over); it returns a tuple. Each control op is a builtin whose operands name its
regions (``GlobalVar``) and pass their arguments as tuples; its attribute ``out_info``
is its result, always a tuple::

    lv1: Tuple(Tensor((n, 4), "float32")) = switch(p, (mod.cond_false, mod.cond_true), (x, w),
        out_info=Tuple(Tensor((n, 4), "float32")))
    lv2: Tuple(Tensor((), "int64"), Tensor((n, 4), "float32")) = while_loop(mod.while_cond,
        mod.while_body, (i, x), (w,), out_info=...)
    lv3: Tuple(Tensor((n, 4), "float32")) = fori_loop(0, n, mod.fori_body, (x,), (w,), out_info=...)
    lv4: Tuple(Tensor((4,), "float32"), Tensor((m, 4), "float32")) = scan(mod.scan_body, (c,),
        (xs,), (), length=m, reverse=False, out_info=...)

- ``switch(index, branches, operands)``: ``branches[clamp(index, 0, len - 1)](*operands)``;
  ``index`` is a 0-d integer or bool value (a cond is a switch on its predicate, the
  false branch first, as in jax).
- ``while_loop(cond, body, carries, consts)``: ``while cond(*c, *consts): c = body(*c, *consts)``;
  ``cond`` returns ``(bool scalar,)``.
- ``fori_loop(lower, upper, body, carries, consts)``: ``for i in range(lower, upper): c =
  body(i, *c, *consts)``; the bounds are 0-d integer values (symbolic dims included), the
  body's first parameter is the index, a 0-d integer tensor.
- ``scan(body, carries, xs, consts, length, reverse)``: for ``t`` in ``range(length)``
  (reversed when ``reverse``), ``c, y = body(*c, *(x[t] for x in xs), *consts)``; the result
  is the final carries and each ``y`` stacked along a new leading axis of ``length``.

Carries keep their shapes and dtypes: a loop body returns, for each carry, a tensor of
the carry's dtype and rank whose dims are provably the carry's (a relation that cannot be
proven becomes a run-time check of the loop, false ones raise). Branches return the same
structure, dtypes and ranks; their dims are checked the same way, or, when a branch's
dims are not known at the call, the result keeps only their rank. The deduction
(:func:`deduce_control`) matches each region's signature against its arguments with
:func:`~relaxjax.ir.calls.match_call`, so a region's own run-time checks over its
parameters are the control op's, checked once before it runs.

A loop owns its carries: it copies the initial values, so its body may overwrite its
carry parameters (they are *donated*: the function attribute ``"donated"`` lists their
positions, and in-place updates such as ``dynamic_update_slice`` may reuse them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from relaxjax import arith, dtypes
from relaxjax.arith import Dim
from relaxjax.errors import SourceLocation
from relaxjax.ir.calls import match_call
from relaxjax.ir.infer import InferContext
from relaxjax.ir.nodes import Call, Check, Expr, Function, GlobalVar, Tuple
from relaxjax.ir.struct_info import (
    ObjectInfo,
    PrimInfo,
    StructInfo,
    TensorInfo,
    TupleInfo,
    lca,
)

__all__ = [
    "CONTROL_OPS",
    "DONATED",
    "FORI_LOOP",
    "SCAN",
    "SWITCH",
    "WHILE_LOOP",
    "ControlOp",
    "LoopAttrs",
    "ScanAttrs",
    "SwitchAttrs",
    "control_regions",
    "deduce_control",
    "donated_params",
    "with_donated",
    "is_control_call",
]

#: The function attribute listing the parameters a region may overwrite (loop carries).
DONATED = "donated"

Lookup = Callable[[str], object]


@dataclass(frozen=True, slots=True)
class SwitchAttrs:
    """The info of the tuple a ``switch`` returns."""

    out_info: StructInfo


@dataclass(frozen=True, slots=True)
class LoopAttrs:
    """The info of the tuple a ``while_loop`` / ``fori_loop`` returns (the final carries)."""

    out_info: StructInfo


@dataclass(frozen=True, slots=True)
class ScanAttrs:
    """A ``scan``'s trip count, direction and result (final carries, stacked outputs)."""

    length: Dim
    reverse: bool
    out_info: StructInfo

    def __post_init__(self) -> None:
        if isinstance(self.length, bool) or not isinstance(self.length, (int, arith.Expr)):
            raise TypeError(f"ScanAttrs.length must be a dim, got {self.length!r}")
        if isinstance(self.length, int) and self.length < 0:
            raise ValueError(f"ScanAttrs.length must be >= 0, got {self.length}")
        if not isinstance(self.reverse, bool):
            raise TypeError(f"ScanAttrs.reverse must be a bool, got {self.reverse!r}")


class ControlOp:
    """Base of the control ops: ``layout`` names the operands (``"value"``, ``"region"``,
    ``"regions"``, ``"values"``); the module-free ``infer`` checks their kinds and returns
    ``out_info``; :meth:`deduce` matches the regions (it needs the module)."""

    name = ""
    Attrs: type = LoopAttrs
    layout: tuple[tuple[str, str], ...] = ()

    def parts(self, args: Sequence[Expr]) -> dict[str, Expr]:
        """The operands by role, e.g. ``{"body": mod.f, "carries": Tuple(...)}``."""
        if len(args) != len(self.layout):
            raise TypeError(f"{self.name} takes {len(self.layout)} operands, got {len(args)}")
        return {role: arg for (role, _), arg in zip(self.layout, args)}

    def infer(self, args: Sequence[StructInfo], attrs: object, ctx: InferContext) -> StructInfo:
        """Operand kinds only (regions are module items): the result is ``out_info``."""
        if len(args) != len(self.layout):
            ctx.fail(f"takes {len(self.layout)} operands, got {len(args)}")
        for (role, kind), info in zip(self.layout, args):
            if kind in ("values", "regions") and not isinstance(info, TupleInfo):
                ctx.fail(f"{role} must be a tuple, got a value of {info!r}")
            if kind == "region" and not isinstance(info, ObjectInfo):
                ctx.fail(f"{role} must name a graph function, got a value of {info!r}")
        out_info = attrs.out_info  # type: ignore[attr-defined]
        if not isinstance(out_info, TupleInfo):
            ctx.fail(f"the result is a tuple, got {out_info!r}")
        return out_info

    def regions(self, args: Sequence[Expr]) -> tuple[GlobalVar, ...]:
        """The graph functions this call runs (in operand order)."""
        found: list[GlobalVar] = []
        for (_, kind), arg in zip(self.layout, args):
            if kind == "region" and isinstance(arg, GlobalVar):
                found.append(arg)
            elif kind == "regions" and isinstance(arg, Tuple):
                found += [f for f in arg.fields if isinstance(f, GlobalVar)]
        return tuple(found)

    def donatable(self, args: Sequence[Expr]) -> dict[str, frozenset[int]]:
        """For the region receiving the carries (a loop body), the positions of its carry
        parameters: the loop owns those arguments, so the body may overwrite them."""
        parts = self.parts(args)
        body, carries = parts.get("body"), parts.get("carries")
        if not isinstance(body, GlobalVar) or not isinstance(carries, Tuple):
            return {}
        first = 1 if "lower" in parts else 0  # fori_loop's body takes the index first
        return {body.name: frozenset(range(first, first + len(carries.fields)))}

    def region_calls(
        self, args: Sequence[Expr], attrs: object, lookup: Lookup
    ) -> list[tuple[Function, list[StructInfo]]]:
        """Each region (looked up by name) with the infos of the arguments it receives."""
        raise NotImplementedError

    def deduce(
        self,
        args: Sequence[Expr],
        attrs: object,
        lookup: Lookup,
        location: SourceLocation | None = None,
    ) -> tuple[StructInfo, tuple[Check, ...]]:
        """The result's info and run-time checks, matching every region."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def __reduce__(self) -> str:
        return self.name.upper()  # unpickles as the module's singleton


def _values(expr: Expr, role: str, op: str) -> list[StructInfo]:
    if not isinstance(expr, Tuple):
        raise TypeError(f"{op}: {role} must be a tuple, got {expr!r}")
    return [f.info for f in expr.fields]


def _function(lookup: Lookup, ref: Expr, op: str) -> Function:
    if not isinstance(ref, GlobalVar):
        raise TypeError(f"{op}: a region is named by a GlobalVar, got {ref!r}")
    item = lookup(ref.name)
    if not isinstance(item, Function):
        raise TypeError(f"{op}: {ref.name} is not a graph function of the module")
    return item


def _results(info: StructInfo, name: str, op: str) -> tuple[StructInfo, ...]:
    if not isinstance(info, TupleInfo):
        raise TypeError(f"{op}: region {name} must return a tuple, returns {info!r}")
    return info.fields


def _matched(
    ctx: InferContext, region: Function, arg_infos: Sequence[StructInfo], op: str
) -> tuple[StructInfo, ...]:
    """``region`` called on ``arg_infos``: its result fields, its checks required (not
    its preconditions: the region checks those itself each time it runs, so a branch not
    taken, or a loop body run zero times, never fails on them)."""
    match = match_call(region, arg_infos, ctx.location, with_preconditions=False)
    for check in match.checks:
        ctx.require(check)
    return _results(match.info, region.name, op)


def _is_index(info: StructInfo, allow_bool: bool) -> bool:
    dtype = getattr(info, "dtype", None)
    if dtype is None or not (dtypes.is_integer(dtype) or (allow_bool and dtype == "bool")):
        return False
    return isinstance(info, PrimInfo) or (isinstance(info, TensorInfo) and info.ndim == 0)


def _carry_infos(infos: Sequence[StructInfo], op: str) -> list[TensorInfo]:
    for index, info in enumerate(infos):
        if not isinstance(info, TensorInfo) or info.shape is None:
            raise TypeError(f"{op}: carry {index} must be a tensor of known shape, got {info!r}")
    return list(infos)  # type: ignore[arg-type]


def agree(ctx: InferContext, expected: TensorInfo, got: StructInfo, what: str) -> TensorInfo:
    """``got`` must be a tensor of ``expected``'s dtype and rank whose dims equal its dims
    (proven, or checked at run time through ``ctx``); returns ``expected``, weakly typed
    when ``got`` is (as jax types a loop's results by its body's)."""
    op = ctx.op_name
    if not isinstance(got, TensorInfo):
        raise TypeError(f"{op}: {what} is {expected!r} but the region returns {got!r}")
    if got.dtype != expected.dtype:
        raise TypeError(
            f"{op}: {what} has dtype {expected.dtype} but the region returns {got.dtype}"
        )
    if got.ndim != expected.ndim:
        raise TypeError(f"{op}: {what} is {expected!r} but the region returns {got!r}")
    if got.shape is None:
        raise TypeError(
            f"{op}: {what} is {expected!r} but the region's result has dims unknown at the "
            f"call ({got!r}); match_cast it to the carry's shape"
        )
    assert expected.shape is not None
    for axis, (want, have) in enumerate(zip(expected.shape, got.shape)):
        ctx.require(Check("eq", (have, want), f"{op}: {what} axis {axis} keeps its size"))
    return TensorInfo(expected.shape, expected.dtype, weak=got.weak)  # jax: the body's type


# --------------------------------------------------------------------------- switch


class SwitchOp(ControlOp):
    """``switch(index, branches, operands)``: one of the branches, by clamped index."""

    name = "switch"
    Attrs = SwitchAttrs
    layout = (("index", "value"), ("branches", "regions"), ("operands", "values"))

    def region_calls(self, args, attrs, lookup):
        parts = self.parts(args)
        branches = parts["branches"]
        if not isinstance(branches, Tuple) or not branches.fields:
            raise TypeError(f"switch: needs a tuple of at least one branch, got {branches!r}")
        operands = _values(parts["operands"], "operands", self.name)
        return [(_function(lookup, ref, self.name), operands) for ref in branches.fields]

    def deduce(self, args, attrs, lookup, location=None):
        parts = self.parts(args)
        ctx = InferContext(self.name, tuple(a.info for a in args), location)
        if not _is_index(parts["index"].info, allow_bool=True):
            index = parts["index"].info
            raise TypeError(f"switch: the index must be a 0-d integer or bool value, got {index!r}")
        results = [
            _matched(ctx, region, infos, self.name)
            for region, infos in self.region_calls(args, attrs, lookup)
        ]
        return TupleInfo(join_branches(ctx, results)), tuple(ctx.checks)


def join_branches(
    ctx: InferContext, results: Sequence[Sequence[StructInfo]]
) -> tuple[StructInfo, ...]:
    """The result of branches returning ``results``: same count, kinds, dtypes and ranks;
    dims equal (or checked at run time) when every branch's are known, else erased."""
    first = results[0]
    for index, other in enumerate(results[1:], 1):
        if len(other) != len(first):
            raise TypeError(
                f"{ctx.op_name}: branch {index} returns {len(other)} value(s), branch 0 "
                f"returns {len(first)}"
            )
    joined: list[StructInfo] = []
    for leaf, infos in enumerate(zip(*results)):
        base = infos[0]
        if not isinstance(base, TensorInfo):
            raise TypeError(f"{ctx.op_name}: branch results are tensors, got {base!r}")
        for index, info in enumerate(infos[1:], 1):
            if not isinstance(info, TensorInfo) or info.dtype != base.dtype:
                raise TypeError(
                    f"{ctx.op_name}: result {leaf} of branch {index} is {info!r} but branch 0 "
                    f"returns {base!r}"
                )
            if info.ndim != base.ndim:
                raise TypeError(
                    f"{ctx.op_name}: result {leaf} of branch {index} is {info!r} but branch 0 "
                    f"returns {base!r}"
                )
        if all(i.shape is not None for i in infos):  # type: ignore[union-attr]
            for index, info in enumerate(infos[1:], 1):
                for axis, (want, have) in enumerate(zip(base.shape, info.shape)):  # type: ignore[arg-type, union-attr]
                    message = (
                        f"{ctx.op_name}: the branches' results have equal shapes (result "
                        f"{leaf} axis {axis} of branch {index} and of branch 0)"
                    )
                    ctx.require(Check("eq", (have, want), message))
            weak = all(i.weak for i in infos)  # type: ignore[union-attr]
            joined.append(TensorInfo(base.shape, base.dtype, weak=weak))
        else:
            common: StructInfo = base
            for info in infos[1:]:
                common = lca(common, info)
            joined.append(common)
    return tuple(joined)


# --------------------------------------------------------------------------- loops


class WhileLoopOp(ControlOp):
    """``while_loop(cond, body, carries, consts)``."""

    name = "while_loop"
    Attrs = LoopAttrs
    layout = (("cond", "region"), ("body", "region"), ("carries", "values"), ("consts", "values"))

    def region_calls(self, args, attrs, lookup):
        parts = self.parts(args)
        carries = _carry_infos(_values(parts["carries"], "carries", self.name), self.name)
        infos = [*carries, *_values(parts["consts"], "consts", self.name)]
        cond = _function(lookup, parts["cond"], self.name)
        body = _function(lookup, parts["body"], self.name)
        return [(cond, infos), (body, infos)]

    def deduce(self, args, attrs, lookup, location=None):
        parts = self.parts(args)
        ctx = InferContext(self.name, tuple(a.info for a in args), location)
        carries = _carry_infos(_values(parts["carries"], "carries", self.name), self.name)
        (cond, cond_args), (body, body_args) = self.region_calls(args, attrs, lookup)
        predicate = _matched(ctx, cond, cond_args, self.name)
        if len(predicate) != 1 or not (
            isinstance(predicate[0], TensorInfo)
            and predicate[0].ndim == 0
            and predicate[0].dtype == "bool"
        ):
            raise TypeError(
                f"while_loop: the condition {cond.name} must return a bool scalar, returns "
                f"{TupleInfo(predicate)!r}"
            )
        results = _matched(ctx, body, body_args, self.name)
        return TupleInfo(_loop_carries(ctx, carries, results)), tuple(ctx.checks)


def _loop_carries(
    ctx: InferContext, carries: Sequence[TensorInfo], results: Sequence[StructInfo]
) -> list[StructInfo]:
    if len(results) != len(carries):
        raise TypeError(
            f"{ctx.op_name}: the body returns {len(results)} value(s) for {len(carries)} carries"
        )
    return [agree(ctx, c, r, f"carry {i}") for i, (c, r) in enumerate(zip(carries, results))]


class ForiLoopOp(ControlOp):
    """``fori_loop(lower, upper, body, carries, consts)``."""

    name = "fori_loop"
    Attrs = LoopAttrs
    layout = (
        ("lower", "value"),
        ("upper", "value"),
        ("body", "region"),
        ("carries", "values"),
        ("consts", "values"),
    )

    def region_calls(self, args, attrs, lookup):
        parts = self.parts(args)
        carries = _carry_infos(_values(parts["carries"], "carries", self.name), self.name)
        consts = _values(parts["consts"], "consts", self.name)
        body = _function(lookup, parts["body"], self.name)
        index = body.params[0].info if body.params else None
        if not (isinstance(index, TensorInfo) and _is_index(index, allow_bool=False)):
            raise TypeError(
                f"fori_loop: the body {body.name} takes the index first, a 0-d integer tensor; "
                f"got {index!r}"
            )
        return [(body, [index, *carries, *consts])]

    def deduce(self, args, attrs, lookup, location=None):
        parts = self.parts(args)
        ctx = InferContext(self.name, tuple(a.info for a in args), location)
        for role in ("lower", "upper"):
            if not _is_index(parts[role].info, allow_bool=False):
                raise TypeError(
                    f"fori_loop: {role} must be a 0-d integer value, got {parts[role].info!r}"
                )
        carries = _carry_infos(_values(parts["carries"], "carries", self.name), self.name)
        ((body, infos),) = self.region_calls(args, attrs, lookup)
        results = _matched(ctx, body, infos, self.name)
        return TupleInfo(_loop_carries(ctx, carries, results)), tuple(ctx.checks)


class ScanOp(ControlOp):
    """``scan(body, carries, xs, consts, length=, reverse=)``."""

    name = "scan"
    Attrs = ScanAttrs
    layout = (("body", "region"), ("carries", "values"), ("xs", "values"), ("consts", "values"))

    def region_calls(self, args, attrs, lookup):
        parts = self.parts(args)
        carries = _carry_infos(_values(parts["carries"], "carries", self.name), self.name)
        slices = []
        for index, x in enumerate(_values(parts["xs"], "xs", self.name)):
            if not isinstance(x, TensorInfo) or x.shape is None or x.ndim == 0:
                raise TypeError(f"scan: xs {index} must be an array of known shape, got {x!r}")
            slices.append(TensorInfo(x.shape[1:], x.dtype))
        consts = _values(parts["consts"], "consts", self.name)
        body = _function(lookup, parts["body"], self.name)
        return [(body, [*carries, *slices, *consts])]

    def deduce(self, args, attrs, lookup, location=None):
        parts = self.parts(args)
        ctx = InferContext(self.name, tuple(a.info for a in args), location)
        length = attrs.length
        carries = _carry_infos(_values(parts["carries"], "carries", self.name), self.name)
        for index, x in enumerate(_values(parts["xs"], "xs", self.name)):
            if isinstance(x, TensorInfo) and x.shape:
                message = f"scan: xs {index} has length {length} along axis 0"
                ctx.require(Check("eq", (x.shape[0], length), message))
        ((body, infos),) = self.region_calls(args, attrs, lookup)
        results = _matched(ctx, body, infos, self.name)
        if len(results) < len(carries):
            raise TypeError(
                f"scan: the body returns {len(results)} value(s) for {len(carries)} carries"
            )
        out = _loop_carries(ctx, carries, results[: len(carries)])
        for index, y in enumerate(results[len(carries) :]):
            if not isinstance(y, TensorInfo) or y.shape is None:
                raise TypeError(
                    f"scan: output {index} of the body must be a tensor of known shape, got {y!r}"
                )
            out.append(TensorInfo((length, *y.shape), y.dtype, weak=y.weak))
        return TupleInfo(out), tuple(ctx.checks)


SWITCH = SwitchOp()
WHILE_LOOP = WhileLoopOp()
FORI_LOOP = ForiLoopOp()
SCAN = ScanOp()
CONTROL_OPS = {op.name: op for op in (SWITCH, WHILE_LOOP, FORI_LOOP, SCAN)}


def is_control_call(expr: object) -> bool:
    """Whether ``expr`` is a call of a control op."""
    return isinstance(expr, Call) and any(expr.op is op for op in CONTROL_OPS.values())


def control_regions(call: Call) -> tuple[GlobalVar, ...]:
    """The graph functions a control call runs (empty for any other call)."""
    if not is_control_call(call):
        return ()
    return call.op.regions(call.args)  # type: ignore[union-attr]


def deduce_control(
    call: Call, lookup: Lookup, location: SourceLocation | None = None
) -> tuple[StructInfo, tuple[Check, ...]]:
    """The info and run-time checks of a control call, its regions looked up by name."""
    return call.op.deduce(call.args, call.attrs, lookup, location)  # type: ignore[union-attr]


def donated_params(function: Function) -> frozenset[int]:
    """The positions of the parameters ``function`` may overwrite (see the module doc)."""
    value = function.attrs_dict.get(DONATED, ())
    return frozenset(value) if isinstance(value, tuple) else frozenset()


def with_donated(function: Function, positions: Iterable[int]) -> Function:
    """``function`` allowed to overwrite the parameters at ``positions`` as well: a loop
    body's carries, or the arguments an entry function's caller donates
    (``relax.jit(..., donate_argnames=...)``)."""
    donated = tuple(sorted(donated_params(function) | set(positions)))
    if any(not 0 <= p < len(function.params) for p in donated):
        raise ValueError(f"{function.name} has {len(function.params)} parameters, got {donated}")
    attrs = {**function.attrs_dict, DONATED: donated}
    return Function(function.params, function.body, function.ret_info, function.name, attrs)
