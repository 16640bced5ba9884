"""Arrays of other libraries in, arrays other libraries can take out: DLPack without copies.

:func:`as_numpy` turns any array-like argument into a numpy array that shares its
memory when the layout allows: objects with ``__dlpack__`` (torch CPU tensors, jax
arrays, cupy arrays in host memory, ...) through ``np.from_dlpack``, others through
``__array__``. numpy's DLPack cannot read bfloat16, so bfloat16 tensors are imported
here (the producer's memory, kept alive until the array is freed)::

    >>> import numpy as np
    >>> a = np.arange(4.0)
    >>> as_numpy(a) is a
    True

Results go out as numpy arrays, whose ``__dlpack__`` torch and jax import without a
copy, except for bfloat16, which numpy refuses to export: :func:`exportable` views a
bfloat16 result as a :class:`DLPackArray` (an ndarray whose ``__dlpack__`` exports
bfloat16 too).

The ctypes structures are DLPack's ``DLManagedTensor`` (the unversioned capsule
``"dltensor"`` every producer and consumer supports).
"""

from __future__ import annotations

import ctypes
import threading

import ml_dtypes
import numpy as np

__all__ = ["DLPackArray", "as_numpy", "exportable"]

_BF16 = np.dtype(ml_dtypes.bfloat16)
_BFLOAT_CODE = 4  # kDLBfloat
_KDL_CPU = 1
#: device types whose memory the host reads: CPU, CUDA/ROCm pinned host memory, managed
_HOST_DEVICES = {_KDL_CPU: "cpu", 3: "cuda_host", 11: "rocm_host", 13: "cuda_managed"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _capsule_function(name: str, restype, argtypes):
    """A prototype of its own for a C-API function (``ctypes.pythonapi.<name>`` is one
    shared object, whose argtypes a second prototype would overwrite)."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


# two prototypes of the capsule calls: on live objects, and on the raw pointer a
# capsule's destructor gets (its object must not be touched as a Python object then)
_get_pointer = _capsule_function(
    "PyCapsule_GetPointer", ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
)
_set_name = _capsule_function(
    "PyCapsule_SetName", ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
)
_raw_is_valid = _capsule_function(
    "PyCapsule_IsValid", ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]
)
_raw_get_pointer = _capsule_function(
    "PyCapsule_GetPointer", ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]
)
_new_capsule = _capsule_function(
    "PyCapsule_New", ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
)


# --------------------------------------------------------------------------- import


def as_numpy(value: object) -> np.ndarray:
    """``value`` as a numpy array, sharing its memory where the layout allows.

    numpy arrays pass through; objects with ``__dlpack__`` are imported through DLPack
    (bfloat16 included), others with ``__array__`` converted by numpy. ``TypeError``
    when the value's memory is not readable from the host or it cannot be exported
    (a torch tensor that requires grad: detach it first).
    """
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__") and not isinstance(value, type):
        try:
            return np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError, ValueError) as error:
            reason = error
        imported = _import_bfloat16(value)
        if imported is not None:
            return imported
        if not hasattr(value, "__array__"):
            raise TypeError(f"cannot read {type(value).__name__} through DLPack: {reason}")
        try:
            return np.asarray(value)
        except Exception as error:  # noqa: BLE001 - the library's own refusal
            raise TypeError(
                f"cannot read {type(value).__name__} as a host array: {reason}; {error}"
            ) from None
    return np.asarray(value)


def _import_bfloat16(value: object) -> np.ndarray | None:
    """A bfloat16 array sharing the memory of ``value``'s DLPack export (numpy cannot
    import kDLBfloat), or None when it is not a bfloat16 host tensor."""
    try:
        device_type = int(value.__dlpack_device__()[0])  # type: ignore[attr-defined]
        if device_type not in _HOST_DEVICES:
            return None
        capsule = value.__dlpack__()  # type: ignore[attr-defined]
    except (AttributeError, BufferError, RuntimeError, TypeError, ValueError):
        return None
    try:
        address = _get_pointer(capsule, b"dltensor")
    except ValueError:  # a versioned capsule or a used one: not ours to read
        return None
    managed = _DLManagedTensor.from_address(address)
    tensor = managed.dl_tensor
    dtype = (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
    if dtype != (_BFLOAT_CODE, 16, 1) or tensor.device.device_type not in _HOST_DEVICES:
        return None  # the capsule was not consumed: its destructor frees it
    _set_name(capsule, b"used_dltensor")  # consumed: its deleter is ours to call
    owner = _Imported(address, managed.deleter)
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    itemsize = _BF16.itemsize
    if tensor.strides:
        strides = tuple(tensor.strides[i] * itemsize for i in range(tensor.ndim))
    else:
        strides = tuple(np.cumprod((1, *shape[:0:-1]))[::-1] * itemsize) if shape else ()
    if 0 in shape:
        return np.empty(shape, _BF16)
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    start = tensor.data + tensor.byte_offset + low
    buffer = (ctypes.c_uint8 * (high - low)).from_address(start)
    buffer._relaxjax_owner = owner  # type: ignore[attr-defined] - freed with the array
    return np.ndarray(shape, _BF16, buffer=buffer, offset=-low, strides=strides)


class _Imported:
    """Calls the producer's deleter once the imported memory is no longer referenced."""

    def __init__(self, address: int, deleter) -> None:
        self.address = address
        self.deleter = deleter

    def __del__(self) -> None:
        if self.deleter:
            self.deleter(ctypes.cast(self.address, ctypes.POINTER(_DLManagedTensor)))


# --------------------------------------------------------------------------- export


class DLPackArray(np.ndarray):
    """A numpy array whose ``__dlpack__`` also exports bfloat16 (numpy refuses it), so
    ``torch.from_dlpack(y)`` and ``jax.dlpack.from_dlpack(y)`` take a bfloat16 result
    without a copy. Other dtypes use numpy's own export."""

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if self.dtype != _BF16:
            return np.asarray(self).__dlpack__(
                stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
            )
        if copy:
            return _export(np.array(self, copy=True))
        if dl_device is not None and tuple(dl_device) != (_KDL_CPU, 0):
            raise BufferError(f"cannot export a host array to device {dl_device}")
        if not self.flags.writeable:
            raise BufferError("cannot export a read-only bfloat16 array through DLPack")
        return _export(self)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CPU, 0)


def exportable(array: np.ndarray) -> np.ndarray:
    """``array`` as returned to users: a :class:`DLPackArray` view when it is bfloat16
    (so it exports through DLPack), itself otherwise."""
    if array.dtype == _BF16 and type(array) is np.ndarray:
        return array.view(DLPackArray)
    return array


_EXPORTED: dict[int, tuple] = {}  # managed tensor address -> what it keeps alive
_LOCK = threading.Lock()


@_DELETER
def _delete_export(managed: object) -> None:
    address = ctypes.cast(managed, ctypes.c_void_p).value
    with _LOCK:
        _EXPORTED.pop(address, None)


@_CAPSULE_DESTRUCTOR
def _destroy_capsule(capsule: int) -> None:
    if _raw_is_valid(capsule, b"dltensor"):  # never consumed: release it ourselves
        address = _raw_get_pointer(capsule, b"dltensor")
        with _LOCK:
            _EXPORTED.pop(address, None)


def _export(array: np.ndarray) -> object:
    """An unversioned DLPack capsule of ``array``'s memory (kept alive until the consumer
    calls the deleter, or the capsule dies unconsumed)."""
    ndim = array.ndim
    shape = (ctypes.c_int64 * max(ndim, 1))(*array.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*(s // array.itemsize for s in array.strides))
    managed = _DLManagedTensor()
    tensor = managed.dl_tensor
    tensor.data = array.ctypes.data if array.size else None
    tensor.device = _DLDevice(_KDL_CPU, 0)
    tensor.ndim = ndim
    tensor.dtype = _DLDataType(_BFLOAT_CODE, 16, 1)
    tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    managed.deleter = _delete_export
    address = ctypes.addressof(managed)
    with _LOCK:
        _EXPORTED[address] = (managed, shape, strides, array)
    return _new_capsule(address, b"dltensor", _destroy_capsule)
