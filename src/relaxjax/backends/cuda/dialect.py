"""The NVVM dialect: what the shared lowering emits, in the LLVM 7 IR libnvvm reads.

libnvvm (compute_80/90) accepts LLVM 7 IR with typed pointers, and crashes the process
on ``llvm.exp/log`` intrinsics; llvmlite's NVPTX target cannot lower libm calls
either. So every function the shared lowering calls by name is mapped here
(:meth:`NvvmDialect.function`):

- transcendental functions -> libdevice (``llvm.exp.f32`` -> ``__nv_expf``,
  ``erff`` -> ``__nv_erff``, ``llvm.roundeven.f64`` -> ``__nv_rint``, ...), linked in
  by the compiler (:mod:`.compile`);
- intrinsics newer than LLVM 7 -> small internal helpers defined in the module with
  LLVM 7 instructions (``llvm.minimum``/``llvm.maximum``: NaN-propagating with
  ``-0 < +0``, as on the host; ``llvm.abs``; ``llvm.fptosi.sat`` -> libdevice's
  saturating ``__nv_float2int_rz`` family, through float32 for float16);
- ``aligned_alloc``/``free`` -> the device heap's ``malloc``/``free`` (16-byte aligned;
  used only for a thread's symbolic-size temporaries, see :mod:`.codegen`);
- intrinsics LLVM 7 has (``llvm.sqrt``, ``llvm.floor``, ``llvm.fma``, ``llvm.fmuladd``,
  ``llvm.copysign``, ``llvm.fabs`` of float/double) are kept.

``fneg`` (LLVM 8+) is written ``fsub -0.0, x``; float16 -> float32 is one
``cvt.f32.f16`` in inline PTX and float16 ``+ - * /`` compute in float32 (libnvvm
fails on the vector ``fpext`` and half arithmetic its vectorisers form); float32
``exp`` calls libdevice instead of the host's inline polynomial.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from llvmlite import ir

from ...errors import LoweringError
from ..llvm.dialect import Dialect
from ..llvm.numeric import F16, F32, F64, I8, I16, I32, I64, widen

__all__ = ["NVVM_DIALECT", "NvvmDialect", "libdevice_functions"]

_SUFFIX_TYPES = {"f16": F16, "f32": F32, "f64": F64}
# LLVM intrinsic base (or libm name) -> libdevice base (float32 adds "f").
_LIBDEVICE = {
    "llvm.exp": "exp",
    "llvm.exp2": "exp2",
    "llvm.log": "log",
    "llvm.log2": "log2",
    "llvm.log10": "log10",
    "llvm.sin": "sin",
    "llvm.cos": "cos",
    "llvm.tan": "tan",
    "llvm.asin": "asin",
    "llvm.acos": "acos",
    "llvm.atan": "atan",
    "llvm.sinh": "sinh",
    "llvm.cosh": "cosh",
    "llvm.tanh": "tanh",
    "llvm.pow": "pow",
    "llvm.atan2": "atan2",
    "llvm.roundeven": "rint",
    "llvm.maxnum": "fmax",
    "llvm.minnum": "fmin",
}
_LIBM = {
    name: name
    for name in ("erf", "erfc", "log1p", "expm1", "asinh", "acosh", "atanh", "cbrt", "hypot")
}
# Intrinsics of LLVM 7 the lowering uses and NVVM compiles (float32/float64).
_KEPT = frozenset(
    {"llvm.sqrt", "llvm.floor", "llvm.ceil", "llvm.trunc", "llvm.fabs", "llvm.copysign"}
    | {"llvm.fma", "llvm.fmuladd"}
)
# (signed, width, source) -> libdevice's saturating conversion (NaN gives 0).
_SATURATING = {
    (True, "i32", F32): "__nv_float2int_rz",
    (True, "i64", F32): "__nv_float2ll_rz",
    (True, "i32", F64): "__nv_double2int_rz",
    (True, "i64", F64): "__nv_double2ll_rz",
    (False, "i32", F32): "__nv_float2uint_rz",
    (False, "i64", F32): "__nv_float2ull_rz",
    (False, "i32", F64): "__nv_double2uint_rz",
    (False, "i64", F64): "__nv_double2ull_rz",
}
_INT_TYPES = {"i8": I8, "i16": I16, "i32": I32, "i64": I64}


def libdevice_functions(ptx_or_ir: str) -> list[str]:
    """The libdevice functions (``__nv_*``) named in IR or PTX text."""
    return sorted(set(re.findall(r"__nv_[a-z0-9_]+", ptx_or_ir)))


class NvvmDialect(Dialect):
    """The dialect of modules compiled by libnvvm or llvmlite's NVPTX target."""

    name = "nvvm"
    inline_exp = False
    # libnvvm fails ("unsupported operation") on the <8 x half> arithmetic its
    # vectorisers form from a thread's neighbouring float16 operations.
    half_in_float = True

    def function(
        self, module: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type]
    ) -> ir.Function:
        mapped = (
            name if name.startswith("__nv_") or name == "malloc" else self._mapped_name(name, ret)
        )
        existing = module.globals.get(mapped)
        if existing is not None:
            return existing
        if mapped.startswith("__nv_") or mapped in ("malloc", "free"):
            return ir.Function(module, ir.FunctionType(ret, list(args)), mapped)
        if mapped == name:
            return ir.Function(module, ir.FunctionType(ret, list(args)), name)
        return self._helper(module, name, mapped, ret, list(args))

    def negate(self, builder: ir.IRBuilder, value: ir.Value, flags: tuple[str, ...]) -> ir.Value:
        return builder.fsub(ir.Constant(value.type, -0.0), value, flags=flags)

    def widen_half(self, builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
        # One ``cvt.f32.f16`` (what fpext becomes), opaque to the vectorisers: libnvvm
        # (LLVM 7) fails with "Do not know how to split the result of this operator" on
        # the ``fpext <4 x half>`` they would otherwise form from neighbouring ones.
        return builder.asm(
            ir.FunctionType(F32, [F16]), "cvt.f32.f16 $0, $1;", "=f,h", [value], False
        )

    # -- names ---------------------------------------------------------------------------

    def _mapped_name(self, name: str, ret: ir.Type) -> str:
        if name == "aligned_alloc":
            return "relaxjax.aligned_alloc"
        if name == "free":
            return "free"
        if name in _LIBM or (name.endswith("f") and name[:-1] in _LIBM):
            base = _LIBM[name] if name in _LIBM else _LIBM[name[:-1]]
            return f"__nv_{base}" + ("f" if ret == F32 else "")
        if not name.startswith("llvm."):
            raise LoweringError(f"the GPU backend has no device function for {name!r}")
        if name in ("llvm.ldexp.f32.i32", "llvm.ldexp.f64.i32"):
            return "__nv_ldexp" + ("f" if ret == F32 else "")
        base, _, suffix = name.rpartition(".")
        if base in _LIBDEVICE and suffix in ("f32", "f64"):
            return f"__nv_{_LIBDEVICE[base]}" + ("f" if suffix == "f32" else "")
        if base in _KEPT and suffix in ("f32", "f64"):
            return name
        if name.startswith(_HELPERS):
            return "relaxjax." + name[len("llvm.") :]
        if base in _KEPT or base in _LIBDEVICE:  # float16: through a float32 helper
            return "relaxjax." + name[len("llvm.") :]
        raise LoweringError(f"the GPU backend cannot lower the intrinsic {name!r}")

    # -- helpers defined in the module -----------------------------------------------------

    def _saturating_int(
        self, module: ir.Module, name: str, builder: ir.IRBuilder, value: ir.Value
    ) -> ir.Value:
        return _saturating_int_body(self, module, name, builder, value)

    def _helper(
        self, module: ir.Module, name: str, mapped: str, ret: ir.Type, args: list[ir.Type]
    ) -> ir.Function:
        function = ir.Function(module, ir.FunctionType(ret, args), mapped)
        function.linkage = "internal"
        builder = ir.IRBuilder(function.append_basic_block("entry"))
        builder.ret(self._helper_body(module, name, builder, list(function.args)))
        return function

    def _helper_body(
        self, module: ir.Module, name: str, builder: ir.IRBuilder, args: list[ir.Value]
    ) -> ir.Value:
        if name == "aligned_alloc":
            malloc = self.function(module, "malloc", I8.as_pointer(), [I64])
            return builder.call(malloc, [args[1]])
        if name.startswith(("llvm.minimum.", "llvm.maximum.")):
            return _min_max(builder, name.startswith("llvm.minimum."), *args)
        if name.startswith("llvm.abs."):
            value = args[0]
            negative = builder.icmp_signed("<", value, ir.Constant(value.type, 0))
            return builder.select(negative, builder.sub(ir.Constant(value.type, 0), value), value)
        if name.startswith(("llvm.fptosi.sat.", "llvm.fptoui.sat.")):
            return self._saturating_int(module, name, builder, args[0])
        return _through_float32(self, module, name, builder, args)


def _saturating_int_body(
    dialect: NvvmDialect, module: ir.Module, name: str, builder: ir.IRBuilder, value: ir.Value
) -> ir.Value:
    """``llvm.fpto[su]i.sat.iN.fM``: libdevice's 32/64-bit saturating conversions; narrower
    results clamp the float to their range first (NaN stays NaN and converts to 0)."""
    signed = name.startswith("llvm.fptosi")
    width, source = name.split(".")[3:5]
    if source == "f16":
        value = widen(builder, value, F32)
    if width in ("i8", "i16"):
        bits = int(width[1:])
        low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
        low_c, high_c = ir.Constant(value.type, float(low)), ir.Constant(value.type, float(high))
        value = builder.select(builder.fcmp_ordered("<", value, low_c), low_c, value)
        value = builder.select(builder.fcmp_ordered(">", value, high_c), high_c, value)
        callee = _SATURATING[(True, "i32", value.type)]
        wide = builder.call(dialect.function(module, callee, I32, [value.type]), [value])
        return builder.trunc(wide, _INT_TYPES[width])
    callee = _SATURATING[(signed, width, value.type)]
    result = _INT_TYPES[width]
    return builder.call(dialect.function(module, callee, result, [value.type]), [value])


def _min_max(builder: ir.IRBuilder, minimum: bool, a: ir.Value, b: ir.Value) -> ir.Value:
    """``llvm.minimum``/``llvm.maximum`` in LLVM 7: NaN if either is NaN, ``-0 < +0``."""
    bits = {F16: I16, F32: I32, F64: I64}[a.type]
    first = builder.fcmp_ordered("<" if minimum else ">", a, b)
    second = builder.fcmp_ordered("<" if minimum else ">", b, a)
    a_bits, b_bits = builder.bitcast(a, bits), builder.bitcast(b, bits)
    # Equal values: only zeros differ in bits; -0 has the sign bit, so or (min) / and (max).
    tie = builder.bitcast(
        builder.or_(a_bits, b_bits) if minimum else builder.and_(a_bits, b_bits), a.type
    )
    ordered = builder.select(first, a, builder.select(second, b, tie))
    unordered = builder.fcmp_unordered("uno", a, b)
    return builder.select(unordered, builder.fadd(a, b), ordered)


def _through_float32(
    dialect: NvvmDialect, module: ir.Module, name: str, builder: ir.IRBuilder, args: list[ir.Value]
) -> ir.Value:
    """A float16 intrinsic computed in float32 and rounded once."""
    base = name[: -len(".f16")]
    wide = [widen(builder, a, F32) for a in args]
    callee = dialect.function(module, f"{base}.f32", F32, [F32] * len(args))
    return builder.fptrunc(builder.call(callee, wide), F16)


_HELPERS = ("llvm.minimum.", "llvm.maximum.", "llvm.abs.", "llvm.fptosi.sat.", "llvm.fptoui.sat.")

NVVM_DIALECT = NvvmDialect()
