"""Running the GPU backend's kernels on the CPU, thread by thread, for tests without a GPU.

The NVVM IR of a :class:`~relaxjax.backends.cuda.CudaModule` is rewritten for the host
and compiled with llvmlite: ``llvm.nvvm.read.ptx.sreg.*`` read the current block and
thread from a global, libdevice functions call the C library (``__nv_expf`` -> ``expf``,
the saturating conversions -> ``llvm.fptosi.sat``), dynamic shared memory becomes a
global. An entry ``E`` gets a wrapper ``emu.E(void **buffers, int64 *symbols, grid...,
block...)`` running every thread of every block in order. That is the kernel's meaning
exactly when threads do not synchronise (no barriers or shuffles: the emulator refuses
those), which holds for kernels bound by ``tests/backends/cuda/binding.py``.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

import llvmlite.binding as llvm

from relaxjax.backends.llvm.jit import compile_object, load_object
from relaxjax.backends.llvm.target import host_target, initialize_llvm

_SREG = re.compile(r'@"llvm\.nvvm\.read\.ptx\.sreg\.(tid|ctaid)\.([xyz])"')
_DECLARE = re.compile(r'^declare (\S+) @"(__nv_[a-z0-9_]+)"\(([^)]*)\)$', re.MULTILINE)
_SATURATING = {
    "__nv_float2int_rz": "llvm.fptosi.sat.i32.f32",
    "__nv_float2ll_rz": "llvm.fptosi.sat.i64.f32",
    "__nv_double2int_rz": "llvm.fptosi.sat.i32.f64",
    "__nv_double2ll_rz": "llvm.fptosi.sat.i64.f64",
}
_IDS = {("tid", "x"): 0, ("tid", "y"): 1, ("tid", "z"): 2}
_IDS.update({("ctaid", "x"): 3, ("ctaid", "y"): 4, ("ctaid", "z"): 5})
_LAUNCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, *([ctypes.c_int32] * 6))


class NotEmulable(Exception):
    """The kernel synchronises threads; sequential threads would not mean the same."""


def _host_ir(ir_text: str) -> str:
    if "llvm.nvvm.barrier0" in ir_text or "llvm.nvvm.shfl" in ir_text:
        raise NotEmulable("the kernel uses barriers or warp shuffles")
    text = re.sub(
        r'^declare i32 @"llvm\.nvvm\.read\.ptx\.sreg\.[a-z]+\.[xyz]"\(\)$', "", ir_text, flags=re.M
    )
    text = _SREG.sub(lambda m: f'@"emu.{m.group(1)}.{m.group(2)}"', text)
    text = re.sub(r"^target (triple|datalayout) = .*$", "", text, flags=re.MULTILINE)
    # Kernels marked in !nvvm.annotations would become ptx_kernel functions, which the
    # host cannot call.
    text = re.sub(r"^!nvvm\.annotations = .*$", "", text, flags=re.MULTILINE)
    text = text.replace(
        '@"relaxjax_dynamic_shared" = external addrspace(3) global [0 x i8]',
        '@"relaxjax_dynamic_shared" = addrspace(3) global [1048576 x i8] zeroinitializer',
    )
    definitions = ["@emu.ids = global [6 x i32] zeroinitializer"]
    for (kind, axis), index in _IDS.items():
        definitions.append(
            f'define internal i32 @"emu.{kind}.{axis}"() {{\n'
            f"  %p = getelementptr [6 x i32], ptr @emu.ids, i64 0, i64 {index}\n"
            "  %v = load i32, ptr %p\n  ret i32 %v\n}"
        )
    text = _DECLARE.sub(lambda m: _libm(m.group(1), m.group(2), m.group(3)), text)
    return text + "\n" + "\n".join(definitions) + "\n"


def _libm(ret: str, name: str, params: str) -> str:
    types = [p.split()[0] for p in params.split(",") if p.strip()]
    args = ", ".join(f"{t} %a{i}" for i, t in enumerate(types))
    uses = ", ".join(f"{t} %a{i}" for i, t in enumerate(types))
    target = _SATURATING.get(name, name[len("__nv_") :])
    return (
        f'declare {ret} @"{target}"({", ".join(types)})\n'
        f'define internal {ret} @"{name}"({args}) {{\n'
        f'  %r = call {ret} @"{target}"({uses})\n  ret {ret} %r\n}}'
    )


def _wrapper(entry: str, params: list[str]) -> str:
    """``emu.<entry>(ptr bufs, ptr syms, i32 gx, gy, gz, bx, by, bz)``: every thread in order."""
    loads, args = [], []
    pointers = symbols = 0
    for index, type_ in enumerate(params):
        if type_.startswith("ptr"):
            loads.append(f"  %q{index} = getelementptr ptr, ptr %bufs, i64 {pointers}")
            loads.append(f"  %v{index} = load {type_}, ptr %q{index}")
            pointers += 1
        else:
            loads.append(f"  %q{index} = getelementptr i64, ptr %syms, i64 {symbols}")
            loads.append(f"  %v{index} = load i64, ptr %q{index}")
            symbols += 1
        args.append(f"{type_} %v{index}")
    sizes = ["%bx", "%by", "%bz", "%gx", "%gy", "%gz"]
    body = [
        f'define void @"emu.{entry}"(ptr %bufs, ptr %syms, i32 %gx, i32 %gy, i32 %gz, '
        "i32 %bx, i32 %by, i32 %bz) {",
        "entry:",
        *loads,
        "  %t0 = mul i32 %bx, %by\n  %t1 = mul i32 %t0, %bz\n  %t2 = mul i32 %t1, %gx",
        "  %t3 = mul i32 %t2, %gy\n  %total = mul i32 %t3, %gz",
        "  br label %head",
        "head:",
        "  %i = phi i32 [0, %entry], [%next, %body]",
        "  %more = icmp ult i32 %i, %total",
        "  br i1 %more, label %body, label %done",
        "body:",
        "  %rest0 = add i32 %i, 0",
    ]
    for position, size in enumerate(sizes):
        body.append(f"  %id{position} = urem i32 %rest{position}, {size}")
        body.append(f"  %rest{position + 1} = udiv i32 %rest{position}, {size}")
        body.append(
            f"  %slot{position} = getelementptr [6 x i32], ptr @emu.ids, i64 0, i64 {position}"
        )
        body.append(f"  store i32 %id{position}, ptr %slot{position}")
    body += [
        f'  call void @"{entry}"({", ".join(args)})',
        "  %next = add i32 %i, 1",
        "  br label %head",
        "done:",
        "  ret void",
        "}",
    ]
    return "\n".join(body) + "\n"


@dataclass
class EmulatedModule:
    """The entries of a CUDA module, compiled for the host."""

    launchers: dict[str, object]
    library: object

    def launch(self, entry: str, grid, block, params) -> None:
        pointers = [value for value, kind in params if kind is ctypes.c_void_p]
        symbols = [value for value, kind in params if kind is ctypes.c_int64]
        buffers = (ctypes.c_void_p * max(len(pointers), 1))(*pointers)
        values = (ctypes.c_int64 * max(len(symbols), 1))(*symbols)
        self.launchers[entry](buffers, values, *grid, *block)


def emulate(ir_text: str, entries: list[str]) -> EmulatedModule:
    """Compile a CUDA module's NVVM IR for the host (see the module doc)."""
    initialize_llvm()
    module = llvm.parse_assembly(_host_ir(ir_text))
    wrappers = []
    for entry in entries:
        function = module.get_function(entry)
        params = [str(argument.type) for argument in function.arguments]
        declared = ", ".join(params)
        wrappers.append(
            _wrapper(entry, params).replace(
                "define void", f'declare void @"{entry}"({declared})\ndefine void', 1
            )
        )
    combined = str(module) + "\n" + "\n".join(w.split("\n", 1)[1] for w in wrappers)
    target = host_target()
    text = combined.replace('target triple = "nvptx64-nvidia-cuda"', "")
    names = tuple(f"emu.{entry}" for entry in entries)
    library = load_object(compile_object(text, target, "emulated kernels"), names, target)
    launchers = {entry: _LAUNCH(library.addresses[f"emu.{entry}"]) for entry in entries}
    return EmulatedModule(launchers, library)


class EmulatingDriver:
    """A fake driver whose memory is host memory and whose launches run the kernels'
    emulation (:func:`emulate`); modules are attached with :meth:`attach`. Graph
    launches run the graph's current launches, so node updates are exercised."""

    def __init__(self, capability: tuple[int, int] = (9, 0)) -> None:
        import numpy as np

        self._np = np
        self.capability = capability
        self.memory: dict[int, object] = {}
        self.emulated: dict[str, EmulatedModule] = {}  # by module key
        self._attached: str | None = None
        self.launches: list[tuple] = []
        self.graphs: dict[int, list[tuple]] = {}
        self.graph_launches = 0
        self.updates = 0

    def attach(self, module: object) -> None:
        """Compile the emulation of a CudaModule (once per module key); the functions
        looked up next belong to it (the launcher attaches before it loads a module)."""
        key = module.key  # type: ignore[attr-defined]
        if key not in self.emulated:
            entries = [
                launch.entry
                for plan in module.plans.values()  # type: ignore[attr-defined]
                for launch in plan.launches
            ]
            self.emulated[key] = emulate(module.ir_text, entries)  # type: ignore[attr-defined]
        self._attached = key

    # -- the Driver interface ------------------------------------------------------------

    def device_name(self) -> str:
        return "emulated"

    def compute_capability(self) -> tuple[int, int]:
        return self.capability

    def load_module(self, image: bytes) -> object:
        return "module"

    def get_function(self, module: object, name: str) -> object:
        return ("function", name, self._attached)

    def set_dynamic_shared(self, function: object, nbytes: int) -> None:
        pass

    def mem_alloc(self, nbytes: int) -> int:
        block = self._np.zeros(nbytes + 256, self._np.uint8)
        address = (block.ctypes.data + 255) & -256
        self.memory[address] = (block, nbytes)
        return address

    def mem_free(self, pointer: int) -> None:
        del self.memory[pointer]

    def copy_to_device(self, pointer: int, host: memoryview, stream: object) -> None:
        ctypes.memmove(pointer, bytes(host), host.nbytes)

    def copy_to_host(self, host: memoryview, pointer: int, stream: object) -> None:
        host[:] = ctypes.string_at(pointer, host.nbytes)

    def copy_device(self, destination: int, source: int, nbytes: int, stream: object) -> None:
        ctypes.memmove(destination, source, nbytes)

    def stream(self) -> object:
        return "stream"

    def synchronize(self, stream: object) -> None:
        pass

    def launch(self, function, grid, block, shared, stream, params) -> None:
        self.launches.append((function, grid, block, shared, params))
        self._run(function, grid, block, params)

    def _run(self, function, grid, block, params) -> None:
        _, entry, key = function
        self.emulated[key].launch(entry, grid, block, params)

    def graph_create(self, launches):
        graph = len(self.graphs)
        self.graphs[graph] = [tuple(launch) for launch in launches]
        return graph, list(range(len(launches)))

    def graph_update(self, graph, node, launch) -> None:
        self.graphs[graph][node] = tuple(launch)
        self.updates += 1

    def graph_launch(self, graph, stream) -> None:
        self.graph_launches += 1
        for function, grid, block, _, params in self.graphs[graph]:
            self._run(function, grid, block, params)
