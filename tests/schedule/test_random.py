"""Random sequences of primitives (legal or not) on random kernels: every step either
raises ScheduleError (and leaves the schedule as it was) or keeps the kernel's meaning;
the final kernel is equivalent to the original and its trace replays."""

from hypothesis import given
from hypothesis import strategies as st
from sched_kernels import (
    assert_equivalent,
    assert_replays,
    elementwise,
    matmul,
    rowmax,
    rowsum,
    softmax,
    stencil,
    sum_then_scale,
    two_stage,
)

from relaxjax import schedule
from relaxjax.schedule import ScheduleError

KERNELS = {
    "elementwise": elementwise,
    "rowsum": rowsum,
    "rowmax": rowmax,
    "matmul": matmul,
    "two_stage": two_stage,
    "sum_then_scale": sum_then_scale,
    "stencil": stencil,
    "softmax": softmax,
}

PRIMITIVES = (
    "split",
    "split",
    "fuse",
    "reorder",
    "parallel",
    "vectorize",
    "unroll",
    "compute_at",
    "reverse_compute_at",
    "compute_inline",
    "reverse_compute_inline",
    "cache_read",
    "cache_write",
    "decompose_reduction",
    "rfactor",
    "annotate",
)

SIZES = (
    {"n": 0, "m": 3, "K": 2},
    {"n": 5, "m": 7, "K": 3},
    {"n": 6, "m": 4, "K": 0},
)


def blocks_of(sch):
    return [b for b in sch.get_child_blocks(sch.get_block("root"))]


def apply_random_step(sch, data):
    primitive = data.draw(st.sampled_from(PRIMITIVES), label="primitive")
    blocks = blocks_of(sch)
    if not blocks:
        return primitive
    block = data.draw(st.sampled_from(blocks), label="block")
    loops = sch.get_loops(block)
    others = [b for b in blocks if b != block] or blocks
    other = data.draw(st.sampled_from(others), label="other block")
    other_loops = sch.get_loops(other)
    pick = st.sampled_from(loops) if loops else st.nothing()
    if primitive == "split" and loops:
        factors = data.draw(
            st.sampled_from([[None, 4], [None, 3], [2, None], [None, 2, 2], [1, None], [None, 8]]),
            label="factors",
        )
        tail = data.draw(st.sampled_from(["predicate", "predicate", "peel", "exact"]))
        sch.split(data.draw(pick), factors=factors, tail=tail)
    elif primitive == "fuse" and len(loops) >= 2:
        start = data.draw(st.integers(0, len(loops) - 2))
        sch.fuse(*loops[start : start + 2])
    elif primitive == "reorder" and len(loops) >= 2:
        chosen = data.draw(st.permutations(loops), label="order")[: data.draw(st.integers(2, 3))]
        sch.reorder(*chosen)
    elif primitive in ("parallel", "vectorize", "unroll") and loops:
        getattr(sch, primitive)(data.draw(pick))
    elif primitive in ("compute_at", "reverse_compute_at") and other_loops:
        getattr(sch, primitive)(block, data.draw(st.sampled_from(other_loops)))
    elif primitive in ("compute_inline", "reverse_compute_inline"):
        getattr(sch, primitive)(block)
    elif primitive in ("cache_read", "cache_write"):
        sch_fn = getattr(sch, primitive)
        sch_fn(block, data.draw(st.integers(0, 1)), data.draw(st.sampled_from(["local", "shared"])))
    elif primitive == "decompose_reduction" and loops:
        sch.decompose_reduction(block, data.draw(pick))
    elif primitive == "rfactor" and loops:
        sch.rfactor(data.draw(pick), factor_axis=data.draw(st.integers(0, 1)))
    elif primitive == "annotate" and loops:
        sch.annotate(data.draw(pick), "hint", data.draw(st.integers(0, 3)))
    return primitive


@given(kernel=st.sampled_from(sorted(KERNELS)), data=st.data())
def test_random_schedules_are_sound(kernel, data):
    func = KERNELS[kernel]()
    sch = schedule.Schedule(func)
    for _ in range(data.draw(st.integers(1, 6), label="steps")):
        before, trace_length = sch.func, len(sch.trace)
        try:
            apply_random_step(sch, data)
        except ScheduleError:
            if sch.func is before:
                assert len(sch.trace) == trace_length + _queries_since(sch, trace_length)
            continue
    assert_equivalent(func, sch.func, SIZES, rtol=1e-4)
    assert_replays(sch)


def _queries_since(sch, length):
    """Steps recorded since ``length`` that only query (get_block, get_loops, ...)."""
    queries = ("get_block", "get_loops", "get_child_blocks")
    extra = sch.trace.instructions[length:]
    assert all(inst.name in queries or inst.name == "split" for inst in extra), [
        inst.name for inst in extra
    ]
    return len(extra)
