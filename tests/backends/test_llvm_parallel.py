"""``parallel`` loops through libgomp.

Code that runs a parallel region executes in a child interpreter (the ``isolated``
fixture): a process that has run libgomp must not fork, and a crash in native
code must fail the test, not pytest. IR-only checks run in-process (nothing is
executed, libgomp is not loaded).
"""

from __future__ import annotations

import re

from relaxjax import arith
from relaxjax.backends.llvm import Target, host_target
from relaxjax.backends.llvm.inspect import source
from relaxjax.tir import Buffer, BufferStore, For, PrimFunc

N, M = arith.syms("n m")
I, J = arith.syms("i j")

KERNELS = """
import os
import numpy as np
from dataclasses import replace
from relaxjax import arith, tir
from relaxjax.backends import build
from relaxjax.backends.llvm import host_target
from relaxjax.tir import Allocate, Buffer, BufferStore, For, PrimFunc, te
from relaxjax.tir.interpreter import run as reference

N, M = arith.syms("n m")
I, J, J2, P = arith.syms("i j jj p")

def threads():
    return len(os.listdir("/proc/self/task"))

def rows_func(name, inner_kind="serial"):
    a, c = Buffer("A", (N, M), "float32"), Buffer("C", (N, M), "float32")
    inner = For(J, 0, M, inner_kind, BufferStore(c, tir.exp(a[I, J]) * 2.0 + 1.0, (I, J)))
    return PrimFunc(name, (a, c), For(I, 0, N, "parallel", inner))

def check(func, *arrays, target=None, **scalars):
    kernel = build(func, target=target or host_target())
    got = kernel(*arrays, **scalars)
    expected = reference(func, *arrays, **scalars)
    if isinstance(got, tuple):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    return got
"""


def test_forced_parallel_loops_match_the_interpreter_on_a_thread_team(isolated):
    output = isolated(
        KERNELS
        + """
always = replace(host_target(), parallel_min_work=0)
rng = np.random.default_rng(0)
before = threads()
for n, m in ((0, 3), (1, 5), (2, 1), (7, 33), (64, 130)):
    check(rows_func("rows"), rng.standard_normal((n, m)).astype(np.float32), target=always)
after = threads()

# a reduction block under a parallel loop, and a per-iteration temporary buffer
a = te.placeholder((N, M), "float64", "A")
k = te.reduce_axis(M, "k")
s = te.compute((N,), lambda i: te.sum(a[i, k] * a[i, k], axis=k), name="S")
sums = te.create_prim_func([a, s], name="row_norms")

class OuterParallel(tir.StmtMutator):
    def visit_For(self, loop):
        inner = tir.StmtMutator.visit_For(self, loop)
        if loop.var.name != "i":
            return inner
        return For(loop.var, loop.start, loop.extent, "parallel", inner.body)

sums = sums.with_body(OuterParallel().visit_stmt(sums.body))
assert "parallel(n)" in str(sums)
check(sums, rng.standard_normal((37, 11)), target=always)

tmp = Buffer("T", (M,), "float32", scope="local")
x, y = Buffer("X", (N, M), "float32"), Buffer("Y", (N, M), "float32")
fill = For(J, 0, M, "serial", BufferStore(tmp, x[I, J] + 1.0, (J,)))
drain = For(J2, 0, M, "vectorized", BufferStore(y, tmp[M - 1 - J2] * 3.0, (I, J2)))
scratch = PrimFunc("scratch", (x, y), For(I, 0, N, "parallel", Allocate(tmp,
                   tir.seq(fill, drain))))
check(scratch, rng.standard_normal((50, 19)).astype(np.float32), target=always)

# nested parallel loops (the inner team is the calling thread)
nested = PrimFunc("nested", rows_func("x").params, For(I, 0, N, "parallel",
                  For(J, 0, M, "parallel", BufferStore(rows_func("x").params[1],
                  rows_func("x").params[0][I, J] - 1.0, (I, J)))))
check(nested, rng.standard_normal((9, 40)).astype(np.float32), target=always)
print("threads", before, after, os.environ["OMP_WAIT_POLICY"])
""",
        env={"OMP_NUM_THREADS": "2"},
    )
    words = output.split()
    before, after, policy = int(words[-3]), int(words[-2]), words[-1]
    assert after == before + 1  # libgomp's team of two: one worker thread started
    assert policy == "passive"  # set before libgomp loaded (the user had not chosen one)


def test_chunk_claims_cover_every_iteration_once_and_restart_per_entry(isolated):
    # Threads claim chunks from a counter: every chunk size (1 iteration for heavy
    # rows, many for light ones), ragged last chunks, and a parallel loop entered
    # again by an enclosing serial loop (the counter restarts) must each run every
    # iteration exactly once: ``+=`` would show a repeated or missed iteration.
    output = isolated(
        KERNELS
        + """
always = replace(host_target(), parallel_min_work=0)
rng = np.random.default_rng(2)
for n, m in ((3, 1), (13, 7), (97, 1), (1000, 3), (5, 40000), (33, 20000)):
    check(rows_func("rows"), rng.standard_normal((n, m)).astype(np.float32), target=always)

a, c = Buffer("A", (6, N, M), "float32"), Buffer("C", (N, M), "float32")
accumulate = BufferStore(c, c[I, J] + a[P, I, J], (I, J))
body = For(I, 0, N, "parallel", For(J, 0, M, "serial", accumulate))
func = PrimFunc("again", (a, c), For(P, 0, 6, "serial", body))
for n, m in ((1, 1), (9, 3), (70, 5), (17, 3000)):
    x = rng.standard_normal((6, n, m)).astype(np.float32)
    got = np.zeros((n, m), np.float32)
    build(func, target=always)(x, got)  # C is read and written: updated in place
    np.testing.assert_allclose(got, x.sum(axis=0), rtol=1e-5, atol=1e-5)
print("ok")
""",
        env={"OMP_NUM_THREADS": "2"},
    )
    assert output.split()[-1] == "ok"


def test_small_work_stays_serial_and_large_symbolic_work_goes_parallel(isolated):
    output = isolated(
        KERNELS
        + """
rng = np.random.default_rng(1)
func = rows_func("rows_default")
before = threads()
check(func, rng.standard_normal((4, 100)).astype(np.float32))  # 400 < 32768: serial
small = threads()
check(func, rng.standard_normal((64, 1024)).astype(np.float32))  # 65536 >= 32768: team
print("threads", before, small, threads())
""",
        env={"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "active"},
    )
    before, small, large = (int(w) for w in output.split()[-3:])
    assert small == before and large == before + 1


def test_user_wait_policy_is_kept_and_spinning_workers_exit_cleanly(isolated):
    # With active waiting the worker spins inside libgomp: the library must stay mapped
    # until the process is gone (isolated() asserts the child's exit status is 0).
    output = isolated(
        KERNELS
        + """
check(rows_func("r"), np.ones((2, 2), np.float32), target=replace(host_target(),
      parallel_min_work=0))
print(os.environ["OMP_WAIT_POLICY"])
""",
        env={"OMP_WAIT_POLICY": "active", "OMP_NUM_THREADS": "2"},
    )
    assert output.split()[-1] == "active"


def _rows(extent_n, extent_m) -> PrimFunc:
    a, c = Buffer("A", (N, M), "float32"), Buffer("C", (N, M), "float32")
    inner = For(J, 0, extent_m, "serial", BufferStore(c, a[I, J] + 1.0, (I, J)))
    return PrimFunc("rows_ir", (a, c), For(I, 0, extent_n, "parallel", inner))


def test_constant_small_parallel_loop_is_emitted_serially():
    text = source(_rows(8, 16), "ir")
    assert "GOMP_parallel" not in text and "omp_get_num_threads" not in text


def test_constant_large_parallel_loop_always_calls_gomp():
    text = source(_rows(256, 1024), "ir")
    impl = re.search(r'define internal void @"relaxjax_rows_ir.impl".*?\n}', text, re.S).group(0)
    assert 'call void @"GOMP_parallel"' in impl and "icmp sge" not in impl


def test_symbolic_parallel_loop_tests_its_work_at_run_time():
    text = source(_rows(N, M), "ir")
    impl = re.search(r'define internal void @"relaxjax_rows_ir.impl".*?\n}', text, re.S).group(0)
    assert 'call void @"GOMP_parallel"' in impl
    threshold = host_target().parallel_min_work
    assert re.search(rf"icmp sge i64 %\"?[.\w]+\"?, {threshold}", impl)
    assert 'call void @"relaxjax_rows_ir.parallel1"' in impl  # the serial fallback
    outlined = re.search(r'define internal void @"relaxjax_rows_ir.parallel1.impl"\((.*?)\)', text)
    assert outlined.group(1).count("noalias") == 2  # buffers stay noalias in the body
    body = re.search(r'define internal void @"relaxjax_rows_ir.parallel1.impl".*?\n}', text, re.S)
    assert "atomicrmw add" in body.group(0)  # threads claim chunks from a shared counter


def test_parallel_threshold_is_a_target_setting():
    target = Target(
        host_target().triple, host_target().cpu, host_target().features, parallel_min_work=10
    )
    assert "GOMP_parallel" in source(_rows(8, 16), "ir", target=target)
