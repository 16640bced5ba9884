"""Random sequences of primitives (legal or not) on random kernels: every step either
raises ScheduleError (and leaves the schedule as it was) or keeps the kernel's meaning;
the final kernel is equivalent to the original and its trace replays.

Splits that do not divide their (symbolic) loop guard blocks with predicates; the
``split_then`` step follows such a split with a block primitive on the loops or the
block it just made, where dropping a predicate would read or write out of bounds."""

import contextlib

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
    "split_then",
    "split_then",
)

NON_DIVIDING = ([None, 3], [None, 4], [None, 8], [2, None], [None, 2, 3])

FOLLOW_UPS = (
    "compute_at",
    "reverse_compute_at",
    "compute_inline",
    "reverse_compute_inline",
    "cache_read",
    "cache_write",
    "decompose_reduction",
    "rfactor",
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
    elif primitive == "split_then" and loops:
        follow = data.draw(st.sampled_from(FOLLOW_UPS), label="follow-up")
        split_then(sch, data, block, data.draw(pick), follow)
    return primitive


def split_then(sch, data, block, loop, follow):
    """Splits ``loop`` (of ``block``) by factors that do not divide its symbolic extent,
    then applies ``follow`` to the new loops or to ``block``, and, for the primitives
    that make a block, moves that block under one of the new loops."""
    factors = data.draw(st.sampled_from(NON_DIVIDING), label="non-dividing factors")
    parts = sch.split(loop, factors=factors)
    part = data.draw(st.sampled_from(parts), label="part")
    others = [b for b in blocks_of(sch) if b != block]
    other = data.draw(st.sampled_from(others), label="other block") if others else None
    if follow in ("compute_at", "reverse_compute_at"):
        if other is None:
            return
        if data.draw(st.booleans(), label="move the split block"):
            targets = sch.get_loops(other)
            if targets:
                getattr(sch, follow)(block, data.draw(st.sampled_from(targets)))
        else:
            getattr(sch, follow)(other, part)
    elif follow in ("compute_inline", "reverse_compute_inline"):
        getattr(sch, follow)(data.draw(st.sampled_from([block] + others)))
    elif follow in ("cache_read", "cache_write"):
        copy = getattr(sch, follow)(block, data.draw(st.integers(0, 1)), "local")
        mover = sch.compute_at if follow == "cache_read" else sch.reverse_compute_at
        mover(copy, part)
    elif follow == "decompose_reduction":
        sch.decompose_reduction(block, part)
    elif follow == "rfactor":
        rf = sch.rfactor(part, factor_axis=data.draw(st.integers(0, 1)))
        write_back = sch.get_loops(block)
        if write_back:
            sch.compute_at(rf, data.draw(st.sampled_from(write_back), label="write-back loop"))


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


# several symbol values, none a multiple of 3 or 8 except where 0
SPLIT_SIZES = (
    {"n": 0, "m": 3, "K": 2},
    {"n": 5, "m": 13, "K": 7},
    {"n": 4, "m": 7, "K": 10},
    {"n": 2, "m": 1, "K": 0},
)


@given(
    kernel=st.sampled_from(sorted(KERNELS)),
    follow=st.sampled_from(FOLLOW_UPS),
    data=st.data(),
)
def test_non_dividing_split_then_a_block_primitive_is_sound(kernel, follow, data):
    func = KERNELS[kernel]()
    sch = schedule.Schedule(func)
    blocks = blocks_of(sch)
    block = data.draw(st.sampled_from(blocks), label="block")
    loops = sch.get_loops(block)
    # a reduction's loops come last: rfactor and decompose_reduction need one of them
    candidates = loops[-1:] if follow in ("rfactor", "decompose_reduction") else loops
    loop = data.draw(st.sampled_from(candidates), label="loop")
    # a refusal keeps the steps before it, which must keep the meaning too
    with contextlib.suppress(ScheduleError):
        split_then(sch, data, block, loop, follow)
    assert_equivalent(func, sch.func, SPLIT_SIZES, rtol=1e-4)
    assert_replays(sch)


def _queries_since(sch, length):
    """Steps recorded since ``length`` that only query (get_block, get_loops, ...)."""
    queries = ("get_block", "get_loops", "get_child_blocks")
    extra = sch.trace.instructions[length:]
    assert all(inst.name in queries or inst.name == "split" for inst in extra), [
        inst.name for inst in extra
    ]
    return len(extra)
