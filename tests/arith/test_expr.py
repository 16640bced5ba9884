"""Nodes, canonical form, printing, equality, hashing and operator plumbing."""

import copy
import pickle

import numpy as np
import pytest

from relaxjax import arith
from relaxjax.arith import Expr, FloorDiv, Max, Min, Mod, Poly, Sym, sym, syms
from relaxjax.errors import InconclusiveShapeError

n, m, k = syms("n m k")


def test_contract_names_are_exported():
    for name in [
        "Expr", "Sym", "Dim", "sym", "syms", "min_", "max_", "parse_dim", "free_symbols",
        "subs", "evaluate", "compile_dims", "bounds", "compare", "prove_equal", "prove_lt",
        "prove_le", "prove_gt", "prove_ge", "prove_ne", "to_python",
    ]:  # fmt: skip
        assert name in arith.__all__
        assert getattr(arith, name) is not None


def test_sym_defaults_and_bounds():
    s = sym("s", lower=1, upper=4096)
    assert (s.name, s.lower, s.upper) == ("s", 1, 4096)
    assert (n.lower, n.upper) == (0, None)
    assert sym("q", lower=None).lower is None


def test_syms_splits_on_spaces_and_commas():
    assert [s.name for s in syms("b s")] == ["b", "s"]
    assert [s.name for s in syms("a, b,c")] == ["a", "b", "c"]
    assert all(s.lower == 2 for s in syms("x y", lower=2))


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("1n",), ValueError, "a symbol name must be a Python identifier, got '1n'"),
        (("for",), ValueError, "a symbol name must be a Python identifier, got 'for'"),
        (("min",), ValueError, "'min' is reserved for the min() function of dims"),
        (("n", 5, 4), ValueError, "symbol 'n': lower bound 5 exceeds upper bound 4"),
        (("n", 1.5), TypeError, "symbol 'n': lower bound must be an int or None, got 1.5"),
        (
            ("n", 0, "8"),
            TypeError,
            "symbol 'n': upper bound must be an int, a dim or None, got '8'",
        ),
    ],
)
def test_sym_validation(args, error, message):
    with pytest.raises(error, match=f"^{message}$".replace("(", r"\(").replace(")", r"\)")):
        sym(*args)


def test_syms_rejects_empty_and_non_strings():
    with pytest.raises(ValueError, match="syms expects at least one name, got ' '"):
        syms(" ")
    with pytest.raises(TypeError, match="syms expects a string of names"):
        syms(["a"])


def test_symbol_equality_is_by_name_only():
    assert sym("n", lower=1, upper=8) == n
    assert hash(sym("n", lower=3)) == hash(n)
    assert sym("n") != sym("m")
    assert len({n, sym("n", lower=2), m}) == 2


def test_api_example():
    e = (n + 1) * 2
    assert str(e) == "n * 2 + 2"
    assert e.subs({"n": 3}) == 8 and type(e.subs({"n": 3})) is int
    s = sym("s")
    assert str(e.subs({n: s})) == "s * 2 + 2"
    assert arith.prove_equal(e, 2 * n + 2)


def test_constants_are_plain_ints():
    for value in [n - n, n * 0, (n + 1) - n, (n * 8) % 4, n // n - n // n, 3 * (n - n) + 7]:
        assert type(value) is int
    assert n - n == 0
    assert (n + 2) - (n - 1) == 3


def test_equality_and_hash_are_structural_on_canonical_form():
    a = (n + 1) * (m + 2)
    b = n * m + 2 * n + m + 2
    assert a == b and hash(a) == hash(b) and str(a) == str(b)
    assert a is b  # interned
    assert (n + 1) != (n + 2)
    assert n + 1 != 1
    assert ((n + 1) == 1) is False
    assert (n == "n") is False


@pytest.mark.parametrize(
    ("build", "text"),
    [
        (lambda: n * 2 + 2, "n * 2 + 2"),
        (lambda: 2 + n * 2, "n * 2 + 2"),
        (lambda: m + n, "m + n"),
        (lambda: n + m, "m + n"),
        (lambda: n - m * 2 - 1, "-m * 2 + n - 1"),
        (lambda: -n + 3, "-n + 3"),
        (lambda: 3 - n, "-n + 3"),
        (lambda: n * n, "n * n"),
        (lambda: m * n * 2 + n + 1, "m * n * 2 + n + 1"),
        (lambda: n * n * m + m * 2 + k, "m * n * n + k + m * 2"),
        (lambda: n**3 - n, "n * n * n - n"),
        (lambda: -n, "-n"),
        (lambda: -(n * 3), "-n * 3"),
        (lambda: n // 2, "n // 2"),
        (lambda: (n + 1) // 2, "(n + 1) // 2"),
        (lambda: (n // 2) * 3 - 1, "(n // 2) * 3 - 1"),
        (lambda: -(n // 2), "-(n // 2)"),
        (lambda: m - n // 2, "m - n // 2"),
        (lambda: n // m, "n // m"),
        (lambda: n // (m + 1), "n // (m + 1)"),
        (lambda: (m + 1) % n, "(m + 1) % n"),
        (lambda: n % (m * 2), "n % (m * 2)"),
        (lambda: n % (m // 2), "n % (m // 2)"),
        (lambda: (n // m) // 2, "(n // m) // 2"),
        (lambda: (n % m) % 3, "(n % m) % 3"),
        (lambda: (n % 12) // 5, "(n % 12) // 5"),
        (lambda: arith.min_(n, m), "min(m, n)"),
        (lambda: arith.max_(4, n), "max(4, n)"),
        (lambda: arith.min_(n, m) * 2 + n // 4, "min(m, n) * 2 + n // 4"),
        (lambda: n + m // 3 + arith.max_(n, m) + k % 5, "n + max(m, n) + m // 3 + k % 5"),
    ],
)
def test_canonical_print(build, text):
    value = build()
    assert str(value) == text
    assert repr(value) == text


def test_print_order_is_stable_across_construction_orders():
    forms = [
        n * m + m * k + k * n + 1,
        1 + k * n + m * k + n * m,
        (k + m) * n + m * k + 1,
    ]
    assert {str(f) for f in forms} == {"k * m + k * n + m * n + 1"}


def test_nodes_expose_structure():
    e = n * m * 3 + n + 1
    assert isinstance(e, Poly) and e.const == 1
    assert e.terms == ((((m, 1), (n, 1)), 3), (((n, 1),), 1))
    assert e.children() == (m, n, n)
    q = n // m
    assert isinstance(q, FloorDiv) and (q.a, q.b) == (n, m)
    r = n % m
    assert isinstance(r, Mod) and r.children() == (n, m)
    assert isinstance(arith.min_(n, m), Min) and arith.min_(n, m).args == (m, n)
    assert isinstance(arith.max_(n, m), Max)
    assert isinstance(n, Expr) and isinstance(n, Sym)
    assert (n * n).terms == ((((n, 2),), 1),)


def test_symbols_and_free_symbols():
    e = n * 2 + (m // k)
    assert e.symbols == frozenset({n, m, k})
    assert arith.free_symbols(e) == frozenset({n, m, k})
    assert arith.free_symbols(5) == frozenset()
    assert arith.free_symbols(n) == frozenset({n})


def test_operators_accept_ints_and_numpy_integers():
    assert str(3 + n) == "n + 3" and str(n + np.int64(3)) == "n + 3"
    assert str(np.int32(2) * n) == "n * 2"
    assert str(10 - n) == "-n + 10"
    assert str(7 // n) == "7 // n"
    assert str(7 % n) == "7 % n"
    assert str(+n) == "n"


def test_operators_defer_on_non_dims():
    for other in [1.5, "n", None, [1]]:
        with pytest.raises(TypeError):
            n + other
        with pytest.raises(TypeError):
            other * n
    assert n.__add__(1.5) is NotImplemented
    with pytest.raises(TypeError):
        n / 2


def test_power_needs_non_negative_int():
    assert str((n + 1) ** 2) == "n * n + n * 2 + 1"
    assert n**0 == 1
    with pytest.raises(
        ValueError, match="a dim can only be raised to a non-negative power, got -1"
    ):
        n**-1
    with pytest.raises(TypeError):
        n**m


def test_abs():
    assert abs(n) == n  # n >= 0
    assert str(abs(n - m)) == "-m - n + max(m, n) * 2"
    assert abs(sym("q", lower=None, upper=-1)) == -sym("q")


def test_comparisons_are_decided_or_raise():
    assert n + 1 > n
    assert n >= 0
    assert not (n < 0)
    assert arith.min_(n, 4) <= 4
    with pytest.raises(
        InconclusiveShapeError, match="^cannot decide n < 4 for every value of its symbols$"
    ):
        _ = n < 4
    with pytest.raises(InconclusiveShapeError, match="cannot decide m <= n for every"):
        _ = m <= n
    with pytest.raises(InconclusiveShapeError, match="cannot decide n > m"):
        _ = n > m
    with pytest.raises(InconclusiveShapeError, match="cannot decide n >= 1"):
        _ = n >= 1


def test_comparisons_with_non_dims_are_type_errors():
    with pytest.raises(TypeError):
        _ = n < 1.5


def test_bool_is_decided_or_raises():
    assert bool(sym("p", lower=1))
    assert bool(n + 1)
    with pytest.raises(InconclusiveShapeError, match="^cannot decide whether n is non-zero"):
        bool(n)
    with pytest.raises(InconclusiveShapeError):
        if m - n:
            pass


def test_division_by_zero_constant():
    with pytest.raises(ZeroDivisionError, match="integer division by zero: n // 0"):
        n // 0
    with pytest.raises(ZeroDivisionError, match=r"integer modulo by zero: \(n \+ 1\) % 0"):
        (n + 1) % 0
    with pytest.raises(ZeroDivisionError):
        n // (m - m)


def test_pickle_and_copy_keep_equality_and_bounds():
    s = sym("s", lower=1, upper=9)
    e = arith.min_(s * 2 + n // 3, m % 5)
    again = pickle.loads(pickle.dumps(e))
    assert again == e and str(again) == str(e) and hash(again) == hash(e)
    assert copy.deepcopy(e) is e and copy.copy(e) is e
    restored = pickle.loads(pickle.dumps(s))
    assert (restored.lower, restored.upper) == (1, 9)


def test_nodes_are_immutable():
    with pytest.raises(AttributeError):
        n.name = "x"
    e = n + 1
    with pytest.raises(AttributeError):
        e.const = 3


def test_interning_distinguishes_symbol_bounds():
    narrow = sym("t", lower=0, upper=3)
    wide = sym("t")
    first = (narrow * 3) // 8  # built first and interned with t in [0, 3]
    second = (wide * 3) // 8
    assert first == second and str(second) == "(t * 3) // 8"
    assert arith.bounds(first) == (0, 1)
    assert arith.bounds(second) == (0, None)
    assert first is not second
    assert (wide * 3) // 8 is second


def test_mixed_bounds_simplify_with_the_bounds_of_their_symbol():
    small = sym("u", upper=7)
    assert small % 8 == small
    assert str(sym("u") % 8) == "u % 8"


def test_index_raises_a_type_error_saying_what_to_do():
    n = sym("n")
    with pytest.raises(TypeError, match=r"symbolic dim n \+ 1 .*relaxjax.numpy.asarray"):
        np.ones(4)[: n + 1]
    with pytest.raises(TypeError, match="symbolic dim n has no value"):
        range(n)
