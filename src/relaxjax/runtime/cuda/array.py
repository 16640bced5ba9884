"""``DeviceArray``: a C-contiguous array in GPU memory, the outputs of cuda executables.

It has ``shape``, ``dtype``, ``ndim``, ``size``, ``nbytes`` and ``ptr`` (the device
address), and converts:

- ``np.asarray(y)`` (``__array__``): a copy on the host (waits for the stream);
- ``__cuda_array_interface__`` (version 3): cupy, numba, torch read it without a copy;
- ``__dlpack__`` / ``__dlpack_device__``: ``torch.from_dlpack(y)``,
  ``jax.dlpack.from_dlpack(y)``, ``cupy.from_dlpack(y)`` share the memory.

Inputs: :func:`as_device_array` turns a GPU array of another library (anything with
``__cuda_array_interface__``, or ``__dlpack__`` on a CUDA device) into a DeviceArray
over the same memory (zero copy; the producer stays referenced; copied when it does not
start on a 16-byte boundary, which kernels assume), and copies a numpy
array (or anything with ``__array__``) in. The arrays' memory comes from the device's
caching allocator and goes back to it when the array is collected.

Like ndarrays for the runtime's argument checks, a DeviceArray has ``flags``
(``c_contiguous`` and ``aligned`` are true) and ``__relaxjax_device__``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from relaxjax import dtypes
from relaxjax.runtime.cuda import dlpack
from relaxjax.runtime.cuda.allocator import Block
from relaxjax.runtime.cuda.device import Device
from relaxjax.runtime.cuda.graphs import current_recorder

__all__ = ["DeviceArray", "as_device_array", "device_empty", "is_gpu_array"]


@dataclass(frozen=True, slots=True)
class _Flags:
    c_contiguous: bool = True
    aligned: bool = True
    writeable: bool = True


_FLAGS = _Flags()


class DeviceArray:
    """An array in device memory (see the module doc)."""

    __slots__ = ("__weakref__", "_owner", "device", "dtype", "ptr", "shape")
    __relaxjax_device__ = True

    def __init__(
        self, device: Device, pointer: int, shape: tuple[int, ...], dtype: np.dtype, owner: object
    ) -> None:
        self.device = device
        self.ptr = int(pointer)
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self._owner = owner  # the Block, or the producer's object (kept alive)

    # -- ndarray-like --------------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def flags(self) -> _Flags:
        return _FLAGS

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d device array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr={self.ptr:#x})"

    # -- host copies ---------------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """A host copy (waits for the kernels that write the array)."""
        recorder = current_recorder()
        if recorder is not None:
            recorder.flush()  # the kernels that write this array must run first
        host = np.empty(self.shape, self.dtype)
        if host.nbytes:
            self.device.driver.copy_to_host(
                memoryview(host).cast("B"), self.ptr, self.device.stream
            )
        else:
            self.device.synchronize()
        return host

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        host = self.numpy()
        return host if dtype is None else host.astype(dtype)

    def __int__(self) -> int:
        return int(self.numpy())

    def __index__(self) -> int:
        return int(self.numpy())

    def __float__(self) -> float:
        return float(self.numpy())

    def __bool__(self) -> bool:
        return bool(self.numpy())

    def copy(self) -> DeviceArray:
        """A new device array with the same contents (a device-to-device copy, after the
        kernels that write this array)."""
        result = device_empty(self.device, self.shape, self.dtype)
        copy_device(result, self)
        return result

    def row(self, index: int) -> DeviceArray:
        """``self[index]`` along the first axis: a view (it keeps this array alive)."""
        if not 0 <= index < self.shape[0]:
            raise IndexError(f"index {index} out of range for axis 0 of size {self.shape[0]}")
        nbytes = math.prod(self.shape[1:]) * self.dtype.itemsize
        return DeviceArray(self.device, self.ptr + index * nbytes, self.shape[1:], self.dtype, self)

    # -- interop -------------------------------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "shape": self.shape,
            "typestr": _typestr(self.dtype),
            "data": (self.ptr, False),
            "strides": None,
            "version": 3,
            "stream": _stream_int(self.device),
        }

    def __dlpack_device__(self) -> tuple[int, int]:
        return (dlpack.KDL_CUDA, self.device.ordinal)

    def __dlpack__(
        self,
        stream: Any = None,
        max_version: Any = None,
        dl_device: Any = None,
        copy: bool | None = None,
    ) -> object:
        """A ``"dltensor"`` capsule (DLPack 0.x, which consumers asking for
        ``max_version`` accept too) over this memory; ``copy=True``: over a copy."""
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(
                f"a DeviceArray is on device {self.__dlpack_device__()}, asked for {dl_device}"
            )
        if copy:
            return self.copy().__dlpack__(stream=stream)
        # The consumer names the stream it will use; ours must be done first.
        if stream is not None and stream != -1:
            self.device.synchronize()
        dtype = dtypes.canonical(self.dtype)
        return dlpack.to_capsule(self.ptr, self.shape, dtype, self.__dlpack_device__(), self)


def _typestr(dtype: np.dtype) -> str:
    if dtypes.canonical(dtype) == "bfloat16":
        return "<V2"  # no array-interface code for bfloat16: raw 2-byte elements
    return dtype.str


def _stream_int(device: Device) -> int | None:
    stream = device.stream
    try:
        return int(stream)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def device_empty(device: Device, shape: tuple[int, ...], dtype: Any) -> DeviceArray:
    """An uninitialised device array from the device's caching allocator."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    block: Block = device.allocator.allocate(nbytes)
    return DeviceArray(device, block.pointer, shape, dtype, block)


def copy_device(destination: DeviceArray, source: DeviceArray) -> None:
    """Copy ``source`` into ``destination`` (same size) on the device's stream, after the
    kernels recorded so far (which may write the source or read the destination)."""
    if destination.nbytes != source.nbytes:
        raise ValueError(
            f"copy of {source.nbytes} bytes into a device array of {destination.nbytes}"
        )
    recorder = current_recorder()
    if recorder is not None:
        recorder.flush()
    if source.nbytes:
        device = destination.device
        device.driver.copy_device(destination.ptr, source.ptr, source.nbytes, device.stream)


def is_gpu_array(value: object) -> bool:
    """Whether ``value`` lives on a CUDA device (a DeviceArray, or another library's)."""
    if isinstance(value, DeviceArray) or hasattr(value, "__cuda_array_interface__"):
        return True
    device = getattr(value, "__dlpack_device__", None)
    if device is None:
        return False
    try:
        return device()[0] == dlpack.KDL_CUDA
    except Exception:  # noqa: BLE001 - a producer that cannot say is not a GPU array
        return False


def as_device_array(device: Device, value: object) -> DeviceArray:
    """``value`` as a DeviceArray: itself, another library's GPU array over the same memory,
    or a host array copied in (see the module doc)."""
    if isinstance(value, DeviceArray):
        return value
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return _aligned(_from_interface(device, value, interface))
    if is_gpu_array(value):
        return _aligned(_from_dlpack(device, value))
    host = np.require(np.asarray(value), requirements="C")
    result = device_empty(device, host.shape, host.dtype)
    if host.nbytes:
        device.driver.copy_to_device(result.ptr, memoryview(host).cast("B"), device.stream)
    return result


#: Kernels assume their buffers start at multiples of this many bytes (vector accesses).
ALIGNMENT = 16


def _aligned(array: DeviceArray) -> DeviceArray:
    """``array``, or an aligned copy of it when it starts off a 16-byte boundary (a view
    into another library's buffer may)."""
    if array.ptr % ALIGNMENT == 0:
        return array
    return array.copy()


def _from_interface(device: Device, value: object, interface: dict) -> DeviceArray:
    shape = tuple(interface["shape"])
    dtype = np.dtype(interface["typestr"])
    strides = interface.get("strides")
    if strides is not None:
        expected = dtype.itemsize * np.cumprod((1, *shape[::-1]))[:-1][::-1]
        if any(e > 1 and s != x for e, s, x in zip(shape, strides, expected)):
            raise TypeError(
                f"only C-contiguous GPU arrays are accepted, given strides {tuple(strides)}"
            )
    pointer, _ = interface["data"]
    stream = interface.get("stream")
    if stream:
        # The producer's work is queued on its stream (1: legacy default, 2: per-thread
        # default, else a handle), which is not ours: wait for it before ours reads.
        device.driver.synchronize(stream)
    return DeviceArray(device, pointer or 0, shape, dtype, value)


class _Imported:
    """Keeps a DLPack producer's memory until the array is collected."""

    __slots__ = ("_release",)

    def __init__(self, release: Any) -> None:
        self._release = release

    def __del__(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()


def _from_dlpack(device: Device, value: object) -> DeviceArray:
    try:
        capsule = value.__dlpack__(stream=_stream_int(device) or 1)  # type: ignore[attr-defined]
    except TypeError:
        capsule = value.__dlpack__()  # type: ignore[attr-defined]
    imported = dlpack.from_capsule(capsule)
    owner = _Imported(imported.release)
    dtype = dtypes.to_numpy(imported.dtype)
    return DeviceArray(device, imported.pointer, imported.shape, dtype, (owner, value))
