"""Plugging a scheduled kernel back into a module.

>>> # mod = jitted.lower(); sch = Schedule(mod.kernels()["matmul"]); ...
>>> # mod2 = replace_kernel(mod, "matmul", sch.func)

The graph program calls the kernel by name with buffers allocated from its
signature, so the new kernel must have the same signature: parameters in the same
order with the same ranks, dtypes and (provably equal) shapes, the same number of
outputs and the same scalar parameters. Its body may be anything.
"""

from __future__ import annotations

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.ir.module import IRModule, is_kernel
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.function import PrimFunc


def _param_problem(old: Buffer, new: Buffer, position: int) -> str | None:
    what = f"parameter {position} ({old.name})"
    if old.dtype != new.dtype:
        return f"{what} has dtype {old.dtype}, the new kernel's {new.name} has {new.dtype}"
    if old.ndim != new.ndim:
        return f"{what} has rank {old.ndim} {old.shape}, the new kernel's {new.name} {new.shape}"
    for axis, (a, b) in enumerate(zip(old.shape, new.shape)):
        if not arith.prove_equal(a, b):
            return f"{what} axis {axis} is {a}, the new kernel's {new.name} has {b}"
    if old.strides_or_default() != new.strides_or_default():
        return f"{what} has strides {old.strides_or_default()}, the new kernel's differ"
    return None


def signature_problem(old: PrimFunc, new: PrimFunc) -> str | None:
    """Why ``new`` cannot replace ``old`` (None when it can)."""
    if len(old.params) != len(new.params) or old.num_outputs != new.num_outputs:
        return (
            f"it has {len(old.params)} parameter(s) ({old.num_outputs} output(s)), the new "
            f"kernel {len(new.params)} ({new.num_outputs} output(s))"
        )
    for position, (a, b) in enumerate(zip(old.params, new.params)):
        problem = _param_problem(a, b, position)
        if problem:
            return problem
    old_scalars = [s.name for s in old.scalar_params]
    new_scalars = [s.name for s in new.scalar_params]
    if old_scalars != new_scalars:
        return f"its scalar parameters are {old_scalars}, the new kernel's {new_scalars}"
    return None


def replace_kernel(mod: IRModule, name: str, new_func: PrimFunc) -> IRModule:
    """``mod`` with kernel ``name`` replaced by ``new_func`` (renamed to ``name``).

    Raises ``KeyError`` when ``mod`` has no kernel ``name``, ``TypeError`` for a
    ``new_func`` that is not a PrimFunc, and ``ScheduleError`` naming the first
    difference when the signatures are not compatible.
    """
    if not isinstance(mod, IRModule):
        raise TypeError(f"replace_kernel expects an IRModule, got {type(mod).__name__}")
    if not isinstance(new_func, PrimFunc):
        raise TypeError(f"replace_kernel expects a tir.PrimFunc, got {type(new_func).__name__}")
    if name not in mod or not is_kernel(mod[name]):
        kernels = ", ".join(mod.kernels()) or "none"
        raise KeyError(f"the module has no kernel {name!r}; kernels: {kernels}")
    old = mod[name]
    problem = signature_problem(old, new_func)
    if problem is not None:
        raise ScheduleError(
            f"replace_kernel: kernel {name!r} cannot be replaced: {problem}", nodes=(new_func,)
        )
    return mod.with_function(name, new_func.with_name(name))
