"""Exact polynomial division (``arith.exact_div``) and decisions by cases on small values
(``arith.decide_by_cases``): the algebra behind deductions that rely on a run-time check
excluding a zero (issue 9, part 2)."""

import doctest
import importlib
import itertools
import operator

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from relaxjax.arith import (
    compare,
    decide_by_cases,
    evaluate,
    exact_div,
    floordiv,
    max_,
    min_,
    sym,
    syms,
)
from relaxjax.arith.cases import MAX_SYMBOLS, cases, pieces

A, B, C, D = syms("a b c d")
N, M = sym("n"), sym("m")
Q = sym("q", lower=None)  # any integer
SYMBOLS = {"n": N, "m": M, "q": Q}
OPAQUE = sym("z")

# Atoms beside the symbols: a quotient is exact over them taken as indeterminates.
ATOMS = [N, M, Q, min_(N, 3), max_(M, Q), OPAQUE // 3, OPAQUE % 4]

monomials = st.tuples(st.integers(-4, 4), st.lists(st.sampled_from(ATOMS), max_size=3))
polynomials = st.lists(monomials, min_size=1, max_size=4).map(
    lambda terms: sum((coeff * _product(factors) for coeff, factors in terms), start=0)
)
envs = st.fixed_dictionaries(
    {
        "n": st.integers(0, 9),
        "m": st.integers(0, 9),
        "q": st.integers(-9, 9),
        "z": st.integers(0, 20),
    }
)


def _product(factors):
    result = 1
    for factor in factors:
        result = result * factor
    return result


# --------------------------------------------------------------------------- exact_div


@pytest.mark.parametrize(
    ("dividend", "divisor", "quotient"),
    [
        (A * B * C * D, C * A * B * D, 1),
        (A * B * C * D, C, A * B * D),
        (A * B * C * D * 6, A * D * 3, B * C * 2),
        (N * N + N, N + 1, N),
        (N * N - M * M, N + M, N - M),
        ((N + 1) * (M + 2) * (N - M), (N - M) * (N + 1), M + 2),
        ((N + 1) ** 3, (N + 1) ** 2, N + 1),
        ((N // 2) * (N + 1), N // 2, N + 1),
        (min_(N, 4) * M + min_(N, 4), M + 1, min_(N, 4)),
        (N * 4, 2, N * 2),
        (0, N + M, 0),
        (12, 4, 3),
        (N * M, N * M, 1),
    ],
)
def test_exact_quotients(dividend, divisor, quotient):
    assert exact_div(dividend, divisor) == quotient


@pytest.mark.parametrize(
    ("dividend", "divisor"),
    [
        (N + 1, N),  # a remainder
        (N * N - M * M + 1, N + M),
        (N * 3, 2),  # not over the integers
        (N + 1, N * 2 + 2),
        (N, 0),  # no quotient by zero
        (5, 0),
        (7, 2),
        (N, N * M),
        (N // 2, N),  # different atoms
    ],
)
def test_no_exact_quotient(dividend, divisor):
    assert exact_div(dividend, divisor) is None


@given(polynomials, polynomials)
def test_products_divide_exactly(p, q):
    assume(q != 0)
    assert exact_div(p * q, q) == p


@given(polynomials, polynomials, polynomials, st.booleans(), st.lists(envs, min_size=1, max_size=6))
def test_exact_div_is_sound(p, b, rest, perturb, samples):
    """Whenever a quotient is given, it times the divisor is the dividend, and it is the
    floor division at every point where the divisor is non-zero."""
    a = p * b + (rest if perturb else 0)
    quotient = exact_div(a, b)
    if quotient is None:
        return
    assert quotient * b == a
    for env in samples:
        divisor = evaluate(b, env)
        if divisor != 0:
            assert evaluate(quotient, env) == evaluate(a, env) // divisor
        else:
            assert evaluate(a, env) == 0


def test_floordiv_cancels_a_provably_nonzero_polynomial_divisor():
    assert floordiv(N * N + N, N + 1) == N  # n + 1 >= 1: the quotient holds everywhere
    assert floordiv(N * M * 2 + N * 2, M + 1) == N * 2
    # a divisor that may be zero stays: (n*n + n) // n is undefined at n == 0
    assert str(floordiv(N * N + N, N)) == "(n * n + n) // n"


# --------------------------------------------------------------------------- decide_by_cases


def test_pieces_split_declared_ranges_at_zero_and_one():
    assert pieces(N) == [(0, 0), (1, 1), (2, None)]
    assert pieces(Q) == [(None, -1), (0, 0), (1, 1), (2, None)]
    assert pieces(sym("k", lower=1, upper=5)) == [(1, 1), (2, 5)]
    assert pieces(sym("k", lower=3)) == [(3, None)]
    assert pieces(sym("k", lower=None, upper=0)) == [(None, -1), (0, 0)]
    assert len(list(cases([N, Q]))) == 12


def _relation(a, op, b):
    return lambda ranges: compare(a, op, b, ranges)


def test_decisions_by_cases():
    one = min_(1, M)
    # broadcast(m, min(1, m)): equal at m == 0, min(1, m) == 1 above
    broadcast = lambda r: compare(M, "==", one, r) or compare(one, "==", 1, r) or None  # noqa: E731
    assert decide_by_cases(broadcast, [M, one]) is True
    assert compare(one * 2, "<=", M + 1) is None
    assert decide_by_cases(_relation(one * 2, "<=", M + 1), [M]) is True
    assert decide_by_cases(_relation(min_(2, M), "==", M), [M]) is None  # m >= 3
    assert decide_by_cases(_relation(max_(M, 1), "!=", 0), [M]) is True
    assert decide_by_cases(_relation(N * 2 + 1, "==", 0), [N]) is False
    assert decide_by_cases(_relation(N, "<", 1), [N]) is None


def test_no_cases_without_symbols_or_with_too_many():
    assert decide_by_cases(lambda r: True, [3]) is None
    many = syms(" ".join(f"s{i}" for i in range(MAX_SYMBOLS + 1)))
    assert decide_by_cases(lambda r: True, many) is None
    assert decide_by_cases(lambda r: True, many[:MAX_SYMBOLS]) is True


dims = st.sampled_from(
    [N, M, Q, N + 1, M - 1, min_(1, N), min_(2, M), max_(N, 1), N * M, N - M, Q * Q, 1, 0]
)
OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le}


@given(dims, st.sampled_from(sorted(OPS)), dims)
def test_decide_by_cases_is_sound(a, op, b):
    answer = decide_by_cases(_relation(a, op, b), [a, b])
    if answer is None:
        return
    for n, m, q in itertools.product(range(4), range(4), range(-3, 4)):
        env = {"n": n, "m": m, "q": q}
        assert OPS[op](evaluate(a, env), evaluate(b, env)) is answer, (a, op, b, env)


# --------------------------------------------------------------------------- docs


@pytest.mark.parametrize("name", ["algebra", "cases"])
def test_docstring_examples(name):
    module = importlib.import_module(f"relaxjax.arith.{name}")
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0


def test_symbols_keep_their_bounds():
    k = sym("k", lower=2)
    assert compare(exact_div(k * k, k), ">=", 2) is True
    assert SYMBOLS["q"].lower is None
