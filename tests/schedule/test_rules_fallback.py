"""No silent cliffs: the fallback rule and the notes a kernel carries when it is not
parallel or not vectorised (``schedule/rules/fallback.py``, ``notes.py``)."""

from __future__ import annotations

import pytest

from relaxjax import arith
from relaxjax.schedule.rules import (
    NOTE_ATTR,
    RULE_ATTR,
    audit,
    default_schedule,
    fallback_rule,
    schedule_note,
)
from relaxjax.tir import te

from .test_rules_kernels import assert_equivalent

N, M = arith.syms("n m")
SIZES = [{"n": 0, "m": 3}, {"n": 1, "m": 1}, {"n": 5, "m": 70}, {"n": 9, "m": 0}]


def _elementwise():
    x = te.placeholder((N, M), "float32", "x")
    y = te.compute((N, M), lambda i, j: x[i, j] * 2.0 + 1.0, name="y")
    return te.create_prim_func([x, y], name="scale")


def _rowsum():
    x = te.placeholder((N, M), "float32", "x")
    k = te.reduce_axis(M, "k")
    s = te.compute((N,), lambda i: te.sum(x[i, k], axis=k), name="s")
    return te.create_prim_func([x, s], name="rowsum")


def _colsum():
    x = te.placeholder((N, M), "float32", "x")
    k = te.reduce_axis(N, "k")
    s = te.compute((M,), lambda j: te.sum(x[k, j], axis=k), name="s")
    return te.create_prim_func([x, s], name="colsum")


def _total():
    x = te.placeholder((N,), "float32", "x")
    r = te.reduce_axis(N, "r")
    t = te.compute((), lambda: te.sum(x[r], axis=r), name="total")
    return te.create_prim_func([x, t], name="total")


def test_fallback_rule_makes_an_elementwise_kernel_parallel_and_vectorised():
    func = _elementwise()
    scheduled = fallback_rule(func)
    found = audit(scheduled)
    assert found.parallel and found.vectorized, str(scheduled)
    assert " in parallel(" in str(scheduled) and " in vectorized(" in str(scheduled)
    assert_equivalent(func, scheduled, SIZES)


def test_fallback_rule_runs_the_rows_of_a_reduction_in_parallel():
    func = _rowsum()
    scheduled = fallback_rule(func)
    assert audit(scheduled).parallel, str(scheduled)
    assert_equivalent(func, scheduled, SIZES, rtol=1e-4)


def test_fallback_rule_vectorises_the_kept_axis_of_a_column_sum():
    func = _colsum()
    scheduled = fallback_rule(func)
    assert " in vectorized(" in str(scheduled), str(scheduled)
    assert_equivalent(func, scheduled, SIZES, rtol=1e-4)


def test_fallback_rule_does_not_apply_to_a_scheduled_kernel():
    scheduled = fallback_rule(_elementwise())
    assert fallback_rule(scheduled) is None


def test_default_schedule_takes_the_fallback_when_the_specific_rules_do_not_apply():
    def declines(func, target):
        return None

    rules = [("injective", declines), ("fallback", fallback_rule)]
    scheduled = default_schedule(_elementwise(), rules=rules)
    assert dict(scheduled.attrs)[RULE_ATTR] == "fallback"
    assert NOTE_ATTR not in dict(scheduled.attrs)
    unscheduled = default_schedule(_elementwise(), rules=[("injective", declines)])
    note = dict(unscheduled.attrs)[NOTE_ATTR]
    assert note == (
        "not parallel: no rule left its outer loops serial, though a parallel outer loop "
        "is legal; not vectorised: loop j runs m iterations one by one: it carries a "
        "dependence or is not the innermost axis of its data"
    )


def test_a_reduction_to_one_value_says_why_it_is_serial():
    func = _total()
    note = dict(default_schedule(func).attrs).get(NOTE_ATTR, "")
    assert note.startswith("not parallel: a reduction to one value"), note


def test_a_strided_reduction_left_scalar_is_explained():
    func = _colsum()
    note = schedule_note(func, func, "reduction")
    assert "not vectorised: loop k runs n iterations one by one: a reduction along an axis " in note
    assert "which the reduction rule did not vectorise" in note


def test_a_small_kernel_is_not_asked_to_be_parallel():
    x = te.placeholder((16, 16), "float32", "x")
    y = te.compute((16, 16), lambda i, j: x[i, j] + 1.0, name="y")
    func = te.create_prim_func([x, y], name="small")
    assert schedule_note(func, func) is None  # 256 iterations, short rows: nothing missing


@pytest.mark.parametrize("make", [_elementwise, _rowsum])
def test_default_kernels_of_simple_nests_are_parallel(make):
    scheduled = default_schedule(make())
    assert audit(scheduled).parallel, str(scheduled)


def test_the_note_survives_printing():
    func = _total()
    text = str(default_schedule(func))
    assert "schedule_note" in text and "a reduction to one value" in text


def test_a_strided_reduction_takes_the_fallback_when_it_is_strictly_better():
    """The column sum of the ``sum`` op: the reduction rule leaves its reduction strided
    and scalar; the fallback's schedule is parallel and vectorised, so it wins."""
    import relaxjax as relax
    import relaxjax.numpy as rnp
    from relaxjax.schedule.rules import CPU_RULES

    spec = relax.Tensor(("n", 64), "float32")
    (func,) = relax.jit(lambda x: rnp.sum(x, axis=0)).lower(spec).kernels().values()
    without = default_schedule(func, rules=CPU_RULES[:3])
    assert dict(without.attrs)[RULE_ATTR] == "reduction" and NOTE_ATTR in dict(without.attrs)
    scheduled = default_schedule(func)
    assert dict(scheduled.attrs)[RULE_ATTR] == "fallback", str(scheduled)
    assert NOTE_ATTR not in dict(scheduled.attrs)
    found = audit(scheduled)
    assert found.parallel and found.vectorized
    envs = [{"d0": 0}, {"d0": 1}, {"d0": 7}]
    assert_equivalent(func, scheduled, envs, rtol=1e-4)


def test_a_rule_whose_schedule_the_fallback_cannot_improve_is_kept():
    total = default_schedule(_total())
    assert dict(total.attrs)[RULE_ATTR] == "reduction"
