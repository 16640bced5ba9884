"""Launching kernels from Python with little work per call.

A compiled kernel has the ABI ``int32 kernel(void** buffers, int64* symbols)``.
Calling it through ctypes means building two C arrays and reading every array's
data pointer in Python (``arr.ctypes.data`` alone costs about a microsecond).
Instead, a tiny native *trampoline* per call signature takes the kernel's
address, the buffers and the symbol values as plain arguments, reads the numpy
arrays' data pointers itself, fills the two arrays on its stack and calls the
kernel. One ctypes call per kernel launch, no Python-side pointer work.

A signature is a string of argument kinds: ``"o"`` for a numpy array passed as a
Python object (the trampoline loads ``PyArrayObject.data``) and ``"p"`` for a raw
address passed as an int (a slice of the runtime's memory arena, or a constant
whose address was read once). The trampoline for a signature is compiled once
per process, its object code read from the disk cache of compiled objects when it is
there (a new process links it without running LLVM).

The offset of ``data`` in numpy's array object is checked when this module first
builds a trampoline: if it does not read the same pointer as ``arr.ctypes.data``
(an unusual Python build), :func:`object_args_supported` is False and callers pass every
buffer as ``"p"``.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from relaxjax.backends.llvm.cache import (
    cache_key,
    disk_cache_mode,
    entry_path,
    read_frame,
    write_frame,
)
from relaxjax.backends.llvm.jit import compile_object, load_object
from relaxjax.backends.llvm.target import Target, host_target

__all__ = ["Launcher", "data_pointer", "object_args_supported", "trampoline"]

#: Where numpy keeps an array's data pointer: right after the object header.
_DATA_OFFSET = object.__basicsize__
_lock = threading.Lock()


def _check_signature(signature: str, num_symbols: int) -> None:
    if not signature or set(signature) - {"o", "p"}:
        raise ValueError(
            f"a launch signature is a non-empty string of 'o' and 'p', got {signature!r}"
        )
    if num_symbols < 0:
        raise ValueError(f"num_symbols must be >= 0, got {num_symbols}")


def _trampoline_ir(name: str, signature: str, num_symbols: int) -> str:
    """LLVM IR of ``int32 name(ptr kernel, <buffers>, <int64 symbols>)``."""
    params = ["ptr %kernel"]
    params += [f"ptr %a{i}" if kind == "o" else f"i64 %a{i}" for i, kind in enumerate(signature)]
    params += [f"i64 %s{i}" for i in range(num_symbols)]
    body = [f"  %bufs = alloca [{len(signature)} x ptr], align 8"]
    for i, kind in enumerate(signature):
        if kind == "o":
            body.append(f"  %f{i} = getelementptr i8, ptr %a{i}, i64 {_DATA_OFFSET}")
            body.append(f"  %d{i} = load ptr, ptr %f{i}, align 8")
        else:
            body.append(f"  %d{i} = inttoptr i64 %a{i} to ptr")
        body.append(f"  %b{i} = getelementptr [{len(signature)} x ptr], ptr %bufs, i64 0, i64 {i}")
        body.append(f"  store ptr %d{i}, ptr %b{i}, align 8")
    if num_symbols:
        body.append(f"  %syms = alloca [{num_symbols} x i64], align 8")
        for i in range(num_symbols):
            body.append(f"  %y{i} = getelementptr [{num_symbols} x i64], ptr %syms, i64 0, i64 {i}")
            body.append(f"  store i64 %s{i}, ptr %y{i}, align 8")
        symbols = "ptr %syms"
    else:
        symbols = "ptr null"
    body.append(f"  %r = call i32 %kernel(ptr %bufs, {symbols})")
    body.append("  ret i32 %r")
    header = f"define i32 @{name}({', '.join(params)}) {{"
    return "\n".join([header, "entry:", *body, "}", ""])


_DATA_IR = f"""define i64 @relaxjax_data_pointer(ptr %a) {{
entry:
  %f = getelementptr i8, ptr %a, i64 {_DATA_OFFSET}
  %d = load i64, ptr %f, align 8
  ret i64 %d
}}
"""


def _load(ir_text: str, symbol: str) -> int:
    target = replace(host_target(), opt_level=1)
    library = load_object(_object_code(ir_text, symbol, target), (symbol,), target)
    return library.addresses[symbol]


def _object_code(ir_text: str, symbol: str, target: Target) -> bytes:
    """The object of ``ir_text``, through the disk cache of compiled objects; not counted in
    ``cache_stats()`` (the runtime's own helpers, not a program's kernels)."""
    cached = disk_cache_mode() != "off"
    path = entry_path(cache_key(ir_text, target.cache_identity()))
    if cached:
        _, obj = read_frame(path)
        if obj is not None:
            return obj
    obj = compile_object(ir_text, target, symbol)
    if cached:
        write_frame(path, obj)
    return obj


@functools.cache
def _native_data_pointer() -> Callable[[np.ndarray], int]:
    address = _load(_DATA_IR, "relaxjax_data_pointer")
    return ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.py_object)(address)


@functools.cache
def object_args_supported() -> bool:
    """Whether trampolines may read numpy data pointers themselves (checked once)."""
    probe = np.arange(3, dtype=np.float64)[1:]
    with _lock:
        return _native_data_pointer()(probe) == probe.ctypes.data


def data_pointer(array: np.ndarray) -> int:
    """The address of ``array``'s first element (fast where :func:`object_args_supported`)."""
    if object_args_supported():
        return _native_data_pointer()(array)
    return array.ctypes.data


@functools.cache
def trampoline(signature: str, num_symbols: int) -> Callable[..., int]:
    """The ctypes callable ``(kernel_address, *buffers, *symbols) -> status`` for a signature."""
    _check_signature(signature, num_symbols)
    name = f"relaxjax_launch_{signature}_{num_symbols}"
    with _lock:
        address = _load(_trampoline_ir(name, signature, num_symbols), name)
    argtypes = [ctypes.c_void_p]
    argtypes += [ctypes.py_object if kind == "o" else ctypes.c_int64 for kind in signature]
    argtypes += [ctypes.c_int64] * num_symbols
    return ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)


class Launcher:
    """Calls one kernel: ``launcher(*buffers, *symbols)`` returns the kernel's status (0 = ok).

    ``buffers`` follow ``signature`` (numpy arrays for ``"o"``, int addresses for
    ``"p"``); ``symbols`` are the kernel's symbol values in ``PrimFunc.symbols()`` order.
    """

    __slots__ = ("name", "signature", "num_symbols", "address", "_call")

    def __init__(self, name: str, address: int, signature: str, num_symbols: int) -> None:
        self.name = name
        self.address = address
        self.signature = signature
        self.num_symbols = num_symbols
        self._call = functools.partial(trampoline(signature, num_symbols), address)

    def __call__(self, *arguments: object) -> int:
        return self._call(*arguments)

    @property
    def call(self) -> Callable[..., int]:
        """The bare callable (a ``functools.partial``), for generated code's hot path."""
        return self._call
