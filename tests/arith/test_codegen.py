"""Substitution, evaluation and compiled evaluators."""

import pytest

from relaxjax.arith import (
    compile_dims,
    evaluate,
    max_,
    min_,
    parse_dim,
    subs,
    sym,
    syms,
    to_python,
)

n, m, k = syms("n m k")


def test_subs_binds_everything_to_an_int():
    e = (n + 1) * 2
    assert subs(e, {"n": 3}) == 8 and type(subs(e, {"n": 3})) is int
    assert e.subs({n: 3}) == 8


def test_subs_symbolic_and_resimplifies():
    s = sym("s")
    assert str(((n + 1) * 2).subs({n: s})) == "s * 2 + 2"
    assert (n // 2).subs({"n": 2 * m}) == m
    assert (n % 4).subs({n: 4 * m + 1}) == 1
    assert min_(n, m).subs({"m": n + 1}) == n
    assert str(max_(n, m * 2).subs({"n": k})) == "max(k, m * 2)"
    assert (n * m + n).subs({"m": -1}) == 0


def test_subs_ignores_unknown_keys_and_ints():
    e = n + m
    assert e.subs({"zzz": 4}) is e
    assert subs(5, {"n": 1}) == 5


def test_subs_is_simultaneous():
    assert str((n - m).subs({"n": m, "m": n})) == "m - n"


def test_subs_rejects_bad_keys_and_values():
    with pytest.raises(TypeError, match="subs: a key must be a symbol name or a Sym, got 3"):
        n.subs({3: 1})
    with pytest.raises(TypeError, match="subs: the value for 'n' must be an int or a symbolic dim"):
        n.subs({"n": 1.5})


def test_subs_division_by_zero():
    with pytest.raises(ZeroDivisionError):
        (m // n).subs({"n": 0})


def test_evaluate():
    e = parse_dim("min(n, 4) * 2 + n // 3 - n % 5 + max(n, m)")
    for nv, mv in [(0, 0), (7, 2), (12, 30)]:
        expect = min(nv, 4) * 2 + nv // 3 - nv % 5 + max(nv, mv)
        assert evaluate(e, {"n": nv, "m": mv}) == expect
    assert evaluate(7, {}) == 7
    assert evaluate(n * n * m, {n: 3, m: 2}) == 18


def test_evaluate_python_semantics_for_negatives():
    q = sym("q", lower=None)
    assert evaluate(q // 4, {"q": -1}) == -1
    assert evaluate(q % 4, {"q": -1}) == 3
    assert evaluate(n // q, {"n": 7, "q": -2}) == -4
    assert evaluate(n % q, {"n": 7, "q": -2}) == -1


def test_evaluate_missing_symbol():
    with pytest.raises(KeyError, match="no value for symbol 'm' in m \\+ n"):
        evaluate(n + m, {"n": 1})


def test_evaluate_division_by_zero():
    with pytest.raises(ZeroDivisionError):
        evaluate(n // m, {"n": 1, "m": 0})


def test_to_python():
    e = (n + 1) // 2 + min_(m, 4) * 3
    assert to_python(e) == str(e) == "min(4, m) * 3 + (n + 1) // 2"
    assert to_python(e, {"n": "s0", "m": "s1"}) == "min(4, s1) * 3 + (s0 + 1) // 2"
    assert to_python(5) == "5"
    values = {"n": 9, "m": 2}
    assert eval(to_python(e), {"__builtins__": {"min": min, "max": max}}, values) == 11


def test_compile_dims():
    fn = compile_dims([n * 2 + 2, 4, n // m, min_(n, k)], ["n", "m", "k"])
    assert fn(3, 2, 1) == (8, 4, 1, 1)
    assert fn(10, 3, 20) == (22, 4, 3, 10)
    assert "def compiled_dims(n, m, k):" in fn.source
    assert compile_dims([n * 2 + 2, 4, n // m, min_(n, k)], ["n", "m", "k"]) is fn
    assert compile_dims([], [])() == ()
    assert compile_dims([7], [])() == (7,)


def test_compile_dims_parameter_order_and_extras():
    fn = compile_dims([n - m], ["m", "n", "unused"])
    assert fn(1, 5, 99) == (4,)


def test_compile_dims_errors():
    with pytest.raises(
        ValueError, match="compile_dims: the dims use symbol\\(s\\) k, m that are not"
    ):
        compile_dims([n + m + k], ["n"])
    with pytest.raises(ValueError, match="compile_dims: 'max' cannot be a parameter name"):
        compile_dims([n], ["n", "max"])
    with pytest.raises(ValueError, match="compile_dims: parameter names repeat: n, n"):
        compile_dims([n], ["n", "n"])
    with pytest.raises(TypeError, match="expected an int or a symbolic dim"):
        compile_dims([1.5], [])
