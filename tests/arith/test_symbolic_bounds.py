"""Symbols whose upper bound is a dim over other symbols (``0 <= k <= n * 2``).

Data-dependent sizes (the count of a ``nonzero``) are such symbols. The laws are
checked with hypothesis against plain Python ints, sampling only values that respect
the bounds (``k`` drawn below its bound's value): simplification keeps values,
``bounds`` and ``compare`` are sound, ``min``/``max`` simplification never drops the
smaller/larger operand. Unit tests pin what the bounds must prove.
"""

from __future__ import annotations

import operator

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from relaxjax import arith
from relaxjax.arith import bounds, compare, evaluate, max_, min_, prove_le, prove_lt, sym
from relaxjax.errors import InconclusiveShapeError

N = sym("n")
M = sym("m", lower=1, upper=6)
K = sym("k", upper=N * 2)  # 0 <= k <= 2n
J = sym("j", upper=K)  # 0 <= j <= k
P = sym("p", lower=2, upper=N * M + 3)  # 2 <= p <= n*m + 3
Q = sym("q", lower=None)  # any integer
SYMBOLS = {"n": N, "m": M, "k": K, "j": J, "p": P, "q": Q}


@st.composite
def envs(draw):
    """Symbol values within their (possibly symbolic) bounds."""
    n = draw(st.integers(0, 12))
    m = draw(st.integers(1, 6))
    k = draw(st.integers(0, 2 * n))
    j = draw(st.integers(0, k))
    p = draw(st.integers(2, n * m + 3))
    q = draw(st.integers(-20, 20))
    return {"n": n, "m": m, "k": k, "j": j, "p": p, "q": q}


BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
    "min": min,
    "max": max,
}
DIM_BINARY = {**BINARY, "min": min_, "max": max_}

leaves = st.one_of(
    st.sampled_from(sorted(SYMBOLS)).map(lambda name: ("sym", name)),
    st.integers(-4, 6).map(lambda value: ("int", value)),
)
trees = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.tuples(st.sampled_from(sorted(BINARY)), children, children),
        children.map(lambda child: ("neg", child)),
    ),
    max_leaves=7,
)


def run_python(tree, env):
    kind = tree[0]
    if kind == "sym":
        return env[tree[1]]
    if kind == "int":
        return tree[1]
    if kind == "neg":
        return -run_python(tree[1], env)
    return BINARY[kind](run_python(tree[1], env), run_python(tree[2], env))


def build(tree):
    kind = tree[0]
    if kind == "sym":
        return SYMBOLS[tree[1]]
    if kind == "int":
        return tree[1]
    if kind == "neg":
        return -build(tree[1])
    return DIM_BINARY[kind](build(tree[1]), build(tree[2]))


def value_or_none(tree, env):
    try:
        return run_python(tree, env)
    except ZeroDivisionError:
        return None


def dim_or_none(tree):
    try:
        return build(tree)
    except ZeroDivisionError:
        return None


@given(trees, st.lists(envs(), min_size=1, max_size=8))
def test_simplification_preserves_value(tree, samples):
    dim = dim_or_none(tree)
    for env in samples:
        expected = value_or_none(tree, env)
        if dim is not None and expected is not None:
            assert evaluate(dim, env) == expected, (tree, str(dim), env)


@given(trees, st.lists(envs(), min_size=1, max_size=8))
def test_bounds_are_sound(tree, samples):
    dim = dim_or_none(tree)
    assume(dim is not None)
    lo, hi = bounds(dim)
    for env in samples:
        value = value_or_none(tree, env)
        if value is not None:
            assert lo is None or lo <= value, (str(dim), env, lo)
            assert hi is None or value <= hi, (str(dim), env, hi)


RELATIONS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@given(trees, trees, st.sampled_from(sorted(RELATIONS)), st.lists(envs(), max_size=8))
def test_compare_is_sound(left, right, op, samples):
    a, b = dim_or_none(left), dim_or_none(right)
    assume(a is not None and b is not None)
    answer = compare(a, op, b)
    if answer is None:
        return
    for env in samples:
        x, y = value_or_none(left, env), value_or_none(right, env)
        if x is not None and y is not None:
            assert RELATIONS[op](x, y) is answer, (str(a), op, str(b), env)


# -- what the symbolic bounds must prove ---------------------------------------------------


def test_min_and_max_use_the_bound():
    assert min_(K, N * 2) == K and max_(K, N * 2) == N * 2
    assert min_(J, N * 2) == J  # through k's bound
    assert min_(K, N * 2 + 3) == K
    assert str(min_(K, N)) == "min(k, n)"  # k <= 2n says nothing against n


def test_prove_and_compare():
    assert prove_le(K, N * 2) and prove_lt(K, N * 2 + 1) and prove_le(J, N * 2)
    assert prove_le(K * M, N * M * 2)  # a non-negative cofactor
    assert prove_le(K // 2, N) and prove_le(K * 3 + 1, N * 6 + 1)
    assert compare(K, ">", N * 2) is False and compare(N * 2 - K, ">=", 0) is True
    assert compare(K, "<=", N) is None and compare(K, "==", N * 2) is None
    assert compare(Q * K, "<=", Q * N * 2) is None  # q may be negative
    with pytest.raises(InconclusiveShapeError):
        bool(K <= N)
    assert (K <= N * 2) is True


def test_interval_of_a_bounded_symbol():
    assert bounds(K) == (0, None)
    assert bounds(K, {"n": (0, 5)}) == (0, 10)
    assert bounds(K, {"k": (1, 3)}) == (1, 3)  # an explicit range replaces the bound
    small = sym("s", upper=4)
    assert bounds(sym("t", upper=small * 3)) == (0, 12)
    assert bounds(P) == (2, None) and bounds(P, {"n": (0, 1), "m": (1, 2)}) == (2, 5)


def test_bound_validation():
    with pytest.raises(ValueError, match="upper bound k \\+ n mentions the symbol itself"):
        sym("k", upper=N + sym("k"))
    with pytest.raises(TypeError, match="upper bound must be an int, a dim or None"):
        sym("k", upper=2.5)
    assert sym("k", upper=N).upper == N and arith.Sym("k", 0, N * 2).upper == N * 2


def test_symbols_with_other_bounds_are_not_interned_together():
    loose = sym("k")
    assert str(K + 1) == str(loose + 1)
    assert loose + 1 == K + 1  # equal by name
    assert min_(loose, N * 2) != K  # but only the bounded k simplifies
