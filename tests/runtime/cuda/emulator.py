"""Running the GPU backend's kernels on the CPU, for tests without a GPU.

The NVVM IR of a :class:`~relaxjax.backends.cuda.CudaModule` is rewritten for the host
and compiled with llvmlite: ``llvm.nvvm.read.ptx.sreg.*`` read the current block and
thread, libdevice functions call the C library (``__nv_expf`` -> ``expf``, the
saturating conversions -> ``llvm.fptosi.sat``), dynamic shared memory becomes a global.

- An entry whose threads do not synchronise runs every thread of every block in order
  (``emu.E(void **buffers, int64 *symbols, grid..., block...)``): that is its meaning
  exactly (kernels bound by ``tests/backends/cuda/binding.py``, injective rules).
- An entry with barriers (``llvm.nvvm.barrier0``) or warp shuffles
  (``llvm.nvvm.shfl.sync.bfly/down``) runs SIMT: the threads of a block as concurrent OS
  threads, one per thread position, each running every block in turn
  (``emu.thread.E``; its ids and the barriers it uses come from its :class:`_Context`
  through ``pthread_getspecific``). A barrier is a pthread barrier of the block; a
  shuffle meets every lane of its warp (32 consecutive linear ids ``x + X * (y + Y *
  z)``), then each lane gets the value of lane ``lane ^ mask`` (bfly) or ``lane +
  offset`` (down; its own value past lane 31), as the GPU does with ``c = 0x1f``.
  Lanes of a warp at different shuffles, or a source lane the warp does not have, are
  an :class:`EmulationError`; so is a launch whose threads still wait after
  :data:`TIMEOUT` seconds (a barrier or shuffle not every thread reaches: the GPU would
  hang). Shared memory is one global: blocks run one at a time.
"""

from __future__ import annotations

import ctypes
import re
import threading
import time
from dataclasses import dataclass

import llvmlite.binding as llvm

from relaxjax.backends.llvm.jit import compile_object, load_object
from relaxjax.backends.llvm.target import host_target, initialize_llvm
from relaxjax.runtime.cuda.gemm import GemmLibrary

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


class _Context(ctypes.Structure):
    """What a SIMT thread's code reads (``pthread_getspecific``): its ids, its lane, the
    barriers of its block and warp, its warp's exchange slots, the launch's error flag."""

    _fields_ = [
        ("ids", ctypes.c_int32 * 6),  # tid.x/y/z, ctaid.x/y/z
        ("lane", ctypes.c_int32),  # offset 24
        ("lanes", ctypes.c_int32),  # 28: lanes of its warp
        ("block_barrier", ctypes.c_void_p),  # 32
        ("warp_barrier", ctypes.c_void_p),  # 40
        ("values", ctypes.c_void_p),  # 48: i32 x 32
        ("ops", ctypes.c_void_p),  # 56: i64 x 32, (kind << 32) | operand
        ("error", ctypes.c_void_p),  # 64: i32; 1 divergent shuffles, 2 missing source lane
    ]


def _field(name: str, type_: str, offset: int) -> str:
    return (
        f"  %{name}.p = getelementptr i8, ptr %c, i64 {offset}\n"
        f"  %{name} = load {type_}, ptr %{name}.p\n"
    )


#: ``__syncthreads``: the block's barrier (outside a SIMT launch: flagged in emu.stray).
_BARRIER_IR = (
    'define internal void @"emu.barrier"() {\n'
    'entry:\n  %c = call ptr @"emu.context"()\n'
    "  %none = icmp eq ptr %c, null\n  br i1 %none, label %stray, label %wait\n"
    "stray:\n  store i32 1, ptr @emu.stray\n  ret void\n"
    "wait:\n"
    + _field("barrier", "ptr", 32)
    + "  %r = call i32 @pthread_barrier_wait(ptr %barrier)\n  ret void\n}"
)
#: A warp shuffle of 32-bit ``bits``: every lane stores its value and operation, meets
#: the others, reads its source lane (see the module doc), meets them again.
_SHUFFLE_IR = (
    'define internal i32 @"emu.shuffle"(i32 %kind, i32 %bits, i32 %operand) {\n'
    'entry:\n  %c = call ptr @"emu.context"()\n'
    "  %none = icmp eq ptr %c, null\n  br i1 %none, label %stray, label %go\n"
    "stray:\n  store i32 1, ptr @emu.stray\n  ret i32 %bits\n"
    "go:\n"
    + _field("lane", "i32", 24)
    + _field("lanes", "i32", 28)
    + _field("barrier", "ptr", 40)
    + _field("values", "ptr", 48)
    + _field("ops", "ptr", 56)
    + _field("error", "ptr", 64)
    + "  %slot = getelementptr i32, ptr %values, i32 %lane\n"
    "  store i32 %bits, ptr %slot\n"
    "  %k64 = zext i32 %kind to i64\n  %hi = shl i64 %k64, 32\n"
    "  %o64 = zext i32 %operand to i64\n  %op = or i64 %hi, %o64\n"
    "  %opslot = getelementptr i64, ptr %ops, i32 %lane\n  store i64 %op, ptr %opslot\n"
    "  %w1 = call i32 @pthread_barrier_wait(ptr %barrier)\n"
    "  %op0 = load i64, ptr %ops\n  %same = icmp eq i64 %op0, %op\n"
    "  br i1 %same, label %read, label %divergent\n"
    "divergent:\n  store i32 1, ptr %error\n  br label %read\n"
    "read:\n  %isdown = icmp eq i32 %kind, 1\n"
    "  %x = xor i32 %lane, %operand\n  %d = add i32 %lane, %operand\n"
    "  %src = select i1 %isdown, i32 %d, i32 %x\n"
    "  %past = icmp ugt i32 %src, 31\n  %own = and i1 %isdown, %past\n"
    "  %inside = icmp ult i32 %src, %lanes\n"
    "  %missing = or i1 %own, %inside\n  br i1 %missing, label %pick, label %bad\n"
    "bad:\n  store i32 2, ptr %error\n  br label %pick\n"
    "pick:\n  %usable = select i1 %own, i1 false, i1 %inside\n"
    "  %index = select i1 %usable, i32 %src, i32 %lane\n"
    "  %from = getelementptr i32, ptr %values, i32 %index\n"
    "  %got = load i32, ptr %from\n"
    "  %w2 = call i32 @pthread_barrier_wait(ptr %barrier)\n"
    "  ret i32 %got\n}"
)


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
    # Thread ids: the sequential wrapper's global, or the SIMT thread's context (``_Context``,
    # through a pthread key); barriers and shuffles use the context's pthread barriers.
    definitions = [
        "@emu.ids = global [6 x i32] zeroinitializer",
        "@emu.stray = global i32 0",
        "declare ptr @pthread_getspecific(i32)",
        "declare i32 @pthread_barrier_wait(ptr)",
        f'define internal ptr @"emu.context"() {{\n'
        f"  %c = call ptr @pthread_getspecific(i32 {key})\n  ret ptr %c\n}}",
        _BARRIER_IR,
        _SHUFFLE_IR,
    ]
    for (kind, axis), index in _IDS.items():
        definitions.append(
            f'define internal i32 @"emu.{kind}.{axis}"() {{\n'
            '  %own = call ptr @"emu.context"()\n'
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
                f'  %r = call i32 @"emu.shuffle"(i32 {kind}, i32 %bits, i32 %lane)\n'
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
    """``emu.thread.<entry>(ptr bufs, ptr syms, ptr step, i32 gx, gy, gz)``: one thread
    position of every block in turn (its context through the pthread key); the
    ``step`` barrier ends each block, whose shared memory the next one reuses."""
    loads, args = _arguments(params)
    return "\n".join(
        [
            f'define void @"emu.thread.{entry}"(ptr %bufs, ptr %syms, ptr %step, '
            "i32 %gx, i32 %gy, i32 %gz) {",
            "entry:",
            *loads,
            '  %c = call ptr @"emu.context"()',
            "  %gxy = mul i32 %gx, %gy\n  %total = mul i32 %gxy, %gz",
            "  br label %head",
            "head:",
            "  %b = phi i32 [0, %entry], [%next, %body]",
            "  %more = icmp ult i32 %b, %total",
            "  br i1 %more, label %body, label %done",
            "body:",
            "  %x = urem i32 %b, %gx\n  %bgx = udiv i32 %b, %gx\n  %y = urem i32 %bgx, %gy",
            "  %z = udiv i32 %b, %gxy",
            "  %px = getelementptr i32, ptr %c, i64 3\n  store i32 %x, ptr %px",
            "  %py = getelementptr i32, ptr %c, i64 4\n  store i32 %y, ptr %py",
            "  %pz = getelementptr i32, ptr %c, i64 5\n  store i32 %z, ptr %pz",
            f'  call void @"{entry}"({", ".join(args)})',
            "  %w = call i32 @pthread_barrier_wait(ptr %step)",
            "  %next = add i32 %b, 1",
            "  br label %head",
            "done:",
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


_THREAD = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, *([ctypes.c_int32] * 3)
)
#: Seconds a SIMT launch may take before its threads are taken to wait for one another
#: forever (a barrier or shuffle not every thread reaches).
TIMEOUT = 60.0
_ERRORS = {
    1: "lanes of one warp are at different shuffles",
    2: "a shuffle reads a lane its warp does not have",
}
_libc = ctypes.CDLL(None)
_libc.pthread_setspecific.argtypes = [ctypes.c_uint, ctypes.c_void_p]
_libc.pthread_barrier_init.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
_key = ctypes.c_uint(0)
if _libc.pthread_key_create(ctypes.byref(_key), None) != 0:
    raise OSError("pthread_key_create failed")
_stuck: list[object] = []  # what threads that never finished still use


def _barrier(count: int) -> ctypes.Array:
    """A pthread barrier for ``count`` threads (in a buffer larger than pthread_barrier_t)."""
    memory = ctypes.create_string_buffer(128)
    if _libc.pthread_barrier_init(memory, None, count) != 0:
        raise OSError("pthread_barrier_init failed")
    return memory


def _simt_thread(function, buffers, values, context, step, grid) -> None:
    _libc.pthread_setspecific(_key.value, ctypes.addressof(context))
    try:
        function(buffers, values, ctypes.addressof(step), *grid)
    finally:
        _libc.pthread_setspecific(_key.value, None)


@dataclass
class EmulatedModule:
    """The entries of a CUDA module, compiled for the host; ``simt``: the entries whose
    threads synchronise (run as concurrent threads, see the module doc)."""

    launchers: dict[str, object]
    threads: dict[str, object]
    simt: frozenset[str]
    stray: int  # the address of emu.stray
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
        stray = ctypes.c_int32.from_address(self.stray)
        if stray.value:
            stray.value = 0
            raise EmulationError(f"{entry}: a barrier or shuffle in a kernel run thread by thread")

    def _launch_simt(self, entry: str, grid, block, buffers, values) -> None:
        """Every block in turn, its threads at once: one OS thread per thread position
        (``emu.thread.E`` loops over the blocks), synchronised by pthread barriers."""
        bx, by, bz = block
        threads = bx * by * bz
        block_barrier, step, error = _barrier(threads), _barrier(threads), ctypes.c_int32(0)
        warps = [
            (_barrier(min(32, threads - first)), (ctypes.c_int32 * 32)(), (ctypes.c_int64 * 32)())
            for first in range(0, threads, 32)
        ]
        contexts = []
        for linear in range(threads):
            warp_barrier, slots, ops = warps[linear // 32]
            context = _Context()
            context.ids[:3] = (linear % bx, linear // bx % by, linear // (bx * by))
            context.lane, context.lanes = linear % 32, min(32, threads - linear // 32 * 32)
            context.block_barrier = ctypes.addressof(block_barrier)
            context.warp_barrier = ctypes.addressof(warp_barrier)
            context.values, context.ops = ctypes.addressof(slots), ctypes.addressof(ops)
            context.error = ctypes.addressof(error)
            contexts.append(context)
        function = self.threads[entry]
        workers = [
            threading.Thread(
                target=_simt_thread,
                args=(function, buffers, values, context, step, tuple(grid)),
                daemon=True,
            )
            for context in contexts
        ]
        for worker in workers:
            worker.start()
        deadline = time.monotonic() + TIMEOUT
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        if any(worker.is_alive() for worker in workers):
            _stuck.append((block_barrier, step, warps, contexts, error, buffers, values))
            raise EmulationError(
                f"{entry}: threads still wait after {TIMEOUT:.0f} s: a barrier or shuffle "
                "that not every thread of the block (lane of the warp) reaches"
            )
        if error.value:
            raise EmulationError(f"{entry}: {_ERRORS[error.value]}")


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
        "emu.stray",
    )
    library = load_object(compile_object(text, target, "emulated kernels"), names, target)
    launchers = {entry: _LAUNCH(library.addresses[f"emu.{entry}"]) for entry in entries}
    threads = {entry: _THREAD(library.addresses[f"emu.thread.{entry}"]) for entry in entries}
    stray = library.addresses["emu.stray"]
    return EmulatedModule(launchers, threads, frozenset(simt), stray, library)


class EmulatingDriver:
    """A fake driver whose memory is host memory and whose launches run the kernels'
    emulation (:func:`emulate`); modules are attached with :meth:`attach`. Graph
    launches run the graph's current launches, so node updates are exercised. Work is
    done at once, except while a graph is captured (:meth:`graph_capture`): then kernel
    launches, memsets and library work (:meth:`enqueue`, what :class:`EmulatedCublas`
    calls) are collected into the graph, each as ``(kind, key, run)``; a captured graph
    is updated in place only when the kinds and keys of its items are the same, as
    ``cuGraphExecUpdate`` needs the same topology."""

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
        self.captures = 0
        self.exec_updates = 0
        self.library_calls: list[tuple] = []  # (name, parameters) of each library call run
        self._capturing: list[tuple] | None = None

    def enqueue(self, kind: str, key: object, run) -> None:
        """Do ``run()`` now, or add it to the graph being captured."""
        if self._capturing is not None:
            self._capturing.append((kind, key, run))
        else:
            run()

    def check_range(self, pointer: int, nbytes: int) -> None:
        """An access of ``nbytes`` at ``pointer`` must lie in one allocation."""
        for base, (_, size) in self.memory.items():
            if base <= pointer and pointer + nbytes <= base + size:
                return
        raise EmulationError(f"access of {nbytes} bytes at {pointer:#x} outside any allocation")

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

    def memset(self, pointer: int, nbytes: int, stream: object) -> None:
        def run() -> None:
            self.check_range(pointer, nbytes)
            ctypes.memset(pointer, 0, nbytes)

        if nbytes:
            self.enqueue("memset", nbytes, run)

    def stream(self) -> object:
        return "stream"

    def synchronize(self, stream: object) -> None:
        pass

    def launch(self, function, grid, block, shared, stream, params) -> None:
        self.launches.append((function, grid, block, shared, params))
        self.enqueue("kernel", function, lambda: self._run(function, grid, block, params))

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
        for item in self.graphs[graph]:
            if len(item) == 3:  # captured: (kind, key, run)
                item[2]()
            else:
                function, grid, block, _, params = item
                self._run(function, grid, block, params)

    def graph_capture(self, stream, enqueue):
        if self._capturing is not None:
            raise EmulationError("a capture began while another one runs")
        self._capturing = []
        try:
            enqueue()
            return self._capturing
        finally:
            self._capturing = None

    def graph_instantiate(self, graph):
        self.captures += 1
        key = len(self.graphs)
        self.graphs[key] = list(graph)
        return key

    def graph_exec_update(self, executable, graph) -> bool:
        current = self.graphs[executable]
        if [item[:2] for item in current] != [item[:2] for item in graph]:
            return False
        self.graphs[executable] = list(graph)
        self.exec_updates += 1
        return True


class EmulatedCublas(GemmLibrary):
    """``cublasGemmStridedBatchedEx`` in numpy, with cuBLAS's column-major meaning: ``C[i]
    (m x n, ldc) = op(A[i]) @ op(B[i])``, ``A[i]`` stored ``m x k`` (``k x m`` when
    ``transa``) column-major with leading dimension ``lda`` from ``a + i * stride_a``
    elements, and so on; float16/bfloat16 accumulate in float32. Leading dimensions
    smaller than the stored rows are refused (``CUBLAS_STATUS_INVALID_VALUE``) and every
    element read or written must lie in an allocation, so the row-major swap, the
    transposes, leading dimensions and batch strides of :mod:`relaxjax.runtime.cuda.gemm`
    are really checked."""

    def __init__(self, device) -> None:
        self.driver = device.driver
        self.stream = device.stream

    def gemm(self, gemm, stream) -> None:
        if stream is not self.stream:
            raise EmulationError("cuBLAS is bound to the device's stream")
        if gemm.k < 1 or gemm.m < 1 or gemm.n < 1 or gemm.batch < 1:
            raise EmulationError(f"an empty GEMM reached cuBLAS: {gemm}")
        a_rows = gemm.k if gemm.transa else gemm.m
        b_rows = gemm.n if gemm.transb else gemm.k
        for name, ld, rows in (
            ("lda", gemm.lda, a_rows),
            ("ldb", gemm.ldb, b_rows),
            ("ldc", gemm.ldc, gemm.m),
        ):
            if ld < max(1, rows):
                raise EmulationError(
                    f"CUBLAS_STATUS_INVALID_VALUE: {name}={ld} < {rows} rows in {gemm}"
                )
        self.driver.library_calls.append(("gemm", gemm))
        self.driver.enqueue("gemm", (gemm.transa, gemm.transb), lambda: self._run(gemm))

    def _matrix(self, pointer, rows, cols, ld, stride, index, dtype):
        import numpy as np

        itemsize = dtype.itemsize
        first = pointer + index * stride * itemsize
        extent = ((cols - 1) * ld + rows) * itemsize
        self.driver.check_range(first, extent)
        flat = np.frombuffer((ctypes.c_char * extent).from_address(first), dtype)
        return np.lib.stride_tricks.as_strided(flat, (rows, cols), (itemsize, ld * itemsize))

    def _run(self, gemm) -> None:
        import numpy as np

        from relaxjax import dtypes

        dtype = np.dtype(dtypes.to_numpy(gemm.dtype))
        wide = np.float64 if gemm.dtype == "float64" else np.float32
        for i in range(gemm.batch):
            a_shape = (gemm.k, gemm.m) if gemm.transa else (gemm.m, gemm.k)
            b_shape = (gemm.n, gemm.k) if gemm.transb else (gemm.k, gemm.n)
            a = self._matrix(gemm.a, *a_shape, gemm.lda, gemm.stride_a, i, dtype).astype(wide)
            b = self._matrix(gemm.b, *b_shape, gemm.ldb, gemm.stride_b, i, dtype).astype(wide)
            c = self._matrix(gemm.c, gemm.m, gemm.n, gemm.ldc, gemm.stride_c, i, dtype)
            op_a = a.T if gemm.transa else a
            op_b = b.T if gemm.transb else b
            c[...] = (op_a @ op_b).astype(dtype)
