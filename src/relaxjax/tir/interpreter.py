"""The reference interpreter: runs a PrimFunc on numpy arrays (the tests' ground truth).

>>> import numpy as np
>>> from relaxjax import arith
>>> from relaxjax.tir import te
>>> n = arith.sym("n")
>>> A = te.placeholder((n,), "float32", "A")
>>> B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
>>> run(te.create_prim_func([A, B]), np.arange(3, dtype="float32"))
array([0., 2., 4.], dtype=float32)

Destination passing: pass every parameter (outputs are written in place) or only the
inputs (outputs are allocated and returned). Symbols take their values from the
arrays' shapes; scalar params (and symbols bound only by an output shape, when the
outputs are not passed) are given by name. Every relation between shapes, every
dtype and every index is checked. See :mod:`relaxjax.tir.pycodegen` for how it runs.
"""

from __future__ import annotations

import functools

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.errors import ShapeError
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.pycodegen import CompiledKernel, compile_kernel
from relaxjax.tir.pyruntime import alloc


@functools.lru_cache(maxsize=256)
def _compiled(func: PrimFunc, vectorize: bool, reverse_parallel: bool) -> CompiledKernel:
    return compile_kernel(func, vectorize, reverse_parallel)


def source(func: PrimFunc, vectorize: bool = True, reverse_parallel: bool = False) -> str:
    """The Python source the interpreter runs for ``func`` (for debugging)."""
    return _compiled(func, vectorize, reverse_parallel).source


def run(
    func: PrimFunc,
    *arrays: object,
    vectorize: bool = True,
    reverse_parallel: bool = False,
    **scalars: int,
):
    """Run ``func`` on ``arrays``; returns the output array (a tuple for several outputs).

    ``vectorize=False`` runs every loop iteration by iteration (slow; for cross-checks).
    ``reverse_parallel=True`` runs parallel, vectorized and thread-bound loops backwards:
    a kernel whose result changes is not order-independent where it claims to be.
    Raises ``TypeError`` for a wrong count of arrays, a non-array output, a wrong dtype or
    a missing/unknown scalar; ``ShapeError`` for a wrong rank or a shape that breaks the
    kernel's symbolic relations; ``IndexError`` for an out-of-bounds access.
    """
    if not isinstance(func, PrimFunc):
        raise TypeError(f"run expects a PrimFunc, got {type(func).__name__}")
    params = func.params
    num_inputs = len(params) - func.num_outputs
    if len(arrays) not in (len(params), num_inputs):
        raise TypeError(
            f"kernel {func.name} takes {num_inputs} input array(s) (or all {len(params)} "
            f"with outputs), got {len(arrays)}"
        )
    given = [_as_array(func, p, a, k >= num_inputs) for k, (p, a) in enumerate(zip(params, arrays))]
    env = _bind_symbols(func, given, scalars)
    buffers = list(given)
    for param in params[len(given) :]:
        shape = tuple(arith.evaluate(d, env) for d in param.shape)
        buffers.append(alloc(shape, dtypes.to_numpy(param.dtype)))
    values = [env[s.name] for s in func.symbols()]
    kernel = _compiled(func, vectorize, reverse_parallel)
    with np.errstate(all="ignore"):
        kernel.function(*buffers, *values)
    outputs = tuple(buffers[num_inputs:])
    return outputs[0] if len(outputs) == 1 else outputs


def _as_array(func: PrimFunc, param, value: object, is_output: bool) -> np.ndarray:
    what = f"kernel {func.name}: parameter {param.name}"
    if is_output and not isinstance(value, np.ndarray):
        kind = type(value).__name__
        raise TypeError(f"{what} is an output and must be a numpy array, got {kind}")
    if not isinstance(value, (np.ndarray, np.generic)) and not hasattr(value, "__array__"):
        raise TypeError(f"{what} must be a numpy array, got {type(value).__name__}")
    array = np.asarray(value)
    expected = dtypes.to_numpy(param.dtype)
    if array.dtype != expected:
        raise TypeError(f"{what} expects dtype {param.dtype}, got {array.dtype}")
    if array.ndim != param.ndim:
        raise ShapeError(
            f"{what} expects rank {param.ndim} (shape {_shape_text(param.shape)}), "
            f"got rank {array.ndim} (shape {array.shape})"
        )
    if is_output and not array.flags.writeable:
        raise TypeError(f"{what} is an output and must be writeable")
    return array


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _bind_symbols(func: PrimFunc, arrays: list[np.ndarray], scalars: dict[str, int]):
    names = {s.name for s in func.symbols()}
    unknown = sorted(set(scalars) - names)
    if unknown:
        raise TypeError(
            f"kernel {func.name} has no symbol(s) {', '.join(unknown)}; "
            f"symbols: {', '.join(sorted(names)) or 'none'}"
        )
    env: dict[str, int] = {}
    for name, value in scalars.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"kernel {func.name}: symbol {name} must be an int, got {value!r}")
        env[name] = int(value)
    for source in func.symbol_sources():
        name = source.sym.name
        if source.param is not None and source.param < len(arrays) and name not in env:
            env[name] = arrays[source.param].shape[source.axis]
        if name not in env:
            raise TypeError(f"kernel {func.name}: missing value of symbol {name} (pass {name}=...)")
        _check_bounds(func, source.sym, env[name])
    for param, array in zip(func.params, arrays):
        for axis, dim in enumerate(param.shape):
            expected = arith.evaluate(dim, env)
            if expected != array.shape[axis]:
                bound = ", ".join(f"{k}={v}" for k, v in sorted(env.items()))
                raise ShapeError(
                    f"kernel {func.name}: parameter {param.name} axis {axis} expects {dim}"
                    f"{f' = {expected}' if not isinstance(dim, int) else ''} ({bound}), "
                    f"got {array.shape[axis]}"
                )
    return env


def _check_bounds(func: PrimFunc, symbol: arith.Sym, value: int) -> None:
    low, high = symbol.lower, symbol.upper
    if (low is not None and value < low) or (high is not None and value > high):
        raise ShapeError(
            f"kernel {func.name}: symbol {symbol.name} = {value} is outside its bounds "
            f"[{low}, {'inf' if high is None else high}]"
        )
