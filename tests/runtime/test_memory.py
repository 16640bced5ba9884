"""The memory plan: slots never overlap while both occupants are alive, and are reused."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relaxjax import arith
from relaxjax.runtime.memory import ALIGNMENT, Request, aligned, plan_memory

n, m = arith.syms("n m")
SIZES = [n * 4, n * 8, m * 4, n * m * 4, 256, 4, 0, n * 4 + 12]


@st.composite
def request_lists(draw):
    count = draw(st.integers(0, 12))
    requests = []
    for _ in range(count):
        first = draw(st.integers(0, 10))
        last = draw(st.integers(first, 12))
        size = draw(st.sampled_from(SIZES + [None]))
        requests.append(Request(size, first, last))
    return requests


def _value(dim, env):
    return arith.evaluate(dim, env)


@given(request_lists(), st.integers(0, 50), st.integers(0, 50))
def test_live_requests_never_share_bytes(requests, n_value, m_value):
    env = {"n": n_value, "m": m_value}
    plan = plan_memory(requests)
    assert len(plan.slot_of) == len(requests)
    for i, a in enumerate(requests):
        slot = plan.slot_of[i]
        size = plan.slot_sizes[slot]
        if a.nbytes is None:
            assert size is None
            assert [plan.slot_of[j] for j in range(len(requests))].count(slot) == 1
            continue
        assert _value(size, env) >= _value(a.nbytes, env)  # the slot holds its occupant
        assert _value(plan.offsets[slot], env) % ALIGNMENT == 0
        for j, b in enumerate(requests):
            if j != i and plan.slot_of[j] == slot:
                assert a.last < b.first or b.last < a.first  # lifetimes are disjoint


@given(request_lists(), st.integers(0, 50), st.integers(0, 50))
def test_slots_are_laid_out_back_to_back(requests, n_value, m_value):
    env = {"n": n_value, "m": m_value}
    plan = plan_memory(requests)
    symbolic = [s for s in plan.slot_sizes if s is not None]
    position = 0
    for slot, size in enumerate(symbolic):
        assert _value(plan.offsets[slot], env) == position
        position += _value(size, env)
    assert _value(plan.symbolic_bytes, env) == position


def test_a_chain_needs_two_slots():
    chain = [Request(n * 16, i, i + 1) for i in range(6)]
    plan = plan_memory(chain)
    assert plan.num_slots == 2
    assert plan.slot_of == (0, 1, 0, 1, 0, 1)
    assert arith.prove_equal(plan.symbolic_bytes, 2 * aligned(n * 16))


def test_equal_sizes_are_preferred_and_slots_grow_to_the_max():
    plan = plan_memory([Request(n * 4, 0, 1), Request(m * 4, 0, 1), Request(m * 4, 2, 3)])
    assert plan.slot_of == (0, 1, 1)
    grown = plan_memory([Request(n * 4, 0, 1), Request(m * 4, 2, 3)])
    assert grown.slot_of == (0, 0)
    assert arith.prove_equal(grown.slot_sizes[0], arith.max_(aligned(n * 4), aligned(m * 4)))


def test_a_kernel_never_reads_and_writes_one_slot():
    # the second request is written by the launch that last reads the first
    plan = plan_memory([Request(64, 0, 1), Request(64, 1, 2)])
    assert plan.slot_of == (0, 1)


def test_runtime_sized_requests_get_their_own_slots():
    plan = plan_memory([Request(None, 0, 0), Request(None, 1, 1), Request(64, 0, 3)])
    assert plan.slot_sizes == (64, None, None)
    assert plan.slot_of == (1, 2, 0)


def test_request_validation():
    with pytest.raises(ValueError, match=r"read \(at 2\) before written \(3\)"):
        Request(4, 3, 2)
