"""Kernels to one NVVM IR module: an ``.entry`` per launch (see :mod:`.launches`).

Each launch of kernel ``f`` becomes a function marked as a kernel in
``!nvvm.annotations``::

    void relaxjax_f[_k](T0 addrspace(1)* noalias buf0, ..., W addrspace(1)* noalias ws0, ...,
                        i64 sym0, ...)

(the buffers of ``f.params`` in order, then its workspaces, then the values of
``f.symbols()``). The body is emitted by the shared lowering
(:mod:`relaxjax.backends.llvm`) in the NVVM dialect (:mod:`.dialect`), plus what only
GPUs have:

- a ``thread_binding`` loop ``for v in thread_binding(start, extent, tag)`` binds
  ``v = start + tid`` where ``tid`` is ``threadIdx``/``blockIdx`` along the tag's axis
  (``llvm.nvvm.read.ptx.sreg.*``), guarded by ``tid < extent`` when the launch is
  larger than this loop along that axis; ``parallel`` loops run serially in a thread;
- storage: ``shared`` buffers in address space 3 (static globals, or slices of the
  dynamic shared memory ``relaxjax_dynamic_shared``); other constant-size buffers are
  ``alloca``s (registers or local memory: libnvvm's address space 5 after SROA); a
  thread's symbolic-size buffer comes from the device heap (``malloc``), which works
  but is slow, so GPU rules avoid it;
- intrinsics: ``mma_m16n8k16`` -> ``mma.sync.aligned.m16n8k16`` and ``ldmatrix_x4``
  -> ``ldmatrix.sync.aligned.m8n8.x4`` in inline PTX (sm_80+); ``syncthreads()`` ->
  ``llvm.nvvm.barrier0``; ``shfl_xor(v, mask)`` / ``shfl_down(v, offset)`` ->
  ``llvm.nvvm.shfl.sync.bfly/down`` over the full warp (values wider or narrower than
  32 bits are shuffled as 32-bit pieces);
- a ``vectorized`` loop of constant extent up to 16 is unrolled, and buffer parameters
  are ``align 16``, so libnvvm merges the accesses of a thread into vector loads and
  stores (``ld.global.v4.f32``); one that copies 4, 8 or 16 contiguous bytes between
  global and shared memory (a tile's staging copy, zero-padded by a guard the same for
  every lane) is one load and one store of 32-bit words (``ld.global.v4.u32``), which
  libnvvm would not form from float16 accesses.

The module has the triple ``nvptx64-nvidia-cuda``, libnvvm's data layout and
``!nvvmir.version = !{2, 0, 3, 2}``; pointers are typed (LLVM 7).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from llvmlite import ir

from ... import arith, dtypes
from ...errors import LoweringError
from ...schedule.gpu.vector import vector_access
from ...tir.analysis import free_symbols
from ...tir.buffer import Buffer
from ...tir.expr import BufferLoad, Call, FloatImm, IntImm, PrimExpr
from ...tir.function import PrimFunc
from ...tir.intrinsics import LAZY_SELECT
from ...tir.stmt import BufferStore, For
from ..llvm import lower_expr, lower_stmt  # noqa: F401 - registers the node lowerings
from ..llvm.dialect import set_dialect
from ..llvm.emitter import FunctionEmitter, KernelContext, Scope
from ..llvm.index import emit_dim
from ..llvm.loops import counted_loop
from ..llvm.memory import allocated_elements, element_pointer
from ..llvm.numeric import F16, F32, F64, I8, I32, I64, storage_type, widen
from .dialect import NVVM_DIALECT
from .launches import KernelPlan, LaunchPlan, plan_kernel
from .target import CudaTarget

__all__ = ["BUFFER_ALIGNMENT", "DATA_LAYOUT", "TRIPLE", "NvvmModule", "emit_nvvm_module"]

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = (
    "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-"
    "f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
)
GLOBAL, SHARED = 1, 3
_SREG = {"threadIdx": "tid", "blockIdx": "ctaid"}
_DYNAMIC_SHARED = "relaxjax_dynamic_shared"
#: Every buffer a kernel receives starts at a multiple of this many bytes (the runtime
#: guarantees it: allocations are 256-byte aligned, arena slots 64, and a foreign array
#: that is not aligned is copied), so 128-bit vector accesses are legal.
BUFFER_ALIGNMENT = 16
#: ``vectorized`` loops up to this many iterations are unrolled for vector accesses.
MAX_VECTOR_LANES = 16


@dataclass(frozen=True, slots=True)
class NvvmModule:
    """NVVM IR text for some kernels, and the launch plan of each (by kernel name)."""

    ir_text: str
    plans: dict[str, KernelPlan]


def emit_nvvm_module(
    kernels: Mapping[str, PrimFunc], target: CudaTarget, fast_math: bool = False
) -> NvvmModule:
    """Lower ``kernels`` (name -> PrimFunc) into one NVVM IR module.

    Raises:
        LoweringError: a kernel uses something the GPU backend cannot lower (the
            message names the kernel).
    """
    module = ir.Module(name="relaxjax_cuda")
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    set_dialect(module, NVVM_DIALECT)
    plans: dict[str, KernelPlan] = {}
    entries: list[ir.Function] = []
    for name, func in kernels.items():
        try:
            plan = plan_kernel(func, name, target)
            for launch in plan.launches:
                entries.append(_emit_launch(module, plan, launch, target, fast_math))
        except LoweringError as err:
            raise LoweringError(f"while compiling kernel {name} for cuda: {err.message}") from err
        plans[name] = plan
    _annotate(module, entries)
    return NvvmModule(str(module), plans)


def _annotate(module: ir.Module, entries: list[ir.Function]) -> None:
    kernel = ir.MetaDataString(module, "kernel")
    annotations = module.add_named_metadata("nvvm.annotations")
    for entry in entries:
        annotations.add(module.add_metadata([entry, kernel, ir.Constant(I32, 1)]))
    version = module.add_named_metadata("nvvmir.version")
    version.add(module.add_metadata([ir.Constant(I32, v) for v in (2, 0, 3, 2)]))


def _emit_launch(
    module: ir.Module, plan: KernelPlan, launch: LaunchPlan, target: CudaTarget, fast_math: bool
) -> ir.Function:
    func = plan.func
    buffers = (*func.params, *(w.buffer for w in plan.workspaces))
    pointer_types = [storage_type(b.dtype).as_pointer(GLOBAL) for b in buffers]
    signature = ir.FunctionType(ir.VoidType(), pointer_types + [I64] * len(plan.symbol_names))
    function = ir.Function(module, signature, launch.entry)
    scope = Scope()
    args = iter(function.args)
    for buffer, arg in zip(buffers, args):
        arg.add_attribute("noalias")
        arg.attributes.align = BUFFER_ALIGNMENT
        arg.name = f"buf.{buffer.name}"
        scope.buffers[buffer] = arg
    for symbol, arg in zip(plan.symbol_names, args):
        arg.name = f"sym.{symbol}"
        scope.symbols[symbol] = arg
    context = KernelContext(
        func,
        module,
        target,  # type: ignore[arg-type]  # read for max_unroll / max_stack_bytes
        launch.entry,
        fast_math,
        loops={
            "thread_binding": functools.partial(_lower_thread_loop, launch),
            "parallel": _lower_serially,
            "vectorized": _lower_vectorized,
        },
        calls=_GPU_CALLS,
        storage=functools.partial(_place_buffer, launch, target),
    )
    emitter = FunctionEmitter(context, function, scope, status=None)  # type: ignore[arg-type]
    emitter.status = emitter.prologue.alloca(I32, name="status")
    with emitter.nested_scope() as inner:
        for buffer in launch.local_buffers:
            pointer = _place_buffer(launch, target, emitter, buffer)
            assert pointer is not None
            inner.buffers[buffer] = pointer
        emitter.stmt(launch.body)
    return emitter.finish()


# -- loops -----------------------------------------------------------------------------------


def _thread_index(emitter: FunctionEmitter, tag: str) -> ir.Value:
    kind, axis = tag.split(".")
    name = f"llvm.nvvm.read.ptx.sreg.{_SREG[kind]}.{axis}"
    function = emitter.module.globals.get(name) or ir.Function(
        emitter.module, ir.FunctionType(I32, []), name
    )
    return emitter.builder.zext(emitter.builder.call(function, []), I64)


def _lower_thread_loop(launch: LaunchPlan, emitter: FunctionEmitter, node: For) -> None:
    assert node.thread_tag is not None
    builder = emitter.builder
    symbols = emitter.scope.symbols
    index = _thread_index(emitter, node.thread_tag)
    value = builder.add(emit_dim(builder, node.start, symbols), index)
    launched = launch.extent(node.thread_tag)
    if node.extent is launched or arith.prove_equal(node.extent, launched):
        emitter.loop_body(node.var.name, node.body, value)
        return
    inside = builder.icmp_signed("<", index, emit_dim(builder, node.extent, symbols))
    with builder.if_then(inside):
        emitter.loop_body(node.var.name, node.body, value)


def _lower_serially(emitter: FunctionEmitter, node: For) -> None:
    builder = emitter.builder
    symbols = emitter.scope.symbols
    start = emit_dim(builder, node.start, symbols)
    stop = builder.add(start, emit_dim(builder, node.extent, symbols))
    with counted_loop(builder, start, stop, name=node.var.name) as index:
        emitter.loop_body(node.var.name, node.body, index)


def _lower_vectorized(emitter: FunctionEmitter, node: For) -> None:
    """A thread's ``vectorized`` loop: unrolled when its extent is a small constant, so
    that libnvvm's load/store vectoriser can merge its accesses into 64/128-bit ones
    (buffers are 16-byte aligned); otherwise a serial loop."""
    extent = node.extent
    if not isinstance(extent, int) or extent > MAX_VECTOR_LANES:
        _lower_serially(emitter, node)
        return
    if _vector_copy(emitter, node):
        return
    start = emit_dim(emitter.builder, node.start, emitter.scope.symbols)
    for lane in range(extent):
        index = emitter.builder.add(start, ir.Constant(I64, lane))
        emitter.loop_body(node.var.name, node.body, index)


def _copy_parts(node: For) -> tuple[BufferStore, BufferLoad, PrimExpr | None] | None:
    """``(store, load, guard)`` of a vectorized loop that copies ``lanes`` contiguous
    elements between global/shared buffers (``dst[..v] = src[..v]``, or
    ``if_then_else(guard, src[..v], 0)`` with a guard the same for every lane)."""
    store = node.body
    if not isinstance(store, BufferStore):
        return None
    value, guard = store.value, None
    if isinstance(value, Call) and value.intrinsic == LAZY_SELECT:
        guard, value, zero = value.args
        if node.var in free_symbols(guard) or not (
            isinstance(zero, (FloatImm, IntImm)) and zero.value == 0
        ):
            return None
    if not isinstance(value, BufferLoad) or value.buffer.dtype != store.buffer.dtype:
        return None
    for buffer, indices in ((store.buffer, store.indices), (value.buffer, value.indices)):
        if buffer.scope not in ("global", "shared", "local"):
            return None
        if vector_access(buffer, indices, node.var, node.extent) != "contiguous":
            return None
    return store, value, guard


def _vector_copy(emitter: FunctionEmitter, node: For) -> bool:
    """A copy loop (:func:`_copy_parts`) as one 32/64/128-bit load and store of
    32-bit integers (bits, whatever the dtype: libnvvm does not merge float16 accesses
    itself); False (nothing emitted) for any other loop."""
    parts = _copy_parts(node)
    if parts is None or node.start != 0:
        return False
    store, load, guard = parts
    nbytes = node.extent * dtypes.itemsize(store.buffer.dtype)
    if nbytes not in (4, 8, 16):
        return False
    builder = emitter.builder
    words = ir.VectorType(I32, nbytes // 4) if nbytes > 4 else I32
    with emitter.nested_scope() as scope:
        scope.symbols[node.var.name] = ir.Constant(I64, 0)
        source = element_pointer(emitter, load.buffer, load.indices)
        target = element_pointer(emitter, store.buffer, store.indices)

    def as_words(pointer: ir.Value) -> ir.Value:
        return builder.bitcast(pointer, ir.PointerType(words, pointer.type.addrspace))

    if guard is None:
        value = builder.load(as_words(source), align=nbytes)
    else:
        with builder.if_else(emitter.expr(guard)) as (then, otherwise):
            with then:
                loaded = builder.load(as_words(source), align=nbytes)
                loaded_block = builder.block
            with otherwise:
                zero_block = builder.block
        value = builder.phi(words)
        value.add_incoming(loaded, loaded_block)
        value.add_incoming(ir.Constant(words, None), zero_block)
    builder.store(value, as_words(target), align=nbytes)
    return True


# -- storage ---------------------------------------------------------------------------------


def _place_buffer(
    launch: LaunchPlan, target: CudaTarget, emitter: FunctionEmitter, buffer: Buffer
) -> ir.Value | None:
    """Where ``buffer`` lives on the GPU (None: the default, the device heap)."""
    element = storage_type(buffer.dtype)
    elements = allocated_elements(buffer)
    if buffer.scope == "shared":
        if isinstance(elements, int):
            return _static_shared(emitter.module, buffer, element, elements, target)
        return _dynamic_shared(launch, emitter, buffer, element)
    if isinstance(elements, int) and elements * dtypes.itemsize(buffer.dtype) <= (
        target.max_stack_bytes
    ):
        slot = emitter.prologue.alloca(element, size=ir.Constant(I64, max(elements, 1)))
        slot.name = buffer.name
        # 16-byte aligned when it can hold a vector: a vectorized copy into it is one
        # 128-bit access (:func:`_vector_copy`).
        nbytes = elements * dtypes.itemsize(buffer.dtype)
        slot.align = 16 if nbytes >= 16 else max(dtypes.itemsize(buffer.dtype), 4)
        return slot
    return None


def _static_shared(
    module: ir.Module, buffer: Buffer, element: ir.Type, elements: int, target: CudaTarget
) -> ir.Value:
    nbytes = elements * element.get_abi_size(_target_data()) if elements else 0
    if nbytes > target.max_shared_bytes:
        raise LoweringError(
            f"shared buffer {buffer.name} takes {nbytes} bytes, over the {target.max_shared_bytes} "
            f"bytes of static shared memory per block of {target.arch}"
        )
    name = f"{buffer.name}.shared"
    suffix = 0
    while name in module.globals:
        suffix += 1
        name = f"{buffer.name}.shared{suffix}"
    array = ir.ArrayType(element, max(elements, 1))
    variable = ir.GlobalVariable(module, array, name, addrspace=SHARED)
    variable.linkage = "internal"
    variable.initializer = ir.Constant(array, ir.Undefined)
    variable.align = 16
    return variable.gep([ir.Constant(I64, 0), ir.Constant(I64, 0)])


def _dynamic_shared(
    launch: LaunchPlan, emitter: FunctionEmitter, buffer: Buffer, element: ir.Type
) -> ir.Value:
    offsets = dict(launch.dynamic_shared)
    if buffer not in offsets:
        raise LoweringError(f"shared buffer {buffer.name} has no place in dynamic shared memory")
    module = emitter.module
    base = module.globals.get(_DYNAMIC_SHARED)
    if base is None:
        base = ir.GlobalVariable(module, ir.ArrayType(I8, 0), _DYNAMIC_SHARED, addrspace=SHARED)
        base.linkage = "external"
        base.align = 16
    builder = emitter.prologue
    offset = emit_dim(builder, offsets[buffer], emitter.scope.symbols)
    start = builder.gep(base, [ir.Constant(I64, 0), offset], inbounds=True)
    return builder.bitcast(start, element.as_pointer(SHARED), name=buffer.name)


@functools.cache
def _target_data() -> object:
    import llvmlite.binding as llvm

    return llvm.create_target_data(DATA_LAYOUT)


# -- GPU intrinsics --------------------------------------------------------------------------


def _declare(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(ret, args), name)


def _syncthreads(emitter: FunctionEmitter, node: Call) -> ir.Value:
    barrier = _declare(emitter.module, "llvm.nvvm.barrier0", ir.VoidType(), [])
    emitter.builder.call(barrier, [])
    return ir.Constant(I32, 0)


def _shuffle(kind: str, emitter: FunctionEmitter, node: Call) -> ir.Value:
    if len(node.args) != 2:
        raise LoweringError(f"{node.intrinsic} takes (value, lane), given {len(node.args)} args")
    value_expr, lane_expr = node.args
    value = emitter.expr(value_expr)
    lane = _as_i32(emitter, lane_expr)
    return _shuffle_value(emitter, kind, value, lane)


def _as_i32(emitter: FunctionEmitter, expr: PrimExpr) -> ir.Value:
    value = emitter.expr(expr)
    if value.type.width > 32:
        return emitter.builder.trunc(value, I32)
    if value.type.width < 32:
        return emitter.builder.zext(value, I32)
    return value


def _shuffle_value(
    emitter: FunctionEmitter, kind: str, value: ir.Value, lane: ir.Value
) -> ir.Value:
    builder = emitter.builder
    type_ = value.type
    if type_ in (F32, I32):
        suffix = "f32" if type_ == F32 else "i32"
        name = f"llvm.nvvm.shfl.sync.{kind}.{suffix}"
        function = _declare(emitter.module, name, type_, [I32, type_, I32, I32])
        # c = 0x1f: clamp at lane 31, no segment mask (a full warp of 32), as CUDA's
        # __shfl_xor_sync / __shfl_down_sync give for width 32.
        clamp = ir.Constant(I32, 0x1F)
        return builder.call(function, [ir.Constant(I32, -1), value, lane, clamp])
    if type_ == F16:
        wide = _shuffle_value(emitter, kind, widen(builder, value, F32), lane)
        return builder.fptrunc(wide, F16)
    if type_ in (F64, I64):
        bits = builder.bitcast(value, I64) if type_ == F64 else value
        low = _shuffle_value(emitter, kind, builder.trunc(bits, I32), lane)
        high_bits = builder.trunc(builder.lshr(bits, ir.Constant(I64, 32)), I32)
        high = _shuffle_value(emitter, kind, high_bits, lane)
        joined = builder.or_(
            builder.zext(low, I64), builder.shl(builder.zext(high, I64), ir.Constant(I64, 32))
        )
        return builder.bitcast(joined, F64) if type_ == F64 else joined
    if isinstance(type_, ir.IntType):
        return builder.trunc(_shuffle_value(emitter, kind, builder.zext(value, I32), lane), type_)
    raise LoweringError(f"cannot shuffle a value of LLVM type {type_}")


def _mma(emitter: FunctionEmitter, node: Call) -> ir.Value:
    """``mma_m16n8k16(q, a0..a7, b0..b3, c0..c3)``: one ``mma.sync`` in inline PTX (the
    a and b halves packed in pairs into 32-bit registers), element ``q`` of its result.
    The asm is ``readnone``, so the four calls of one product (q = 0..3, the same
    operands) become one instruction."""
    builder = emitter.builder
    q = node.args[0].value
    kind = "bf16" if node.args[1].dtype == "bfloat16" else "f16"
    halves = [_half_bits(emitter, arg) for arg in node.args[1:13]]
    packed = [
        builder.or_(
            builder.zext(halves[i], I32),
            builder.shl(builder.zext(halves[i + 1], I32), ir.Constant(I32, 16)),
        )
        for i in range(0, 12, 2)
    ]
    accumulators = [emitter.expr(arg) for arg in node.args[13:]]
    result = ir.LiteralStructType([F32] * 4)
    asm = ir.InlineAsm(
        ir.FunctionType(result, [I32] * 6 + [F32] * 4),
        f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 "
        "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};",
        "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f",
        side_effect=False,
    )
    call = builder.call(asm, packed + accumulators, attrs=("readnone", "nounwind"))
    return builder.extract_value(call, q)


def _half_bits(emitter: FunctionEmitter, expr: PrimExpr) -> ir.Value:
    """The 16 bits of a float16 or bfloat16 value (bfloat16 registers are float32
    whose low half is zero)."""
    builder = emitter.builder
    value = emitter.expr(expr)
    if value.type == F16:
        return builder.bitcast(value, ir.IntType(16))
    bits = builder.bitcast(value, I32)
    return builder.trunc(builder.lshr(bits, ir.Constant(I32, 16)), ir.IntType(16))


def _ldmatrix(emitter: FunctionEmitter, node: Call) -> ir.Value:
    """``ldmatrix_x4(trans, q, v0..v7)``: one ``ldmatrix`` in inline PTX at the address of
    the lane's row ``v0..v7`` (shared memory), element ``q`` of the four registers. The
    asm only reads memory, so the eight calls of one load become one instruction."""
    builder = emitter.builder
    trans, q = node.args[0].value, node.args[1].value
    row = node.args[2:]
    first = row[0]
    for offset, load in enumerate(row):
        if (
            load.buffer != first.buffer
            or load.buffer.scope != "shared"
            or tuple(load.indices[:-1]) != tuple(first.indices[:-1])
            or isinstance(load.indices[-1], PrimExpr)
            or isinstance(first.indices[-1], PrimExpr)
            or arith.compare(load.indices[-1] - first.indices[-1], "==", offset) is not True
            or load.buffer.strides_or_default()[-1] != 1
        ):
            raise LoweringError(
                "ldmatrix_x4 reads a row of 8 consecutive elements of one shared buffer"
            )
    pointer = element_pointer(emitter, first.buffer, first.indices)
    address = builder.ptrtoint(pointer, I64)
    result = ir.LiteralStructType([I32] * 4)
    asm = ir.InlineAsm(
        ir.FunctionType(result, [I64]),
        f"ldmatrix.sync.aligned.m8n8.x4{'.trans' if trans else ''}.shared.b16 "
        "{$0,$1,$2,$3}, [$4];",
        "=r,=r,=r,=r,l",
        side_effect=False,
    )
    call = builder.call(asm, [address], attrs=("readonly", "nounwind"))
    word = builder.extract_value(call, q // 2)
    bits = builder.trunc(builder.lshr(word, ir.Constant(I32, 16 * (q % 2))), ir.IntType(16))
    dtype = first.dtype
    if dtype == "float16":
        return builder.bitcast(bits, F16)
    if dtype == "bfloat16":  # bfloat16 registers are float32 with the low half zero
        wide = builder.shl(builder.zext(bits, I32), ir.Constant(I32, 16))
        return builder.bitcast(wide, F32)
    return bits


_GPU_CALLS = {
    "mma_m16n8k16": _mma,
    "ldmatrix_x4": _ldmatrix,
    "syncthreads": _syncthreads,
    "shfl_xor": functools.partial(_shuffle, "bfly"),
    "shfl_down": functools.partial(_shuffle, "down"),
}
