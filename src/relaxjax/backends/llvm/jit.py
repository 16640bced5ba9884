"""From verified LLVM IR text to machine code in memory.

Two steps, so the disk cache can sit between them:

- :func:`compile_object`: parse + verify, optimise at O3 with the new pass manager
  (loop and SLP vectorisation on), emit an ELF object for the target.
- :func:`load_object`: link the object into the process with ORC LLJIT and return
  the addresses of the exported kernels.

Every loaded library stays referenced for the life of the process: a function
pointer outlives the Python object that produced it (the runtime keeps raw
addresses), and dropping LLJIT's resource tracker unmaps the code.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import llvmlite.binding as llvm

from ...errors import LoweringError
from .target import Target, initialize_llvm, target_machine

__all__ = [
    "LoadedLibrary",
    "compile_assembly",
    "compile_object",
    "load_object",
    "optimize",
    "parse_and_verify",
]


def parse_and_verify(ir_text: str, what: str) -> llvm.ModuleRef:
    """Parse LLVM IR text and run LLVM's verifier on it.

    Raises:
        LoweringError: the IR does not parse or is invalid; the message names ``what``.
    """
    initialize_llvm()
    try:
        module = llvm.parse_assembly(ir_text)
        module.verify()
    except RuntimeError as err:
        raise LoweringError(f"internal error: invalid LLVM IR emitted for {what}: {err}") from err
    return module


def optimize(ir_text: str, target: Target, what: str) -> llvm.ModuleRef:
    """Parse, verify and optimise LLVM IR for ``target`` (O3, loop + SLP vectorisation)."""
    module = parse_and_verify(ir_text, what)
    machine = target_machine(target)
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    if target.opt_level > 0:
        tuning = llvm.create_pipeline_tuning_options(speed_level=target.opt_level)
        tuning.slp_vectorization = True
        tuning.loop_vectorization = True
        passes = llvm.create_pass_builder(machine, tuning)
        with _quiet_missed_vectorisation():
            passes.getModulePassManager().run(module, passes)
    return module


#: LLVM's diagnostics for a loop that was asked to vectorise and did not (its scalar
#: code is still correct): expected for some kernels, and noise to a user.
_MISSED_VECTORISATION = b"loop not vectorized"


@contextlib.contextmanager
def _quiet_missed_vectorisation() -> Iterator[None]:
    """Drop LLVM's missed-vectorisation lines from stderr while the optimiser runs; LLVM
    writes them to file descriptor 2 itself, so they are caught there. Every other line
    is written back."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            kept = [line for line in caught if _MISSED_VECTORISATION not in line]
            if kept:
                os.write(2, b"".join(kept))


def compile_object(ir_text: str, target: Target, what: str) -> bytes:
    """Optimise LLVM IR for ``target`` and return the ELF object code."""
    return target_machine(target).emit_object(optimize(ir_text, target, what))


def compile_assembly(ir_text: str, target: Target, what: str) -> str:
    """Optimise LLVM IR for ``target`` and return the assembly text (for inspection)."""
    return target_machine(target).emit_assembly(optimize(ir_text, target, what))


@dataclass(frozen=True, slots=True, eq=False)
class LoadedLibrary:
    """Machine code linked into this process; ``addresses`` maps symbol -> entry address."""

    name: str
    addresses: dict[str, int]
    tracker: llvm.ResourceTracker


_lock = threading.Lock()
_jits: dict[Target, llvm.LLJIT] = {}
_libraries: list[LoadedLibrary] = []  # never released: raw addresses may be held anywhere
_names = itertools.count()


def _jit_for(target: Target) -> llvm.LLJIT:
    jit = _jits.get(target)
    if jit is None:
        jit = _jits[target] = llvm.create_lljit_compiler(target_machine(target))
    return jit


def load_object(obj: bytes, symbols: tuple[str, ...], target: Target) -> LoadedLibrary:
    """Link object code into the process and look up ``symbols``.

    External references (libm, libgomp) resolve against the process's loaded
    libraries; one that cannot be resolved raises instead of crashing at call time.

    Raises:
        LoweringError: linking failed (e.g. an unresolved external symbol).
    """
    with _lock:
        name = f"relaxjax_kernels_{next(_names)}"
        builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
        for symbol in symbols:
            builder.export_symbol(symbol)
        try:
            tracker = builder.link(_jit_for(target), name)
        except RuntimeError as err:
            raise LoweringError(
                f"cannot link compiled kernels {', '.join(symbols)} into the process: {err} "
                "(LLVM prints the unresolved symbols on stderr)"
            ) from err
        library = LoadedLibrary(name, {s: tracker[s] for s in symbols}, tracker)
        missing = [s for s, address in library.addresses.items() if not address]
        if missing:
            raise LoweringError(f"compiled object does not define {', '.join(missing)}")
        _libraries.append(library)
        return library
