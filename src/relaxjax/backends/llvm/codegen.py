"""PrimFuncs to one LLVM module, with the kernel ABI's exported entry points.

Each kernel ``f`` becomes an exported C function (the ABI)::

    int32_t relaxjax_f(void **buffers, int64_t *symbols);

``buffers``: the data pointers of ``f.params`` in order (inputs then outputs);
``symbols``: the values of ``f.symbols()`` in order. It returns 0, or 1 when a
temporary buffer could not be allocated. The entry loads the pointers and
symbols and calls the internal ``relaxjax_f.impl`` whose buffer arguments are
``noalias`` (see :mod:`.emitter`). The ``relaxjax_`` prefix keeps kernel names
from shadowing C library functions inside the JIT's symbol table.

The module text is verified by LLVM as soon as it is emitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llvmlite import ir

from ...errors import LoweringError
from ...tir.function import PrimFunc
from . import lower_expr, lower_stmt  # noqa: F401 - registers the node lowerings
from .emitter import Captures, KernelContext, new_impl_function
from .jit import parse_and_verify
from .numeric import I8, I32, I64
from .target import Target, target_machine

__all__ = ["EmittedModule", "emit_module", "export_name"]

SYMBOL_PREFIX = "relaxjax_"


@dataclass(frozen=True, slots=True)
class EmittedModule:
    """Verified LLVM IR text for some kernels, and the exported symbol of each."""

    ir_text: str
    symbols: dict[str, str]
    uses_parallel: bool


def export_name(kernel_name: str) -> str:
    """The exported C symbol of the kernel called ``kernel_name``."""
    return f"{SYMBOL_PREFIX}{kernel_name}"


def emit_module(funcs: Sequence[PrimFunc], target: Target, fast_math: bool) -> EmittedModule:
    """Lower ``funcs`` into one LLVM module and verify it.

    Raises:
        LoweringError: a kernel uses something the CPU backend cannot lower, or two
            kernels share a name.
    """
    names = [func.name for func in funcs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise LoweringError(f"kernels built together need distinct names; repeated: {repeated}")
    module = ir.Module(name="relaxjax")
    machine = target_machine(target)
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    symbols: dict[str, str] = {}
    uses_parallel = False
    for func in funcs:
        context = KernelContext(func, module, target, export_name(func.name), fast_math)
        try:
            _emit_kernel(context)
        except LoweringError as err:
            raise LoweringError(f"while compiling kernel {func.name}: {err.message}") from err
        symbols[func.name] = context.symbol
        uses_parallel = uses_parallel or context.uses_parallel
    text = str(module)
    parse_and_verify(text, f"kernels {', '.join(names)}")
    return EmittedModule(text, symbols, uses_parallel)


def _emit_kernel(context: KernelContext) -> None:
    func = context.func
    symbol_names = tuple(s.name for s in func.symbols())
    captures = Captures(func.params, symbol_names, ())
    impl = new_impl_function(context, f"{context.symbol}.impl", captures)
    impl.stmt(func.body)
    _emit_entry(context, captures, impl.finish())


def _emit_entry(context: KernelContext, captures: Captures, impl: ir.Function) -> None:
    i8p = I8.as_pointer()
    signature = ir.FunctionType(I32, [i8p.as_pointer(), I64.as_pointer()])
    entry = ir.Function(context.module, signature, context.symbol)
    buffers, symbols = entry.args
    buffers.name, symbols.name = "buffers", "symbols"
    builder = ir.IRBuilder(entry.append_basic_block("entry"))
    status = builder.alloca(I32, name="status")
    builder.store(ir.Constant(I32, 0), status)
    args = []
    pointer_types = captures.types()[: len(captures.buffers)]
    for position, pointer_type in enumerate(pointer_types):
        raw = builder.load(builder.gep(buffers, [ir.Constant(I64, position)]))
        args.append(builder.bitcast(raw, pointer_type))
    for position in range(len(captures.symbols)):
        args.append(builder.load(builder.gep(symbols, [ir.Constant(I64, position)])))
    builder.call(impl, [*args, status])
    builder.ret(builder.load(status))
