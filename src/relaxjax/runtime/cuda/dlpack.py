"""DLPack capsules for device memory, both ways, with ctypes (no extra package).

Export (:func:`to_capsule`): a ``DLManagedTensor`` for a C-contiguous device buffer,
in a ``PyCapsule`` named ``"dltensor"``; the consumer (``torch.from_dlpack``,
``jax.dlpack.from_dlpack``, ``cupy.from_dlpack``) renames it ``"used_dltensor"`` and
calls the deleter when done, which drops the reference that kept the buffer alive. A
capsule never consumed calls the deleter when it is collected.

Import (:func:`from_capsule`): the data pointer, shape, strides and dtype of a
producer's capsule, and a release function to call when the memory is no longer used.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from relaxjax import dtypes

__all__ = ["KDL_CPU", "KDL_CUDA", "Imported", "dl_dtype", "from_capsule", "to_capsule"]

KDL_CPU = 1
KDL_CUDA = 2
_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4, "bool": 6}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [
    ("dl_tensor", _Tensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# The destructor gets the dying capsule's raw address: these take it as a plain pointer
# (a py_object argument would touch its reference count).
_raw_is_valid = _api["PyCapsule_IsValid"]
_raw_is_valid.restype = ctypes.c_int
_raw_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_raw_get_pointer = _api["PyCapsule_GetPointer"]
_raw_get_pointer.restype = ctypes.c_void_p
_raw_get_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

_live: dict[int, tuple] = {}  # managed tensor address -> what keeps it (and its data) alive
_lock = threading.Lock()
_NAME = b"dltensor"
_USED = b"used_dltensor"


def dl_dtype(dtype: str) -> tuple[int, int]:
    """DLPack's (type code, bits) for a relaxjax dtype."""
    if dtypes.is_bool(dtype):
        return _CODES["bool"], 8
    if dtype == "bfloat16":
        return _CODES["bfloat"], 16
    kind = "float" if dtypes.is_floating(dtype) else "uint" if dtypes.is_unsigned(dtype) else "int"
    return _CODES[kind], dtypes.itemsize(dtype) * 8


def _dtype_of(code: int, bits: int, lanes: int) -> str:
    if lanes != 1:
        raise TypeError(f"DLPack tensors of vector lanes ({lanes}) are not supported")
    if code == _CODES["bool"]:
        return "bool"
    if code == _CODES["bfloat"] and bits == 16:
        return "bfloat16"
    names = {0: "int", 1: "uint", 2: "float"}
    if code not in names:
        raise TypeError(f"unsupported DLPack dtype code {code}")
    return dtypes.canonical(np.dtype(f"{names[code]}{bits}"))


@_DELETER
def _delete(managed: ctypes.POINTER(_Managed)) -> None:  # type: ignore[valid-type]
    with _lock:
        _live.pop(ctypes.addressof(managed.contents), None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule: int) -> None:
    # Called with the capsule object's address; a consumed capsule was renamed.
    if _raw_is_valid(capsule, _NAME):
        pointer = _raw_get_pointer(capsule, _NAME)
        managed = ctypes.cast(pointer, ctypes.POINTER(_Managed))
        managed.contents.deleter(managed)


def to_capsule(
    pointer: int, shape: tuple[int, ...], dtype: str, device: tuple[int, int], owner: object
) -> object:
    """A ``"dltensor"`` capsule for a C-contiguous buffer; ``owner`` stays referenced
    until the consumer calls the deleter."""
    ndim = len(shape)
    shape_array = (ctypes.c_int64 * max(ndim, 1))(*shape)
    managed = _Managed()
    tensor = managed.dl_tensor
    tensor.data = pointer
    tensor.device = _Device(*device)
    tensor.ndim = ndim
    code, bits = dl_dtype(dtype)
    tensor.dtype = _DataType(code, bits, 1)
    tensor.shape = ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = None  # compact row-major
    tensor.byte_offset = 0
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    with _lock:
        _live[address] = (managed, shape_array, owner)
    return _api.PyCapsule_New(address, _NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


@dataclass(frozen=True, slots=True)
class Imported:
    """A producer's tensor: device, data pointer, shape, dtype, and ``release`` (call
    once when the memory is no longer used)."""

    device: tuple[int, int]
    pointer: int
    shape: tuple[int, ...]
    dtype: str
    release: Callable[[], None]


def from_capsule(capsule: object) -> Imported:
    """Read a ``"dltensor"`` capsule (and mark it used).

    Raises:
        TypeError: not a capsule, a dtype we do not have, or a non-contiguous tensor.
    """
    if not _api.PyCapsule_IsValid(capsule, _NAME):
        raise TypeError("expected an unused DLPack capsule named 'dltensor'")
    address = _api.PyCapsule_GetPointer(capsule, _NAME)
    managed = ctypes.cast(address, ctypes.POINTER(_Managed))
    tensor = managed.contents.dl_tensor
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides:
        strides = tuple(tensor.strides[i] for i in range(tensor.ndim))
        expected, step = [], 1
        for extent in reversed(shape):
            expected.append(step)
            step *= extent
        if any(e > 1 and s != x for e, s, x in zip(shape, strides, reversed(expected))):
            raise TypeError(f"only C-contiguous tensors are accepted, given strides {strides}")
    dtype = _dtype_of(tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
    _api.PyCapsule_SetName(capsule, _USED)
    deleter = managed.contents.deleter

    def release() -> None:
        if deleter:
            deleter(managed)

    return Imported(
        (tensor.device.device_type, tensor.device.device_id),
        (tensor.data or 0) + tensor.byte_offset,
        shape,
        dtype,
        release,
    )
