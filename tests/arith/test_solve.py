"""Solving dims for their symbols: ``linear_in`` and ``solve_order``.

The laws: a dim is exactly ``a * s + b`` whenever ``linear_in`` says so; replaying
``solve_order``'s steps on the sizes of any assignment recovers that assignment
(unless a symbolic coefficient is 0 there), and the symbols it solves and those it
calls undetermined split the symbols the dims mention.
"""

import sys
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from relaxjax.arith import evaluate, floordiv, linear_in, max_, min_, mod, solve_order, syms

sys.path.insert(0, str(Path(__file__).parent))
from test_properties import build_or_none, envs, trees  # noqa: E402

n, m, k = syms("n m k")


@pytest.mark.parametrize(
    ("dim", "symbol", "expected"),
    [
        (n, n, (1, 0)),
        (n * 2, n, (2, 0)),
        (n * 2 + m + 1, n, (2, m + 1)),
        (10 - n, n, (-1, 10)),
        (n * m, n, (m, 0)),
        (n * m + n * k + n * 2 + m, n, (k + m + 2, m)),
        (n * m * m, n, (m * m, 0)),
        ((n + 1) * 3, n, (3, 3)),
        (n * floordiv(m, 2), n, (floordiv(m, 2), 0)),
    ],
)
def test_linear_dims(dim, symbol, expected):
    assert linear_in(dim, symbol) == expected


@pytest.mark.parametrize(
    "dim",
    [n * n, floordiv(n, 2), mod(n, 4), min_(n, 4), max_(n, m), n * 3 + floordiv(n, 2), m + 1, 5],
)
def test_dims_that_determine_nothing(dim):
    assert linear_in(dim, n) is None


def test_solve_order_prefers_constant_coefficients_and_repeats():
    steps, undetermined = solve_order([n * m, m + 1, n * 2])
    assert [(s.index, s.symbol.name, s.coeff, s.rest) for s in steps] == [
        (1, "m", 1, 1),
        (2, "n", 2, 0),
    ]
    assert undetermined == ()
    steps, _ = solve_order([n * m, m])
    assert [(s.index, s.symbol.name, s.coeff) for s in steps] == [(1, "m", 1), (0, "n", m)]
    steps, undetermined = solve_order([n * m, k + 1, floordiv(n, 2)])
    assert [s.symbol.name for s in steps] == ["k"] and undetermined == (m, n)
    steps, undetermined = solve_order([n + m], known=["m"])
    assert [(s.symbol.name, s.rest) for s in steps] == [("n", m)] and undetermined == ()


@given(trees, st.sampled_from("nmbq"), envs)
def test_linear_in_is_exact(tree, name, env):
    dim = build_or_none(tree)
    assume(dim is not None and not isinstance(dim, int))
    symbol = next((s for s in dim.symbols if s.name == name), None)
    assume(symbol is not None)
    linear = linear_in(dim, symbol)
    if linear is None:
        return
    a, b = linear
    assert symbol not in getattr(a, "symbols", ()) and symbol not in getattr(b, "symbols", ())
    assert a != 0
    assert evaluate(dim, env) == evaluate(a, env) * env[name] + evaluate(b, env)


def _sizes(dims, env):
    try:
        return [evaluate(d, env) for d in dims]
    except ZeroDivisionError:  # a divisor that is 0 for these values: no sizes at all
        return None


@given(st.lists(trees, min_size=1, max_size=4), envs)
def test_replaying_the_steps_recovers_the_values(tree_list, env):
    dims = [build_or_none(t) for t in tree_list]
    assume(all(d is not None for d in dims))
    sizes = _sizes(dims, env)
    assume(sizes is not None)
    steps, undetermined = solve_order(dims)
    solved: dict[str, int] = {}
    for step in steps:
        coeff = evaluate(step.coeff, solved)
        if coeff == 0:
            return  # a symbolic coefficient that is 0 here determines nothing
        quotient, remainder = divmod(sizes[step.index] - evaluate(step.rest, solved), coeff)
        assert remainder == 0
        solved[step.symbol.name] = quotient
    assert solved == {name: env[name] for name in solved}
    mentioned = {s.name for d in dims if not isinstance(d, int) for s in d.symbols}
    assert set(solved).isdisjoint(s.name for s in undetermined)
    assert set(solved) | {s.name for s in undetermined} == mentioned


# polynomials of degree <= 2 over n, m, k: linear dims and products, often solvable
_terms = st.tuples(st.sampled_from([-2, -1, 1, 2, 3]), st.lists(st.sampled_from("nmk"), max_size=2))
polynomials = st.tuples(st.lists(_terms, min_size=1, max_size=3), st.integers(-2, 4))
SYMS = {"n": n, "m": m, "k": k}


def _polynomial(spec):
    terms, const = spec
    dim = const
    for coeff, names in terms:
        term = coeff
        for name in names:
            term = term * SYMS[name]
        dim = dim + term
    return dim


@given(
    st.lists(polynomials, min_size=1, max_size=4),
    st.fixed_dictionaries({name: st.integers(0, 6) for name in "nmk"}),
)
def test_replaying_polynomial_steps_recovers_the_values(specs, env):
    dims = [_polynomial(spec) for spec in specs]
    steps, undetermined = solve_order(dims)
    solved: dict[str, int] = {}
    for step in steps:
        coeff = evaluate(step.coeff, solved)
        if coeff == 0:
            return
        quotient, remainder = divmod(
            evaluate(dims[step.index], env) - evaluate(step.rest, solved), coeff
        )
        assert remainder == 0
        solved[step.symbol.name] = quotient
    assert solved == {name: env[name] for name in solved}
    assert not {s.name for s in undetermined} & set(solved)
