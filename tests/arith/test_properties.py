"""Laws of the canonical form, checked with hypothesis against plain Python ints.

Random expression trees are built twice: through the dim operators (which simplify)
and evaluated directly on Python ints. Whatever the simplifier does must agree.
"""

import operator

from hypothesis import assume, given
from hypothesis import strategies as st

from relaxjax.arith import (
    bounds,
    compare,
    compile_dims,
    evaluate,
    max_,
    min_,
    parse_dim,
    subs,
    sym,
    to_python,
)

SYMBOLS = {
    "n": sym("n"),  # >= 0, unbounded
    "m": sym("m", lower=1, upper=16),
    "b": sym("b", lower=0, upper=3),
    "q": sym("q", lower=None),  # any integer
}
SAMPLE_RANGES = {"n": (0, 40), "m": (1, 16), "b": (0, 3), "q": (-25, 25)}

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
    st.integers(-6, 9).map(lambda value: ("int", value)),
)


def _extend(children):
    binary = st.tuples(st.sampled_from(sorted(BINARY)), children, children)
    return st.one_of(binary, children.map(lambda child: ("neg", child)))


trees = st.recursive(leaves, _extend, max_leaves=8)

envs = st.fixed_dictionaries(
    {name: st.integers(lo, hi) for name, (lo, hi) in SAMPLE_RANGES.items()}
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


def python_value(tree, env):
    try:
        return run_python(tree, env)
    except ZeroDivisionError:
        return None


def build_or_none(tree):
    """The dim of ``tree``; None when a divisor is the constant 0 (Python agrees then)."""
    try:
        return build(tree)
    except ZeroDivisionError:
        return None


@given(trees, st.lists(envs, min_size=1, max_size=8))
def test_simplification_preserves_value(tree, samples):
    dim = build_or_none(tree)
    for env in samples:
        expected = python_value(tree, env)
        if dim is None:
            assert expected is None  # a constant zero divisor fails for every value
        elif expected is not None:
            assert evaluate(dim, env) == expected, (tree, str(dim), env)


@given(trees, st.lists(envs, min_size=1, max_size=8))
def test_bounds_are_sound(tree, samples):
    dim = build_or_none(tree)
    assume(dim is not None)
    lo, hi = bounds(dim)
    for env in samples:
        value = python_value(tree, env)
        if value is not None:
            assert lo is None or lo <= value, (str(dim), env, lo)
            assert hi is None or value <= hi, (str(dim), env, hi)


@given(
    trees, trees, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), st.lists(envs, max_size=8)
)
def test_compare_is_sound(left, right, op, samples):
    a, b = build_or_none(left), build_or_none(right)
    assume(a is not None and b is not None)
    answer = compare(a, op, b)
    if answer is None:
        return
    relation = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le}
    relation |= {">": operator.gt, ">=": operator.ge}
    for env in samples:
        x, y = python_value(left, env), python_value(right, env)
        if x is not None and y is not None:
            assert relation[op](x, y) is answer, (str(a), op, str(b), env)


@given(trees)
def test_print_parse_round_trip(tree):
    dim = build_or_none(tree)
    assume(dim is not None)
    again = parse_dim(str(dim), SYMBOLS)
    assert again == dim and str(again) == str(dim)


@given(trees, envs)
def test_to_python_and_compile_dims_agree_with_evaluate(tree, env):
    dim = build_or_none(tree)
    assume(dim is not None)
    expected = python_value(tree, env)
    assume(expected is not None)
    names = sorted(SYMBOLS)
    namespace = {"__builtins__": {"min": min, "max": max}}
    try:
        compiled = compile_dims([dim], names)(*(env[name] for name in names))
        direct = eval(to_python(dim), namespace, dict(env))
    except ZeroDivisionError:  # simplification may keep a divisor Python never reached
        return
    assert compiled == (expected,) and direct == expected


@given(trees, trees, envs)
def test_subs_commutes_with_evaluation(tree, replacement, env):
    dim, value = build_or_none(tree), build_or_none(replacement)
    assume(dim is not None and value is not None)
    bound_value = python_value(replacement, env)
    assume(bound_value is not None)
    outer = {**env, "n": bound_value}
    expected = python_value(tree, outer)
    assume(expected is not None)
    try:
        substituted = subs(dim, {"n": value})
        result = evaluate(substituted, env)
    except ZeroDivisionError:
        return
    # n >= 0 is assumed while simplifying, so only non-negative replacements are valid
    if bound_value >= 0:
        assert result == expected


polynomials = st.recursive(
    st.one_of(
        st.sampled_from(["n", "m", "q"]).map(lambda name: ("sym", name)),
        st.integers(-4, 4).map(lambda value: ("int", value)),
    ),
    lambda children: st.tuples(st.sampled_from(["+", "-", "*"]), children, children),
    max_leaves=6,
)
# ``//`` and ``%`` atoms are over a symbol the polynomials do not use: through
# x == c * (x // c) + x % c they are not independent of x's symbols, and products of such
# related atoms are outside the canonical form's promise (test_divmod_pairs covers the
# linear combinations, which are).
OPAQUE = sym("z")
atoms = st.sampled_from(
    [
        lambda: OPAQUE // 3,
        lambda: min_(SYMBOLS["n"], SYMBOLS["q"]),
        lambda: OPAQUE % 5,
        lambda: max_(SYMBOLS["m"], SYMBOLS["n"] + 1),
    ]
)


@given(polynomials, polynomials, polynomials)
def test_equal_polynomials_print_identically(p, q, r):
    a, b, c = build(p), build(q), build(r)
    distributed = a * c + b * c
    factored = (a + b) * c
    assert distributed == factored and str(distributed) == str(factored)
    assert hash(distributed) == hash(factored)
    assert str((a * b) * c) == str(a * (b * c))
    assert str((a + b) + c) == str(c + (b + a))
    assert str(a - b) == str(-(b - a))


@given(polynomials, polynomials, atoms)
def test_canonical_with_atoms(p, q, atom):
    a, b, x = build(p), build(q), atom()
    assert str((a + x) * (b - x)) == str(a * b - a * x + x * b - x * x)
    assert str(min_(a + x, b + x)) == str(min_(a, b) + x)
    assert str(max_(a * 2, b * 2)) == str(max_(a, b) * 2)


@given(
    polynomials,
    st.integers(2, 7),
    st.tuples(*[st.integers(-3, 3)] * 4),
    polynomials,
)
def test_divmod_pairs_are_canonical(p, c, coefficients, rest):
    """k*x + f*(x//c) + m*(x%c) + rest prints the same for every t in the family
    (k + t)*x + (f - c*t)*(x//c) + (m - t)*(x%c) + rest."""
    x, other = build(p), build(rest)
    k, f, m, t = coefficients
    given_form = k * x + f * (x // c) + m * (x % c) + other
    shifted = (k + t) * x + (f - c * t) * (x // c) + (m - t) * (x % c) + other
    assert str(given_form) == str(shifted)


@given(polynomials, st.integers(1, 12), envs)
def test_division_identity(p, divisor, env):
    a = build(p)
    recomposed = (a // divisor) * divisor + a % divisor
    assert recomposed == a and str(recomposed) == str(a)
    value = python_value(p, env)
    assert evaluate(a // divisor, env) == value // divisor
    assert evaluate(a % divisor, env) == value % divisor


@st.composite
def ranges_and_samples(draw):
    """Overriding ranges for ``n`` and ``q`` and assignments inside them."""
    n_lo = draw(st.integers(0, 10))
    n_hi = n_lo + draw(st.integers(0, 10))
    q_lo = draw(st.integers(-10, 5))
    q_hi = q_lo + draw(st.integers(0, 10))
    samples = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "n": st.integers(n_lo, n_hi),
                    "q": st.integers(q_lo, q_hi),
                    "m": st.integers(1, 16),
                    "b": st.integers(0, 3),
                }
            ),
            min_size=1,
            max_size=6,
        )
    )
    return {"n": (n_lo, n_hi), SYMBOLS["q"]: (q_lo, q_hi)}, samples


@given(trees, trees, ranges_and_samples())
def test_bounds_and_compare_respect_ranges(left, right, drawn):
    ranges, samples = drawn
    a, b = build_or_none(left), build_or_none(right)
    assume(a is not None and b is not None)
    lo, hi = bounds(a, ranges)
    answer = compare(a, "<=", b, ranges)
    for env in samples:
        x, y = python_value(left, env), python_value(right, env)
        if x is None:
            continue
        assert (lo is None or lo <= x) and (hi is None or x <= hi), (str(a), env, lo, hi)
        if y is not None and answer is not None:
            assert (x <= y) is answer, (str(a), str(b), env)
