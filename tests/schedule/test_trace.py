"""Handles and the trace: printing, replaying on the same and on another kernel, stale
handles, notebook HTML, and plugging a scheduled kernel back into a module."""

import numpy as np
import pytest
from sched_kernels import (
    assert_equivalent,
    assert_replays,
    elementwise,
    matmul,
    replay,
    two_stage,
)

from relaxjax import arith, schedule
from relaxjax.schedule import ScheduleError
from relaxjax.tir import te

TRACE = """\
b_C = sch.get_block('C')
i, j, k = sch.get_loops(b_C)
i_0, i_1 = sch.split(i, factors=[None, 32])
sch.reorder(i_0, j, i_1)
sch.parallel(i_0)
j_0, j_1 = sch.split(j, factors=[None, 8], tail='peel')
sch.annotate(k, 'pragma', (1, 'x'))"""


def matmul_schedule(func):
    sch = schedule.Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 32])
    sch.reorder(io, j, ii)
    sch.parallel(io)
    sch.split(j, factors=[None, 8], tail="peel")
    sch.annotate(k, "pragma", (1, "x"))
    return sch


def test_trace_prints_python_that_replays():
    sch = matmul_schedule(matmul())
    assert str(sch.trace) == TRACE
    assert len(sch.trace) == 7
    assert [inst.name for inst in sch.trace][:3] == ["get_block", "get_loops", "split"]
    assert_replays(sch)


def test_trace_applies_to_a_structurally_compatible_kernel():
    """The same schedule on a matmul with static shapes and other names."""
    a = te.placeholder((64, 16), "float32", "X")
    b = te.placeholder((16, 24), "float32", "W")
    k = te.reduce_axis(16, "r")
    c = te.compute((64, 24), lambda p, q: te.sum(a[p, k] * b[k, q], axis=k), name="C")
    other = te.create_prim_func([a, b, c], name="dense")
    sch = matmul_schedule(matmul())
    replayed = sch.trace.apply(schedule.Schedule(other))
    assert replayed.func.name == "dense"
    assert "for p_0 in parallel(2):" in str(replayed.func)
    assert_equivalent(other, replayed.func, [{}])
    fresh = schedule.Schedule(other)
    exec(str(sch.trace), {"sch": fresh})
    assert fresh.func == replayed.func


def test_replay_on_an_incompatible_kernel_fails_with_a_schedule_error():
    sch = matmul_schedule(matmul())
    with pytest.raises(ScheduleError, match="get_block: no block named 'C'; blocks: 'B'"):
        sch.trace.apply(schedule.Schedule(elementwise()))
    f = two_stage()
    one = schedule.Schedule(f)
    one.get_loops(one.get_block("C"))
    a = te.placeholder((arith.sym("n"),), "float32", "A")
    c = te.compute((arith.sym("n"),), lambda i: a[i] * 2.0, name="C")
    with pytest.raises(ScheduleError, match="replaying get_loops: the trace expects 2 handle"):
        one.trace.apply(schedule.Schedule(te.create_prim_func([a, c])))


def test_handles_stay_valid_and_stale_ones_say_why():
    sch = schedule.Schedule(elementwise())
    block = sch.get_block("B")
    i, j = sch.get_loops(block)
    sch.split(j, factors=[None, 4])
    sch.parallel(i)  # i is still valid after a split of j
    with pytest.raises(ScheduleError) as err:
        sch.vectorize(j)
    assert str(err.value) == "vectorize: loop j no longer exists: it was split into j_0, j_1"
    fused = sch.fuse(*sch.get_loops(block)[1:])
    assert fused.name == "j_0_j_1_fused"
    with pytest.raises(ScheduleError, match="loop j_0 no longer exists: it was fused into j_0_j_1"):
        sch.unroll(schedule.LoopRV("j_0", block.schedule_id))
    other = schedule.Schedule(elementwise())
    with pytest.raises(ScheduleError, match=r"parallel: LoopRV\(i\) belongs to another schedule"):
        other.parallel(i)
    with pytest.raises(ScheduleError, match="split: expected a LoopRV handle, got BlockRV"):
        sch.split(block, factors=[None, 2])
    with pytest.raises(ScheduleError, match="get_block: no block named 'X'; blocks: 'B'"):
        sch.get_block("X")


def test_names_are_never_reused_and_copy_is_independent():
    sch = schedule.Schedule(elementwise())
    i, _ = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 2])
    fused = sch.fuse(i0, i1)
    again = sch.split(fused, factors=[None, 2])
    assert [h.name for h in again] == ["i_0_i_1_fused_0", "i_0_i_1_fused_1"]
    branch = sch.copy()
    branch.parallel(again[0])
    assert "parallel" not in str(sch.func) and "parallel" in str(branch.func)
    assert len(branch.trace) == len(sch.trace) + 1
    assert_replays(branch)


def test_html_highlights_the_last_step():
    sch = schedule.Schedule(elementwise())
    i, j = sch.get_loops(sch.get_block("B"))
    sch.split(j, factors=[None, 4])
    page = sch._repr_html_()
    assert '<span style="background:#fff3b0">' + " " * 12 + "<b>for</b> j_0 <b>in</b>" in page
    assert "<b>for</b> i <b>in</b> range(n):" in page  # not highlighted
    assert 'sch.<b style="color:#0550ae">split</b>' in page
    assert sch.trace._repr_html_().startswith('<pre class="relaxjax-trace">')
    assert repr(sch).startswith("# Schedule after 3 step(s)\n@prim_func")


def test_replay_helper_reproduces_every_step():
    sch = matmul_schedule(matmul())
    assert replay(sch, matmul()).trace.lines() == sch.trace.lines()


def test_schedule_rejects_non_kernels():
    with pytest.raises(TypeError, match="Schedule expects a tir.PrimFunc, got int"):
        schedule.Schedule(3)


# --- plugging a scheduled kernel back into a module ---------------------------------------


def legalized_add_module():
    """The module of a jitted ``x + y``, legalised but not scheduled (``.lower()``)."""
    import relaxjax as relax

    @relax.jit
    def add(x: relax.Tensor(("n", 16), "float32"), y: relax.Tensor(("n", 16), "float32")):
        return x + y

    return add.lower()


def test_replace_kernel_runs_the_scheduled_kernel():
    from relaxjax.runtime import build_executable

    mod = legalized_add_module()
    (name,) = mod.kernels()
    sch = schedule.Schedule(mod[name])
    (block,) = sch.get_child_blocks(sch.get_block("root"))
    rows, cols = sch.get_loops(block)
    _, inner = sch.split(cols, factors=[None, 4])
    sch.vectorize(inner)
    sch.unroll(rows)
    new = schedule.replace_kernel(mod, name, sch.func.with_name("renamed"))
    assert new[name].name == name and "vectorized(4)" in str(new[name])
    exe = build_executable(new)
    x, y = np.ones((5, 16), "float32"), np.arange(80, dtype="float32").reshape(5, 16)
    np.testing.assert_array_equal(exe(x, y)[0], x + y)


def test_replace_kernel_checks_the_signature():
    mod = legalized_add_module()
    (name,) = mod.kernels()
    with pytest.raises(KeyError, match="the module has no kernel 'nope'; kernels: add"):
        schedule.replace_kernel(mod, "nope", mod[name])
    with pytest.raises(TypeError, match="replace_kernel expects a tir.PrimFunc, got str"):
        schedule.replace_kernel(mod, name, "kernel")
    with pytest.raises(ScheduleError) as err:
        schedule.replace_kernel(mod, name, elementwise())
    assert str(err.value).startswith(f"replace_kernel: kernel '{name}' cannot be replaced:")
    wrong = mod[name].specialize({arith.sym(mod[name].symbols()[0].name): 4})
    with pytest.raises(ScheduleError, match="axis 0 is .*, the new kernel's .* has 4"):
        schedule.replace_kernel(mod, name, wrong)
