"""``CompiledKernel``: a kernel's machine code and two ways to call it.

- ``raw(buffers, symbols)``: the C entry point through a prepared ctypes
  ``CFUNCTYPE`` (no checks; the runtime's hot path). ``buffers`` is a ctypes
  ``void*`` array (or its address) of the data pointers of all parameters,
  ``symbols`` an ``int64`` array (or address) of the values of ``symbol_names``.
  Returns the kernel's status (0 on success).
- ``kernel(*arrays, **scalars)``: checked. Pass every parameter (destination
  passing: outputs are written in place, ``None`` is returned) or only the inputs
  (outputs are allocated from the symbol values and returned: one array, or a
  tuple for several outputs). Symbols are bound from the arrays' shapes, scalar
  symbols from keywords; every array's rank, shape and dtype is checked against
  its buffer (``ShapeError`` / ``TypeError`` naming buffer, axis, expected and
  given). Inputs are made C-contiguous and aligned; a non-contiguous output is
  computed into a temporary and copied back.

Buffers passed to one call must not overlap unless none of them is written:
kernels assume their buffers do not alias.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import arith, dtypes
from ...errors import ShapeError
from ...tir.buffer import Buffer
from ...tir.function import PrimFunc

__all__ = ["CompiledKernel", "KERNEL_CFUNCTYPE"]

KERNEL_CFUNCTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
"""The C signature of every kernel: ``int32_t (void **buffers, int64_t *symbols)``."""


class CompiledKernel:
    """A kernel compiled to machine code in this process.

    Attributes:
        func: the PrimFunc it was compiled from.
        symbol: the exported C symbol.
        symbol_names: names of ``func.symbols()``, the order of the ``symbols`` array.
        address: the entry point's address.
        raw: the entry point as a ctypes function ``raw(buffers, symbols) -> int``.
    """

    __slots__ = ("_library", "_sources", "address", "func", "raw", "symbol", "symbol_names")

    def __init__(self, func: PrimFunc, symbol: str, address: int, library: object) -> None:
        self.func = func
        self.symbol = symbol
        self.address = address
        self.symbol_names: tuple[str, ...] = tuple(s.name for s in func.symbols())
        self.raw = KERNEL_CFUNCTYPE(address)
        self._library = library  # keeps the machine code mapped while this object lives
        self._sources = func.symbol_sources()

    @property
    def library(self) -> object:
        """What keeps the machine code mapped (shared by the kernels built together)."""
        return self._library

    def __repr__(self) -> str:
        params = ", ".join(repr(p) for p in self.func.params)
        return f"<CompiledKernel {self.func.name}({params}) at {self.address:#x}>"

    def __call__(self, *arrays: Any, **scalars: int) -> np.ndarray | tuple[np.ndarray, ...] | None:
        func = self.func
        inputs_only = len(arrays) == len(func.inputs) and len(arrays) != len(func.params)
        if not inputs_only and len(arrays) != len(func.params):
            raise TypeError(
                f"kernel {func.name} takes its {len(func.inputs)} input(s) or all "
                f"{len(func.params)} parameter(s) ({', '.join(p.name for p in func.params)}), "
                f"given {len(arrays)} array(s)"
            )
        given = [_as_array(func, buffer, array) for buffer, array in zip(func.params, arrays)]
        env = self._bind_symbols(given, scalars)
        for buffer, array in zip(func.params, given):
            _check_shape(func, buffer, array, env)
        inputs = [_prepared_input(a) for a in given[: len(func.inputs)]]
        if inputs_only:
            outputs = [_allocate(buffer, env) for buffer in func.outputs]
            targets = outputs
        else:
            outputs = given[len(func.inputs) :]
            targets = [
                _writable_target(func, buffer, a) for buffer, a in zip(func.outputs, outputs)
            ]
        self._invoke(inputs + targets, env)
        for output, target in zip(outputs, targets):
            if target is not output:
                output[...] = target
        if not inputs_only:
            return None
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _bind_symbols(self, arrays: list[np.ndarray], scalars: Mapping[str, int]) -> dict[str, int]:
        func = self.func
        unknown = sorted(set(scalars) - {s.name for s in func.scalar_params})
        if unknown:
            expected = ", ".join(s.name for s in func.scalar_params) or "none"
            raise TypeError(
                f"kernel {func.name}: unexpected scalar argument(s) {', '.join(unknown)}; "
                f"its scalar params: {expected}"
            )
        env: dict[str, int] = {}
        for source in self._sources:
            name = source.sym.name
            if source.scalar is not None:
                if name not in scalars:
                    raise TypeError(f"kernel {func.name}: missing scalar argument {name}")
                env[name] = _scalar_value(func, name, scalars[name])
            elif source.param < len(arrays):
                array = arrays[source.param]
                buffer = func.params[source.param]
                if array.ndim != buffer.ndim:
                    raise _rank_error(func, buffer, array)
                env[name] = int(array.shape[source.axis])
        for source in self._sources:
            if source.sym.name not in env:
                raise TypeError(
                    f"kernel {func.name}: symbol {source.sym.name} is bound by the shape of "
                    f"output {func.params[source.param].name}; pass all parameters"
                )
            _check_symbol_bounds(func, source.sym, env[source.sym.name])
        return env

    def _invoke(self, arrays: list[np.ndarray], env: Mapping[str, int]) -> None:
        pointers = (ctypes.c_void_p * max(len(arrays), 1))(*(a.ctypes.data for a in arrays))
        values = [env[name] for name in self.symbol_names]
        symbols = (ctypes.c_int64 * max(len(values), 1))(*values)
        status = self.raw(pointers, symbols)
        if status != 0:
            raise MemoryError(
                f"kernel {self.func.name} could not allocate its temporary buffers "
                f"(status {status})"
            )


def _as_array(func: PrimFunc, buffer: Buffer, value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, np.generic) or hasattr(value, "__array__"):
        array = np.asarray(value)
    else:
        raise TypeError(
            f"kernel {func.name}: buffer {buffer.name} expects an array of {buffer.dtype}, "
            f"given {type(value).__name__}"
        )
    try:
        dtype = dtypes.canonical(array.dtype)
    except TypeError:
        dtype = str(array.dtype)
    if dtype != buffer.dtype:
        raise TypeError(
            f"kernel {func.name}: buffer {buffer.name} expects dtype {buffer.dtype}, given {dtype}"
        )
    return array


def _rank_error(func: PrimFunc, buffer: Buffer, array: np.ndarray) -> ShapeError:
    return ShapeError(
        f"kernel {func.name}: buffer {buffer.name} expects {buffer.ndim} dimension(s) "
        f"{_shape_text(buffer.shape)}, given an array of shape {tuple(array.shape)}"
    )


def _check_shape(func: PrimFunc, buffer: Buffer, array: np.ndarray, env: Mapping[str, int]) -> None:
    if array.ndim != buffer.ndim:
        raise _rank_error(func, buffer, array)
    for axis, dim in enumerate(buffer.shape):
        expected = arith.evaluate(dim, env)
        if array.shape[axis] != expected:
            shown = f"{dim} = {expected}" if not isinstance(dim, int) else str(expected)
            raise ShapeError(
                f"kernel {func.name}: buffer {buffer.name} axis {axis} expects {shown}, "
                f"given {array.shape[axis]} (array of shape {tuple(array.shape)})"
            )


def _check_symbol_bounds(func: PrimFunc, sym: arith.Sym, value: int) -> None:
    low = sym.lower
    high = sym.upper
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
        raise ShapeError(
            f"kernel {func.name}: symbol {sym.name} must lie in {bounds}, given {value}"
        )


def _scalar_value(func: PrimFunc, name: str, value: object) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"kernel {func.name}: scalar {name} must be an int, given {value!r}")
    return int(value)


def _prepared_input(array: np.ndarray) -> np.ndarray:
    return np.require(array, requirements=("C", "A"))


def _writable_target(func: PrimFunc, buffer: Buffer, array: np.ndarray) -> np.ndarray:
    if not array.flags.writeable:
        raise ValueError(f"kernel {func.name}: output buffer {buffer.name} is read-only")
    if array.flags.c_contiguous and array.flags.aligned:
        return array
    return np.require(array, requirements=("C", "A", "W"))


def _allocate(buffer: Buffer, env: Mapping[str, int]) -> np.ndarray:
    shape = tuple(arith.evaluate(dim, env) for dim in buffer.shape)
    return np.empty(shape, dtype=dtypes.to_numpy(buffer.dtype))


def _shape_text(dims: tuple[arith.Dim, ...]) -> str:
    inner = ", ".join(str(d) for d in dims)
    return f"({inner},)" if len(dims) == 1 else f"({inner})"
