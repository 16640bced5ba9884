"""Every op of API.md section 5 and a GPT block lower to PTX that ptxas assembles for
sm_80 and sm_90, with no register spills; both PTX compilers; errors; the cache."""

from __future__ import annotations

import functools
import importlib.util
import warnings

import numpy as np
import pytest
from binding import bind_kernel
from cuda_helpers import bound_elementwise, needs_libdevice, needs_nvvm, needs_ptxas, variants

import relaxjax as relax
from models import gpt_block
from op_cases import jitted, op_cases  # noqa: I001
from relaxjax import schedule, tir
from relaxjax.backends.cuda import CudaTarget, build_cuda, emit_ptx, ptx_isa
from relaxjax.backends.cuda import build as cuda_build
from relaxjax.backends.cuda.compile import parse_resources
from relaxjax.backends.cuda.launches import plan_kernel
from relaxjax.backends.llvm import cache_stats, reset_cache_stats
from relaxjax.errors import LoweringError, ScheduleError
from relaxjax.ops.decompositions import LIBRARY_OPS
from relaxjax.passes import default_pipeline
from relaxjax.passes.dispatch import dispatch_library
from relaxjax.runtime.cuda import compile_program
from relaxjax.tir import te

CASES = [c for c in op_cases(width=16, matmul_cols=8, einsum_cols=8, head_dim=8)]

#: The ops of API.md section 5: the default GPU rules must schedule all their kernels.
#: (Other ops' kernels may fall back to the host, as a cuda program would run them.)
# fmt: off
API_SECTION_5 = frozenset((
    "add", "subtract", "multiply", "divide", "floor_divide", "mod", "power", "negative", "abs",
    "exp", "log", "sqrt", "rsqrt", "tanh", "sin", "cos", "maximum", "minimum", "where", "equal",
    "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "logical_not", "matmul", "dot", "einsum", "reshape", "transpose", "swapaxes", "expand_dims",
    "squeeze", "broadcast_to", "concatenate", "stack", "split", "take", "tril", "triu", "sum",
    "mean", "max", "min", "prod", "argmax", "argmin", "var", "cumsum", "astype", "zeros", "ones",
    "full", "arange", "zeros_like", "ones_like", "full_like", "pad", "clip", "relu", "gelu",
    "silu", "sigmoid", "softmax", "log_softmax", "one_hot", "layer_norm", "rms_norm",
    "dot_product_attention",
))
# fmt: on


#: The GPU schedules the codegen is checked with: the test binding always, and the default
#: GPU rules (``relaxjax.schedule.rules.gpu``, another helper's work) when installed.
NO_RULES = pytest.mark.skipif(
    importlib.util.find_spec("relaxjax.schedule.rules.gpu") is None,
    reason="the default GPU rules (relaxjax.schedule.rules.gpu) are not installed",
)
SCHEDULES = ["binding", pytest.param("rules", marks=NO_RULES)]


def _schedule(name: str):
    if name == "binding":
        return bind_kernel
    from relaxjax.schedule.rules import default_schedule

    return functools.partial(default_schedule, target="cuda")


@pytest.fixture(
    scope="module",
    params=[
        pytest.param((arch, schedule), marks=NO_RULES if schedule == "rules" else ())
        for arch in ("sm_80", "sm_90")
        for schedule in ("binding", "rules")
    ],
    ids=lambda param: "-".join(param),
)
def all_ops(request):
    """Every case's kernels (pipeline + GPU schedule) built as one module for one arch."""
    arch, schedule = request.param
    if cuda_build.ptxas_path() is None:
        pytest.skip("ptxas (relaxjax[cuda]) is missing")
    kernels, per_case, host = _scheduled_cases(schedule)
    module = build_cuda(kernels, CudaTarget(arch), assemble_cubin=True)
    return arch, module, per_case, host


@functools.cache
def _scheduled_cases(schedule: str):
    """Every case's kernels under ``schedule`` (shared by both architectures): name ->
    scheduled kernel, op -> its kernels' names, and the kernels no GPU rule schedules
    (name -> why; a cuda program runs those on the host)."""
    scheduler = _schedule(schedule)
    kernels, per_case, host = {}, {}, {}
    for case in CASES:
        traced = dispatch_library(jitted(case, "cuda").trace(), LIBRARY_OPS)  # LAPACK: host
        mod = default_pipeline("cuda")(traced)
        names = []
        for name, kernel in mod.kernels().items():
            key = f"{case.op}__{name}"
            try:
                kernels[key] = scheduler(kernel)
                names.append(key)
            except ScheduleError as err:  # the program would run it on the host
                if schedule == "binding":
                    raise
                host[key] = err.message
        per_case[case.op] = names
    return kernels, per_case, host


#: Kernels of these rules must not spill (the issue's requirement); others are reported.
NO_SPILLS = {"test_binding", "injective", "reduction", "attention"}


def test_the_cases_cover_every_op_of_api_section_5():
    assert API_SECTION_5 - {case.op for case in CASES} == set()


@needs_ptxas
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.op)
def test_every_op_assembles_without_spills(all_ops, case):
    arch, module, per_case, host = all_ops
    on_host = {k: why for k, why in host.items() if k.startswith(f"{case.op}__")}
    assert case.op not in API_SECTION_5 or not on_host, f"no GPU rule schedules {on_host}"
    assert module.cubin and module.cubin[:4] == b"\x7fELF"
    for name in per_case[case.op]:
        kernel = module.kernels[name]
        resources = kernel.resources()
        assert set(resources) == set(kernel.entries), f"{name}: ptxas reported no resources"
        rule = dict(kernel.func.attrs).get("schedule_rule")
        for entry, used in resources.items():
            assert 0 < used.registers <= 255, f"{arch} {entry}: {used}"
            if rule in NO_SPILLS:
                assert not used.spills, f"{arch} {entry} ({rule}) spills: {used}"
    assert f".target {arch}" in module.ptx


@needs_ptxas
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_gpt_block_assembles_for_both_architectures(schedule):
    """Compiled as for sm_90 (scheduled, placed), its kernels assembled for sm_80 too;
    its matmuls generated (library=False), not cuBLAS calls, to assemble them too."""
    from relaxjax.runtime.cuda import set_gpu_schedule

    previous = set_gpu_schedule(_schedule(schedule))
    try:
        program = compile_program(
            gpt_block(64, 4, 256).trace(), CudaTarget("sm_90"), assemble=True, library=False
        )
    finally:
        set_gpu_schedule(previous)
    assert program.host_kernels == ()
    kernels = {name: kernel.func for name, kernel in program.cuda.kernels.items()}
    sm80 = build_cuda(kernels, CudaTarget("sm_80"), assemble_cubin=True)
    for module in (program.cuda, sm80):
        resources = module.resources
        entries = [e for k in module.kernels.values() for e in k.entries]
        assert set(resources) == set(entries) and len(entries) >= 10
        assert f".target {module.target.arch}" in module.ptx
        for name, kernel in module.kernels.items():
            if dict(kernel.func.attrs).get("schedule_rule") in NO_SPILLS:
                assert not [e for e, r in kernel.resources().items() if r.spills], name


@needs_libdevice
def test_ptx_works_without_a_gpu_and_names_the_arch():
    f = jitted(next(c for c in CASES if c.op == "softmax"), "cuda")
    text = f.ptx(arch="sm_80")
    assert ".target sm_80" in text and ".entry relaxjax_" in text
    assert ptx_isa(text) <= (9, 0)  # loads on the CUDA 13.0 driver
    with pytest.raises(LoweringError, match="CudaTarget.arch: expected one of"):
        f.ptx(arch="sm_70")


def test_lower_works_for_cuda_functions():
    f = jitted(next(c for c in CASES if c.op == "add"), "cuda")
    assert "call_tir" in str(f.lower())


@needs_ptxas
@pytest.mark.parametrize("compiler", [pytest.param("nvvm", marks=needs_nvvm), "llvmlite"])
def test_both_ptx_compilers_assemble_with_libdevice(compiler):
    module = build_cuda(bound_elementwise(), CudaTarget("sm_90"), compiler, assemble_cubin=True)
    assert "__nv_expf" not in module.ptx or compiler == "nvvm"  # linked, then inlined
    (kernel,) = module.kernels.values()
    assert kernel.entries == ("relaxjax_ew",)
    assert kernel.resources()["relaxjax_ew"].registers > 0
    plan = kernel.plan.launches[0]
    assert str(plan.grid[0]) == "(n * 64 + 255) // 256" and plan.block == (256, 1, 1)


@needs_nvvm
def test_nvvm_ptx_has_isa_9_and_the_llvm_exp_intrinsic_never_reaches_libnvvm():
    module = build_cuda(bound_elementwise(), CudaTarget("sm_80"), "nvvm", assemble_cubin=False)
    assert ptx_isa(module.ptx) == (9, 0)
    assert '@"llvm.exp' not in module.ir_text and '@"__nv_expf"' in module.ir_text
    assert "fneg" not in module.ir_text and "addrspace(1)*" in module.ir_text
    assert '!"kernel"' in module.ir_text and "!nvvmir.version" in module.ir_text


@needs_libdevice
def test_the_cache_answers_a_second_build_from_memory_then_disk():
    func = bound_elementwise(128)
    build_cuda(func, CudaTarget("sm_80"), assemble_cubin=False)
    reset_cache_stats()
    build_cuda(func, CudaTarget("sm_80"), assemble_cubin=False)
    assert cache_stats().memory_hits == 1 and cache_stats().compiles == 0
    cuda_build._built.clear()
    reset_cache_stats()
    again = build_cuda(func, CudaTarget("sm_80"), assemble_cubin=False)
    assert cache_stats().hits == 1 and cache_stats().compiles == 0
    assert ".entry relaxjax_ew" in again.ptx


def test_a_block_over_1024_threads_is_refused():
    with pytest.raises(LoweringError, match="2048 threads per block, over the limit of 1024"):
        emit_ptx(bound_elementwise(2048), CudaTarget("sm_90"))


def test_a_thread_extent_must_depend_only_on_the_kernels_symbols():
    a = te.placeholder(("n",), "float32", name="A")
    b = te.compute(("n",), lambda i: a[i] + 1.0, name="B")
    sch = schedule.Schedule(te.create_prim_func([a, b], name="inc"))
    (i,) = sch.get_loops(sch.get_block("B"))
    outer, inner = sch.split(i, factors=[None, 32])
    sch.bind(inner, "threadIdx.x")
    func = sch.func  # the outer loop stays serial: fine, one launch of 32 threads
    plan = plan_kernel(func, "inc", CudaTarget())
    assert plan.launches[0].block == (32, 1, 1) and plan.launches[0].grid == (1, 1, 1)


def test_unknown_compiler_and_arch_are_refused():
    with pytest.raises(LoweringError, match="unknown PTX compiler 'clang'"):
        build_cuda(bound_elementwise(), compiler="clang")
    with pytest.raises(LoweringError, match="expected one of sm_80"):
        CudaTarget("sm_75")


def test_ptxas_resource_lines_are_parsed():
    log = (
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem\n"
    )
    (used,) = parse_resources(log).values()
    assert (used.registers, used.spill_stores, used.spill_loads, used.shared_bytes) == (
        40, 8, 4, 1024,
    )  # fmt: skip
    assert used.spills


@needs_libdevice
def test_a_kernel_the_gpu_cannot_take_runs_on_the_host_with_explicit_copies():
    @relax.jit
    def f(x: relax.Tensor(("n", 64), "float32")):
        return relax.numpy.tanh(relax.numpy.exp(x))

    mod = f.lower()
    exp = mod.kernels()["exp"]
    a = te.placeholder(exp.params[0].shape, "float32", name=exp.params[0].name)
    b = te.compute(exp.params[1].shape, lambda i, j: tir.exp(a[i, j]), name=exp.params[1].name)
    sch = schedule.Schedule(te.create_prim_func([a, b], name="exp"))
    i, j = sch.get_loops(sch.get_block(exp.params[1].name))
    _, inner = sch.split(j, factors=[None, 2048])  # guarded: j < 64
    sch.bind(i, "blockIdx.x")
    sch.bind(inner, "threadIdx.x")  # 2048 threads per block: no GPU launches that
    from relaxjax.schedule.replace import replace_kernel

    mod = replace_kernel(mod, "exp", sch.func)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = compile_program(mod, CudaTarget("sm_90"), assemble=False)
    assert program.host_kernels == ("exp",)
    assert any("kernel exp runs on the host" in str(w.message) for w in caught)
    assert any("2048 threads per block" in str(w.message) for w in caught)
    text = str(program.module)
    assert "relaxjax.cuda.to_host" in text and "relaxjax.cuda.to_device" in text
    # The placed program means the same: run it on the CPU runtime (copies are copies).
    from relaxjax.runtime import build_executable

    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    (y,) = build_executable(program.module, "reference")(x)
    np.testing.assert_allclose(y, np.tanh(np.exp(x)), rtol=1e-6)


@needs_nvvm
def test_a_libnvvm_crash_is_contained_in_its_child_process():
    from relaxjax.backends.cuda.codegen import emit_nvvm_module
    from relaxjax.backends.cuda.compile import compile_ptx

    ir_text = emit_nvvm_module({"ew": bound_elementwise()}, CudaTarget()).ir_text
    crashing = ir_text.replace('@"__nv_expf"', '@"llvm.exp.f32"')  # aborts libnvvm 13.0
    with pytest.raises(LoweringError, match="libnvvm crashed compiling the module"):
        compile_ptx(crashing, CudaTarget(), "nvvm", ["relaxjax_ew"])
    assert ".entry relaxjax_ew" in compile_ptx(ir_text, CudaTarget(), "nvvm", ["relaxjax_ew"])


@needs_nvvm
def test_libnvvm_errors_come_back_with_its_log():
    from relaxjax.backends.cuda.compile import compile_ptx

    with pytest.raises(LoweringError, match="libnvvm rejected the module"):
        compile_ptx("this is not IR", CudaTarget(), "nvvm")


@pytest.mark.parametrize("compiler", [pytest.param("nvvm", marks=needs_nvvm), "llvmlite"])
def test_a_vectorized_loop_of_four_floats_becomes_128_bit_accesses(compiler):
    a = te.placeholder(("n", 512), "float32", name="A")
    b = te.compute(("n", 512), lambda i, j: a[i, j] * 2.0, name="B")
    sch = schedule.Schedule(te.create_prim_func([a, b], name="v"))
    i, j = sch.get_loops(sch.get_block("B"))
    tx, lanes = sch.split(j, factors=[128, 4])
    sch.bind(i, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(lanes)
    ptx = build_cuda(sch.func, CudaTarget("sm_90"), compiler, assemble_cubin=False).ptx
    accesses = [
        line.split()[0] for line in ptx.splitlines() if "ld.global" in line or "st.global" in line
    ]
    assert len(accesses) == 2 and all(".v4." in access for access in accesses), accesses
    assert accesses[0].startswith("ld.global.nc")  # read-only, non-coherent cache path


def test_host_conditions_choose_between_launch_variants():
    from relaxjax.backends.cuda.launches import host_value

    plan = plan_kernel(variants(), "v", CudaTarget())
    wide, narrow = plan.launches
    assert (str(wide.grid[0]), wide.block) == ("(n + 127) // 128", (128, 1, 1))
    assert (narrow.grid, narrow.block) == ((1, 1, 1), (8, 1, 1))
    for n in (0, 7, 8, 1000):
        assert host_value(wide.condition, {"n": n}) == (n >= 8)
        assert host_value(narrow.condition, {"n": n}) == (n < 8)


def test_a_let_of_an_index_value_is_substituted_into_the_launches():
    text = """@prim_func(outputs=1)
def h(A: Buffer((n,), "float32"), B: Buffer((n,), "float32")):
    with let_sym(t, (n + 31) // 32):
        for bx in thread_binding(t, thread="blockIdx.x"):
            for tx in thread_binding(32, thread="threadIdx.x"):
                if bx * 32 + tx < n:
                    B[bx * 32 + tx] = A[bx * 32 + tx]
"""
    (launch,) = plan_kernel(tir.parse_prim_func(text), "h", CudaTarget()).launches
    assert str(launch.grid[0]) == "(n + 31) // 32" and launch.condition is None
