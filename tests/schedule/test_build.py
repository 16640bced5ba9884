"""Scheduled kernels compiled with ``relax.build`` (LLVM) compute what the reference
interpreter computes on the unscheduled kernel.

The kernels run in a child interpreter: a process that ran a ``parallel`` loop
(libgomp) must not fork, and pytest's process may fork later.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).parent
SRC = HERE.parents[1] / "src"

CHILD = """
import numpy as np
import relaxjax as relax
from relaxjax import schedule
from sched_kernels import (
    SIZES, elementwise, matmul, outputs_of, random_inputs, rowsum, softmax, stencil,
    sum_then_scale, two_stage,
)


def split_reorder_parallel():
    sch = schedule.Schedule(matmul())
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    sch.parallel(io)
    sch.vectorize(ji)
    sch.unroll(ii)
    return sch


def fuse_parallel_vectorize():
    sch = schedule.Schedule(elementwise())
    i, j = sch.get_loops(sch.get_block("B"))
    f = sch.fuse(i, j)
    fo, fi = sch.split(f, factors=[None, 16])
    sch.parallel(fo)
    sch.vectorize(fi)
    return sch


def peel_unroll():
    sch = schedule.Schedule(elementwise())
    i, j = sch.get_loops(sch.get_block("B"))
    jo, ji = sch.split(j, factors=[None, 4], tail="peel")
    sch.unroll(ji)
    return sch


def compute_at_parallel():
    sch = schedule.Schedule(two_stage())
    i, j = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 4])
    sch.compute_at(sch.get_block("B"), io)
    sch.parallel(io)
    return sch


def reverse_compute_at_softmax():
    sch = schedule.Schedule(softmax())
    i, _ = sch.get_loops(sch.get_block("y"))
    for name in ("s", "e", "mx"):
        sch.compute_at(sch.get_block(name), i)
    sch.parallel(i)
    return sch


def caches_and_decompose():
    sch = schedule.Schedule(matmul())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, 4])
    sch.reorder(io, j, ii)
    a_local = sch.cache_read(c, "A", "local")
    sch.compute_at(a_local, io)
    c_local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(c_local, io)
    sch.decompose_reduction(c, k)
    sch.parallel(io)
    return sch


def rfactor_vectorized():
    sch = schedule.Schedule(rowsum())
    _, k = sch.get_loops(sch.get_block("S"))
    _, k1 = sch.split(k, factors=[None, 4])
    sch.rfactor(k1, factor_axis=1)
    sch.vectorize(k1)
    return sch


def inline_stencil():
    sch = schedule.Schedule(stencil())
    sch.compute_inline(sch.get_block("B"))
    (i,) = sch.get_loops(sch.get_block("C"))
    sch.parallel(i)
    return sch


def reverse_inline_and_align():
    sch = schedule.Schedule(sum_then_scale())
    i, _ = sch.get_loops(sch.get_block("Y"))
    sch.compute_at(sch.get_block("S"), i)
    sch2 = schedule.Schedule(two_stage())
    sch2.storage_align(sch2.get_block("B"), 0, 0, 8, 1)
    return sch, sch2


cases = [
    split_reorder_parallel(), fuse_parallel_vectorize(), peel_unroll(), compute_at_parallel(),
    reverse_compute_at_softmax(), caches_and_decompose(), rfactor_vectorized(), inline_stencil(),
    *reverse_inline_and_align(),
]
funcs = [sch.func.with_name(f"case{k}") for k, sch in enumerate(cases)]
compiled = relax.build(funcs, target="llvm")
for k, sch in enumerate(cases):
    kernel = compiled[f"case{k}"]
    names = {s.name for s in sch.original.symbols()}
    for seed, env in enumerate(SIZES):
        env = {key: v for key, v in env.items() if key in names}
        arrays = random_inputs(sch.original, env, seed)
        want = outputs_of(sch.original, arrays, env)
        outs = [np.full_like(w, np.nan) for w in want]
        kernel(*arrays, *outs)
        for w, got in zip(want, outs):
            got = np.where(np.isnan(w), w, got)
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5, err_msg=f"case{k} {env}")
    print("ok", k, "parallel" in str(sch.func))
"""


def test_scheduled_kernels_compile_and_match_the_interpreter(private_cache):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(HERE), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = result.stdout.split("\n")
    assert [line.split()[1] for line in lines if line.startswith("ok")] == [
        str(k) for k in range(10)
    ]
    assert sum(line.endswith("True") for line in lines) == 6
