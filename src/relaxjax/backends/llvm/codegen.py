"""PrimFuncs to one LLVM module, with the kernel ABI's exported entry points.

Each kernel, built under the name ``f`` (its ``PrimFunc.name``, or its key when a
mapping of kernels is built), becomes an exported C function (the ABI)::

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from llvmlite import ir

from ...errors import LoweringError
from ...tir.function import PrimFunc
from . import lower_expr, lower_stmt  # noqa: F401 - registers the node lowerings
from .emitter import Captures, KernelContext, new_impl_function
from .jit import parse_and_verify
from .numeric import I8, I32, I64
from .target import Target, apply_function_attributes, target_machine

__all__ = ["EmittedModule", "emit_module", "export_name", "named_kernels"]

SYMBOL_PREFIX = "relaxjax_"


@dataclass(frozen=True, slots=True)
class EmittedModule:
    """Verified LLVM IR text for some kernels, and the exported symbol of each (by name)."""

    ir_text: str
    symbols: dict[str, str]
    uses_parallel: bool


def export_name(kernel_name: str) -> str:
    """The exported C symbol of the kernel called ``kernel_name``."""
    return f"{SYMBOL_PREFIX}{kernel_name}"


def named_kernels(
    funcs: PrimFunc | Sequence[PrimFunc] | Mapping[str, PrimFunc],
) -> dict[str, PrimFunc]:
    """Kernels by the name they are built under: a mapping's keys, else each ``func.name``.

    Raises:
        TypeError: something other than a PrimFunc (or a non-str key) was given.
        LoweringError: two kernels of a sequence share a name.
    """
    if isinstance(funcs, PrimFunc):
        return {funcs.name: funcs}
    if isinstance(funcs, Mapping):
        pairs = list(funcs.items())
    else:
        pairs = [(getattr(func, "name", None), func) for func in funcs]
        names = [name for name, _ in pairs]
        repeated = sorted({n for n in names if isinstance(n, str) and names.count(n) > 1})
        if repeated:
            raise LoweringError(f"kernels built together need distinct names; repeated: {repeated}")
    for name, func in pairs:
        if not isinstance(func, PrimFunc):
            raise TypeError(f"build expects tir.PrimFunc kernels, given {type(func).__name__}")
        if not isinstance(name, str) or not name:
            raise TypeError(f"kernel names must be non-empty strings, given {name!r}")
    return dict(pairs)


def emit_module(
    kernels: Mapping[str, PrimFunc], target: Target, fast_math: bool, contract: bool = True
) -> EmittedModule:
    """Lower ``kernels`` (name -> PrimFunc) into one LLVM module and verify it.

    ``contract``: float32/float64 ``a * b + c`` may be fused into one ``fma`` (see
    :func:`~.build.build`). Every function defined gets :func:`~.target.function_attributes`.

    Raises:
        LoweringError: a kernel uses something the CPU backend cannot lower.
    """
    module = ir.Module(name="relaxjax")
    machine = target_machine(target)
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    symbols: dict[str, str] = {}
    uses_parallel = False
    for name, func in kernels.items():
        context = KernelContext(func, module, target, export_name(name), fast_math, contract)
        try:
            _emit_kernel(context)
        except LoweringError as err:
            raise LoweringError(f"while compiling kernel {name}: {err.message}") from err
        symbols[name] = context.symbol
        uses_parallel = uses_parallel or context.uses_parallel
    apply_function_attributes(module, target)
    text = str(module)
    parse_and_verify(text, f"kernels {', '.join(kernels)}")
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
