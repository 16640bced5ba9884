"""Library dispatch on the GPU: matrix products become cuBLAS calls, visibly in the IR.

The GPU counterpart of :mod:`relaxjax.passes.dispatch` (BLAS on the CPU). A ``matmul``
whose operands cuBLAS takes becomes::

    lv0: Tensor((n, 4096), "float16") = call_extern(extern("cublas.matmul"), (x, w), out_info=...)

keeping the call's run-time ``checks`` (shape checks stay on the host), and the module
declares the function (``cublas_matmul = extern_decl("cublas.matmul")``). An operand
that is a ``transpose`` of its last two axes is passed untransposed and the symbol says
so (``cublas.matmul.transpose_b`` for ``x @ w.T``): cuBLAS reads it through its
``transb`` flag and leading dimension, and the transpose kernel is dropped when nothing
else reads it. The runtime (:mod:`relaxjax.runtime.cuda.gemm`) turns the call into one
``cublasGemmEx``/``cublasGemmStridedBatchedEx`` on the device's stream.

**The cost decision.** cuBLAS takes every matmul of two tensors of one float dtype
(float16, bfloat16, float32 with float32 accumulation; float64) whose batch axes fit
one strided-batched call (each operand's batch axes are the result's, or all of size 1:
a broadcast operand has batch stride 0). There is no size threshold: on an H100 the
generated matmul ran at 0.19 / 0.30 / 0.52 / 0.63 of cuBLAS in float32 and at 0.19 to
0.00 in float16 for (1 | 16 | 256 | 4096, 4096) x (4096, 4096) (``bench/gpu.py``), the
one-row GEMV included. Nothing is lost by leaving the generated kernel: fusion never
merges a matrix product with its prologue or epilogue
(:mod:`relaxjax.passes.fuse_groups`), so the elementwise ops around a matmul are the
same kernels either way. The matmuls that stay generated are those cuBLAS cannot take
in one call: integer or mixed dtypes, batch axes broadcast against each other
(``(4, 1, m, k) @ (3, k, n)``), and shapes known only at run time. ``relax.jit(fn,
target="cuda", library=False)`` keeps every matmul generated (``bench/gpu.py`` measures
both).
"""

from __future__ import annotations

from collections.abc import Sequence

from relaxjax.arith import Dim
from relaxjax.ir import (
    Binding,
    Call,
    Constant,
    Expr,
    ExternDecl,
    ExternFunc,
    Function,
    IRModule,
    TensorInfo,
    Var,
    call_extern,
)
from relaxjax.passes.legalize import is_op_call, known_shape
from relaxjax.passes.walk import rebuild_function

__all__ = [
    "CUBLAS_DTYPES",
    "CUBLAS_MATMUL",
    "cublas_symbol",
    "cublas_transposes",
    "dispatch_cublas",
    "is_device_library",
]

#: The dtypes cuBLAS multiplies (float16/bfloat16 accumulate in float32).
CUBLAS_DTYPES = ("float16", "bfloat16", "float32", "float64")
#: The symbol of a cuBLAS matrix product; variants name the operands read transposed.
CUBLAS_MATMUL = "cublas.matmul"
_VARIANTS = {
    (False, False): "",
    (True, False): ".transpose_a",
    (False, True): ".transpose_b",
    (True, True): ".transpose_ab",
}


def cublas_symbol(transpose_a: bool, transpose_b: bool) -> str:
    """``cublas.matmul`` with the suffix naming the operands passed transposed."""
    return CUBLAS_MATMUL + _VARIANTS[(transpose_a, transpose_b)]


def cublas_transposes(symbol: str) -> tuple[bool, bool]:
    """The inverse of :func:`cublas_symbol`; ``ValueError`` for another symbol."""
    for flags, suffix in _VARIANTS.items():
        if symbol == CUBLAS_MATMUL + suffix:
            return flags
    raise ValueError(f"{symbol!r} is not a cuBLAS matmul symbol")


def is_device_library(symbol: str) -> bool:
    """Whether ``symbol`` is a library function that runs on the GPU (on device memory)."""
    return symbol.startswith("cublas.")


def _tensor(expr: Expr) -> TensorInfo | None:
    if not isinstance(expr, (Var, Constant)):
        return None
    info = expr.info
    if not isinstance(info, TensorInfo) or info.shape is None or len(info.shape) < 1:
        return None
    return info


def _batch_fits(batch: Sequence[Dim], out_batch: Sequence[Dim]) -> bool:
    """One strided batch: the operand's batch axes are the result's, or all of size 1."""
    padded = (1,) * (len(out_batch) - len(batch)) + tuple(batch)
    return all(d == 1 for d in padded) or tuple(padded) == tuple(out_batch)


def _swaps_last_two(call: Call) -> Var | Constant | None:
    """The input of a ``transpose`` that swaps the last two axes (and nothing else)."""
    if not is_op_call(call) or call.op.name != "transpose":  # type: ignore[union-attr]
        return None
    source = call.args[0]
    info = _tensor(source)
    if info is None or len(info.shape) < 2:  # type: ignore[arg-type]
        return None
    ndim = len(info.shape)  # type: ignore[arg-type]
    axes = call.attrs.axes if call.attrs.axes is not None else tuple(range(ndim - 1, -1, -1))  # type: ignore[union-attr]
    swapped = (*range(ndim - 2), ndim - 1, ndim - 2)
    if tuple(a % ndim for a in axes) != swapped:
        return None
    return source  # type: ignore[return-value]


def _cublas_call(call: Call, transposes: dict[Var, Var | Constant]) -> Call | None:
    """The cuBLAS call replacing a matmul, or None when it stays generated."""
    if not is_op_call(call) or call.op.name != "matmul":  # type: ignore[union-attr]
        return None
    if call.info is None or not known_shape(call.info) or not isinstance(call.info, TensorInfo):
        return None
    infos = [_tensor(a) for a in call.args]
    if None in infos or len(infos) != 2:
        return None
    a, b = infos
    if not (a.dtype == b.dtype == call.info.dtype and a.dtype in CUBLAS_DTYPES):  # type: ignore[union-attr]
        return None
    out_batch = call.info.shape[: len(call.info.shape) - (a.ndim > 1) - (b.ndim > 1)]  # type: ignore[index,union-attr,operator]
    if not all(_batch_fits(i.shape[:-2], out_batch) for i in (a, b)):  # type: ignore[union-attr,index]
        return None
    args, flags = [], []
    for operand in call.args:
        source = transposes.get(operand) if isinstance(operand, Var) else None
        args.append(source if source is not None else operand)
        flags.append(source is not None)
    extern = call_extern(ExternFunc(cublas_symbol(*flags)), tuple(args), call.info)
    return Call(extern.op, extern.args, extern.attrs, extern.info, call.checks)


def _dispatch_function(function: Function, used: set[str]) -> Function:
    transposes: dict[Var, Var | Constant] = {}
    blocks, changed = [], False
    for block in function.body.blocks:
        bindings = []
        for binding in block.bindings:
            value = binding.value if isinstance(binding, Binding) else None
            if isinstance(value, Call):
                source = _swaps_last_two(value)
                if source is not None:
                    transposes[binding.var] = source
                replaced = _cublas_call(value, transposes)
                if replaced is not None:
                    used.add(replaced.args[0].symbol)  # type: ignore[union-attr]
                    binding = Binding(binding.var, replaced, binding.location)
                    changed = True
            bindings.append(binding)
        blocks.append(bindings)
    return rebuild_function(function, blocks) if changed else function


def dispatch_cublas(mod: IRModule) -> IRModule:
    """``mod`` with the matmuls cuBLAS takes as ``call_extern``s of it (see the module
    doc). Run before ``legalize``; a dead-code pass after it drops folded transposes."""
    used: set[str] = set()
    items = dict(mod.functions)
    for name, item in mod.functions.items():
        if isinstance(item, Function):
            items[name] = _dispatch_function(item, used)
    for symbol in sorted(used):
        decl_name = symbol.replace(".", "_")
        items.setdefault(decl_name, ExternDecl(decl_name, symbol))
    return IRModule(items)
