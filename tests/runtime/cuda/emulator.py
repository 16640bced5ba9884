"""Running the GPU backend's kernels on the CPU, for tests without a GPU.

The NVVM IR of a :class:`~relaxjax.backends.cuda.CudaModule` is rewritten for the host
and compiled with llvmlite: ``llvm.nvvm.read.ptx.sreg.*`` read the current block and
thread, libdevice functions call the C library (``__nv_expf`` -> ``expf``, the
saturating conversions -> ``llvm.fptosi.sat``), dynamic shared memory becomes a global.

- An entry whose threads do not synchronise runs every thread of every block in order
  (``emu.E(void **buffers, int64 *symbols, grid..., block...)``): that is its meaning
  exactly (kernels bound by ``tests/backends/cuda/binding.py``, injective rules).
- An entry with barriers (``llvm.nvvm.barrier0``) or warp shuffles
  (``llvm.nvvm.shfl.sync.bfly/down``) runs SIMT: the blocks in order, the threads of a
  block as concurrent OS threads (``emu.thread.E(buffers, symbols)``, each reading its
  ids through ``pthread_getspecific``). A barrier waits for every thread of the block; a
  shuffle for every lane of its warp (32 consecutive linear ids ``x + X * (y + Y * z)``),
  then each lane gets the value of lane ``lane ^ mask`` (bfly) or ``lane + offset``
  (down; its own value past lane 31), as the GPU does with ``c = 0x1f``. A thread that
  misses a barrier or shuffle the others wait at, lanes of one warp at different
  shuffles, or a source lane the block does not have, is an :class:`EmulationError`
  (the GPU would hang or read garbage). Shared memory is one global: blocks run one at a
  time.
"""

from __future__ import annotations

import ctypes
import re
import threading
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


class EmulationError(Exception):
    """A kernel's threads do not synchronise as the GPU requires (see the module doc)."""


_BARRIER = '@"llvm.nvvm.barrier0"'
_SHUFFLE = re.compile(r'@"llvm\.nvvm\.shfl\.sync\.(bfly|down)\.(f32|i32)"')
_SYNC_DECLARE = re.compile(
    r'^declare [^@]*@"llvm\.nvvm\.(?:barrier0|shfl\.sync\.\w+\.\w+)"\(.*$', re.MULTILINE
)
_SHUFFLE_KINDS = {"bfly": 0, "down": 1}


def _host_ir(ir_text: str, key: int) -> str:
    text = re.sub(
        r'^declare i32 @"llvm\.nvvm\.read\.ptx\.sreg\.[a-z]+\.[xyz]"\(\)$', "", ir_text, flags=re.M
    )
    text = _SREG.sub(lambda m: f'@"emu.{m.group(1)}.{m.group(2)}"', text)
    text = _SYNC_DECLARE.sub("", text)
    text = text.replace(_BARRIER, '@"emu.barrier"')
    text = _SHUFFLE.sub(lambda m: f'@"emu.shfl.{m.group(1)}.{m.group(2)}"', text)
    text = re.sub(r"^target (triple|datalayout) = .*$", "", text, flags=re.MULTILINE)
    # Kernels marked in !nvvm.annotations would become ptx_kernel functions, which the
    # host cannot call.
    text = re.sub(r"^!nvvm\.annotations = .*$", "", text, flags=re.MULTILINE)
    text = text.replace(
        '@"relaxjax_dynamic_shared" = external addrspace(3) global [0 x i8]',
        '@"relaxjax_dynamic_shared" = addrspace(3) global [1048576 x i8] zeroinitializer',
    )
    # Thread ids: the sequential wrapper's global, or the SIMT thread's (pthread key).
    definitions = [
        "@emu.ids = global [6 x i32] zeroinitializer",
        '@"emu.callbacks" = global [2 x ptr] zeroinitializer',
        "declare ptr @pthread_getspecific(i32)",
        'define internal void @"emu.barrier"() {\n'
        '  %f = load ptr, ptr @"emu.callbacks"\n  call void %f()\n  ret void\n}',
    ]
    for (kind, axis), index in _IDS.items():
        definitions.append(
            f'define internal i32 @"emu.{kind}.{axis}"() {{\n'
            f"  %own = call ptr @pthread_getspecific(i32 {key})\n"
            "  %none = icmp eq ptr %own, null\n"
            "  %base = select i1 %none, ptr @emu.ids, ptr %own\n"
            f"  %p = getelementptr [6 x i32], ptr %base, i64 0, i64 {index}\n"
            "  %v = load i32, ptr %p\n  ret i32 %v\n}"
        )
    for name, kind in _SHUFFLE_KINDS.items():
        for type_ in ("f32", "i32"):
            llvm_type = "float" if type_ == "f32" else "i32"
            to_bits = "bitcast float %v to i32" if type_ == "f32" else "add i32 %v, 0"
            from_bits = "bitcast i32 %r to float" if type_ == "f32" else "add i32 %r, 0"
            definitions.append(
                f'define internal {llvm_type} @"emu.shfl.{name}.{type_}"'
                f"(i32 %mask, {llvm_type} %v, i32 %lane, i32 %c) {{\n"
                f"  %bits = {to_bits}\n"
                '  %p = getelementptr [2 x ptr], ptr @"emu.callbacks", i64 0, i64 1\n'
                "  %f = load ptr, ptr %p\n"
                f"  %r = call i32 %f(i32 {kind}, i32 %bits, i32 %lane)\n"
                f"  %out = {from_bits}\n  ret {llvm_type} %out\n}}"
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


def _arguments(params: list[str]) -> tuple[list[str], list[str]]:
    """Loads of an entry's arguments from ``%bufs`` (pointers) and ``%syms`` (i64), and
    the arguments."""
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
    return loads, args


def _thread_wrapper(entry: str, params: list[str]) -> str:
    """``emu.thread.<entry>(ptr bufs, ptr syms)``: one thread (its ids set by the caller)."""
    loads, args = _arguments(params)
    return "\n".join(
        [
            f'define void @"emu.thread.{entry}"(ptr %bufs, ptr %syms) {{',
            "entry:",
            *loads,
            f'  call void @"{entry}"({", ".join(args)})',
            "  ret void",
            "}",
        ]
    )


def _wrapper(entry: str, params: list[str]) -> str:
    """``emu.<entry>(ptr bufs, ptr syms, i32 gx, gy, gz, bx, by, bz)``: every thread in order."""
    loads, args = _arguments(params)
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


_THREAD = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
_BARRIER_CALLBACK = ctypes.CFUNCTYPE(None)
_SHUFFLE_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
#: Seconds a barrier or shuffle waits for the other threads before the kernel is wrong.
TIMEOUT = 20.0


class _Warp:
    """The exchange of one warp's shuffles."""

    def __init__(self, lanes: int) -> None:
        self.lanes = lanes
        self.values = [0] * lanes
        self.ops: list[tuple[int, int] | None] = [None] * lanes
        self.barrier = threading.Barrier(lanes, timeout=TIMEOUT)


class _Block:
    """One thread block running SIMT: its barrier, warps and the errors seen."""

    def __init__(self, threads: int) -> None:
        self.barrier = threading.Barrier(threads, timeout=TIMEOUT)
        self.warps = [_Warp(min(32, threads - start)) for start in range(0, threads, 32)]
        self.errors: list[str] = []

    def fail(self, message: str) -> None:
        self.errors.append(message)
        self.barrier.abort()  # release the other threads at once
        for warp in self.warps:
            warp.barrier.abort()


_thread = threading.local()
_stray: list[str] = []  # barriers / shuffles reached outside a SIMT launch


def _on_barrier() -> None:
    block = getattr(_thread, "block", None)
    if block is None:
        _stray.append("a barrier in a kernel run thread by thread")
        return
    try:
        block.barrier.wait()
    except threading.BrokenBarrierError:
        if not block.errors:
            block.fail(f"thread {_thread.linear} waited at a barrier others did not reach")


def _on_shuffle(kind: int, bits: int, operand: int) -> int:
    block = getattr(_thread, "block", None)
    if block is None:
        _stray.append("a warp shuffle in a kernel run thread by thread")
        return bits
    linear = _thread.linear
    warp, lane = block.warps[linear // 32], linear % 32
    warp.values[lane], warp.ops[lane] = bits, (kind, operand)
    result = bits
    try:
        warp.barrier.wait()
        source = lane ^ operand if kind == 0 else lane + operand
        if len(set(warp.ops)) != 1:
            block.fail(f"lanes of warp {linear // 32} are at different shuffles: {warp.ops}")
        elif kind == 0 or source <= 31:
            if not 0 <= source < warp.lanes:
                block.fail(f"lane {lane} reads lane {source}, which its warp does not have")
            else:
                result = warp.values[source]
        warp.barrier.wait()  # every lane has read before the next shuffle writes
    except threading.BrokenBarrierError:
        if not block.errors:
            block.fail(f"thread {linear} waited at a shuffle others of its warp did not reach")
    return result


_callbacks = (_BARRIER_CALLBACK(_on_barrier), _SHUFFLE_CALLBACK(_on_shuffle))
_libc = ctypes.CDLL(None)
_libc.pthread_setspecific.argtypes = [ctypes.c_uint, ctypes.c_void_p]
_libc.pthread_setspecific.restype = ctypes.c_int
_key = ctypes.c_uint(0)
if _libc.pthread_key_create(ctypes.byref(_key), None) != 0:
    raise OSError("pthread_key_create failed")


def _run_blocks(function, buffers, values, blocks, tid, linear: int, step) -> None:
    """One thread position (``tid``) of every block in turn; ``step`` ends each block (its
    shared memory is the next block's)."""
    ids = (ctypes.c_int32 * 6)()
    _thread.linear = linear
    _libc.pthread_setspecific(_key.value, ctypes.addressof(ids))
    try:
        for ctaid, block in blocks:
            ids[:] = (*tid, *ctaid)
            _thread.block = block
            function(buffers, values)
            step.wait()
            if any(b.errors for _, b in blocks):
                return
    finally:
        _libc.pthread_setspecific(_key.value, None)
        _thread.block = None


@dataclass
class EmulatedModule:
    """The entries of a CUDA module, compiled for the host; ``simt``: the entries whose
    threads synchronise (run as concurrent threads, see the module doc)."""

    launchers: dict[str, object]
    threads: dict[str, object]
    simt: frozenset[str]
    library: object

    def launch(self, entry: str, grid, block, params) -> None:
        pointers = [value for value, kind in params if kind is ctypes.c_void_p]
        symbols = [value for value, kind in params if kind is ctypes.c_int64]
        buffers = (ctypes.c_void_p * max(len(pointers), 1))(*pointers)
        values = (ctypes.c_int64 * max(len(symbols), 1))(*symbols)
        if entry in self.simt:
            self._launch_simt(entry, grid, block, buffers, values)
            return
        self.launchers[entry](buffers, values, *grid, *block)
        if _stray:
            message = _stray[0]
            _stray.clear()
            raise EmulationError(f"{entry}: {message}")

    def _launch_simt(self, entry: str, grid, block, buffers, values) -> None:
        """Every block in turn, its threads at once (one OS thread per thread position,
        reused for every block)."""
        (gx, gy, gz), (bx, by, bz) = grid, block
        threads = bx * by * bz
        blocks = [
            ((b % gx, b // gx % gy, b // (gx * gy)), _Block(threads)) for b in range(gx * gy * gz)
        ]
        step = threading.Barrier(threads, timeout=10 * TIMEOUT)
        workers = [
            threading.Thread(
                target=_run_blocks,
                args=(
                    self.threads[entry],
                    buffers,
                    values,
                    blocks,
                    (linear % bx, linear // bx % by, linear // (bx * by)),
                    linear,
                    step,
                ),
                daemon=True,
            )  # fmt: skip
            for linear in range(threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        for ctaid, state in blocks:
            if state.errors:
                raise EmulationError(f"{entry}, block {ctaid}: {state.errors[0]}")


def emulate(ir_text: str, entries: list[str]) -> EmulatedModule:
    """Compile a CUDA module's NVVM IR for the host (see the module doc)."""
    initialize_llvm()
    module = llvm.parse_assembly(_host_ir(ir_text, _key.value))
    wrappers, simt = [], set()
    for entry in entries:
        function = module.get_function(entry)
        body = str(function)
        if re.search(r'@"?emu\.(barrier|shfl\.)', body):
            simt.add(entry)
        params = [str(argument.type) for argument in function.arguments]
        wrappers += [_wrapper(entry, params), _thread_wrapper(entry, params)]
    combined = str(module) + "\n" + "\n".join(wrappers)
    target = host_target()
    text = combined.replace('target triple = "nvptx64-nvidia-cuda"', "")
    names = (
        *(f"emu.{entry}" for entry in entries),
        *(f"emu.thread.{entry}" for entry in entries),
        "emu.callbacks",
    )
    library = load_object(compile_object(text, target, "emulated kernels"), names, target)
    slots = (ctypes.c_void_p * 2).from_address(library.addresses["emu.callbacks"])
    slots[0], slots[1] = (ctypes.cast(c, ctypes.c_void_p).value for c in _callbacks)
    launchers = {entry: _LAUNCH(library.addresses[f"emu.{entry}"]) for entry in entries}
    threads = {entry: _THREAD(library.addresses[f"emu.thread.{entry}"]) for entry in entries}
    return EmulatedModule(launchers, threads, frozenset(simt), library)


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
