"""Launching one compiled GPU kernel from the generated code of an executable.

``launcher(*pointers, *symbols)``: the device addresses of the kernel's parameters
(inputs then outputs) and the values of its symbols (``PrimFunc.symbols()`` order),
as ints. For each launch of the kernel's plan it evaluates the grid and block sizes
and the dynamic shared memory from the symbols, checks them against the device's
limits, skips a launch whose host condition is false, allocates the kernel's
workspaces, and records the launch with the call's
recorder (:mod:`.graphs`); outside a recorded call it launches at once. A launch with
an empty grid is skipped. Returns 0 (the status the generated code checks).
"""

from __future__ import annotations

import ctypes

from relaxjax import arith
from relaxjax.backends.cuda import CudaKernel
from relaxjax.backends.cuda.launches import grid_limits, host_value
from relaxjax.errors import DeviceError
from relaxjax.runtime.cuda.device import Device
from relaxjax.runtime.cuda.graphs import Launch, current_recorder

__all__ = ["KernelLauncher"]

_DEFAULT_SHARED_LIMIT = 48 * 1024


class KernelLauncher:
    """Launches a :class:`~relaxjax.backends.cuda.CudaKernel` on a device."""

    def __init__(self, device: Device, kernel: CudaKernel) -> None:
        module = kernel.module
        # Without an assembler (ptxas, nvJitLink) the driver compiles the PTX itself.
        image = module.cubin if module.cubin is not None else module.ptx.encode() + b"\0"
        self.device = device
        self.kernel = kernel
        self.names = kernel.plan.symbol_names
        self.num_buffers = len(kernel.func.params)
        self.functions = [
            device.function(module.key, image, launch.entry) for launch in kernel.plan.launches
        ]
        self._shared_set: dict[int, int] = {}
        plan = kernel.plan
        dims = [w.nbytes for w in plan.workspaces]
        for launch in plan.launches:
            dims += [*launch.grid, *launch.block, launch.dynamic_shared_bytes]
        # Every size of every launch, computed by one generated function per call.
        self._sizes = arith.compile_dims(dims, self.names)

    def __call__(self, *args: int) -> int:
        pointers = args[: self.num_buffers]
        values = tuple(int(v) for v in args[self.num_buffers :])
        sizes = self._sizes(*values)
        plan = self.kernel.plan
        count = len(plan.workspaces)
        allocate = self.device.allocator.allocate
        workspaces = [allocate(max(size, 0)) for size in sizes[:count]]
        params = tuple((int(p), ctypes.c_void_p) for p in pointers)
        params += tuple((w.pointer, ctypes.c_void_p) for w in workspaces)
        params += tuple((v, ctypes.c_int64) for v in values)
        recorder = current_recorder()
        for index, (launch, function) in enumerate(zip(plan.launches, self.functions)):
            at = count + 7 * index
            grid, block, shared = sizes[at : at + 3], sizes[at + 3 : at + 6], sizes[at + 6]
            if min(grid) <= 0 or min(block) <= 0:
                continue
            condition = launch.condition
            if condition is not None and not host_value(condition, dict(zip(self.names, values))):
                continue
            self._check(launch.entry, grid, block)  # type: ignore[arg-type]
            if shared > _DEFAULT_SHARED_LIMIT and self._shared_set.get(index, 0) < shared:
                self.device.driver.set_dynamic_shared(function, shared)
                self._shared_set[index] = shared
            record = Launch(function, grid, block, shared, params, values)  # type: ignore[arg-type]
            if recorder is not None:
                recorder.add(record)
            else:
                self.device.driver.launch(function, grid, block, shared, self.device.stream, params)  # type: ignore[arg-type]
        return 0

    def _check(self, entry: str, grid: tuple[int, int, int], block: tuple[int, int, int]) -> None:
        threads = block[0] * block[1] * block[2]
        if threads > 1024:
            raise DeviceError(
                f"kernel {self.kernel.name} (entry {entry}): {threads} threads per block, over "
                "the device limit of 1024"
            )
        for axis, (size, limit) in enumerate(zip(grid, grid_limits())):
            if size > limit:
                raise DeviceError(
                    f"kernel {self.kernel.name} (entry {entry}): {size} blocks along "
                    f"{'xyz'[axis]}, over the limit of {limit}"
                )
