"""A GPU as the runtime uses it: a driver, one stream, an allocator, loaded modules.

:func:`current_device` gives the process's device (made on first use from
:class:`~relaxjax.runtime.cuda.driver.CudaDriver`; :class:`~relaxjax.errors.DeviceError`
without a GPU). :func:`use_driver` installs another driver (tests install a fake one)
and returns the device made from it.

Everything of a device runs on its one stream, in order: kernels, copies, cuBLAS
calls, graph launches. Host code waits only where it reads device memory (``np.asarray`` of a
device array, a value a later segment needs).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from relaxjax.errors import DeviceError
from relaxjax.runtime.cuda.allocator import CachingAllocator
from relaxjax.runtime.cuda.cublas import Cublas
from relaxjax.runtime.cuda.driver import CudaDriver, Driver
from relaxjax.runtime.cuda.gemm import GemmLibrary, MatmulLibrary

#: Makes a device's GEMM library (cuBLAS; tests pass an emulation).
GemmFactory = Callable[["Device"], GemmLibrary]

__all__ = ["Device", "current_device", "reset_device", "use_driver"]


class Device:
    """One GPU: ``driver``, ``stream``, ``allocator``, the modules loaded on it, and its
    cuBLAS (made on first use by ``gemm``, :class:`~.cublas.Cublas` by default)."""

    def __init__(self, driver: Driver, ordinal: int = 0, gemm: GemmFactory | None = None) -> None:
        self.driver = driver
        self.ordinal = ordinal
        self.stream = driver.stream()
        self.allocator = CachingAllocator(driver)
        self._modules: dict[str, object] = {}
        self._functions: dict[tuple[str, str], object] = {}
        self._lock = threading.Lock()
        self._gemm_factory: GemmFactory = gemm or Cublas
        self._matmul: MatmulLibrary | None = None

    def matmul_library(self) -> MatmulLibrary:
        """The device's cuBLAS (handle, stream, workspace), made once.

        Raises:
            DeviceError: cuBLAS cannot be loaded or initialised here.
        """
        with self._lock:
            if self._matmul is None:
                self._matmul = MatmulLibrary(self.driver, self._gemm_factory(self))
            return self._matmul

    @property
    def arch(self) -> str:
        """The device's SM architecture (``"sm_90"``)."""
        major, minor = self.driver.compute_capability()
        return f"sm_{major}{minor}"

    def function(self, key: str, image: bytes, entry: str) -> object:
        """The kernel ``entry`` of the module image (a cubin, or NUL-terminated PTX the
        driver compiles) cached under ``key``, loaded once."""
        with self._lock:
            found = self._functions.get((key, entry))
            if found is not None:
                return found
            module = self._modules.get(key)
            if module is None:
                module = self._modules[key] = self.driver.load_module(image)
            function = self.driver.get_function(module, entry)
            self._functions[(key, entry)] = function
            return function

    def synchronize(self) -> None:
        """Wait until everything queued on the stream has run."""
        self.driver.synchronize(self.stream)


_device: Device | None = None
_device_lock = threading.Lock()


def current_device() -> Device:
    """The device the runtime uses (the first GPU), made on first use.

    Raises:
        DeviceError: no GPU or CUDA driver here (the message says which).
    """
    global _device
    with _device_lock:
        if _device is None:
            _device = Device(CudaDriver(0))
        return _device


def use_driver(driver: Driver, gemm: GemmFactory | None = None) -> Device:
    """Make the runtime use ``driver`` (and ``gemm`` as its cuBLAS) from now on (tests
    pass fakes)."""
    global _device
    with _device_lock:
        _device = Device(driver, gemm=gemm)
        return _device


def reset_device() -> None:
    """Forget the current device (the next use makes a new one)."""
    global _device
    with _device_lock:
        _device = None


def require_device() -> Device:
    """:func:`current_device`, with the error users see when calling a cuda function."""
    try:
        return current_device()
    except DeviceError as err:
        raise DeviceError(
            f"cannot run a function compiled with target='cuda': {err.message}. "
            "Compiling works without a GPU: f.lower(...) and f.ptx(...) show the program "
            "and its PTX."
        ) from None
