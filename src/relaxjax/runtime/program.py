"""From a legalised graph function to the generated Python of its executable.

The generated function is a sequence of *segments*. Each segment has three phases,
in this order:

1. **shapes** — (first segment: the arguments, coerced, checked and bound by
   :mod:`relaxjax.runtime.arguments`) the run-time ``checks`` deduction recorded,
   ``match_cast``s (checking and binding new symbols) and the concrete shapes of
   coarse results (through the op's own ``infer`` on concrete shapes); every error
   of the segment is raised here, before any of its kernels has run;
2. **memory** — the returned tensors (and those the program itself reads) as numpy
   arrays, every other temporary of the segment in the segment's arena
   (:mod:`relaxjax.runtime.memory`); large ones come from a pool of blocks reused
   across calls (:mod:`relaxjax.runtime.pool`);
3. **kernels** — one native launch per ``call_tir`` (:mod:`relaxjax.runtime.launch`),
   with the kernel's symbol values read from its buffers' dims; a ``call_extern`` (or a
   kernel of the ``reference`` target) is a Python call on numpy arrays, temporaries
   viewed in the arena.

Most programs are one segment. A new segment starts where a binding needs a value
that only a kernel of the current segment produces: a ``match_cast`` of a scalar a
kernel computed (``k = match_cast(count, Prim("int64", value=k))``, how data-dependent
sizes such as ``nonzero``'s become symbols) reads it after that segment's kernels ran,
binds the symbol, checks its declared bounds, and the program goes on with the next
segment, whose shapes may use the new symbol. :meth:`ProgramWriter.read_data` is that
rule; a binding kind that needs run-time values (e.g. the result shapes of a call)
calls it before writing its code. Values of an earlier segment stay alive (each
segment's arena is a local of the generated function) and are never overwritten:
temporaries read by a later segment keep their slot to the end of their own segment.

A call of another graph function of the module (``mod.layer(x, w)``) is, to the
caller, like a library call: its run-time checks (the callee's signature and
preconditions, in the caller's symbols) run in the shape phase, its results are allocated in
the memory phase (its own arrays when returned, else arena slots), and the kernel phase calls the
callee's generated function with the input arrays, the result arrays to write and the
values of the callee's symbols (:mod:`relaxjax.runtime.calls` writes that function).

Shape arithmetic is Python source produced by ``arith.to_python`` over the locals
holding the symbols, so a call performs no IR walks and no lookups.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.arith import Dim, Sym
from relaxjax.errors import LoweringError, ShapeError, SourceLocation
from relaxjax.ir import (
    CALL_EXTERN,
    CALL_TIR,
    CALL_TIR_INPLACE,
    Binding,
    Call,
    Check,
    Constant,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    MatchCast,
    PrimInfo,
    PrimValue,
    ShapeExpr,
    StructInfo,
    TensorInfo,
    Tuple,
    TupleGetItem,
    TupleInfo,
    Var,
    is_control_call,
    is_view_call,
)
from relaxjax.ir.calls import match_call
from relaxjax.passes.legalize import LegalizedAttrs
from relaxjax.passes.walk import used_vars
from relaxjax.runtime import messages
from relaxjax.runtime.arguments import emit_arguments, emit_range_check
from relaxjax.runtime.control import HOST_OPS, ArrayOps, plan_control
from relaxjax.runtime.env import SymbolTable
from relaxjax.runtime.externs import lookup_extern
from relaxjax.runtime.launch import Launcher, data_pointer, object_args_supported
from relaxjax.runtime.memory import ALIGNMENT, Request, plan_memory
from relaxjax.runtime.pool import default_pool
from relaxjax.runtime.recorder import Recorder
from relaxjax.runtime.shapes import (
    check_condition,
    check_error,
    concrete_infer,
    data_leaves,
    original_tensors,
    tensor_leaves,
)
from relaxjax.runtime.solve import SizeFact, emit_solution, plan_solutions
from relaxjax.runtime.source import SourceWriter
from relaxjax.runtime.values import Storage, Value, ViewCode

__all__ = ["CalleeCode", "KernelHandle", "ProgramWriter", "write_program"]


@dataclass(frozen=True, slots=True)
class KernelHandle:
    """A kernel as the program needs it: the PrimFunc and either the entry address of its
    machine code or a Python function ``(*arrays, *symbol_values)`` running it."""

    func: object
    address: int | None = None
    python: Callable[..., None] | None = None

    def __post_init__(self) -> None:
        if (self.address is None) == (self.python is None):
            raise ValueError("a KernelHandle has exactly one of address and python")


@dataclass(frozen=True, slots=True)
class CalleeCode:
    """A graph function called by others, and its generated function
    ``run(*inputs, *outputs, *symbol_values)`` (see :mod:`relaxjax.runtime.calls`)."""

    function: Function
    run: Callable[..., None]


@dataclass(slots=True)
class _Launch:
    """One kernel (or library function) call: its buffers (inputs then outputs), the
    source of each symbol value, and for a library call the function. ``returns``: for
    a call of a graph function that allocates its results itself (their shapes are only
    known once it ran), the locals that receive them; it is passed ``None`` for each."""

    kernel: str
    buffers: list[Value]
    symbols: list[str]
    where: str
    extern: Callable[..., None] | None = None
    returns: tuple[str, ...] = ()
    kind: str = "call"  # "kernel", "library" or "call" (a graph function or control flow)


@dataclass(slots=True)
class _Segment:
    """A straight run of the program (see the module doc): the source of its shape
    phase, written as the bindings are visited, and the source of its memory and kernel
    phases, written once the outputs are known. ``first_launch``/``first_storage`` index
    the writer's launches and storages where the segment begins."""

    index: int
    shapes: list[str]
    first_launch: int
    first_storage: int
    tail: list[str] = field(default_factory=list)


def _flat_values(bound: object) -> list[Value]:
    if isinstance(bound, Value):
        return [bound]
    return [v for item in bound for v in _flat_values(item)]  # type: ignore[union-attr]


class ProgramWriter:
    """Writes the executable of one legalised graph function (see the module doc)."""

    #: How control-flow runners copy and slice arrays (the GPU writer's are the device's).
    control_ops: ArrayOps = HOST_OPS

    def __init__(
        self,
        function: Function,
        kernels: Mapping[str, KernelHandle],
        callees: Mapping[str, CalleeCode] | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.function = function
        self.kernels = kernels
        self.callees = dict(callees or {})
        self.recorder = recorder
        self.writer = SourceWriter()
        self.symbols = SymbolTable()
        self.values: dict[Var, object] = {}
        self.launches: list[_Launch] = []
        self.storages: list[Storage] = []
        self.storage_values: dict[Storage, Value] = {}
        self.segments = [_Segment(0, self.writer.lines, 0, 0)]
        self.host_read: set[Storage] = set()  # kernel results the generated code reads
        self.arena_of: dict[Storage, tuple[str, str]] = {}  # temp -> (arena, its address)
        self._constants: dict[Constant, Value] = {}
        self.by_object = object_args_supported()
        self._empty = self.writer.constant(default_pool.empty, "empty")
        self._ndarray = self.writer.constant(np.ndarray, "ndarray")

    # -- the whole program -------------------------------------------------------------------

    def write(self) -> Callable[..., tuple]:
        """Generate and compile the executable's function."""
        params = self._emit_params()
        for block in self.function.body.blocks:
            for binding in block.bindings:
                self._binding(binding)
        outputs = self._outputs(self.function.body.body)
        self._finish_segments({v.storage for v in outputs})
        self._emit_return(outputs)
        return self.writer.compile(f"run_{self.function.name}", params)

    def _emit_params(self) -> list[str]:
        """Phase 1: check the arguments and bind the symbols; returns the parameter names."""
        params = [f"a{i}" for i in range(len(self.function.params))]
        values = emit_arguments(
            self.writer,
            self.function.params,
            params,
            self.symbols,
            self.function.name,
            _used_vars(self.function),
        )
        for param, value in zip(self.function.params, values):
            self.values[param] = value
        return params

    # -- segments ------------------------------------------------------------------------------

    def read_data(self, values: Sequence[Value]) -> None:
        """Let the code written next read the data (or run-time shape) of ``values``.

        Kernel results among them become numpy arrays; when a kernel of the current
        segment produces one, the segment ends here, so its kernels run first.
        """
        current = self.segments[-1]
        pending = False
        for value in values:
            if value.storage.kind != "kernel":
                continue  # arguments, constants and scalars exist from the start
            self.host_read.add(value.storage)
            pending = pending or value.storage.index >= current.first_storage
        if pending:
            self.end_segment()

    def end_segment(self) -> None:
        """Start a new segment: the code written next runs after every kernel so far."""
        segment = _Segment(len(self.segments), [], len(self.launches), len(self.storages))
        self.segments.append(segment)
        self.writer.lines = segment.shapes

    def _finish_segments(self, returned: set[Storage]) -> None:
        """Write each segment's memory and kernel phases; join every segment's source."""
        bounds = [(s.first_launch, s.first_storage) for s in self.segments[1:]]
        bounds.append((len(self.launches), len(self.storages)))
        lines: list[str] = []
        for segment, (launch_end, storage_end) in zip(self.segments, bounds):
            self.writer.lines = segment.tail
            launches = self.launches[segment.first_launch : launch_end]
            storages = self.storages[segment.first_storage : storage_end]
            self._allocate(segment, launches, storages, returned)
            for launch in launches:
                self._emit_launch(launch)
            lines += segment.shapes + segment.tail
        self.writer.lines = lines

    # -- phase 2: bindings -------------------------------------------------------------------

    def _binding(self, binding: Binding | MatchCast) -> None:
        where = f"function {self.function.name}, binding {binding.var.name_hint}"
        if isinstance(binding, MatchCast):
            self.values[binding.var] = self._match_cast(binding, where)
            return
        value = binding.value
        if isinstance(value, Call):
            if isinstance(value.op, GlobalVar):
                self.values[binding.var] = self._call_function(value, binding, where)
                return
            if value.op is CALL_EXTERN:
                self.values[binding.var] = self._call_extern(value, binding, where)
                return
            if value.op is CALL_TIR_INPLACE:
                self.values[binding.var] = self._call_tir_inplace(value, binding, where)
                return
            if is_control_call(value):
                self.values[binding.var] = self._control(value, binding, where)
                return
            if is_view_call(value):
                self.values[binding.var] = self._view(value, binding, where)
                return
            if value.op is not CALL_TIR:
                raise LoweringError(
                    f"{where}: the runtime runs only call_tir, call_extern, function calls and "
                    f"control flow, got {value.op_name}; legalise the module first "
                    "(relaxjax.passes.default_pipeline)"
                )
            self.values[binding.var] = self._call_tir(value, binding, where)
        else:
            self.values[binding.var] = self._operand(value, where)

    def _operand(self, expr: Expr, where: str) -> object:
        if isinstance(expr, Var):
            if expr not in self.values:
                raise LoweringError(f"{where}: {expr.name_hint} is used before it is bound")
            return self.values[expr]
        if isinstance(expr, Tuple):
            return tuple(self._operand(f, where) for f in expr.fields)
        if isinstance(expr, TupleGetItem):
            return self._operand(expr.tuple_value, where)[expr.index]  # type: ignore[index]
        if isinstance(expr, Constant):
            if expr not in self._constants:  # one copy per constant, however often it is used
                array = np.array(expr.data, order="C")  # a C-contiguous copy; keeps 0-d
                self._constants[expr] = self._constant(array, expr.info)
            return self._constants[expr]
        if isinstance(expr, PrimValue):
            return self._prim_value(expr, where)
        raise LoweringError(f"{where}: the runtime cannot evaluate {expr!r}")

    def _new_storage(self, kind: str) -> Storage:
        storage = Storage(kind, len(self.storages))
        self.storages.append(storage)
        return storage

    def _constant(self, array: np.ndarray, info: TensorInfo) -> Value:
        name = self.writer.constant(array, "const")
        shape = tuple(str(d) for d in array.shape)
        return Value(info, shape, name, True, self._new_storage("constant"))

    def _prim_value(self, prim: PrimValue, where: str) -> Value:
        info = TensorInfo((), prim.dtype)
        if not isinstance(prim.value, arith.Expr):
            return self._constant(np.asarray(prim.value, dtypes.to_numpy(prim.dtype)), info)
        dtype = self.writer.constant(dtypes.to_numpy(prim.dtype), prim.dtype)
        array = self.writer.constant(np.asarray, "asarray")
        local = self.writer.fresh("q")
        self.writer.line(f"{local} = {array}({self.symbols.code(prim.value, where)}, {dtype})")
        return Value(info, (), local, True, self._new_storage("scalar"))

    def _call_tir(self, call: Call, binding: Binding, where: str) -> object:
        kernel_ref = call.args[0]
        if not isinstance(kernel_ref, GlobalVar) or kernel_ref.name not in self.kernels:
            raise LoweringError(f"{where}: call_tir of an unknown kernel {kernel_ref!r}")
        inputs = _flat_values(self._operand(call.args[1], where))
        self._emit_checks(call.checks, binding.location)
        out_info = call.info
        assert out_info is not None
        leaves = tensor_leaves(out_info, where)
        if all(leaf.shape is not None for leaf in leaves):
            shapes = [tuple(self.symbols.code(d, where) for d in leaf.shape) for leaf in leaves]
        else:
            shapes = self._infer_shapes(call, inputs, leaves, binding.location, where)
        outputs = self._new_outputs(leaves, shapes)
        tir_vars = call.args[2] if len(call.args) > 2 else None
        self._add_launch(kernel_ref.name, inputs + outputs, tir_vars, where)
        if isinstance(out_info, TensorInfo | PrimInfo):
            return outputs[0]
        return _restructure(out_info, iter(outputs))

    def _view(self, call: Call, binding: Binding, where: str) -> Value:
        """A view of its base's memory (``call_view``): no storage of its own, so its
        uses are uses of the base (:mod:`relaxjax.runtime.memory` keeps the base alive
        while the view is read)."""
        base = self._operand(call.args[0], where)
        if not isinstance(base, Value) or base.view is not None:
            raise LoweringError(f"{where}: the base of a view must be a tensor that is not a view")
        self._emit_checks(call.checks, binding.location)
        layout = call.attrs.layout  # type: ignore[union-attr]
        code = functools.partial(self.symbols.code, what=where)
        view = ViewCode(tuple(code(s) for s in layout.strides), code(layout.offset))
        shape = tuple(code(d) for d in layout.shape)
        info = call.info
        assert isinstance(info, TensorInfo)
        return Value(info, shape, base.ref, base.by_object, base.storage, view)

    def _call_tir_inplace(self, call: Call, binding: Binding, where: str) -> object:
        """A kernel writing into existing buffers: its results are those buffers (the IR
        guarantees the old values are dead and owned by this function)."""
        kernel_ref = call.args[0]
        if not isinstance(kernel_ref, GlobalVar) or kernel_ref.name not in self.kernels:
            raise LoweringError(f"{where}: call_tir_inplace of an unknown kernel {kernel_ref!r}")
        inputs = _flat_values(self._operand(call.args[1], where))
        targets = _flat_values(self._operand(call.args[2], where))
        self._emit_checks(call.checks, binding.location)
        assert call.info is not None
        leaves = tensor_leaves(call.info, where)
        tir_vars = call.args[3] if len(call.args) > 3 else None
        self._add_launch(kernel_ref.name, inputs + targets, tir_vars, where)
        results = [t.with_shape(leaf, t.shape) for t, leaf in zip(targets, leaves)]
        if isinstance(call.info, TensorInfo | PrimInfo):
            return results[0]
        return _restructure(call.info, iter(results))

    def _control(self, call: Call, binding: Binding, where: str) -> object:
        """A branch or loop (:mod:`relaxjax.runtime.control`): its checks in the shape
        phase, its results planned like a call's, its runner among the launches."""
        assert call.info is not None
        leaves = [_as_tensor(leaf) for leaf in data_leaves([call.info])]
        known = all(t.shape is not None for t in leaves)
        plan = plan_control(call, self.callees, not known, where, self.control_ops)
        inputs = [v for arg in plan.inputs for v in _flat_values(self._operand(arg, where))]
        self._emit_checks(call.checks, binding.location)
        symbols = [self.symbols.code(d, where) for d in plan.symbols]
        name = call.op.name  # type: ignore[union-attr]
        if known:
            shapes = [tuple(self.symbols.code(d, where) for d in t.shape) for t in leaves]  # type: ignore[union-attr]
            outputs = self._new_outputs(leaves, shapes)
            self.launches.append(_Launch(name, inputs + outputs, symbols, where, plan.runner))
        else:
            outputs = self._returned_outputs(leaves)
            returns = tuple(v.ref for v in outputs)
            self.launches.append(_Launch(name, inputs, symbols, where, plan.runner, returns))
            self.end_segment()
        return _restructure(call.info, iter(outputs))

    def _new_outputs(
        self, leaves: Sequence[TensorInfo], shapes: Sequence[tuple[str, ...]]
    ) -> list[Value]:
        """Fresh storages for a call's results (numpy arrays or arena slices, decided later)."""
        outputs = []
        for leaf, shape in zip(leaves, shapes):
            storage = self._new_storage("kernel")
            value = Value(leaf, shape, f"r{storage.index}", True, storage)
            self.storage_values[storage] = value
            outputs.append(value)
        return outputs

    def _call_extern(self, call: Call, binding: Binding, where: str) -> object:
        func = call.args[0]
        assert isinstance(func, ExternFunc)
        function = lookup_extern(func.symbol, where)
        inputs = _flat_values(self._operand(call.args[1], where))
        self._emit_checks(call.checks, binding.location)
        assert call.info is not None
        leaves = tensor_leaves(call.info, where)
        if any(leaf.shape is None for leaf in leaves):
            raise LoweringError(f"{where}: a library call needs a known result shape")
        shapes = [tuple(self.symbols.code(d, where) for d in leaf.shape) for leaf in leaves]
        outputs = self._new_outputs(leaves, shapes)
        self.launches.append(
            _Launch(func.symbol, inputs + outputs, [], where, function, kind="library")
        )
        if isinstance(call.info, TensorInfo | PrimInfo):
            return outputs[0]
        return _restructure(call.info, iter(outputs))

    def _call_function(self, call: Call, binding: Binding, where: str) -> object:
        """A call of another graph function: its checks in the shape phase, then the
        callee's generated function among the launches. Results whose shapes are known
        here are planned with the caller's memory and written in place; otherwise the
        callee allocates them, and the segment ends after the call so that what follows
        can read their shapes."""
        name = call.op.name  # type: ignore[union-attr]
        callee = self.callees.get(name)
        if callee is None:
            raise LoweringError(f"{where}: no generated code for the graph function {name}")
        inputs = [v for arg in call.args for v in _flat_values(self._operand(arg, where))]
        self._emit_checks(call.checks, binding.location)
        assert call.info is not None
        leaves = [_as_tensor(leaf) for leaf in data_leaves([call.info])]
        if len(leaves) != _count_leaves(call.info) or any(t.ndim is None for t in leaves):
            raise LoweringError(
                f"{where}: {name}() returns {call.info!r}, not tensors of known rank"
            )
        match = match_call(callee.function, [a.info for a in call.args])
        symbols = [self.symbols.code(d, where) for d in match.mapping.values()]
        if all(t.shape is not None for t in leaves):
            shapes = [tuple(self.symbols.code(d, where) for d in t.shape) for t in leaves]  # type: ignore[union-attr]
            outputs = self._new_outputs(leaves, shapes)
            self.launches.append(_Launch(name, inputs + outputs, symbols, where, callee.run))
        else:
            outputs = self._returned_outputs(leaves)
            returns = tuple(v.ref for v in outputs)
            self.launches.append(_Launch(name, inputs, symbols, where, callee.run, returns))
            self.end_segment()
        return _restructure(call.info, iter(outputs))

    def _returned_outputs(self, leaves: Sequence[TensorInfo]) -> list[Value]:
        """The results of a call that allocates them: arrays whose dims are read from them."""
        outputs = []
        for leaf in leaves:
            storage = self._new_storage("call")
            ref = f"r{storage.index}"
            shape = tuple(f"{ref}.shape[{axis}]" for axis in range(leaf.ndim))  # type: ignore[arg-type]
            outputs.append(Value(leaf, shape, ref, True, storage))
        return outputs

    def _emit_checks(self, checks: Sequence[Check], location: SourceLocation | None) -> None:
        names = self.symbols.names()
        sites = {name: self.symbols.site(name) for name in names}
        for check in checks:
            helper = self.writer.constant(check_error(check, names, sites, location), "check")
            condition = check_condition(check, lambda d: self.symbols.code(d, "a check"))
            self.writer.line(f"if {condition}:")
            self.writer.line(f"raise {helper}({self.symbols.env_code()})", 2)

    def _infer_shapes(
        self,
        call: Call,
        inputs: Sequence[Value],
        leaves: Sequence[TensorInfo],
        location: SourceLocation | None,
        where: str,
    ) -> list[tuple[str, ...]]:
        attrs = call.attrs
        if not isinstance(attrs, LegalizedAttrs) or not attrs.op_name:
            raise LoweringError(
                f"{where}: the result's shape {call.info!r} is only known at run time, but the "
                "call_tir does not name the op whose shape rule computes it"
            )
        tensors = original_tensors(attrs.arg_infos, inputs, where)
        names = self.symbols.names()
        infer = concrete_infer(attrs, names, len(leaves), location)
        helper = self.writer.constant(infer, "infer")
        local = self.writer.fresh("h")
        shapes = "".join(f"{v.shape_code}, " for v in tensors)
        self.writer.line(f"{local} = {helper}({self.symbols.env_code()}, ({shapes}))")
        result = []
        for index, leaf in enumerate(leaves):
            if leaf.ndim is None:
                raise LoweringError(f"{where}: a kernel output of unknown rank: {leaf!r}")
            result.append(tuple(f"{local}[{index}][{axis}]" for axis in range(leaf.ndim)))
        return result

    def _match_cast(self, binding: MatchCast, where: str) -> object:
        value = self._operand(binding.value, where)
        info = binding.info
        line = binding.location.lineno if binding.location is not None else None
        origin = "match_cast" if line is None else f"match_cast (line {line})"
        if isinstance(info, PrimInfo) and isinstance(value, Value) and value.info.ndim == 0:
            return self._match_scalar(value, info, origin, binding.location)
        if not isinstance(info, TensorInfo) or not isinstance(value, Value):
            raise LoweringError(f"{where}: the runtime supports match_cast of tensors only")
        if info.ndim is not None and info.ndim != len(value.shape):
            raise LoweringError(
                f"{where}: match_cast of a rank-{len(value.shape)} value to {info!r}"
            )
        if info.shape is None:
            return value.with_shape(info, value.shape)
        facts = [
            SizeFact(0, axis, dim, f"{origin} axis {axis}") for axis, dim in enumerate(info.shape)
        ]
        self._match_facts(facts, list(value.shape), binding.location, where)
        shape = [self.symbols.code(d, where) for d in info.shape]
        return value.with_shape(info, tuple(shape))

    def _match_scalar(
        self, value: Value, info: PrimInfo, origin: str, location: SourceLocation | None
    ) -> Value:
        if info.value is not None:
            self.read_data([value])  # e.g. a count a kernel computed: after its segment
            facts = [SizeFact(0, None, info.value, origin)]
            self._match_facts(facts, [f"int({self._array_code(value)})"], location, origin)
        return value

    def _emit_range(self, symbol: Sym, local: str, where: str, from_shape: bool) -> None:
        """Check a freshly bound symbol against its declared bounds; a symbolic upper
        bound (``0 <= k <= n * 4``) is computed from the symbols bound before it."""
        code = functools.partial(self.symbols.code, what=f"the upper bound of {symbol.name}")
        emit_range_check(self.writer, symbol, local, where, from_shape, code)

    def _match_facts(
        self,
        facts: Sequence[SizeFact],
        sizes: Sequence[str],
        location: SourceLocation | None,
        where: str,
    ) -> None:
        """Bind what a match_cast's dims determine (a symbol alone at its first axis, then
        the planned solutions), then check every other dim."""
        pending = []
        for fact, size in zip(facts, sizes):
            dim = fact.dim
            if isinstance(dim, Sym) and dim not in self.symbols:
                local = self.symbols.bind(dim, fact.where)
                self.writer.line(f"{local} = {size}")
                self._emit_range(dim, local, fact.where, fact.from_shape)
            else:
                pending.append((fact, size))
        size_of = {id(fact): size for fact, size in pending}
        plan = plan_solutions([fact for fact, _ in pending], self.symbols.names())
        if plan.undetermined:
            names = ", ".join(s.name for s in plan.undetermined)
            raise LoweringError(f"{where}: no dim of the match_cast determines {names}")
        for solution in plan.solutions:
            emit_solution(self.writer, self.symbols, solution, size_of[id(solution.fact)], location)
        for fact in plan.checks:
            self._emit_match_check(size_of[id(fact)], fact.dim, fact.where, location)

    def _emit_match_check(
        self, got: str, dim: Dim, where: str, location: SourceLocation | None
    ) -> None:
        names = self.symbols.names()
        sites = {name: self.symbols.site(name) for name in names}

        def mismatch(value: int, env_values: tuple) -> ShapeError:
            env = dict(zip(names, env_values))
            error = messages.dim_mismatch(where, 0, dim, value, env, sites)
            return ShapeError(error.message.replace(" axis 0:", ":", 1), location=location)

        helper = self.writer.constant(mismatch, "mismatch")
        self.writer.line(f"if {got} != {self.symbols.code(dim, where)}:")
        self.writer.line(f"raise {helper}({got}, {self.symbols.env_code()})", 2)

    def _add_launch(
        self, name: str, buffers: list[Value], tir_vars: Expr | None, where: str
    ) -> None:
        kernel = self.kernels[name].func
        params = kernel.params  # type: ignore[attr-defined]
        if len(params) != len(buffers):
            raise LoweringError(
                f"{where}: kernel {name} takes {len(params)} buffers, the call passes "
                f"{len(buffers)}"
            )
        for buffer, value in zip(params, buffers):
            _check_buffer(name, buffer, value, where)
        scalar_values = tir_vars.values if isinstance(tir_vars, ShapeExpr) else ()
        symbols = []
        for source in kernel.symbol_sources():  # type: ignore[attr-defined]
            if source.scalar is not None:
                if source.scalar >= len(scalar_values):
                    raise LoweringError(
                        f"{where}: kernel {name} needs scalar {source.sym.name}, "
                        "but the call passes no value for it"
                    )
                symbols.append(self.symbols.code(scalar_values[source.scalar], where))
            else:
                symbols.append(buffers[source.param].shape[source.axis])
        python = self.kernels[name].python
        self.launches.append(_Launch(name, buffers, symbols, where, python, kind="kernel"))

    # -- phase 3: memory ---------------------------------------------------------------------

    def _outputs(self, body: Expr) -> list[Value]:
        return _flat_values(self._operand(body, f"function {self.function.name}, return"))

    def _allocate(
        self,
        segment: _Segment,
        launches: Sequence[_Launch],
        storages: Sequence[Storage],
        returned: set[Storage],
    ) -> None:
        """The segment's results: returned ones (and those the program reads) as their
        own arrays, the others in the segment's arena."""
        temps: list[Value] = []
        for storage in storages:
            value = self.storage_values.get(storage)
            if value is None:
                continue
            if storage in returned or storage in self.host_read:
                self._place(value)
            else:
                temps.append(value)
        if temps:
            later = {
                b.storage
                for launch in self.launches[segment.first_launch + len(launches) :]
                for b in launch.buffers
            }
            requests = [self._temp_request(v, launches, later) for v in temps]
            self._allocate_arena(segment.index, temps, requests)

    def _place(self, value: Value) -> None:
        """A result that is an array of its own (returned, or read by the program)."""
        dtype = self.writer.constant(dtypes.to_numpy(value.info.dtype), value.info.dtype)
        self.writer.line(f"{value.ref} = {self._empty}({value.shape_code}, {dtype})")

    @staticmethod
    def _temp_request(value: Value, launches: Sequence[_Launch], later: set[Storage]) -> Request:
        """The temporary's size and lifetime in its segment: from the launch that writes it
        (the first to use it) to the last launch that reads it, or to the segment's end
        when a later segment reads it."""
        used = [
            i
            for i, launch in enumerate(launches)
            if any(b.storage is value.storage for b in launch.buffers)
        ]
        nbytes = None
        if value.info.shape is not None:
            nbytes = math.prod(value.info.shape, start=1) * dtypes.itemsize(value.info.dtype)
        last = len(launches) if value.storage in later else max(used)
        return Request(nbytes, min(used), last)

    def _allocate_arena(
        self, index: int, temps: Sequence[Value], requests: Sequence[Request]
    ) -> None:
        suffix = str(index) if index else ""  # one segment keeps the plain names
        arena, address, base = f"arena{suffix}", f"arena_address{suffix}", f"base{suffix}"
        plan = plan_memory(requests)
        total = self.symbols.code(plan.symbolic_bytes, "the memory plan")
        runtime_offsets: dict[int, str] = {}
        for position, value in enumerate(temps):
            slot = plan.slot_of[position]
            if plan.slot_sizes[slot] is None:
                local = self.writer.fresh("z")
                itemsize = dtypes.itemsize(value.info.dtype)
                size = " * ".join([*value.shape, str(itemsize)])
                self.writer.line(f"{local} = {total}")
                total = f"{local} + ({size} + {ALIGNMENT - 1}) // {ALIGNMENT} * {ALIGNMENT}"
                runtime_offsets[slot] = local
        u8 = self.writer.constant(np.dtype(np.uint8), "u8")
        pointer = self.writer.constant(data_pointer, "data_pointer")
        self.writer.line(f"{arena} = {self._empty}(({total} + {ALIGNMENT},), {u8})")
        self.writer.line(f"{address} = {pointer}({arena})")
        self.writer.line(f"{base} = ({address} + {ALIGNMENT - 1}) & -{ALIGNMENT}")
        for position, value in enumerate(temps):
            slot = plan.slot_of[position]
            offset = runtime_offsets.get(slot) or self.symbols.code(plan.offsets[slot], "offsets")
            self.writer.line(f"{value.ref} = {base} + {offset}")
            self.arena_of[value.storage] = (arena, address)
            self.storage_values[value.storage] = Value(
                value.info, value.shape, value.ref, False, value.storage
            )

    # -- phase 4: kernels --------------------------------------------------------------------

    def _emit_extern(self, launch: _Launch) -> None:
        """A library call on numpy arrays; temporaries are viewed in the arena."""
        refs = [self._array_code(value) for value in launch.buffers]
        function = self.writer.constant(launch.extern, "extern")
        timed = self._start_timing(launch)
        if launch.returns:
            results = "".join(f"{r}, " for r in launch.returns)
            nones = ["None"] * len(launch.returns)
            self.writer.line(f"{results}= {function}({', '.join(refs + nones + launch.symbols)})")
        else:
            self.writer.line(f"{function}({', '.join(refs + launch.symbols)})")
        if timed is not None:
            values = (
                launch.symbols
                if launch.kind == "kernel"
                else [v.shape_code for v in launch.buffers]
            )
            self._stop_timing(timed, values)

    def _array_code(self, value: Value) -> str:
        """Source of a numpy array holding ``value``: its own array, a view of the
        temporary's arena slice (``ndarray(shape, dtype, buffer, offset)``), or for a view
        of either, a strided view of its base's memory."""
        current = self.storage_values.get(value.storage, value)
        if current.by_object and value.view is None:
            return current.ref
        dtype = self.writer.constant(dtypes.to_numpy(value.info.dtype), value.info.dtype)
        local = self.writer.fresh("v")
        if current.by_object:
            buffer, start = current.ref, "0"
        else:
            arena, address = self.arena_of[value.storage]
            buffer, start = arena, f"{current.ref} - {address}"
        if value.view is None:
            self.writer.line(
                f"{local} = {self._ndarray}({value.shape_code}, {dtype}, {buffer}, {start})"
            )
            return local
        helper = self.writer.constant(strided_view, "strided_view")
        strides = "(" + "".join(f"{s}, " for s in value.view.strides) + ")"
        self.writer.line(
            f"{local} = {helper}({buffer}, {start}, {value.view.offset}, "
            f"{value.shape_code}, {strides}, {dtype})"
        )
        return local

    def _pointer_code(self, value: Value) -> str:
        """Source of the address of a view's first element (its base's address plus
        the view's offset)."""
        current = self.storage_values.get(value.storage, value)
        assert value.view is not None
        itemsize = dtypes.itemsize(value.info.dtype)
        if current.by_object:
            pointer = self.writer.constant(data_pointer, "data_pointer")
            start = f"{pointer}({current.ref})"
        else:
            start = current.ref
        return f"{start} + ({value.view.offset}) * {itemsize}"

    def _emit_launch(self, launch: _Launch) -> None:
        if launch.extern is not None:
            self._emit_extern(launch)
            return
        handle = self.kernels[launch.kernel]
        refs, signature = [], []
        for value in launch.buffers:
            current = self.storage_values.get(value.storage, value)
            if value.view is not None:  # the kernel's buffer declares the view's strides
                refs.append(self._pointer_code(value))
                signature.append("p")
            elif current.by_object and self.by_object:
                refs.append(current.ref)
                signature.append("o")
            elif current.by_object:
                pointer = self.writer.constant(data_pointer, "data_pointer")
                refs.append(f"{pointer}({current.ref})")
                signature.append("p")
            else:
                refs.append(current.ref)
                signature.append("p")
        launcher = Launcher(launch.kernel, handle.address, "".join(signature), len(launch.symbols))
        call = self.writer.constant(launcher.call, f"k_{launch.kernel}")
        where = launch.where

        def failed(status: int) -> Exception:
            if status == 1:  # the kernel ABI's "a temporary could not be allocated"
                return MemoryError(f"{where}: kernel {launch.kernel} could not allocate memory")
            return RuntimeError(f"{where}: kernel {launch.kernel} failed with status {status}")

        helper = self.writer.constant(failed, "failed")
        timed = self._start_timing(launch)
        self.writer.line(f"status = {call}({', '.join(refs + launch.symbols)})")
        if timed is not None:
            self._stop_timing(timed, launch.symbols)
        self.writer.line("if status:")
        self.writer.line(f"raise {helper}(status)", 2)

    def _start_timing(self, launch: _Launch) -> int | None:
        """With a recorder (a profiling build), register the launch and read the clock
        before it; the launch's index among the recorder's sites, or None."""
        if self.recorder is None or launch.kind == "call":
            return None  # a called function's or loop body's own launches are timed
        if launch.kind == "kernel":
            site = self.recorder.kernel_site(launch.kernel, self.kernels[launch.kernel].func)
        else:
            site = self.recorder.library_site(
                launch.kernel, tuple(v.info.dtype for v in launch.buffers)
            )
        clock = self.writer.constant(self.recorder.clock, "clock")
        self.writer.line(f"t_start = {clock}()")
        return site

    def _stop_timing(self, site: int, values: Sequence[str]) -> None:
        """Record the launch's time and what its cost depends on: the kernel's symbol
        values, or a library call's buffer shapes."""
        record = self.writer.constant(self.recorder.record, "record")  # type: ignore[union-attr]
        self.writer.line(f"{record}({site}, t_start, ({''.join(f'{v}, ' for v in values)}))")

    def _emit_return(self, outputs: Sequence[Value]) -> None:
        refs = []
        seen: set[Storage] = set()
        for value in outputs:
            ref = self._array_code(value)
            # an argument or a constant returned as is, or memory another result already
            # holds (a view and its base, the same value twice): the caller gets a copy
            own = value.storage.kind in ("kernel", "call") and value.storage not in seen
            seen.add(value.storage)
            refs.append(ref if own else f"{ref}.copy()")
        self.writer.line("return (" + "".join(f"{r}, " for r in refs) + ")")


def strided_view(
    buffer: object, start: int, offset: int, shape: tuple, strides: tuple, dtype: np.dtype
) -> np.ndarray:
    """The view of ``buffer`` (an array; its bytes from ``start``) whose element ``i`` is
    element ``offset + sum(i * strides)`` of ``dtype`` (strides and offset in elements).
    An empty view reads nothing (its offset may point past the end)."""
    if math.prod(shape) == 0:
        return np.empty(shape, dtype)
    itemsize = np.dtype(dtype).itemsize
    byte_strides = tuple(s * itemsize for s in strides)
    return np.ndarray(shape, dtype, buffer, start + offset * itemsize, byte_strides)


def _used_vars(function: Function) -> set[Var]:
    """The variables the function's bindings and return value read."""
    used = set(used_vars(function.body.body))
    for block in function.body.blocks:
        for binding in block.bindings:
            used.update(used_vars(binding.value))
    return used


def _restructure(info: StructInfo, leaves) -> object:
    if isinstance(info, TupleInfo):
        return tuple(_restructure(f, leaves) for f in info.fields)
    return next(leaves)


def _as_tensor(info: StructInfo) -> TensorInfo:
    """A result leaf as the array the caller allocates (a scalar is a 0-d array; rank 0
    means shape ``()``)."""
    if isinstance(info, PrimInfo) or (isinstance(info, TensorInfo) and info.ndim == 0):
        return TensorInfo((), info.dtype)
    return info  # type: ignore[return-value]


def _count_leaves(info: StructInfo) -> int:
    if isinstance(info, TupleInfo):
        return sum(_count_leaves(f) for f in info.fields)
    return 1


def _check_buffer(kernel: str, buffer: object, value: Value, where: str) -> None:
    """A kernel buffer must match the value passed for it: dtype and rank, static dims."""
    shape = buffer.shape  # type: ignore[attr-defined]
    dtype = buffer.dtype  # type: ignore[attr-defined]
    name = buffer.name  # type: ignore[attr-defined]
    if dtype != value.info.dtype or len(shape) != len(value.shape):
        raise LoweringError(
            f"{where}: kernel {kernel} buffer {name} is {dtype} of rank {len(shape)}, but the "
            f"call passes {value.info!r}"
        )
    known = value.info.shape
    if known is not None:
        for axis, (want, have) in enumerate(zip(shape, known)):
            if isinstance(want, int) and isinstance(have, int) and want != have:
                raise LoweringError(
                    f"{where}: kernel {kernel} buffer {name} axis {axis} is {want}, the call "
                    f"passes {have}"
                )


def write_program(
    function: Function,
    kernels: Mapping[str, KernelHandle],
    callees: Mapping[str, CalleeCode] | None = None,
    recorder: Recorder | None = None,
) -> Callable[..., tuple]:
    """The generated executable function of ``function`` (see the module doc); ``callees``
    holds the generated code of the graph functions it calls. With a ``recorder``, every
    kernel launch and library call is timed into it (a profiling build,
    :mod:`relaxjax.runtime.profiling`)."""
    return ProgramWriter(function, kernels, callees, recorder).write()
