"""Canonical simplification rules, each with its exact canonical text."""

import pytest

from relaxjax.arith import floordiv, max_, min_, mod, sym, syms

n, m, k = syms("n m k")
p = sym("p", lower=1)  # a provably non-zero divisor
q = sym("q", lower=None)  # any integer


def text(value):
    return str(value)


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        # divisibility by a constant
        (lambda: (n * 8) // 4, "n * 2"),
        (lambda: (4 * n + 2) // 2, "n * 2 + 1"),
        (lambda: (n * 8) % 4, "0"),
        (lambda: (n * 4 + 1) % 2, "1"),
        (lambda: n // 1, "n"),
        (lambda: n % 1, "0"),
        (lambda: (n * 4 + 3) // 4, "n"),
        (lambda: (q * 4 + 3) // 4, "q"),  # exact for every integer, not only n >= 0
        (lambda: (n * 4 - 1) // 4, "n - 1"),
        (lambda: (n * 6 + m * 3) // 3, "m + n * 2"),
        (lambda: (n * 6 + m * 3 + 2) % 3, "2"),
        (lambda: (n * 3) // 2, "n + n // 2"),
        (lambda: (n + 5) // 4, "(n + 1) // 4 + 1"),
        (lambda: (n + 5) % 4, "(n + 1) % 4"),
        (lambda: (n * 2 + 2) // 4, "(n + 1) // 2"),
        (lambda: (n * 2 + 2) % 4, "((n + 1) % 2) * 2"),
        (lambda: (n * 6) % 4, "(n % 2) * 2"),
        (lambda: (n * 4 + m) // 4, "n + m // 4"),
        # negative constant divisors and dividends (Python floor semantics)
        (lambda: n // -2, "-n + n // 2"),
        (lambda: n % -3, "-((n * 2) % 3)"),
        (lambda: (-n) // 4, "-n + (n * 3) // 4"),
        (lambda: (-n) % 4, "(n * 3) % 4"),
        (lambda: (-n - 8) // 4, "-n + (n * 3) // 4 - 2"),
        # bounds-aware
        (lambda: (n % 8) // 8, "0"),
        (lambda: (n % 8) % 8, "n % 8"),
        (lambda: n % 8, "n % 8"),
        (lambda: (n % 8) % 4, "n % 4"),
        (lambda: (n % 4) % 8, "n % 4"),
        (lambda: (n % 8 + 8) // 8, "1"),
        (lambda: (n % 8 + 4) % 16, "n % 8 + 4"),
        (lambda: (n // 2) // 3, "n // 6"),
        (lambda: ((3 * n + 1) // 2) // 3, "(n * 3 + 1) // 6"),
        (lambda: (n // 2 + m) // 3, "(m * 2 + n) // 6"),
        (lambda: ((n % 12) // 2) // 3, "(n % 12) // 6"),
        (lambda: ((n % 12) // 2) // 6, "0"),
        (lambda: sym("s", upper=3) // 4, "0"),
        (lambda: sym("s", upper=3) % 4, "s"),
        (lambda: sym("s", lower=4, upper=7) // 4, "1"),
        (lambda: sym("s", lower=4, upper=7) % 4, "s - 4"),
        # quotient/remainder pairs fold
        (lambda: n - (n // 2) * 2, "n % 2"),
        (lambda: (n // 2) * 2 + n % 2, "n"),
        (lambda: (n + 1) - ((n + 1) // 2) * 2, "(n + 1) % 2"),
        (lambda: 3 * n - 6 * (n // 2) + m, "m + (n % 2) * 3"),
        (lambda: 8 * (n // 4) + 2 * (n % 4), "n * 2"),
        (lambda: n // 3 + n % 3, "n - (n // 3) * 2"),
        (lambda: n - (n // 3) * 2, "n - (n // 3) * 2"),
        (lambda: n - n % 3, "(n // 3) * 3"),
        (lambda: n + n // 2, "n + n // 2"),
        (lambda: ((m + n + k) // 2) * 2 + (m + n + k) % 2, "k + m + n"),
        (lambda: (n - m) // 2 * 2 + (n - m) % 2, "-m + n"),
        # symbolic divisors
        (lambda: n // m, "n // m"),
        (lambda: n % m, "n % m"),
        (lambda: (n * p) // p, "n"),
        (lambda: (n * p * 2 + p) // p, "n * 2 + 1"),
        (lambda: (n * p) % p, "0"),
        (lambda: (n * m) // m, "(m * n) // m"),  # m may be 0: not resolved
        (lambda: (n % p) // p, "0"),
        (lambda: (n % p) % p, "n % p"),
        (lambda: p // p, "1"),
        (lambda: n // n, "n // n"),
        (lambda: 0 // n, "0 // n"),
        (lambda: 0 // p, "0"),
        (lambda: ((p + 1) * 3) // (p + 1), "3"),
        (lambda: floordiv(n, m + 1), "n // (m + 1)"),
        (lambda: mod(n, m + 1), "n % (m + 1)"),
    ],
)
def test_division_rules(build, expected):
    assert text(build()) == expected


def test_division_results_are_ints_when_constant():
    assert type((n * 8) % 4) is int
    assert type((n % 8) // 8) is int
    assert floordiv(7, -2) == -4 and mod(7, -2) == -1


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: min_(n, n + 1), "n"),
        (lambda: max_(n, n + 1), "n + 1"),
        (lambda: min_(n, 0), "0"),
        (lambda: max_(n, 0), "n"),
        (lambda: min_(n, 4), "min(4, n)"),
        (lambda: min_(4, n), "min(4, n)"),
        (lambda: max_(n, m), "max(m, n)"),
        (lambda: min_(n, m, k), "min(k, m, n)"),
        (lambda: min_(min_(n, m), k), "min(k, m, n)"),
        (lambda: min_(n, min_(m, k)), "min(k, m, n)"),
        (lambda: min_(n, m, n), "min(m, n)"),
        (lambda: min_(n, 4, 7), "min(4, n)"),
        (lambda: max_(n, 4, 7, m), "max(7, m, n)"),
        (lambda: min_(n, m, n - 1), "min(m + 1, n) - 1"),
        (lambda: min_(n + 1, m + 1), "min(m, n) + 1"),
        (lambda: min_(n + 3, 5), "min(2, n) + 3"),
        (lambda: min_(2 * n, 2 * m), "min(m, n) * 2"),
        (lambda: min_(-n, -m), "-m - n + min(m, n)"),  # operands keep coefficients >= 0
        (lambda: max_(-n, -m), "-m - n + max(m, n)"),
        (lambda: min_(n * 2, n + q), "n + min(n, q)"),
        (lambda: min_(n + min_(m, k), 3 + min_(m, k)), "min(3, n) + min(k, m)"),
        (lambda: max_(n, max_(q, -1)), "max(n, q)"),
        (lambda: max_(sym("r", lower=None), max_(q, -1)), "max(0, q + 1, r + 1) - 1"),
        (lambda: min_(n // 2, n), "n // 2"),
        (lambda: max_(n % 8, 7), "7"),
        (lambda: min_(n % 8, 8), "n % 8"),
        (lambda: min_(min_(n, 4), n), "min(4, n)"),
        (lambda: max_(min_(n, 4), 5), "5"),
        (lambda: min_(q, q - 1), "q - 1"),
        (lambda: min_(3, 5), "3"),
        (lambda: max_(3, 5, -1), "5"),
    ],
)
def test_min_max_rules(build, expected):
    assert text(build()) == expected


def test_min_max_return_ints():
    assert type(min_(3, 5)) is int and type(max_(n - n, 2)) is int


def test_min_max_reject_non_dims():
    with pytest.raises(TypeError, match=r"expected an int or a symbolic dim, got 1\.5 \(float\)"):
        min_(n, 1.5)


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: (n + 1) * (n - 1), "n * n - 1"),
        (lambda: (n + m) ** 2 - (n - m) ** 2, "m * n * 4"),
        (lambda: (n + 1) * 2 - 2 * n, "2"),
        (lambda: n * (m + k) - n * m, "k * n"),
        (lambda: (n // 2 + 1) * (n // 2 - 1), "(n // 2) * (n // 2) - 1"),
        (lambda: min_(n, m) * (n + 1), "n * min(m, n) + min(m, n)"),
    ],
)
def test_polynomial_normal_form(build, expected):
    assert text(build()) == expected
