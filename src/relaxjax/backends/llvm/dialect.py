"""How one flavour of LLVM IR spells what the shared lowering emits.

The lowering of TIR (:mod:`.lower_expr`, :mod:`.lower_stmt`, :mod:`.numeric`,
:mod:`.intrinsics`) serves two backends: x86-64 through llvmlite (LLVM 22) and
NVIDIA GPUs through libnvvm, which reads the LLVM 7 dialect. The few things the two
spell differently go through the module's :class:`Dialect`:

- every function the lowering calls by name (LLVM intrinsics such as
  ``llvm.minimum.f32``, libm functions such as ``erff``, the C runtime's
  ``aligned_alloc``/``free``) is declared through :meth:`Dialect.function`, which
  may return another function (a libdevice one, or a helper it defines);
- float negation (:meth:`Dialect.negate`): LLVM 7 has no ``fneg``;
- float16 -> float32 (:meth:`Dialect.widen_half`): libnvvm's code generator cannot
  split the vector ``fpext`` its vectorisers form from several of them;
- whether float32 ``exp`` is the inline polynomial of :mod:`.vector_math` (CPU: it
  vectorises) or a call of the math library (GPU: libdevice's is as fast).

A module carries its dialect in the attribute ``relaxjax_dialect``; a module
without one (every CPU module) uses :data:`HOST_DIALECT`, which declares names as
they are, so the CPU backend's IR is exactly what it was before dialects existed.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

__all__ = ["HOST_DIALECT", "Dialect", "declare", "dialect_of", "set_dialect"]

_ATTRIBUTE = "relaxjax_dialect"


class Dialect:
    """The host (x86-64, current LLVM) dialect; subclasses change what differs."""

    name = "llvm"
    #: float32 ``exp`` (and sigmoid's) as the inline vectorisable polynomial.
    inline_exp = True
    #: float16 ``+ - * /`` computed in float32 and rounded once (the same result).
    half_in_float = False

    def function(
        self, module: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type]
    ) -> ir.Function:
        """The function to call for ``name`` (an intrinsic, libm or C runtime name),
        declared in ``module`` on first use."""
        existing = module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(module, ir.FunctionType(ret, list(args)), name)

    def negate(self, builder: ir.IRBuilder, value: ir.Value, flags: tuple[str, ...]) -> ir.Value:
        """``-value`` for a float register value."""
        return builder.fneg(value, flags=flags)

    def widen_half(self, builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
        """A ``half`` register value as ``float`` (exact)."""
        return builder.fpext(value, ir.FloatType())


HOST_DIALECT = Dialect()


def dialect_of(module: ir.Module) -> Dialect:
    """The dialect ``module`` is emitted in (:data:`HOST_DIALECT` unless set)."""
    return getattr(module, _ATTRIBUTE, HOST_DIALECT)


def set_dialect(module: ir.Module, dialect: Dialect) -> None:
    """Emit ``module`` in ``dialect`` from now on."""
    setattr(module, _ATTRIBUTE, dialect)


def declare(module: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
    """The function ``name`` of ``module``'s dialect, declared on first use."""
    return dialect_of(module).function(module, name, ret, args)
