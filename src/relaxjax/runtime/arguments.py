"""Checking the arguments and binding the symbols, as generated code.

For a parameter ``x: Tensor((n, 4), "float32")`` the executable runs::

    if a0.__class__ is not ndarray or a0.dtype is not float32:
        a0 = coerce_0(a0)            # scalars, jax arrays, byte order; TypeError otherwise
    if a0.ndim != 2:
        raise rank_0(a0.shape)
    s0, d0_1 = a0.shape              # n is bound here (its first occurrence)
    ...                              # the same for the other parameters, then:
    if d0_1 != 4:
        raise shape_0(a0.shape, (s0,))
    if not ((f := a0.flags).c_contiguous and f.aligned):
        a0 = contiguous(a0)

A symbol is bound by its first occurrence alone as a dim (in parameter order, then
axis order) or as a scalar parameter's value. Then the other dims solve what they
determine, in the order :mod:`relaxjax.runtime.solve` fixes at build time::

    s1 = (d1_0 - 1) // 2             # y: Tensor((m * 2 + 1,), ...) solves m
    if s1 * 2 != d1_0 - 1 or s1 < 0:
        raise solve_1(d1_0, (s0,))   # "... got 6, which is not m * 2 + 1 for any ..."

and every dim left (other occurrences, composite or static dims) is checked. Symbols
declared with bounds (``relax.sym("n", lower=1)``) are range-checked. A symbolic
scalar parameter (``m: relax.sym("m")``) takes any Python or numpy integer. All of it
runs before any kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.arith import Sym
from relaxjax.dlpack import as_numpy
from relaxjax.errors import LoweringError, ShapeError
from relaxjax.ir import PrimInfo, TensorInfo, Var, is_dim_value
from relaxjax.runtime import messages
from relaxjax.runtime.env import SymbolTable
from relaxjax.runtime.solve import (
    SizeFact,
    emit_solution,
    plan_solutions,
    size_facts,
    undetermined_error,
)
from relaxjax.runtime.source import SourceWriter
from relaxjax.runtime.values import Storage, Value

__all__ = [
    "ParamCode",
    "coerce_array",
    "coerce_dim",
    "coerce_scalar",
    "emit_arguments",
    "emit_range_check",
    "undetermined_symbols",
]

_PYTHON_SCALARS = (bool, int, float)


def _python_scalar_fits(value: object, dtype: str) -> bool:
    """Python scalars are weakly typed: an int fits any number, a float a float dtype."""
    if isinstance(value, bool):
        return dtypes.is_bool(dtype)
    if isinstance(value, int):
        return dtypes.is_integer(dtype) or dtypes.is_floating(dtype)
    return dtypes.is_floating(dtype)


def _as_array(value: object, dtype: str, what: str, expected: str) -> np.ndarray:
    target = dtypes.to_numpy(dtype)
    if type(value) in _PYTHON_SCALARS:  # not isinstance: np.float64 subclasses float
        if not _python_scalar_fits(value, dtype):
            raise TypeError(f"{what}: expected {expected}, got Python {type(value).__name__}")
        try:
            return np.asarray(value, dtype=target)
        except OverflowError:
            raise TypeError(
                f"{what}: expected {expected}, got {value!r}, which {dtype} cannot hold"
            ) from None
    if isinstance(value, np.ndarray):
        array = value
    elif getattr(type(value), "__relaxjax_device__", False):
        # A device array of a cuda executable: checked like an ndarray, never copied here.
        if value.dtype != target:  # type: ignore[attr-defined]
            raise TypeError(f"{what}: expected dtype {dtype}, got {value.dtype}")  # type: ignore[attr-defined]
        return value  # type: ignore[return-value]
    elif isinstance(value, np.generic):
        array = np.asarray(value)
    elif hasattr(value, "__dlpack__") or hasattr(value, "__array__"):
        array = _foreign_array(value, what)
    else:
        raise TypeError(f"{what}: expected {expected}, got {messages.type_name(value)}")
    if array.dtype == target:
        return array if array.dtype is target else array.view(target)
    if array.dtype.newbyteorder("=") == target:
        return array.astype(target)
    raise TypeError(f"{what}: expected dtype {dtype}, got {array.dtype}")


def _foreign_array(value: object, what: str) -> np.ndarray:
    """An array of another library (torch, jax, cupy in host memory) as a numpy array
    sharing its memory where the layout allows (DLPack, :func:`relaxjax.dlpack.as_numpy`)."""
    try:
        return as_numpy(value)
    except TypeError as error:
        raise TypeError(f"{what}: {error}") from None


def coerce_array(info: TensorInfo, what: str) -> Callable[[object], np.ndarray]:
    """The slow path for a tensor argument that is not an ndarray of the exact dtype."""
    expected = messages.expected_text(info)

    def coerce(value: object) -> np.ndarray:
        return _as_array(value, info.dtype, what, expected)

    return coerce


def coerce_scalar(info: PrimInfo, what: str) -> Callable[[object], np.ndarray]:
    """A scalar argument (Python or numpy scalar, or 0-d array) as a 0-d C array."""
    expected = messages.expected_text(info)

    def coerce(value: object) -> np.ndarray:
        array = _as_array(value, info.dtype, what, expected)
        if array.ndim != 0:
            raise TypeError(f"{what}: expected {expected}, got {messages.type_name(value)}")
        return array if array.flags.aligned else array.copy()  # 0-d: always contiguous

    return coerce


def coerce_dim(info: PrimInfo, what: str) -> Callable[[object], int]:
    """The slow path of a symbolic scalar argument that is not a Python ``int``: numpy
    integers and 0-d integer arrays; ``TypeError`` for anything else (bools included)."""
    expected = f"expected a Python or numpy integer for {info.value}"

    def coerce(value: object) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)  # an int subclass (IntEnum, ...)
        if isinstance(value, np.integer):
            return int(value)
        if not isinstance(value, (bool, np.bool_, str, bytes)) and hasattr(value, "__array__"):
            array = np.asarray(value)
            if array.ndim == 0 and array.dtype.kind in "iu":
                return int(array)
        raise TypeError(f"{what}: {expected}, got {messages.type_name(value)}")

    return coerce


def contiguous(array: np.ndarray) -> np.ndarray:
    """A C-contiguous, aligned, native-order copy (kernels index row-major memory)."""
    return np.array(array, order="C", copy=True)


def _static_shape_error(info: TensorInfo, what: str) -> Callable[[tuple], Exception]:
    """The error for an argument whose shape differs from the static ``info.shape``."""

    def shape_error(shape: tuple[int, ...]) -> Exception:
        if len(shape) != info.ndim:
            return messages.rank_mismatch(what, info, shape)
        for axis, (want, got) in enumerate(zip(info.shape, shape)):
            if want != got:
                return messages.dim_mismatch(what, axis, want, got, {}, {})
        raise AssertionError(f"{what}: shape {shape} matches {info!r}")

    return shape_error


class ParamCode:
    """Emits the checks of one function's parameters into a :class:`SourceWriter`.

    A symbol standing alone as a dim binds where the shape is unpacked; the other dims
    become size facts, solved and then checked in the order :mod:`runtime.solve` plans.
    """

    def __init__(self, writer: SourceWriter, symbols: SymbolTable) -> None:
        self.writer = writer
        self.symbols = symbols
        self._ndarray = writer.constant(np.ndarray, "ndarray")
        self._contiguous = writer.constant(contiguous, "contiguous")
        self._facts: list[SizeFact] = []
        self._sizes: dict[tuple[int, int | None], str] = {}  # fact -> source of its size
        self._shapes: dict[int, str] = {}  # tensor parameter -> source of its shape
        # (symbol, where it is bound, whether from a shape: sizes are never negative)
        self._range_checked: list[tuple[Sym, str, bool]] = []

    def emit(
        self,
        params: Sequence[Var],
        locals_: Sequence[str],
        function: str = "main",
        used: Collection[Var] | None = None,
    ) -> list[Value]:
        """Code for every parameter; returns each one's :class:`Value` (a scalar is a
        0-d array). ``used``: the parameters the body reads (default: all); a symbolic
        scalar that nothing reads is never made an array."""
        values: list[Value] = []
        arrays: list[Value] = []
        for index, (param, local) in enumerate(zip(params, locals_)):
            what = f"argument '{param.name_hint}'"
            info = param.info
            if isinstance(info, TensorInfo):
                value = self._tensor(index, info, local, what)
                arrays.append(value)
            elif isinstance(info, PrimInfo) and is_dim_value(info):
                needed = used is None or param in used
                value = self._dim_scalar(index, info, local, what, needed)
            elif isinstance(info, PrimInfo):
                value = self._scalar(index, info, local, what)
                arrays.append(value)
            else:
                raise LoweringError(
                    f"{what}: parameters must be tensors or scalars, got {param.info!r}"
                )
            values.append(value)
        plan = plan_solutions(self._facts, self.symbols.names())
        if plan.undetermined:
            raise undetermined_error(function, plan)
        for solution in plan.solutions:
            fact = solution.fact
            emit_solution(self.writer, self.symbols, solution, self._sizes[(fact.param, fact.axis)])
        self._emit_checks(params, plan.checks)
        self._emit_ranges()
        for value in arrays:
            self.writer.line(f"if not ((f := {value.ref}.flags).c_contiguous and f.aligned):")
            self.writer.line(f"{value.ref} = {self._contiguous}({value.ref})", 2)
        return values

    def _fact(self, index: int, axis: int | None, dim: arith.Dim, where: str, size: str) -> None:
        self._facts.append(SizeFact(index, axis, dim, where))
        self._sizes[(index, axis)] = size

    # -- tensors ---------------------------------------------------------------------------

    def _tensor(self, index: int, info: TensorInfo, local: str, what: str) -> Value:
        w = self.writer
        dtype = w.constant(dtypes.to_numpy(info.dtype), info.dtype)
        coerce = w.constant(coerce_array(info, what), "coerce")
        w.comment(f"{what}: {info!r}")
        w.line(f"if {local}.__class__ is not {self._ndarray} or {local}.dtype is not {dtype}:")
        w.line(f"{local} = {coerce}({local})", 2)
        if info.ndim is None:
            raise LoweringError(
                f"{what}: an argument of unknown rank cannot be compiled ({info!r})"
            )
        storage = Storage("param", index)
        if info.shape is not None and all(isinstance(d, int) for d in info.shape):
            # a static shape: one tuple comparison checks the rank and every dim
            error = w.constant(_static_shape_error(info, what), "shape")
            w.line(f"if {local}.shape != {tuple(info.shape)!r}:")
            w.line(f"raise {error}({local}.shape)", 2)
            return Value(info, tuple(str(d) for d in info.shape), local, True, storage)
        rank = w.constant(lambda shape: messages.rank_mismatch(what, info, shape), "rank")
        dims = [f"d{index}_{axis}" for axis in range(info.ndim)]
        self._shapes[index] = f"{local}.shape"
        if info.shape is not None:
            for axis, dim in enumerate(info.shape):
                where = f"{what} axis {axis}"
                if isinstance(dim, Sym) and dim not in self.symbols:
                    dims[axis] = self.symbols.bind(dim, where)
                    self._range_checked.append((dim, where, True))
                else:
                    self._fact(index, axis, dim, where, dims[axis])
        # unpacking checks the rank (a try block costs nothing when nothing is raised)
        w.line("try:")
        w.line(f"{''.join(d + ', ' for d in dims)}= {local}.shape", 2)
        w.line("except ValueError:")
        w.line(f"raise {rank}({local}.shape) from None", 2)
        return Value(info, tuple(dims), local, True, storage)

    # -- scalars ---------------------------------------------------------------------------

    def _scalar(self, index: int, info: PrimInfo, local: str, what: str) -> Value:
        w = self.writer
        w.comment(f"{what}: {info!r}")
        coerce = w.constant(coerce_scalar(info, what), "scalar")
        w.line(f"{local} = {coerce}({local})")
        self._bind_or_check(index, info, f"int({local})", what)
        return Value(TensorInfo((), info.dtype), (), local, True, Storage("param", index))

    def _dim_scalar(self, index: int, info: PrimInfo, local: str, what: str, needed: bool) -> Value:
        """A symbolic scalar parameter: a Python or numpy integer, kept as a Python int."""
        w = self.writer
        w.comment(f"{what}: {info!r}")
        coerce = w.constant(coerce_dim(info, what), "integer")
        w.line(f"if {local}.__class__ is not int:")
        w.line(f"{local} = {coerce}({local})", 2)
        self._bind_or_check(index, info, local, what)
        ref = local
        if needed:  # the body reads the scalar itself: a 0-d int64 array
            ref = w.fresh("q")
            array = w.constant(np.asarray, "asarray")
            int64 = w.constant(dtypes.to_numpy("int64"), "int64")
            w.line(f"{ref} = {array}({local}, {int64})")
        return Value(TensorInfo((), info.dtype), (), ref, True, Storage("param", index))

    def _bind_or_check(self, index: int, info: PrimInfo, value: str, what: str) -> None:
        dim = info.value
        if isinstance(dim, Sym) and dim not in self.symbols:
            self.writer.line(f"{self.symbols.bind(dim, what)} = {value}")
            self._range_checked.append((dim, what, False))
        elif dim is not None:
            self._fact(index, None, dim, what, value)

    # -- solving and checking --------------------------------------------------------------

    def _emit_checks(self, params: Sequence[Var], facts: Sequence[SizeFact]) -> None:
        """One ``if`` per parameter over the dims nothing solved from."""
        by_param: dict[int, list[SizeFact]] = {}
        for fact in facts:
            by_param.setdefault(fact.param, []).append(fact)
        for index in sorted(by_param):
            what = f"argument '{params[index].name_hint}'"
            group = by_param[index]
            if group[0].axis is None:
                self._emit_scalar_check(what, group[0])
            else:
                self._emit_dim_checks(index, what, group)

    def _emit_dim_checks(self, index: int, what: str, facts: Sequence[SizeFact]) -> None:
        conditions = [
            f"{self._sizes[(index, f.axis)]} != {self.symbols.code(f.dim, what)}" for f in facts
        ]
        names = self.symbols.names()
        sites = {name: self.symbols.site(name) for name in names}
        checks = [(f.axis, f.dim) for f in facts]

        def shape_error(shape: tuple[int, ...], env_values: tuple[int, ...]) -> Exception:
            env = dict(zip(names, env_values))
            for axis, dim in checks:
                if shape[axis] != arith.evaluate(dim, env):
                    return messages.dim_mismatch(what, axis, dim, shape[axis], env, sites)
            raise AssertionError("shape check failed but no axis mismatches")

        helper = self.writer.constant(shape_error, "shape")
        self.writer.line(f"if {' or '.join(conditions)}:")
        self.writer.line(f"raise {helper}({self._shapes[index]}, {self.symbols.env_code()})", 2)

    def _emit_scalar_check(self, what: str, fact: SizeFact) -> None:
        names = self.symbols.names()
        sites = {name: self.symbols.site(name) for name in names}
        expected = fact.dim
        got = self._sizes[(fact.param, None)]

        def scalar_error(value: int, env_values: tuple[int, ...]) -> Exception:
            env = dict(zip(names, env_values))
            error = messages.dim_mismatch(what, 0, expected, value, env, sites)
            return type(error)(error.message.replace(" axis 0:", ":", 1))

        helper = self.writer.constant(scalar_error, "scalar_error")
        self.writer.line(f"if {got} != {self.symbols.code(expected, what)}:")
        self.writer.line(f"raise {helper}({got}, {self.symbols.env_code()})", 2)

    # -- declared symbol bounds ------------------------------------------------------------

    def _emit_ranges(self) -> None:
        for symbol, where, from_shape in self._range_checked:
            local = self.symbols.local(symbol)
            emit_range_check(self.writer, symbol, local, where, from_shape, self.symbols.code)


def emit_range_check(
    writer: SourceWriter,
    symbol: Sym,
    local: str,
    where: str,
    from_shape: bool,
    code: Callable[[arith.Dim], str] | None = None,
) -> None:
    """Check a freshly bound symbol against its declared bounds (``sym(lower=, upper=)``).

    A size read from a shape is never negative, so the default lower bound 0 needs no
    check there; a value read from a scalar does, and must fit the int64 the kernels
    take (a Python int may not). A symbolic upper bound (``k <= n``) is computed with
    ``code`` (source of a dim over the symbols bound so far).
    """
    conditions = []
    if symbol.lower is not None and (symbol.lower > 0 or not from_shape):
        conditions.append(f"{local} < {symbol.lower}")
    elif symbol.lower is None and not from_shape:
        conditions.append(f"{local} < {messages.INT64_MIN}")
    limit = None
    if isinstance(symbol.upper, arith.Expr):
        if code is None:
            raise LoweringError(f"the symbolic bound {symbol.name} <= {symbol.upper} needs code")
        limit = code(symbol.upper)
        conditions.append(f"{local} > {limit}")
    elif symbol.upper is not None:
        conditions.append(f"{local} > {symbol.upper}")
    elif not from_shape:
        conditions.append(f"{local} > {messages.INT64_MAX}")
    if not conditions:
        return

    def range_error(value: int, upper: int | None = None) -> Exception:
        return messages.symbol_out_of_range(symbol, value, where, upper)

    helper = writer.constant(range_error, "range")
    writer.line(f"if {' or '.join(conditions)}:")
    arguments = local if limit is None else f"{local}, {limit}"
    writer.line(f"raise {helper}({arguments})", 2)


def emit_arguments(
    writer: SourceWriter,
    params: Sequence[Var],
    locals_: Sequence[str],
    symbols: SymbolTable,
    function: str = "main",
    used: Collection[Var] | None = None,
) -> list[Value]:
    """Emit the argument checks; returns the parameters' :class:`Value`s.

    Raises:
        ShapeError: no argument can determine some symbol (see ``runtime.solve``).
    """
    return ParamCode(writer, symbols).emit(params, locals_, function, used)


def undetermined_symbols(function: str, params: Sequence[Var]) -> ShapeError | None:
    """The error every call of a function with these parameters raises because no
    argument determines some of its symbols, or None when they all are determined."""
    plan = plan_solutions(size_facts(params))
    return undetermined_error(function, plan) if plan.undetermined else None
