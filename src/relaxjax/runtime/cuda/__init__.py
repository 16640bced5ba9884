"""relaxjax.runtime.cuda: running programs on an NVIDIA GPU through the driver API.

``build_cuda_executable(mod)`` (what ``relax.jit(fn, target="cuda")`` calls) compiles a
module for this machine's GPU and returns an executable whose outputs are
:class:`DeviceArray` s; ``compile_program(mod, CudaTarget("sm_80"))`` compiles without a
GPU (PTX and cubins to inspect). The pieces: :mod:`.driver` (the driver calls, behind an
interface tests fake), :mod:`.device`, :mod:`.allocator` (caching, by size class),
:mod:`.array` (device arrays, DLPack and the CUDA array interface), :mod:`.launcher`,
:mod:`.graphs` (CUDA graphs per bucket of symbol values), :mod:`.compile`,
:mod:`.program`. Importing it never touches the driver. See ``docs/gpu.md``.
"""

from relaxjax.runtime.cuda.allocator import AllocatorStats, CachingAllocator, size_class
from relaxjax.runtime.cuda.array import DeviceArray, as_device_array, device_empty, is_gpu_array
from relaxjax.runtime.cuda.compile import (
    CudaProgram,
    compile_program,
    gpu_schedule,
    host_kernel,
    set_gpu_schedule,
)
from relaxjax.runtime.cuda.device import Device, current_device, reset_device, use_driver
from relaxjax.runtime.cuda.driver import CudaDriver, Driver, probe
from relaxjax.runtime.cuda.graphs import GraphPolicy, GraphStats, LaunchGraphs
from relaxjax.runtime.cuda.program import CudaExecutable, build_cuda_executable

__all__ = [
    "AllocatorStats",
    "CachingAllocator",
    "CudaDriver",
    "CudaExecutable",
    "CudaProgram",
    "Device",
    "DeviceArray",
    "Driver",
    "GraphPolicy",
    "GraphStats",
    "LaunchGraphs",
    "as_device_array",
    "build_cuda_executable",
    "compile_program",
    "current_device",
    "device_empty",
    "gpu_schedule",
    "host_kernel",
    "is_gpu_array",
    "probe",
    "reset_device",
    "set_gpu_schedule",
    "size_class",
    "use_driver",
]
