"""``Check.decide`` proves what holds only by cases on small values or by exact division
(issue 9, part 2): such checks are dropped at deduction instead of run at every call."""

import itertools

from hypothesis import given
from hypothesis import strategies as st

from relaxjax import arith
from relaxjax.ir import Check

A, B, C = arith.syms("a b c")
N, M = arith.sym("n"), arith.sym("m")
K = arith.sym("k", lower=2)


def test_broadcast_against_a_clamped_size_holds():
    assert Check("broadcast", (M, arith.min_(1, M))).decide() is True
    assert Check("broadcast", (arith.min_(1, N), N + 0)).decide() is True
    # min(2, m) against m fails from m == 3 on
    assert Check("broadcast", (M, arith.min_(2, M))).decide() is None
    # bounds alone already settle these
    assert Check("broadcast", (K, K + 1)).decide() is False
    assert Check("broadcast", (N, 1)).decide() is True


def test_divides_by_an_exact_polynomial_quotient():
    assert Check("divides", (A * B, A * B * C)).decide() is True  # also at a * b == 0
    assert Check("divides", (N, N * N + N)).decide() is True
    assert Check("divides", (N + 1, N * N - 1)).decide() is True
    assert Check("divides", (N, N + 1)).decide() is None
    assert Check("divides", (2, N * 4 + 2)).decide() is True
    assert Check("divides", (2, N * 2 + 1)).decide() is False


def test_order_and_equality_by_cases():
    one = arith.min_(1, M)
    assert arith.compare(one * 2, "<=", M + 1) is None
    assert Check("le", (one * 2, M + 1)).decide() is True
    assert Check("eq", (arith.max_(M, 1) - M, arith.min_(1, M) + 1)).decide() is None
    assert Check("nonneg", (N - arith.min_(N, 3),)).decide() is True


DIMS = [N, M, N + 1, M - 1, arith.min_(1, N), arith.min_(2, M), arith.max_(N, 1), N * M, 2, 1, 0]
KINDS = ["eq", "le", "broadcast", "divides"]
GRID = [{"n": n, "m": m} for n, m in itertools.product(range(5), range(5))]


@given(st.sampled_from(KINDS), st.sampled_from(DIMS), st.sampled_from(DIMS))
def test_decide_is_sound(kind, a, b):
    check = Check(kind, (a, b))
    answer = check.decide()
    if answer is None:
        return
    assert all(check.holds(env) is answer for env in GRID), (check, answer)
