"""Deductions that are precise because the program's own run-time checks exclude a zero
(issue 9, part 2): reshape's ``-1`` needs the other axes to hold elements, broadcasting
against a clamped size such as ``x[:1]``'s ``min(1, m)``, grouped attention's head
ratio. Each deduction is checked against ``jax.eval_shape`` at concrete values (0 and 1
included) and its precise result asserted; the compiled programs run against numpy.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax.errors import ShapeError
from relaxjax.ir import TensorInfo
from relaxjax.ops import get
from relaxjax.ops.base import nonzero_floordiv
from relaxjax.ops.index import StridedSliceAttrs
from relaxjax.ops.linalg import EinsumAttrs
from relaxjax.ops.manipulate import BroadcastToAttrs, ReshapeAttrs

sys.path.insert(0, str(Path(__file__).parent))
from oracle import M, N, assert_precise, check_sound, deduce  # noqa: E402

A, B, C, D = arith.syms("a b c d")
ONE_OF_M = arith.min_(1, M)  # the size of x[:1] for x of m rows
TWO_OF_M = arith.min_(2, M)


def _envs(names, values=range(4)):
    return [dict(zip(names, v)) for v in itertools.product(values, repeat=len(names))]


def _subs(shape, env):
    return tuple(arith.subs(d, env) for d in shape)


# --------------------------------------------------------------------------- reshape -1


RESHAPES = [
    # (operand shape, new shape, the precise result)
    ((A, B, C, D), (C, A * B * D, -1), (C, A * B * D, 1)),
    ((A, B, C, D), (-1, C, A * B * D), (1, C, A * B * D)),
    ((A, B, C, D), (A * B, -1), (A * B, C * D)),
    ((A, B, C, D), (C, -1, B), (C, A * D, B)),
    ((N, 4), (N, -1), (N, 4)),
    ((N, 4), (-1, N), (4, N)),
    ((N + 1, N), (N + 1, -1), (N + 1, N)),
    ((N, N + 1), (-1, N * N + N), (1, N * N + N)),
    ((N, M, 4), (M * 2, -1, N), (M * 2, 2, N)),
    ((N, M), (M, 1, -1), (M, 1, N)),
]


@pytest.mark.parametrize(("shape", "new", "expected"), RESHAPES)
def test_reshape_fill_is_exact(shape, new, expected):
    x = TensorInfo(shape, "float32")
    attrs = ReshapeAttrs(new)
    deduction = deduce("reshape", [x], attrs)
    assert_precise(deduction, expected)
    names = sorted({s.name for d in shape + new for s in arith.free_symbols(d)})
    for env in _envs(names, range(3)):
        check_sound("reshape", [x], attrs, lambda a, env=env: jnp.reshape(a, _subs(new, env)), env)


def test_reshape_fill_keeps_the_checks_that_make_it_exact():
    deduction = deduce("reshape", [TensorInfo((A, B, C, D))], ReshapeAttrs((C, A * B * D, -1)))
    (nonempty,) = deduction.checks  # a * b * c * d divides itself: proven
    assert nonempty.kind == "le" and nonempty.args == (1, A * B * C * D)
    assert "the size of -1 is undefined when the other axes hold no elements" in nonempty.message
    assert not nonempty.holds({"a": 1, "b": 2, "c": 0, "d": 4})


def test_numpy_and_jax_refuse_an_empty_reshape_with_minus_one():
    """The premise: ``-1`` is undefined when the other axes hold no elements."""
    with pytest.raises(ValueError, match="cannot reshape array of size 0"):
        np.zeros((0, 4)).reshape(0, -1)
    with pytest.raises(ZeroDivisionError):
        jnp.zeros((0, 4)).reshape(0, -1)
    with pytest.raises(ShapeError, match=r"the size of -1 is undefined .* requires 1 <= 0"):
        get("reshape").deduce([TensorInfo((0, 4))], ReshapeAttrs((0, -1)))


def test_compiled_reshape_runs_and_refuses_empty_other_axes():
    @relax.jit
    def f(x: relax.Tensor((A, B, C, D), "float32")):
        return x.reshape(C, A * B * D, -1) * 2

    assert relax.eval_shape(f) == relax.Tensor((C, A * B * D, 1), "float32")
    for shape in [(1, 2, 3, 4), (2, 1, 5, 3)]:
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        np.testing.assert_array_equal(np.asarray(f(x)), x.reshape(shape[2], -1, 1) * 2)
    assert f.cache_size() == 1
    for shape in [(0, 2, 3, 4), (1, 2, 0, 4), (1, 1, 1, 0)]:
        with pytest.raises(
            ShapeError, match=r"the size of -1 is undefined when the other axes hold no elements"
        ):
            f(np.zeros(shape, np.float32))


def test_nonzero_floordiv():
    assert nonzero_floordiv(N * M * 6, N * 3) == M * 2
    assert nonzero_floordiv(N * 4 + 4, N + 1) == 4
    assert nonzero_floordiv(N * 8, 4) == N * 2
    # no exact quotient: the floor division, which holds for every value
    assert nonzero_floordiv(N + 1, 2) == (N + 1) // 2
    assert str(nonzero_floordiv(N, M)) == "n // m"


# --------------------------------------------------------------------------- broadcasting


BROADCASTS = [
    # (operand shapes, the precise result, whether a run-time check remains)
    (((ONE_OF_M, 4), (M, 4)), (M, 4), False),
    (((M, 4), (ONE_OF_M, 1)), (M, 4), False),
    (((ONE_OF_M,), (M, ONE_OF_M)), (M, ONE_OF_M), False),
    (((M,), (M, ONE_OF_M)), (M, M), False),
    (((TWO_OF_M, 4), (M, 4)), (M, 4), True),  # fails from m == 3 on
    (((arith.min_(1, N), M), (N, 1)), (N, M), False),
]


@pytest.mark.parametrize(("shapes", "expected", "checked"), BROADCASTS)
@pytest.mark.parametrize(("op", "jax_fn"), [("add", jnp.add), ("maximum", jnp.maximum)])
def test_broadcast_against_clamped_sizes(shapes, expected, checked, op, jax_fn):
    operands = [TensorInfo(s, "float32") for s in shapes]
    deduction = deduce(op, operands)
    assert_precise(deduction, expected)
    assert bool(deduction.checks) is checked
    for env in _envs(["m", "n"], range(5)):
        check_sound(op, operands, None, jax_fn, env)


def test_where_and_broadcast_to_against_clamped_sizes():
    x, sliced = TensorInfo((M, 4)), TensorInfo((ONE_OF_M, 4))
    cond = TensorInfo((ONE_OF_M, 1), "bool")
    deduction = deduce("where", [cond, sliced, x])
    assert_precise(deduction, (M, 4))
    assert not deduction.checks
    deduction = deduce("broadcast_to", [sliced], BroadcastToAttrs((M, 4)))
    assert_precise(deduction, (M, 4))
    assert not deduction.checks
    for env in _envs(["m"], range(5)):
        check_sound("where", [cond, sliced, x], None, jnp.where, env)
        target = (env["m"], 4)
        check_sound(
            "broadcast_to",
            [sliced],
            BroadcastToAttrs((M, 4)),
            lambda a, t=target: jnp.broadcast_to(a, t),
            env,
        )


def test_einsum_batch_against_a_clamped_size():
    attrs = EinsumAttrs("bij,bjk->bik")
    operands = [TensorInfo((ONE_OF_M, 2, 3)), TensorInfo((M, 3, 4))]
    deduction = deduce("einsum", operands, attrs)
    assert_precise(deduction, (M, 2, 4))
    assert not deduction.checks
    for env in _envs(["m"], range(4)):
        check_sound("einsum", operands, attrs, lambda a, b: jnp.einsum("bij,bjk->bik", a, b), env)


def test_first_row_plus_all_rows_compiles_precisely():
    @relax.jit
    def f(x: relax.Tensor(("m", 4), "float32")):
        return x[:1] + x, rnp.broadcast_to(x[:1], x.shape) * x

    m = arith.sym("m")
    spec = relax.Tensor((m, 4), "float32")
    assert relax.eval_shape(f) == (spec, spec)
    assert "assert" not in str(f.trace())
    for rows in (0, 1, 3):
        x = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
        got = f(x)
        np.testing.assert_array_equal(np.asarray(got[0]), x[:1] + x)
        np.testing.assert_array_equal(np.asarray(got[1]), np.broadcast_to(x[:1], x.shape) * x)
    assert f.cache_size() == 1


# --------------------------------------------------------------------------- slice steps


STEPS = [
    # (step, begin): a step that is a non-negative (or non-positive) dim has its sign,
    # 0 being refused at run time, as Python and jax refuse a zero step
    (N, None),
    (N, 1),
    (-N, None),
    (N + 1, None),  # proven >= 1: no check
    (-N - 2, 3),
]


@pytest.mark.parametrize(("step", "begin"), STEPS)
def test_slice_with_a_symbolic_step(step, begin):
    x = TensorInfo((M, 3), "float32")
    attrs = StridedSliceAttrs((0,), (begin,), (None,), (step,))
    deduction = deduce("strided_slice", [x], attrs)
    assert_precise(deduction)
    proven = arith.compare(step, "!=", 0) is True
    assert bool(deduction.checks) is not proven
    for env in _envs(["m", "n"], range(5)):
        value = arith.subs(step, env)
        if value == 0:  # jax refuses it (and so do the attrs): a check must fail
            assert any(not c.holds(env) for c in deduction.checks)
            continue
        check_sound("strided_slice", [x], attrs, lambda a, v=value: a[begin::v], env)


def test_compiled_slice_by_a_dim():
    @relax.jit
    def f(x: relax.Tensor(("m", "k"), "float32")):
        return x[:: x.shape[1]] * 2, x[:: -x.shape[1]]

    for m, k in [(5, 2), (7, 3), (4, 1), (0, 2)]:
        x = np.arange(m * k, dtype=np.float32).reshape(m, k)
        every, backwards = f(x)
        np.testing.assert_array_equal(np.asarray(every), x[::k] * 2)
        np.testing.assert_array_equal(np.asarray(backwards), x[::-k])
    assert f.cache_size() == 1
    with pytest.raises(ShapeError, match=r"slice step k of axis 0 cannot be zero: requires 1 <= k"):
        f(np.zeros((3, 0), np.float32))


# --------------------------------------------------------------------------- attention


def test_grouped_attention_head_ratio_is_exact():
    k = arith.sym("k")
    spec_q = relax.Tensor(("b", "t", 2 * k, 4), "float32")
    spec_kv = relax.Tensor(("b", "s", k, 4), "float32")

    def attention(q, key, v):
        return rnn.dot_product_attention(q, key, v, return_residual=True)

    text = str(relax.jit(attention).trace(spec_q, spec_kv, spec_kv))
    # the query regrouped as (b, t, k, 2, 4): no `(k * 2) // k`, no reshape check
    assert "Tensor((b, t, k, 2, 4)" in text
    assert "//" not in text.split("# kernel")[0]
    assert "divides" not in text


def test_grouped_attention_values():
    rng = np.random.default_rng(0)

    @relax.jit
    def f(
        q: relax.Tensor(("b", "t", "n", 4), "float32"),
        key: relax.Tensor(("b", "s", "k", 4), "float32"),
        v: relax.Tensor(("b", "s", "k", 4), "float32"),
    ):
        return rnn.dot_product_attention(q, key, v)

    for heads, kv in [(2, 1), (4, 2), (3, 3)]:
        q = rng.standard_normal((1, 3, heads, 4)).astype(np.float32)
        kk = rng.standard_normal((1, 5, kv, 4)).astype(np.float32)
        vv = rng.standard_normal((1, 5, kv, 4)).astype(np.float32)
        expected = jax.nn.dot_product_attention(q, kk, vv)
        np.testing.assert_allclose(np.asarray(f(q, kk, vv)), expected, rtol=1e-5, atol=1e-5)
