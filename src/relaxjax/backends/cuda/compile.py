"""NVVM IR -> PTX -> cubin, with the tools of the NVIDIA wheels.

PTX, two ways (``compiler=``):

- ``"nvvm"``: libnvvm (``cuda.bindings.nvvm`` + the ``nvidia-nvvm`` wheel), with
  libdevice linked lazily for ``__nv_*`` math. It runs in a child process
  (:mod:`.nvvm_worker`): libnvvm aborts the process on some inputs, and a crash must
  not take the user's process down. The child is started once (~0.5 s: Python and
  ``cuda.bindings``) and kept for the next modules, which then cost what libnvvm
  itself takes (~30-60 ms for a small module here); a crashed child is replaced, and
  its module reported as a ``LoweringError``. The disk cache makes each module once
  per toolchain.
- ``"llvmlite"``: llvmlite's own NVPTX back end (LLVM 22, PTX ISA 7.8, which every
  recent driver loads), with libdevice linked in as bitcode, non-kernel functions
  made internal after linking, then O3. Used when libnvvm is not installed.
- ``"auto"`` (default): nvvm when available, else llvmlite.

cubin: ptxas from the ``nvidia-cuda-nvcc`` wheel (``-v`` also reports each entry's
registers, spills and shared memory, parsed into :class:`EntryResources`), or
nvJitLink when ptxas is missing. Both found by ``cuda.pathfinder``, never ``PATH``.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import LoweringError
from .target import CudaTarget

__all__ = [
    "COMPILERS",
    "EntryResources",
    "assemble",
    "available_compilers",
    "compile_ptx",
    "libdevice_path",
    "nvvm_available",
    "parse_resources",
    "ptx_isa",
    "ptxas_path",
    "toolchain_files",
]

COMPILERS = ("auto", "nvvm", "llvmlite")
_WORKER = Path(__file__).with_name("nvvm_worker.py")
_LENGTH = struct.Struct("<Q")


@functools.cache
def nvvm_available() -> bool:
    """Whether libnvvm (the ``nvidia-nvvm`` wheel) and its bindings can be loaded."""
    if importlib.util.find_spec("cuda.bindings") is None:
        return False
    try:
        from cuda import pathfinder

        pathfinder.load_nvidia_dynamic_lib("nvvm")
    except Exception:  # noqa: BLE001 - any failure to find or load means "not installed"
        return False
    return True


@functools.cache
def libdevice_path() -> str | None:
    """Where ``libdevice.10.bc`` is, or None: the ``nvidia-nvvm`` wheel's (or
    ``$CUDA_HOME``'s), else the one beside the libnvvm that loads (a system toolkit that
    ``cuda.pathfinder`` finds through the loader, as on machines with CUDA installed)."""
    try:
        from cuda import pathfinder

        return str(pathfinder.find_bitcode_lib("device"))
    except Exception:  # noqa: BLE001 - not there; try beside libnvvm
        pass
    try:
        from cuda import pathfinder

        libnvvm = Path(pathfinder.load_nvidia_dynamic_lib("nvvm").abs_path).resolve()
    except Exception:  # noqa: BLE001
        return None
    for root in libnvvm.parents[:3]:  # <root>/lib/libnvvm.so, <root>/nvvm/lib64/libnvvm.so
        candidate = root / "nvvm" / "libdevice" / "libdevice.10.bc"
        if candidate.is_file():
            return str(candidate)
    return None


@functools.cache
def ptxas_path() -> str | None:
    """ptxas of the ``nvidia-cuda-nvcc`` wheel (never the one on ``PATH``), or None."""
    try:
        from cuda import pathfinder

        found = pathfinder.find_nvidia_binary_utility("ptxas")
    except Exception:  # noqa: BLE001
        return None
    return str(found) if found else None


@functools.cache
def toolchain_files() -> str:
    """The toolchain files in use (libnvvm, libdevice, ptxas: path, size, mtime) as text,
    part of the cache key: a toolkit from no wheel (no version to read), or one replaced
    in place, is told apart from the one that filled the cache."""
    files = [libdevice_path(), ptxas_path()]
    if nvvm_available():
        from cuda import pathfinder

        files.append(pathfinder.load_nvidia_dynamic_lib("nvvm").abs_path)
    parts = []
    for name in files:
        try:
            stat = os.stat(name) if name else None
        except OSError:
            stat = None
        parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}" if stat else f"{name}")
    return ";".join(parts)


def available_compilers() -> tuple[str, ...]:
    """The PTX compilers usable here (``"nvvm"``, ``"llvmlite"``)."""
    return ("nvvm", "llvmlite") if nvvm_available() else ("llvmlite",)


def resolve_compiler(compiler: str) -> str:
    """``"auto"`` as the compiler it means here; an unknown or missing one raises."""
    if compiler not in COMPILERS:
        raise LoweringError(f"unknown PTX compiler {compiler!r}; expected one of {COMPILERS}")
    if compiler == "auto":
        return available_compilers()[0]
    if compiler == "nvvm" and not nvvm_available():
        raise LoweringError(
            "the PTX compiler 'nvvm' needs libnvvm: pip install 'relaxjax[cuda]' "
            "(the nvidia-nvvm wheel); compiler='llvmlite' works without it"
        )
    return compiler


def compile_ptx(
    ir_text: str, target: CudaTarget, compiler: str = "auto", entries: Sequence[str] = ()
) -> str:
    """PTX text for an NVVM IR module (see the module doc); ``entries`` names its kernels
    (the llvmlite path keeps only them external).

    Raises:
        LoweringError: the compiler rejected the module (its log is in the message), or
            crashed, or math functions are needed and libdevice is not installed.
    """
    compiler = resolve_compiler(compiler)
    needs_libdevice = "__nv_" in ir_text
    library = libdevice_path() if needs_libdevice else None
    if needs_libdevice and library is None:
        raise LoweringError(
            "these kernels call math functions (libdevice), which come with the nvidia-nvvm "
            "wheel: pip install 'relaxjax[cuda]'"
        )
    if compiler == "nvvm":
        return _compile_nvvm(ir_text, target, library)
    return _compile_llvmlite(ir_text, target, library, frozenset(entries))


class _Worker:
    """The libnvvm child process (:mod:`.nvvm_worker`), started on first use and kept;
    a new one replaces a child that died."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-s", str(_WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, "PYTHONNOUSERSITE": "1"},
            )
        return self._process

    def compile(self, request: bytes) -> tuple[int, str]:
        """``(status, text)``: 0 and PTX, 2 and libnvvm's log, or -1 and the crash's stderr."""
        with self._lock:
            process = self._start()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(_LENGTH.pack(len(request)) + request)
                process.stdin.flush()
                header = process.stdout.read(1 + _LENGTH.size)
                if len(header) == 1 + _LENGTH.size:
                    size = _LENGTH.unpack(header[1:])[0]
                    return header[0], process.stdout.read(size).decode()
            except (BrokenPipeError, OSError):
                pass
            process.kill()
            _, stderr = process.communicate()
            self._process = None
            return -1, f"exit status {process.returncode}; stderr:\n{stderr.decode()[-2000:]}"

    def close(self) -> None:
        """End the child (it exits when its stdin closes)."""
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                assert self._process.stdin is not None
                self._process.stdin.close()
                self._process.wait(timeout=10)
            self._process = None


_worker = _Worker()
atexit.register(_worker.close)


def _compile_nvvm(ir_text: str, target: CudaTarget, library: str | None) -> str:
    options = [f"-arch={target.compute}", f"-opt={target.opt_level}"]
    request = json.dumps({"ir": ir_text, "options": options, "libdevice": library}).encode()
    status, text = _worker.compile(request)
    if status == 0:
        return text
    if status == 2:
        raise LoweringError(f"libnvvm rejected the module:\n{text.strip()}")
    raise LoweringError(
        f"libnvvm crashed compiling the module ({text.strip()}); "
        "compiler='llvmlite' may work instead"
    )


def _compile_llvmlite(
    ir_text: str, target: CudaTarget, library: str | None, entries: frozenset[str]
) -> str:
    import llvmlite.binding as llvm

    from ..llvm.target import initialize_llvm

    initialize_llvm()
    try:
        module = llvm.parse_assembly(ir_text)
        module.verify()
    except RuntimeError as err:
        raise LoweringError(f"internal error: invalid NVVM IR: {err}") from err
    if library is not None:
        module.link_in(llvm.parse_bitcode(Path(library).read_bytes()))
    for function in module.functions:
        if not function.is_declaration and function.name not in entries:
            function.linkage = "internal"
    machine = llvm.Target.from_triple("nvptx64-nvidia-cuda").create_target_machine(
        cpu=target.arch, opt=target.opt_level
    )
    module.data_layout = str(machine.target_data)
    if target.opt_level > 0:
        tuning = llvm.create_pipeline_tuning_options(speed_level=target.opt_level)
        passes = llvm.create_pass_builder(machine, tuning)
        passes.getModulePassManager().run(module, passes)
    return machine.emit_assembly(module)


def ptx_isa(ptx: str) -> tuple[int, int]:
    """The PTX ISA version a PTX text declares (``.version 9.0`` -> ``(9, 0)``)."""
    found = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.MULTILINE)
    if found is None:
        raise LoweringError("PTX text without a .version directive")
    return int(found.group(1)), int(found.group(2))


@dataclass(frozen=True, slots=True)
class EntryResources:
    """What ptxas reports for one entry: registers per thread, spill traffic, memory."""

    entry: str
    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    shared_bytes: int

    @property
    def spills(self) -> bool:
        """Whether the entry spills registers to local memory."""
        return self.spill_stores > 0 or self.spill_loads > 0


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_resources(log: str) -> dict[str, EntryResources]:
    """The per-entry resources in ptxas's (or nvJitLink's) verbose log."""
    found: dict[str, EntryResources] = {}
    current: str | None = None
    frame = (0, 0, 0)
    for line in log.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            current, frame = entry.group(1), (0, 0, 0)
            continue
        match = _FRAME.search(line)
        if match and current:
            frame = tuple(int(g) for g in match.groups())  # type: ignore[assignment]
            continue
        used = _USED.search(line)
        if used and current:
            shared = int(used.group(2)) if used.group(2) else 0
            found[current] = EntryResources(
                current, int(used.group(1)), frame[1], frame[2], frame[0], shared
            )
            current = None
    return found


def assemble(ptx: str, target: CudaTarget) -> tuple[bytes, dict[str, EntryResources]]:
    """Assemble PTX for ``target.arch``: the cubin and each entry's resources.

    Raises:
        LoweringError: neither ptxas nor nvJitLink is installed, or the PTX is rejected.
    """
    ptxas = ptxas_path()
    if ptxas is not None:
        return _assemble_ptxas(ptxas, ptx, target)
    return _assemble_nvjitlink(ptx, target)


def _assemble_ptxas(
    ptxas: str, ptx: str, target: CudaTarget
) -> tuple[bytes, dict[str, EntryResources]]:
    with tempfile.TemporaryDirectory(prefix="relaxjax-ptxas-") as directory:
        source = Path(directory) / "module.ptx"
        cubin = Path(directory) / "module.cubin"
        source.write_text(ptx)
        result = subprocess.run(
            [
                ptxas,
                f"-arch={target.arch}",
                f"-O{min(target.opt_level, 3)}",
                "-v",
                str(source),
                "-o",
                str(cubin),
            ],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise LoweringError(f"ptxas rejected the PTX for {target.arch}:\n{result.stderr}")
        return cubin.read_bytes(), parse_resources(result.stderr + result.stdout)


def _assemble_nvjitlink(ptx: str, target: CudaTarget) -> tuple[bytes, dict[str, EntryResources]]:
    try:
        from cuda.bindings import nvjitlink
    except ImportError as err:
        raise LoweringError(
            "no PTX assembler: install the nvidia-cuda-nvcc (ptxas) or nvidia-nvjitlink wheel "
            "(pip install 'relaxjax[cuda]')"
        ) from err
    try:
        handle = nvjitlink.create(2, [f"-arch={target.arch}", "-verbose"])
    except Exception as err:  # noqa: BLE001 - the library itself is missing
        raise LoweringError(f"nvJitLink is not usable here: {err}") from err
    try:
        data = ptx.encode()
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "module")
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as err:
            log = bytearray(nvjitlink.get_error_log_size(handle))
            nvjitlink.get_error_log(handle, log)
            raise LoweringError(f"nvJitLink rejected the PTX: {bytes(log).decode()}") from err
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        info = bytearray(nvjitlink.get_info_log_size(handle))
        nvjitlink.get_info_log(handle, info)
        return bytes(cubin), parse_resources(bytes(info).decode(errors="replace"))
    finally:
        nvjitlink.destroy(handle)
