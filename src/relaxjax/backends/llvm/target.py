"""The x86-64 target: what the host CPU is and the LLVM target machine for it.

LLVM is initialised once per process (``initialize_all_targets`` and the asm
printers; ``llvm.initialize()`` raises in llvmlite 0.50). A :class:`Target` is
a frozen description of the machine code to emit; it is part of the disk-cache
key, so two processes on the same CPU share compiled objects.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import llvmlite
import llvmlite.binding as llvm
from llvmlite import ir

__all__ = [
    "Target",
    "apply_function_attributes",
    "function_attributes",
    "host_target",
    "initialize_llvm",
    "target_machine",
]


@functools.cache
def initialize_llvm() -> None:
    """Initialise LLVM's targets and assembly printers (idempotent)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


# Bump when code generation after the IR changes (passes, object format), so that
# cached objects made by an older backend are not reused.
CODEGEN_VERSION = 2


@dataclass(frozen=True, slots=True)
class Target:
    """What machine code to emit, and the limits code generation respects.

    ``cpu`` and ``features`` are LLVM's names (``llvm.get_host_cpu_name()`` and the
    flattened ``+avx2,...`` feature string). ``parallel_min_work`` is the smallest
    estimated number of innermost iterations for which a ``parallel`` loop is run
    on several threads; below it the loop runs serially on the calling thread.
    Constant-extent ``unrolled`` loops up to ``max_unroll`` iterations are
    unrolled while emitting; longer or symbolic ones are left to LLVM's unroller.
    Local buffers up to ``max_stack_bytes`` live on the stack, larger ones on the heap.
    """

    triple: str
    cpu: str
    features: str
    opt_level: int = 3
    parallel_min_work: int = 1 << 15
    max_unroll: int = 256
    max_stack_bytes: int = 1 << 14

    def __post_init__(self) -> None:
        if not 0 <= self.opt_level <= 3:
            raise ValueError(f"Target.opt_level: expected 0..3, given {self.opt_level}")
        for field in ("parallel_min_work", "max_unroll", "max_stack_bytes"):
            if getattr(self, field) < 0:
                raise ValueError(f"Target.{field}: expected >= 0, given {getattr(self, field)}")

    @property
    def kind(self) -> str:
        """The backend name, as accepted by ``build(target=...)``."""
        return "llvm"

    @property
    def vector_bits(self) -> int:
        """Width of the widest SIMD register the features enable."""
        enabled = set(self.features.split(","))
        if "+avx512f" in enabled:
            return 512
        if "+avx" in enabled:
            return 256
        return 128

    def cache_identity(self) -> str:
        """Everything about the target that changes the machine code, as stable text."""
        return "|".join(
            (
                self.triple,
                self.cpu,
                self.features,
                f"O{self.opt_level}",
                f"codegen-{CODEGEN_VERSION}",
                f"llvmlite-{llvmlite.__version__}",
                "llvm-{}.{}.{}".format(*llvm.llvm_version_info),
            )
        )


@functools.cache
def host_target() -> Target:
    """The target for the machine this process runs on (CPU name and features)."""
    initialize_llvm()
    return Target(
        triple=llvm.get_process_triple(),
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
    )


@functools.cache
def target_machine(target: Target) -> llvm.TargetMachine:
    """The LLVM target machine emitting code for ``target`` (one per target and process).

    ``jit=True`` selects the large code model, so objects loaded by the JIT may be
    placed anywhere in the address space relative to the libraries they call.
    """
    initialize_llvm()
    return llvm.Target.from_triple(target.triple).create_target_machine(
        cpu=target.cpu,
        features=target.features,
        opt=target.opt_level,
        jit=True,
    )


def function_attributes(target: Target) -> tuple[str, ...]:
    """LLVM string attributes put on every function the backend defines for ``target``.

    With AVX-512, LLVM's tuning for Skylake-server-class CPUs (Cascade Lake, Ice Lake,
    ...) prefers 256-bit vectors to avoid the clock penalty of 512-bit instructions;
    our kernels are long-running SIMD loops where full width pays (an 8x32 matmul tile
    holds 16 zmm accumulators instead of 32 ymm ones), so vectorisers and the code
    generator are told to use 512-bit vectors.
    """
    if target.vector_bits == 512:
        return ('"prefer-vector-width"="512"', '"min-legal-vector-width"="512"')
    return ()


class _KernelFunctionAttributes(ir.FunctionAttributes):
    """Function attributes that also accept the string attributes of :func:`function_attributes`.

    llvmlite's ``FunctionAttributes`` knows only keyword attributes; it prints its
    members verbatim, so a ``"key"="value"`` pair prints as LLVM expects it.
    """

    _known = ir.FunctionAttributes._known | frozenset(
        function_attributes(Target("", "", "+avx512f"))
    )


def apply_function_attributes(module: ir.Module, target: Target) -> None:
    """Add :func:`function_attributes` to every function defined (not declared) in ``module``."""
    extra = function_attributes(target)
    if not extra:
        return
    for function in module.functions:
        if not function.blocks:
            continue
        attributes = _KernelFunctionAttributes(function.attributes)
        attributes.alignstack = function.attributes.alignstack
        attributes.personality = function.attributes.personality
        for attribute in extra:
            attributes.add(attribute)
        function.attributes = attributes
