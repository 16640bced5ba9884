"""Interval bounds and three-valued comparisons."""

import pytest

from relaxjax import arith
from relaxjax.arith import bounds, compare, max_, min_, sym, syms

n, m = syms("n m")
p = sym("p", lower=1, upper=8)
q = sym("q", lower=None)
neg = sym("r", lower=-5, upper=-2)


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: n, (0, None)),
        (lambda: p, (1, 8)),
        (lambda: q, (None, None)),
        (lambda: p * 2 + 1, (3, 17)),
        (lambda: -p + 10, (2, 9)),
        (lambda: p * p - p, (-7, 63)),  # interval arithmetic is sound, not exact
        (lambda: neg * neg, (4, 25)),
        (lambda: q * q, (0, None)),
        (lambda: p * neg, (-40, -2)),
        (lambda: n % 8, (0, 7)),
        (lambda: (n % 8) * 2 + 1, (1, 15)),
        (lambda: p % 3, (0, 2)),
        (lambda: q % 5, (0, 4)),
        (lambda: n // 3, (0, None)),
        (lambda: p // 3, (0, 2)),
        (lambda: neg // 2, (-3, -1)),
        (lambda: n // p, (0, None)),
        (lambda: 100 // p, (12, 100)),
        (lambda: n % p, (0, 7)),
        (lambda: p % n, (0, 8)),
        (lambda: n % neg, (-4, 0)),
        (lambda: neg % n, (0, None)),
        (lambda: n // q, (None, None)),
        (lambda: min_(p, 5), (1, 5)),
        (lambda: max_(p, 5), (5, 8)),
        (lambda: min_(n, neg), (-5, -2)),
        (lambda: n - n % 8, (0, None)),  # symbolic: n % 8 <= n
    ],
)
def test_bounds(build, expected):
    assert bounds(build()) == expected


def test_bounds_of_ints_and_overrides():
    assert bounds(7) == (7, 7)
    assert bounds(n * 2, {"n": (1, 4)}) == (2, 8)
    assert bounds(n * 2 + m, {n: (1, 4), "m": (0, None)}) == (2, None)
    assert bounds(p, {"p": (None, 3)}) == (None, 3)
    with pytest.raises(TypeError, match="a range key must be a Sym or a symbol name, got 3"):
        bounds(n, {3: (0, 1)})


def test_symbolic_refinement_in_bounds():
    assert bounds(min_(n, 4) - n) == (None, 0)
    assert bounds((n // 2) * 2 - n) == (-1, 0)
    assert bounds(n % 8 - n) == (None, 0)
    assert bounds(n % p - p) == (-8, -1)
    assert bounds(n % m - m, {"m": (1, None)}) == (None, -1)


@pytest.mark.parametrize(
    ("a", "op", "b", "expected"),
    [
        (lambda: n + 1, ">", lambda: n, True),
        (lambda: n, "<", lambda: n + 1, True),
        (lambda: n, "<=", lambda: n, True),
        (lambda: n, "<", lambda: n, False),
        (lambda: n, ">=", lambda: 0, True),
        (lambda: n, "<", lambda: 0, False),
        (lambda: n, "<", lambda: 4, None),
        (lambda: n, "==", lambda: m, None),
        (lambda: n, "!=", lambda: m, None),
        (lambda: n * 2, "==", lambda: m * 2 + 1, False),
        (lambda: n * 2, "!=", lambda: m * 2 + 1, True),
        (lambda: (n + 1) * 2, "==", lambda: n * 2 + 2, True),
        (lambda: n + 1, "==", lambda: n, False),
        (lambda: p, "<=", lambda: 8, True),
        (lambda: p, ">", lambda: 8, False),
        (lambda: p, "!=", lambda: 0, True),
        (lambda: p * 2, "<", lambda: 17, True),
        (lambda: min_(n, 4), "<=", lambda: n, True),
        (lambda: min_(n, 4), "<=", lambda: 4, True),
        (lambda: max_(n, 4), ">=", lambda: n, True),
        (lambda: min_(n, m), "<=", lambda: max_(n, m), True),
        (lambda: (n // 2) * 2, "<=", lambda: n, True),
        (lambda: (n // 2) * 2, ">", lambda: n - 2, True),
        (lambda: n % 8, "<=", lambda: n, True),
        (lambda: n % 8, "<", lambda: 8, True),
        (lambda: n % p, "<", lambda: p, True),
        (lambda: n % m, "<", lambda: m, None),  # m may be 0
        (lambda: q, ">=", lambda: 0, None),
        (lambda: neg, "<", lambda: 0, True),
        (lambda: 3, "<", lambda: 4, True),
        (lambda: 3, "==", lambda: 4, False),
        (lambda: sym("c", lower=3, upper=3), "==", lambda: 3, True),
    ],
)
def test_compare(a, op, b, expected):
    assert compare(a(), op, b()) is expected


def test_compare_with_ranges():
    assert compare(n, "<", 4) is None
    assert compare(n, "<", 4, {"n": (0, 3)}) is True
    assert compare(n, ">=", 4, {n: (4, None)}) is True
    assert compare(n * 2, "==", 8, {"n": (4, 4)}) is True


def test_compare_rejects_unknown_operator():
    with pytest.raises(ValueError, match="unknown comparison '=<'; expected one of ==, !=, <"):
        compare(n, "=<", 1)


def test_prove_functions():
    assert arith.prove_equal((n + 1) * 2, 2 * n + 2)
    assert arith.prove_equal(4, 4) and not arith.prove_equal(4, 5)
    assert not arith.prove_equal(n, m)
    assert arith.prove_ne(n * 2, m * 2 + 1) and not arith.prove_ne(n, m)
    assert arith.prove_lt(n, n + 1) and not arith.prove_lt(n, m)
    assert arith.prove_le(min_(n, 4), 4) and not arith.prove_le(n, 4)
    assert arith.prove_gt(p, 0) and not arith.prove_gt(n, 0)
    assert arith.prove_ge(n, 0) and not arith.prove_ge(n, 1)
    assert arith.prove_lt(n, 4, {"n": (0, 3)})
