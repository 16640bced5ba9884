"""Tracers and :func:`emit`: how Python code on tensors becomes graph bindings.

A :class:`Tracer` stands for a value of the function being traced; it wraps the
graph variable bound to that value. Python operators on tracers, and every
public op wrapper (``relaxjax.numpy``, ``relaxjax.nn``), go through :func:`emit`,
which binds one call through the trace's builder (deducing its struct info, and
recording the user's source line) and hands back a new tracer.

Outside a trace, :func:`emit` evaluates eagerly with the ops' numpy references,
so the wrappers also work on plain arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from relaxjax import arith, dtypes, ops
from relaxjax.dlpack import as_numpy
from relaxjax.errors import RelaxError, SourceLocation, TraceError
from relaxjax.ir import (
    Constant,
    Expr,
    PrimInfo,
    PrimValue,
    StructInfo,
    TensorInfo,
    Tuple,
    TupleGetItem,
    TupleInfo,
    Var,
)
from relaxjax.trace.context import TraceState, current
from relaxjax.trace.methods import ArrayMethods
from relaxjax.trace.source import user_location

__all__ = [
    "Tracer",
    "as_operand",
    "attach_location",
    "bind_match_cast",
    "check_trace",
    "emit",
    "is_operand",
    "wrap",
]


def attach_location(err: RelaxError, location: SourceLocation | None) -> RelaxError:
    """Give ``err`` the user's source line unless it already names one."""
    if err.location is None and location is not None:
        err.location = location
    return err


_CHOICE_HINT = (
    "Use relaxjax.numpy.where for data-dependent choices, or pass the value as a static "
    "Python argument"
)
_INDEX_HINT = (
    "A numpy array indexed by a traced value (table[idx]) must become a constant of the "
    "program first: rnp.asarray(table)[idx] or rnp.take(table, idx, axis=0) (jax refuses "
    "table[idx] too); numpy functions on traced values have relaxjax.numpy equivalents"
)


class Tracer(ArrayMethods):
    """A traced value: a tensor (or scalar) of the function being traced.

    Supports ``+ - * / // % ** @`` (and their reflected forms), unary ``-``,
    comparisons, ``abs``, indexing, ``.shape`` (ints and symbolic dims),
    ``.ndim``, ``.dtype``, ``.T`` and the array methods below; ``.ir_var`` is the
    graph variable and ``.info`` its struct info. Its value is only
    known at run time, so ``bool(x)``, ``int(x)`` or ``np.asarray(x)`` raise
    :class:`~relaxjax.errors.TraceError`.
    """

    __slots__ = ("_var", "_trace")
    # numpy defers to our reflected operators (``array + tracer`` -> Tracer.__radd__).
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __init__(self, var: Var, trace: TraceState) -> None:
        self._var = var
        self._trace = trace

    # -- what is known statically ----------------------------------------------------

    @property
    def ir_var(self) -> Var:
        """The graph variable bound to this value."""
        return self._var

    @property
    def info(self) -> StructInfo:
        """The struct info deduced for this value."""
        return self._var.info

    @property
    def dtype(self) -> str:
        """The element type's name, e.g. ``"float32"``."""
        info = self._var.info
        if isinstance(info, TensorInfo | PrimInfo):
            return info.dtype
        raise TraceError(f"a value of {info!r} has no dtype", location=user_location())

    @property
    def ndim(self) -> int:
        """The rank; raises TraceError if it is unknown (use relax.match_cast)."""
        info = self._var.info
        if isinstance(info, PrimInfo):
            return 0
        if isinstance(info, TensorInfo) and info.ndim is not None:
            return info.ndim
        raise TraceError(
            f"the rank of this {info!r} is not known at trace time; "
            'give it one with relax.match_cast(x, relax.Tensor(ndim=..., dtype="..."))',
            location=user_location(),
        )

    @property
    def shape(self) -> tuple[arith.Dim, ...]:
        """The shape: ints and symbolic dims.

        When only the rank was deduced, new symbols are bound for the dims at run
        time (a ``match_cast`` binding), so the shape is always known by name.
        """
        info = self._var.info
        if isinstance(info, PrimInfo):
            return ()
        if isinstance(info, TensorInfo) and info.shape is not None:
            return info.shape
        return self._bind_shape(self.ndim)

    def _bind_shape(self, ndim: int) -> tuple[arith.Dim, ...]:
        check_trace(self)
        trace = self._trace  # the dims are named where the value lives (maybe an enclosing trace)
        names = [trace.fresh_symbol_name("_d") for _ in range(ndim)]
        spec = TensorInfo(tuple(arith.sym(name) for name in names), self.dtype)
        var = bind_match_cast(trace, self._var, spec, user_location())
        self._var = var
        return var.info.shape  # type: ignore[union-attr]

    @property
    def size(self) -> arith.Dim:
        """The number of elements (a dim)."""
        size: arith.Dim = 1
        for dim in self.shape:
            size = size * dim
        return size

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        if isinstance(shape[0], int):
            return shape[0]
        raise TraceError(
            f"len() needs an int, but the first dim is symbolic ({shape[0]}); use x.shape[0]",
            location=user_location(),
        )

    def __iter__(self) -> Iterator[Tracer]:
        count = len(self)
        return (self[i] for i in range(count))

    def __repr__(self) -> str:
        return f"Tracer({self._var.info!r})"

    __hash__ = object.__hash__

    # -- values that only exist at run time ---------------------------------------------

    def _concrete(self, what: str, hint: str = _CHOICE_HINT) -> TraceError:
        return TraceError(
            f"cannot convert a traced value of {self._var.info!r} to {what}: its value is only "
            f"known at run time. {hint}",
            location=user_location(2),
        )

    def __bool__(self) -> bool:
        raise self._concrete("a Python bool")

    def __int__(self) -> int:
        raise self._concrete("a Python int")

    def __float__(self) -> float:
        raise self._concrete("a Python float")

    def __index__(self) -> int:
        raise self._concrete("a Python index", _INDEX_HINT)

    def __complex__(self) -> complex:
        raise self._concrete("a Python complex")

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        raise self._concrete("a numpy array", _INDEX_HINT)

    # -- arithmetic ---------------------------------------------------------------------

    def __add__(self, other: object) -> Tracer:
        return _binary("add", self, other)

    def __radd__(self, other: object) -> Tracer:
        return _binary("add", other, self)

    def __sub__(self, other: object) -> Tracer:
        return _binary("subtract", self, other)

    def __rsub__(self, other: object) -> Tracer:
        return _binary("subtract", other, self)

    def __mul__(self, other: object) -> Tracer:
        return _binary("multiply", self, other)

    def __rmul__(self, other: object) -> Tracer:
        return _binary("multiply", other, self)

    def __truediv__(self, other: object) -> Tracer:
        return _binary("divide", self, other)

    def __rtruediv__(self, other: object) -> Tracer:
        return _binary("divide", other, self)

    def __floordiv__(self, other: object) -> Tracer:
        return _binary("floor_divide", self, other)

    def __rfloordiv__(self, other: object) -> Tracer:
        return _binary("floor_divide", other, self)

    def __mod__(self, other: object) -> Tracer:
        return _binary("mod", self, other)

    def __rmod__(self, other: object) -> Tracer:
        return _binary("mod", other, self)

    def __pow__(self, other: object) -> Tracer:
        return _binary("power", self, other)

    def __rpow__(self, other: object) -> Tracer:
        return _binary("power", other, self)

    def __matmul__(self, other: object) -> Tracer:
        return _binary("matmul", self, other)

    def __rmatmul__(self, other: object) -> Tracer:
        return _binary("matmul", other, self)

    def __neg__(self) -> Tracer:
        return emit("negative", (self,))

    def __pos__(self) -> Tracer:
        return self

    def __abs__(self) -> Tracer:
        return emit("abs", (self,))

    def __invert__(self) -> Tracer:
        if self.dtype != "bool":
            raise TypeError(f"~ is only supported on bool tensors, got {self.dtype}")
        return emit("logical_not", (self,))

    def __and__(self, other: object) -> Tracer:
        return _logical("logical_and", "&", self, other)

    def __rand__(self, other: object) -> Tracer:
        return _logical("logical_and", "&", other, self)

    def __or__(self, other: object) -> Tracer:
        return _logical("logical_or", "|", self, other)

    def __ror__(self, other: object) -> Tracer:
        return _logical("logical_or", "|", other, self)

    # -- comparisons (elementwise, as in numpy) -------------------------------------------

    def __eq__(self, other: object) -> Tracer:  # type: ignore[override]
        return _binary("equal", self, other)

    def __ne__(self, other: object) -> Tracer:  # type: ignore[override]
        return _binary("not_equal", self, other)

    def __lt__(self, other: object) -> Tracer:
        return _binary("less", self, other)

    def __le__(self, other: object) -> Tracer:
        return _binary("less_equal", self, other)

    def __gt__(self, other: object) -> Tracer:
        return _binary("greater", self, other)

    def __ge__(self, other: object) -> Tracer:
        return _binary("greater_equal", self, other)


def is_operand(value: object) -> bool:
    """Whether ``value`` can be an operand of a traced op (else operators defer)."""
    return isinstance(
        value, Tracer | np.ndarray | np.generic | bool | int | float | arith.Expr
    ) or (hasattr(value, "shape") and hasattr(value, "dtype") and _is_foreign_array(value))


def _is_foreign_array(value: object) -> bool:
    """An array of another library (torch, jax, ...): it has ``__array__`` or ``__dlpack__``."""
    return hasattr(value, "__array__") or hasattr(value, "__dlpack__")


def _binary(op_name: str, a: object, b: object) -> Tracer:
    if not (is_operand(a) and is_operand(b)):
        return NotImplemented
    return emit(op_name, (a, b))


def _logical(op_name: str, symbol: str, a: object, b: object) -> Tracer:
    if not (is_operand(a) and is_operand(b)):
        return NotImplemented
    for operand in (a, b):
        dtype = _operand_dtype(operand)
        if dtype != "bool":
            raise TypeError(f"{symbol} is only supported on bool values, got {dtype}")
    return emit(op_name, (a, b))


def _operand_dtype(value: object) -> str:
    if isinstance(value, Tracer):
        return value.dtype
    if isinstance(value, np.ndarray | np.generic):
        return dtypes.canonical(value.dtype)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | arith.Expr):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return dtypes.canonical(value.dtype)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- emit


def emit(op_name: str, args: Sequence[object], attrs: object = None) -> Tracer | tuple | object:
    """Apply the op ``op_name`` to ``args``: the entry point of every op wrapper.

    Inside a trace, binds ``op_name(*args)`` through the builder (deducing the
    result's struct info and recording the user's source line) and returns a
    :class:`Tracer`, or a tuple of tracers when the op returns a tuple. Arguments
    may be tracers, numpy (or jax) arrays (constants), Python scalars (weakly typed)
    and symbolic dims (weakly typed ``int64`` scalars); a tuple or list of those
    is passed as a tuple. Outside a trace, evaluates eagerly with the op's numpy
    reference and returns numpy arrays.
    """
    op = ops.get(op_name)
    trace = current()
    if trace is None:
        return _eager(op, args, attrs)
    location = user_location(2)
    operands = tuple(as_operand(trace, arg, op_name, i, location) for i, arg in enumerate(args))
    folded = _fold_scalars(op, operands, attrs)
    if folded is not None:
        return Tracer(folded, trace)  # kept inline: later ops on it fold too
    try:
        var = trace.builder.call(op, operands, attrs, location=location)
    except RelaxError as err:
        raise attach_location(err, location) from None
    return wrap(trace, var, location)


def constant(value: np.ndarray) -> Tracer | np.ndarray:
    """``value`` as a traced constant inside a trace (returned unchanged outside one)."""
    trace = current()
    if trace is None:
        return value
    location = user_location(2)
    return wrap(trace, trace.builder.emit(Constant(value), location=location), location)


def dim_value(dim: arith.Expr) -> Tracer | None:
    """A symbolic dim as a traced weakly typed int64 scalar (None outside a trace)."""
    trace = current()
    if trace is None:
        return None
    location = user_location(3)
    operand = as_operand(trace, dim, "a symbolic dim used as a value", 0, location)
    return wrap(trace, trace.builder.emit(operand, location=location), location)


arith.set_value_of_dim(dim_value)


def _fold_scalars(op: ops.Op, operands: tuple[Expr, ...], attrs: object) -> PrimValue | None:
    """``op`` on Python scalars alone, as the weakly typed scalar jax gives (``sqrt(64)``
    is a weak float64 8.0, so ``x_f32 / sqrt(64)`` stays float32); None otherwise."""
    if not op.folds_scalars or not all(_is_python_scalar(o) for o in operands):
        return None
    result = np.asarray(op.reference(*(o.value for o in operands), attrs=attrs))
    return PrimValue(result.item(), dtypes.canonical(result.dtype), weak=True)


def _is_python_scalar(expr: Expr) -> bool:
    return isinstance(expr, PrimValue) and expr.weak and isinstance(expr.value, bool | int | float)


def wrap(trace: TraceState, var: Var, location: SourceLocation | None) -> Tracer | tuple:
    """A tracer for ``var``, or a tuple of tracers (one binding each) for a tuple value."""
    info = var.info
    if not isinstance(info, TupleInfo):
        return Tracer(var, trace)
    fields = []
    for index in range(len(info.fields)):
        item = trace.builder.emit(TupleGetItem(var, index), location=location)
        fields.append(wrap(trace, item, location))
    return tuple(fields)


def bind_match_cast(
    trace: TraceState, var: Expr, spec: StructInfo, location: SourceLocation | None
) -> Var:
    """Bind ``match_cast(var, spec)`` and record the symbols it defines."""
    try:
        result = trace.builder.emit_match_cast(var, spec, location=location)
    except RelaxError as err:
        raise attach_location(err, location) from None
    trace.symbols.update(trace.builder.symbols)
    return result


def check_trace(tracer: Tracer) -> TraceState:
    """The trace ``tracer`` belongs to; ``TraceError`` if that is not the trace in progress."""
    trace = current()
    if tracer._trace is not trace and trace is not None and tracer._trace.active:
        if trace.lift(tracer) is not None:
            return trace  # a value a control-flow region closes over
        raise TraceError(
            f"a traced value of {tracer.info!r} from the trace of {tracer._trace.func_name}() "
            f"was used inside {trace.func_name}(), which is compiled as a function of its own: "
            f"pass the value to {trace.func_name}() as an argument, or jit it with "
            "inline=True to trace it into its caller",
            location=user_location(3),
        )
    if tracer._trace is not trace or not tracer._trace.active:
        raise TraceError(
            f"a traced value of {tracer.info!r} from the trace of "
            f"{tracer._trace.func_name}() was used outside it (a leaked tracer): return "
            "values from the jitted function instead of storing them",
            location=user_location(3),
        )
    return trace  # type: ignore[return-value]


def as_operand(
    trace: TraceState, value: object, op_name: str, position: int, location: SourceLocation | None
) -> Expr:
    """The graph expression for an op argument (see :func:`emit` for what is accepted)."""
    if isinstance(value, Tracer):
        if value._trace is not trace:
            if value._trace.active:
                lifted = trace.lift(value)
                if lifted is not None:
                    return lifted  # type: ignore[return-value]
            check_trace(value)
        return value._var
    if isinstance(value, np.ndarray | np.generic):  # before float: np.float64 is a float
        return Constant(np.asarray(value))
    if isinstance(value, bool | int | float):
        return PrimValue(value, weak=True)
    if isinstance(value, arith.Expr):
        _check_symbols_in_scope(trace, value, op_name, location)
        return PrimValue(value, "int64", weak=True)
    if isinstance(value, tuple | list):
        return Tuple(as_operand(trace, v, op_name, position, location) for v in value)
    if hasattr(value, "shape") and hasattr(value, "dtype") and _is_foreign_array(value):
        return Constant(as_numpy(value))  # torch, jax, ...: shared memory where possible
    raise TypeError(
        f"{op_name}: argument {position} must be a tensor, an array, a Python scalar or a "
        f"symbolic dim, got {type(value).__name__} {value!r}"
    )


def _check_symbols_in_scope(
    trace: TraceState, dim: arith.Expr, op_name: str, location: SourceLocation | None
) -> None:
    missing = sorted(
        s.name
        for s in arith.free_symbols(dim)
        if s.name not in trace.symbols and not trace.lift_symbol(s)
    )
    if missing:
        raise TraceError(
            f"{op_name}: symbol {missing[0]} (in {dim}) is not defined in "
            f"{trace.func_name}(): symbols come from the parameters' specs or from "
            "relax.match_cast",
            location=location,
        )


# --------------------------------------------------------------------------- eager


def _eager(op: ops.Op, args: Sequence[object], attrs: object) -> object:
    """Evaluate ``op`` on concrete values with its numpy reference."""
    arrays = tuple(_eager_value(op.name, arg, i) for i, arg in enumerate(args))
    if attrs is None and op.Attrs is not None:
        attrs = op.Attrs()
    location = user_location(3)
    try:
        info, _ = op.deduce(tuple(_eager_info(a) for a in arrays), attrs)
    except RelaxError as err:
        raise attach_location(err, location) from None
    return _conform(op.reference(*arrays, attrs=attrs), info)


def _eager_value(op_name: str, value: object, position: int) -> object:
    if isinstance(value, Tracer):
        raise TraceError(
            f"{op_name}: a traced value of {value.info!r} from the trace of "
            f"{value._trace.func_name}() was used after its trace ended (a leaked tracer)",
            location=user_location(4),
        )
    if isinstance(value, np.generic):  # strongly typed, unlike the Python scalars
        return np.asarray(value)
    if isinstance(value, bool | int | float | np.ndarray):
        return value
    if isinstance(value, tuple | list):
        return tuple(_eager_value(op_name, v, position) for v in value)
    if isinstance(value, arith.Expr):
        raise TypeError(
            f"{op_name}: argument {position} is the symbolic dim {value}, which has no value "
            "outside a traced function"
        )
    if _is_foreign_array(value):
        return as_numpy(value)
    raise TypeError(
        f"{op_name}: argument {position} must be an array or a Python scalar, "
        f"got {type(value).__name__} {value!r}"
    )


def _eager_info(value: object) -> StructInfo:
    if isinstance(value, tuple):
        return TupleInfo(_eager_info(v) for v in value)
    if isinstance(value, bool | int | float):
        return PrimInfo(dtypes.weak_of(value).dtype, weak=True)
    return TensorInfo(value.shape, dtypes.canonical(value.dtype))  # type: ignore[attr-defined]


def _conform(result: object, info: StructInfo) -> object:
    if isinstance(info, TupleInfo):
        return tuple(_conform(r, i) for r, i in zip(result, info.fields))  # type: ignore[call-overload]
    if isinstance(info, TensorInfo | PrimInfo):
        return np.asarray(result, dtype=dtypes.to_numpy(info.dtype))
    return result
