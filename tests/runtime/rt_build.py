"""Hand-built kernels and graph modules for the runtime tests (no op lowering needed)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence

from relaxjax import arith, tir
from relaxjax.ir import BlockBuilder, GlobalVar, IRModule, StructInfo, TensorInfo, Var, call_tir


def dims(ndim: int, first: int = 0) -> tuple[arith.Sym, ...]:
    """Kernel symbols d{first}, d{first+1}, ..."""
    return tuple(arith.Sym(f"d{first + i}") for i in range(ndim))


def elementwise(
    name: str,
    arity: int,
    fn: Callable,
    ndim: int = 1,
    dtype: str = "float32",
    out_dtype: str | None = None,
) -> tir.PrimFunc:
    """``out[i...] = fn(in_0[i...], ..., in_{arity-1}[i...])`` over a symbolic shape."""
    shape = dims(ndim)
    inputs = [tir.placeholder(shape, dtype, f"A{k}") for k in range(arity)]
    out = tir.compute(shape, lambda *idx: fn(*(a[idx] for a in inputs)), name="C")
    if out_dtype is not None and out.buffer.dtype != out_dtype:
        raise ValueError(f"fn gives {out.buffer.dtype}, expected {out_dtype}")
    return tir.create_prim_func([*inputs, out], name=name)


def broadcast_add_1d(dtype: str = "float32") -> tir.PrimFunc:
    """``C = A + B`` for 1-d A: (d0,), B: (d1,), C: (d2,) broadcast (d0, d1 in {d2, 1})."""
    d0, d1, d2 = dims(3)
    a = tir.placeholder((d0,), dtype, "A")
    b = tir.placeholder((d1,), dtype, "B")
    c = tir.compute((d2,), lambda i: a[i % d0] + b[i % d1], name="C")
    return tir.create_prim_func([a, b, c], name="badd")


def module(params: Sequence[Var], body: Callable, kernels: dict, name: str = "main") -> IRModule:
    """A module whose function ``name`` binds ``body(bb, *params)`` (a var or tuple)."""
    bb = BlockBuilder(IRModule(kernels))
    with bb.function(name, list(params)):
        with bb.dataflow():
            result = body(bb, *params)
            out = bb.emit_output(result)
        bb.emit_func_output(out)
    return bb.finalize()


def call(bb: BlockBuilder, kernel: str, args: Sequence, out: StructInfo, **kw) -> Var:
    """Emit ``call_tir(mod.kernel, args, out)``."""
    return bb.emit(call_tir(GlobalVar(kernel), list(args), out, **kw))


def tensor(shape, dtype: str = "float32") -> TensorInfo:
    return TensorInfo(shape, dtype)


def run_isolated(code: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (native crashes fail the test, not pytest)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
