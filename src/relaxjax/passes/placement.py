"""Heterogeneous programs: kernels that run on the host in a GPU program, with the copies
between host and device explicit in the IR.

``place_on_host(mod, kernels)`` rewrites every ``call_tir`` of a kernel in ``kernels``
(kernels the GPU target cannot take; the cuda build names them and warns)::

    lv3 = call_tir(K, (lv1, w), out_info=...)

becomes::

    lv3_host_in0 = call_extern(extern("relaxjax.cuda.to_host"), (lv1,), out_info=...)
    lv3_host_in1 = call_extern(extern("relaxjax.cuda.to_host"), (w,), out_info=...)
    lv3_host = call_tir(K, (lv3_host_in0, lv3_host_in1), out_info=...)   # the host kernel
    lv3 = call_extern(extern("relaxjax.cuda.to_device"), (lv3_host,), out_info=...)

so that every value is in one place, the copies are visible in the printed program,
and the runtime knows where each value lives by the call that made it. Library calls
(``call_extern``, e.g. LAPACK factorisations, which exist only on the host) are placed
the same way, except those of a library that runs on the GPU (cuBLAS,
:mod:`relaxjax.passes.dispatch_cuda`). Shape computations and checks stay on the host
as always. Calls whose results are not tensors are left alone (the build then refuses
the kernel).
"""

from __future__ import annotations

from collections.abc import Collection

from relaxjax.ir import (
    CALL_EXTERN,
    CALL_TIR,
    Binding,
    Call,
    ExternDecl,
    ExternFunc,
    Function,
    GlobalVar,
    IRModule,
    TensorInfo,
    Tuple,
    Var,
    call_extern,
)
from relaxjax.passes.dispatch_cuda import is_device_library
from relaxjax.passes.walk import rebuild_function

__all__ = ["TO_DEVICE", "TO_HOST", "host_kernel_calls", "place_on_host"]

TO_HOST = "relaxjax.cuda.to_host"
TO_DEVICE = "relaxjax.cuda.to_device"
_DECLS = {"relaxjax_cuda_to_host": TO_HOST, "relaxjax_cuda_to_device": TO_DEVICE}


def _host_call(binding: object, kernels: Collection[str]) -> bool:
    if not isinstance(binding, Binding) or not isinstance(binding.value, Call):
        return False
    call = binding.value
    if not isinstance(call.info, TensorInfo):
        return False
    if call.op is CALL_EXTERN:
        symbol = call.args[0].symbol  # type: ignore[union-attr]
        return symbol not in (TO_HOST, TO_DEVICE) and not is_device_library(symbol)
    if call.op is not CALL_TIR or not isinstance(call.args[0], GlobalVar):
        return False
    return call.args[0].name in kernels


def host_kernel_calls(mod: IRModule, kernels: Collection[str]) -> int:
    """How many calls (of ``kernels``, or of libraries) :func:`place_on_host` would move."""
    return sum(
        _host_call(b, kernels)
        for f in mod.graph_functions().values()
        for block in f.body.blocks
        for b in block.bindings
    )


def _copy(symbol: str, value: Var, name: str, info: TensorInfo) -> Binding:
    return Binding(Var(name, info), call_extern(ExternFunc(symbol), (value,), info))


def _rewrite(binding: Binding) -> list[Binding]:
    call = binding.value
    assert isinstance(call, Call)
    name = binding.var.name_hint
    operands = call.args[1].fields if isinstance(call.args[1], Tuple) else (call.args[1],)
    copies, host_operands = [], []
    for index, operand in enumerate(operands):
        if isinstance(operand, Var) and isinstance(operand.info, TensorInfo):
            copy = _copy(TO_HOST, operand, f"{name}_host_in{index}", operand.info)
            copies.append(copy)
            host_operands.append(copy.var)
        else:
            host_operands.append(operand)
    info = call.info
    assert isinstance(info, TensorInfo)
    args = (call.args[0], Tuple(host_operands), *call.args[2:])
    host_var = Var(f"{name}_host", info)
    host = Binding(host_var, Call(call.op, args, call.attrs, info, call.checks), binding.location)
    back = Binding(
        binding.var, call_extern(ExternFunc(TO_DEVICE), (host_var,), info), binding.location
    )
    return [*copies, host, back]


def _place_function(function: Function, kernels: Collection[str]) -> Function:
    blocks = []
    for block in function.body.blocks:
        bindings = []
        for binding in block.bindings:
            if _host_call(binding, kernels):
                bindings.extend(_rewrite(binding))  # type: ignore[arg-type]
            else:
                bindings.append(binding)
        blocks.append(bindings)
    return rebuild_function(function, blocks)


def place_on_host(mod: IRModule, kernels: Collection[str]) -> IRModule:
    """``mod`` with the calls of ``kernels`` and the library calls run on the host (see
    the module doc)."""
    if not host_kernel_calls(mod, kernels):
        return mod
    items = dict(mod.functions)
    for name, item in mod.functions.items():
        if isinstance(item, Function):
            items[name] = _place_function(item, kernels)
    for decl_name, symbol in _DECLS.items():
        items.setdefault(decl_name, ExternDecl(decl_name, symbol))
    return IRModule(items)
