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
axis order) or as a scalar parameter's value; every other occurrence, and every
composite or static dim, is checked once all parameters are bound. Symbols declared
with bounds (``relax.sym("n", lower=1)``) are range-checked. All of it runs before
any kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.arith import Sym
from relaxjax.errors import LoweringError
from relaxjax.ir import PrimInfo, TensorInfo, Var
from relaxjax.runtime import messages
from relaxjax.runtime.env import SymbolTable
from relaxjax.runtime.source import SourceWriter
from relaxjax.runtime.values import Storage, Value

__all__ = ["ParamCode", "coerce_array", "coerce_scalar", "emit_arguments", "emit_range_check"]

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
    elif isinstance(value, np.generic) or hasattr(value, "__array__"):
        array = np.asarray(value)
    else:
        raise TypeError(f"{what}: expected {expected}, got {messages.type_name(value)}")
    if array.dtype == target:
        return array if array.dtype is target else array.view(target)
    if array.dtype.newbyteorder("=") == target:
        return array.astype(target)
    raise TypeError(f"{what}: expected dtype {dtype}, got {array.dtype}")


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
    """Emits the checks of one function's parameters into a :class:`SourceWriter`."""

    def __init__(self, writer: SourceWriter, symbols: SymbolTable) -> None:
        self.writer = writer
        self.symbols = symbols
        self._ndarray = writer.constant(np.ndarray, "ndarray")
        self._contiguous = writer.constant(contiguous, "contiguous")
        self._deferred: list[Callable[[], None]] = []
        # (symbol, where it is bound, whether from a shape: sizes are never negative)
        self._range_checked: list[tuple[Sym, str, bool]] = []

    def emit(self, params: Sequence[Var], locals_: Sequence[str]) -> list[Value]:
        """Code for every parameter; returns each one's :class:`Value` (a scalar is a
        0-d array)."""
        values: list[Value] = []
        for index, (param, local) in enumerate(zip(params, locals_)):
            what = f"argument '{param.name_hint}'"
            if isinstance(param.info, TensorInfo):
                values.append(self._tensor(index, param.info, local, what))
            elif isinstance(param.info, PrimInfo):
                values.append(self._scalar(index, param.info, local, what))
            else:
                raise LoweringError(
                    f"{what}: parameters must be tensors or scalars, got {param.info!r}"
                )
        for emit_deferred in self._deferred:
            emit_deferred()
        self._emit_ranges()
        for value in values:
            self.writer.line(f"if not ((f := {value.ref}.flags).c_contiguous and f.aligned):")
            self.writer.line(f"{value.ref} = {self._contiguous}({value.ref})", 2)
        return values

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
        checks: list[tuple[int, arith.Dim]] = []
        if info.shape is not None:
            for axis, dim in enumerate(info.shape):
                if isinstance(dim, Sym) and dim not in self.symbols:
                    dims[axis] = self.symbols.bind(dim, f"{what} axis {axis}")
                    self._range_checked.append((dim, f"{what} axis {axis}", True))
                else:
                    checks.append((axis, dim))
        # unpacking checks the rank (a try block costs nothing when nothing is raised)
        w.line("try:")
        w.line(f"{''.join(d + ', ' for d in dims)}= {local}.shape", 2)
        w.line("except ValueError:")
        w.line(f"raise {rank}({local}.shape) from None", 2)
        self._deferred.append(lambda: self._emit_dim_checks(local, what, dims, checks))
        return Value(info, tuple(dims), local, True, storage)

    def _emit_dim_checks(
        self, local: str, what: str, dims: Sequence[str], checks: Sequence[tuple[int, arith.Dim]]
    ) -> None:
        if not checks:
            return
        conditions = [f"{dims[axis]} != {self.symbols.code(dim, what)}" for axis, dim in checks]
        names = self.symbols.names()
        sites = {name: self.symbols.site(name) for name in names}

        def shape_error(shape: tuple[int, ...], env_values: tuple[int, ...]) -> Exception:
            env = dict(zip(names, env_values))
            for axis, dim in checks:
                if shape[axis] != arith.evaluate(dim, env):
                    return messages.dim_mismatch(what, axis, dim, shape[axis], env, sites)
            raise AssertionError("shape check failed but no axis mismatches")

        helper = self.writer.constant(shape_error, "shape")
        self.writer.line(f"if {' or '.join(conditions)}:")
        self.writer.line(f"raise {helper}({local}.shape, {self.symbols.env_code()})", 2)

    # -- scalars ---------------------------------------------------------------------------

    def _scalar(self, index: int, info: PrimInfo, local: str, what: str) -> Value:
        w = self.writer
        w.comment(f"{what}: {info!r}")
        coerce = w.constant(coerce_scalar(info, what), "scalar")
        w.line(f"{local} = {coerce}({local})")
        value = info.value
        if isinstance(value, Sym) and value not in self.symbols:
            symbol_local = self.symbols.bind(value, what)
            w.line(f"{symbol_local} = int({local})")
            self._range_checked.append((value, what, False))
        elif value is not None:
            self._deferred.append(lambda: self._emit_scalar_check(local, what, value))
        return Value(TensorInfo((), info.dtype), (), local, True, Storage("param", index))

    def _emit_scalar_check(self, local: str, what: str, expected: arith.Dim) -> None:
        names = self.symbols.names()
        sites = {name: self.symbols.site(name) for name in names}

        def scalar_error(got: int, env_values: tuple[int, ...]) -> Exception:
            env = dict(zip(names, env_values))
            error = messages.dim_mismatch(what, 0, expected, got, env, sites)
            return type(error)(error.message.replace(" axis 0:", ":", 1))

        helper = self.writer.constant(scalar_error, "scalar_error")
        self.writer.line(f"if int({local}) != {self.symbols.code(expected, what)}:")
        self.writer.line(f"raise {helper}(int({local}), {self.symbols.env_code()})", 2)

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
    check there; a value read from a scalar does. A symbolic upper bound (``k <= n``) is
    computed with ``code`` (source of a dim over the symbols bound so far).
    """
    conditions = []
    if symbol.lower is not None and (symbol.lower > 0 or not from_shape):
        conditions.append(f"{local} < {symbol.lower}")
    limit = None
    if isinstance(symbol.upper, arith.Expr):
        if code is None:
            raise LoweringError(f"the symbolic bound {symbol.name} <= {symbol.upper} needs code")
        limit = code(symbol.upper)
        conditions.append(f"{local} > {limit}")
    elif symbol.upper is not None:
        conditions.append(f"{local} > {symbol.upper}")
    if not conditions:
        return

    def range_error(value: int, upper: int | None = None) -> Exception:
        return messages.symbol_out_of_range(symbol, value, where, upper)

    helper = writer.constant(range_error, "range")
    writer.line(f"if {' or '.join(conditions)}:")
    arguments = local if limit is None else f"{local}, {limit}"
    writer.line(f"raise {helper}({arguments})", 2)


def emit_arguments(
    writer: SourceWriter, params: Sequence[Var], locals_: Sequence[str], symbols: SymbolTable
) -> list[Value]:
    """Emit the argument checks; returns the parameters' :class:`Value`s."""
    return ParamCode(writer, symbols).emit(params, locals_)  # type: ignore[return-value]
