"""Parsing dims from text."""

import re

import pytest

from relaxjax.arith import Sym, max_, min_, parse_dim, sym, syms
from relaxjax.errors import ShapeError

n, m = syms("n m")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("n*2+1", lambda: n * 2 + 1),
        ("min(n,4)", lambda: min_(n, 4)),
        ("min(n, 4, m)", lambda: min_(n, 4, m)),
        ("max( n , m )", lambda: max_(n, m)),
        ("n//2", lambda: n // 2),
        ("n // 2", lambda: n // 2),
        ("(n+1)%3", lambda: (n + 1) % 3),
        ("-n", lambda: -n),
        ("--n", lambda: n),
        ("+n", lambda: n),
        ("-n * 2 + m", lambda: m - 2 * n),
        ("-(n // 2) * 3", lambda: -(n // 2) * 3),
        ("-n // 2", lambda: (-n) // 2),  # Python: unary minus binds tighter than //
        ("n - m - 1", lambda: n - m - 1),
        ("n - (m - 1)", lambda: n - m + 1),
        ("n * (m + 2)", lambda: n * m + 2 * n),
        ("n ** 2", lambda: n * n),
        ("-n ** 2", lambda: -(n * n)),
        ("2 ** 3 * n", lambda: 8 * n),
        ("n // m // 2", lambda: (n // m) // 2),
        ("n % m % 3", lambda: (n % m) % 3),
        ("12", lambda: 12),
        ("  7 ", lambda: 7),
        ("(((n)))", lambda: n),
        ("n_1 + _x", lambda: Sym("n_1") + Sym("_x")),
        ("(n*8)//4", lambda: n * 2),
    ],
)
def test_parse(source, expected):
    value = parse_dim(source)
    want = expected()
    assert value == want and type(value) is type(want)


def test_parse_uses_given_symbols_and_their_bounds():
    bounded = sym("n", lower=0, upper=3)
    assert parse_dim("n // 4", {"n": bounded}) == 0
    assert str(parse_dim("n // 4")) == "n // 4"
    parsed = parse_dim("s + 1")
    (s,) = parsed.symbols
    assert (s.name, s.lower, s.upper) == ("s", 0, None)


def test_parse_passes_dims_through():
    assert parse_dim(5) == 5
    assert parse_dim(n + 1) == n + 1
    with pytest.raises(TypeError, match=r"parse_dim expects a str, an int or a dim, got 1\.5"):
        parse_dim(1.5)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("", "cannot parse dim '': empty text at position 0"),
        ("   ", "cannot parse dim '   ': empty text at position 0"),
        ("n +", "'n +': expected a number, a name or '(', got end of text at position 3"),
        ("n $ 2", "cannot parse dim 'n $ 2': unexpected character '$' at position 2"),
        ("(n + 1", "cannot parse dim '(n + 1': expected ')', got end of text at position 6"),
        ("n m", "cannot parse dim 'n m': unexpected 'm' at position 2"),
        ("n)", "cannot parse dim 'n)': unexpected ')' at position 1"),
        ("foo(n)", "unknown function 'foo' (only min and max) at position 0"),
        ("min(n)", "min() needs at least two arguments, got 1 at position 0"),
        ("min + 1", "'min' must be called, as in min(a, b) at position 0"),
        ("n ** m", "the exponent must be a non-negative constant, got m at position 2"),
        ("n ** -1", "the exponent must be a non-negative constant, got -1 at position 2"),
        ("for + 1", "a symbol name must be a Python identifier, got 'for' at position 0"),
        ("n / 2", "unexpected character '/' at position 2"),
        ("1.5", "unexpected character '.' at position 1"),
    ],
)
def test_parse_errors(source, message):
    with pytest.raises(ShapeError, match=re.escape(message)):
        parse_dim(source)


def test_parse_error_is_a_value_error():
    with pytest.raises(ValueError):
        parse_dim("n +")


def test_parse_division_by_zero():
    with pytest.raises(ZeroDivisionError, match="integer division by zero: n // 0"):
        parse_dim("n // 0")
    with pytest.raises(ZeroDivisionError):
        parse_dim("n % (m - m)")
