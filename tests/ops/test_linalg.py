"""matmul, dot and einsum: deduction against jax (oracle), references against jax
numerics, and every error path."""

from __future__ import annotations

import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relaxjax import arith
from relaxjax.errors import ShapeError
from relaxjax.ir import TensorInfo
from relaxjax.ops import get
from relaxjax.ops.linalg import EinsumAttrs, parse_subscripts

sys.path.insert(0, str(Path(__file__).parent))
from oracle import (  # noqa: E402
    ALL_DTYPES,
    M,
    N,
    assert_close,
    assert_precise,
    check_coarsening,
    check_lowering,
    check_sound,
    deduce,
    dims,
    envs,
    random_array,
)

K = arith.sym("k")


@st.composite
def related_dim(draw, dim):
    """Usually ``dim``, sometimes 1 or another dim (to exercise mismatches)."""
    return draw(st.one_of(st.just(dim), st.just(dim), st.just(1), dims()))


@st.composite
def batch_pair(draw):
    a = tuple(draw(st.lists(dims(), max_size=2)))
    b = tuple([draw(related_dim(d)) for d in a][-draw(st.integers(0, len(a))) :] if a else ())
    if draw(st.booleans()):
        a, b = b, a
    return a, b


@st.composite
def matmul_operands(draw, dtypes=ALL_DTYPES):
    """Operands of matmul/dot: ranks 0-4, contraction dims usually equal."""
    k = draw(dims())
    batch_a, batch_b = draw(batch_pair())
    rank_a = draw(st.sampled_from([0, 1, 1, 2, 2, 2, 2, 2]))
    rank_b = draw(st.sampled_from([0, 1, 1, 2, 2, 2, 2, 2]))
    a = () if rank_a == 0 else (k,) if rank_a == 1 else (*batch_a, draw(dims()), k)
    k_b = draw(related_dim(k))
    b = () if rank_b == 0 else (k_b,) if rank_b == 1 else (*batch_b, k_b, draw(dims()))
    return TensorInfo(a, draw(st.sampled_from(dtypes))), TensorInfo(
        b, draw(st.sampled_from(dtypes))
    )


# --------------------------------------------------------------------------- oracle


@given(operands=matmul_operands(), env=envs())
def test_matmul_oracle(operands, env):
    check_sound("matmul", list(operands), None, jnp.matmul, env)
    check_coarsening("matmul", list(operands), None)


@given(operands=matmul_operands(), env=envs())
def test_dot_oracle(operands, env):
    check_sound("dot", list(operands), None, jnp.dot, env)
    check_coarsening("dot", list(operands), None)


@st.composite
def einsum_cases(draw):
    """Random subscripts over labels ijkl (with ellipses and implicit outputs) and operand
    shapes that usually agree per label (sometimes 1, sometimes not at all)."""
    label_dims = {label: draw(dims()) for label in "ijkl"}
    count = draw(st.integers(1, 3))
    use_ellipsis = draw(st.booleans())
    ellipsis = tuple(draw(st.lists(dims(), max_size=2)))
    terms, shapes = [], []
    for _ in range(count):
        labels = draw(st.lists(st.sampled_from("ijkl"), max_size=3))
        own = {c: draw(related_dim(label_dims[c])) for c in labels}
        shape = [own[c] for c in labels]  # a diagonal has one size (jax is quirky otherwise)
        term = "".join(labels)
        if use_ellipsis and draw(st.booleans()):
            at = draw(st.integers(0, len(labels)))
            cut = draw(st.integers(0, len(ellipsis)))
            term = term[:at] + "..." + term[at:]
            shape[at:at] = [draw(related_dim(d)) for d in ellipsis[cut:]]
        if draw(st.integers(0, 9)) == 0:  # a rank mismatch now and then
            shape.append(2)
        terms.append(term)
        shapes.append(tuple(shape))
    subscripts = ",".join(terms)
    used = sorted(set(subscripts) - set(".,"))
    if draw(st.booleans()):
        out = draw(st.permutations(used))[: draw(st.integers(0, len(used)))]
        prefix = "..." if "..." in subscripts and draw(st.booleans()) else ""
        subscripts += "->" + prefix + "".join(out)
    dtypes = draw(st.lists(st.sampled_from(ALL_DTYPES), min_size=count, max_size=count))
    return subscripts, [TensorInfo(s, d) for s, d in zip(shapes, dtypes)]


@given(case=einsum_cases(), env=envs())
def test_einsum_oracle(case, env):
    subscripts, operands = case
    attrs = EinsumAttrs(subscripts)
    check_sound("einsum", operands, attrs, lambda *a: jnp.einsum(subscripts, *a), env)
    check_coarsening("einsum", operands, attrs)


# --------------------------------------------------------------------------- precision


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((N, K), (K, M), (N, M)),
        ((K,), (K, M), (M,)),
        ((N, K), (K,), (N,)),
        ((K,), (K,), ()),
        ((2, 1, N, K), (M, K, 5), (2, M, N, 5)),
        ((N, N), (N, N), (N, N)),
    ],
)
def test_matmul_is_precise(a, b, expected):
    deduction = deduce("matmul", [TensorInfo(a), TensorInfo(b)])
    assert_precise(deduction, expected)
    assert deduction.checks == ()


def test_matmul_with_unprovable_contraction_checks_at_run_time():
    deduction = deduce("matmul", [TensorInfo((N, K)), TensorInfo((M, 5))])
    assert_precise(deduction, (N, 5))
    (check,) = deduction.checks
    assert check.kind == "eq" and set(check.args) == {K, M}
    assert "contraction dims must match: (n, k) @ (m, 5)" in check.message


def test_matmul_batch_broadcast_with_unprovable_dims_is_coarse():
    deduction = deduce("matmul", [TensorInfo((N, 2, 3)), TensorInfo((M, 3, 4))])
    assert deduction.info == TensorInfo(dtype="float32", ndim=3)
    assert [c.kind for c in deduction.checks] == ["broadcast"]


def test_dot_and_einsum_are_precise():
    assert_precise(deduce("dot", [TensorInfo((N, K)), TensorInfo((2, K, M))]), (N, 2, M))
    assert_precise(deduce("dot", [TensorInfo(()), TensorInfo((N, K))]), (N, K))
    cases = [
        ("ij,jk->ik", [(N, K), (K, M)], (N, M)),
        ("ij,jk", [(N, K), (K, M)], (N, M)),
        ("...ij,...jk", [(2, N, K), (K, M)], (2, N, M)),
        ("bij->bji", [(N, 3, M)], (N, M, 3)),
        ("ii->i", [(N, N)], (N,)),
        ("ij,ij->i", [(1, K), (N, K)], (N,)),
        ("i,j", [(N,), (M,)], (N, M)),
    ]
    for subscripts, shapes, expected in cases:
        deduction = deduce("einsum", [TensorInfo(s) for s in shapes], EinsumAttrs(subscripts))
        assert_precise(deduction, expected)


def test_unknown_ranks():
    unknown = TensorInfo(dtype="float32")
    assert get("matmul").deduce([unknown, TensorInfo((2, 3))])[0] == unknown
    ranked = TensorInfo(dtype="float32", ndim=3)
    assert get("matmul").deduce([ranked, TensorInfo((3,))])[0] == TensorInfo(
        dtype="float32", ndim=2
    )
    attrs = EinsumAttrs("...ij,jk")
    assert get("einsum").deduce([unknown, TensorInfo((3, 4))], attrs)[0] == unknown
    attrs = EinsumAttrs("ij,jk->ki")
    assert get("einsum").deduce([unknown, TensorInfo((3, 4))], attrs)[0] == TensorInfo(
        dtype="float32", ndim=2
    )


# --------------------------------------------------------------------------- numerics


@settings(max_examples=20)
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_matmul_and_dot_references_match_jax(data, seed):
    rng = np.random.default_rng(seed)
    a, b = data.draw(matmul_operands())
    env = {"n": 2, "m": 3}
    shape_a = tuple(arith.subs(d, env) for d in a.shape)
    shape_b = tuple(arith.subs(d, env) for d in b.shape)
    x = random_array(rng, shape_a, a.dtype, low=-2, high=2)
    y = random_array(rng, shape_b, b.dtype, low=-2, high=2)
    for name, fn in [("matmul", jnp.matmul), ("dot", jnp.dot)]:
        try:
            expected = fn(x, y)
        except (TypeError, ValueError):
            continue
        assert_close(get(name).reference(x, y), expected, f"{name} {shape_a} {shape_b}")


@settings(max_examples=25)
@given(case=einsum_cases(), seed=st.integers(0, 2**16))
def test_einsum_reference_matches_jax(case, seed):
    subscripts, operands = case
    rng = np.random.default_rng(seed)
    env = {"n": 2, "m": 3}
    arrays = [
        random_array(rng, tuple(arith.subs(d, env) for d in o.shape), o.dtype, low=-2, high=2)
        for o in operands
    ]
    try:
        expected = jnp.einsum(subscripts, *arrays)
    except (TypeError, ValueError):
        return
    ours = get("einsum").reference(*arrays, attrs=EinsumAttrs(subscripts))
    assert_close(ours, expected, f"einsum {subscripts} {[a.shape for a in arrays]}")


def test_integer_and_bool_products_match_jax():
    rng = np.random.default_rng(3)
    a = random_array(rng, (3, 4), "int8", low=-100, high=100)
    b = random_array(rng, (4, 2), "int8", low=-100, high=100)
    assert_close(get("matmul").reference(a, b), jnp.matmul(a, b), "int8 wraps")
    p = random_array(rng, (3, 4), "bool")
    q = random_array(rng, (4, 2), "bool")
    assert_close(get("matmul").reference(p, q), jnp.matmul(p, q), "bool")
    assert_close(
        get("einsum").reference(p, q, attrs=EinsumAttrs("ij,jk")), jnp.einsum("ij,jk", p, q)
    )


# --------------------------------------------------------------------------- lowering


@settings(max_examples=60)
@given(operands=matmul_operands(), name=st.sampled_from(["matmul", "dot"]), env=envs())
def test_matmul_and_dot_lowering_matches_reference(operands, name, env):
    if deduce(name, list(operands)).error is None:
        check_lowering(name, list(operands), None, env)


@settings(max_examples=60)
@given(case=einsum_cases(), env=envs())
def test_einsum_lowering_matches_reference(case, env):
    subscripts, operands = case
    attrs = EinsumAttrs(subscripts)
    if deduce("einsum", operands, attrs).error is None:
        check_lowering("einsum", operands, attrs, env)


def test_matmul_kernel_is_one_reduction_block():
    kernel = get("matmul").lower([TensorInfo((N, K)), TensorInfo((K, M))], None, TensorInfo((N, M)))
    text = str(kernel)
    assert 'with block("matmul")' in text and "axis.reduce(d1, k)" in text
    assert [tuple(map(str, p.shape)) for p in kernel.params] == [
        ("d0", "d1"),
        ("d1", "d2"),
        ("d0", "d2"),
    ]
    other = get("matmul").lower([TensorInfo((M, N)), TensorInfo((N, K))], None, TensorInfo((M, K)))
    assert other == kernel


def test_empty_contraction_writes_zeros():
    from relaxjax.tir import interpreter

    kernel = get("matmul").lower([TensorInfo((N, K)), TensorInfo((K, M))], None, TensorInfo((N, M)))
    out = np.full((2, 3), 7.0, np.float32)
    interpreter.run(kernel, np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32), out)
    np.testing.assert_array_equal(out, np.zeros((2, 3), np.float32))


def test_half_precision_products_accumulate_in_float32():
    kernel = get("matmul").lower(
        [TensorInfo((N, K), "float16"), TensorInfo((K, M), "float16")],
        None,
        TensorInfo((N, M), "float16"),
    )
    assert 'alloc_buffer((d0, d2), "float32")' in str(kernel)


# --------------------------------------------------------------------------- errors


def test_provably_mismatched_contraction_raises_at_trace_time():
    with pytest.raises(
        ShapeError,
        match=r"matmul: contraction dims must match: \(3, k\) @ \(k \+ 1, 5\) contracts k with "
        r"k \+ 1",
    ):
        get("matmul").deduce([TensorInfo((3, K)), TensorInfo((K + 1, 5))])
    with pytest.raises(ShapeError, match=r"dot: contraction dims must match: dot of \(2, 3\)"):
        get("dot").deduce([TensorInfo((2, 3)), TensorInfo((4, 5))])


def test_matmul_rejects_scalars():
    with pytest.raises(ShapeError, match=r"matmul: operand 1 must have rank >= 1, got shape \(\)"):
        get("matmul").deduce([TensorInfo((2, 3)), TensorInfo(())])


def test_einsum_errors():
    with pytest.raises(
        ShapeError, match=r"einsum: term 'ijk' of 'ijk->i' does not match operand 0"
    ):
        get("einsum").deduce([TensorInfo((2, 3))], EinsumAttrs("ijk->i"))
    with pytest.raises(ShapeError, match=r"einsum: label 'j' of 'ij,jk->ik' .* sizes 3 and 4"):
        get("einsum").deduce([TensorInfo((2, 3)), TensorInfo((4, 5))], EinsumAttrs("ij,jk->ik"))
    with pytest.raises(TypeError, match=r"einsum: subscripts 'ij,jk->ik' name 2 operand"):
        get("einsum").deduce([TensorInfo((2, 3))], EinsumAttrs("ij,jk->ik"))
    with pytest.raises(ValueError, match=r"output label 'k' does not appear"):
        EinsumAttrs("ij->k")
    with pytest.raises(ValueError, match=r"output label 'i' appears more than once"):
        EinsumAttrs("ij->ii")
    with pytest.raises(ValueError, match=r"invalid character '1'"):
        EinsumAttrs("i1->i")
    with pytest.raises(ValueError, match=r"more than one ellipsis"):
        EinsumAttrs("......->")
    with pytest.raises(ValueError, match=r"output has '...' but no input does"):
        EinsumAttrs("ij->...")
    with pytest.raises(TypeError, match=r"einsum subscripts must be a str"):
        EinsumAttrs(3)


def test_diagonal_sizes_must_agree_within_an_operand():
    with pytest.raises(
        ShapeError, match=r"label 'i' of 'ii->i' .* repeats in operand 0 with sizes"
    ):
        get("einsum").deduce([TensorInfo((1, 3))], EinsumAttrs("ii->i"))
    deduction = deduce("einsum", [TensorInfo((N, M))], EinsumAttrs("ii->i"))
    assert_precise(deduction, (N,))
    assert [c.kind for c in deduction.checks] == ["eq"]


def test_subscripts_are_canonical():
    assert EinsumAttrs(" i j , j k ").subscripts == "ij,jk->ik"
    assert EinsumAttrs("ba,ac").subscripts == "ba,ac->bc"
    assert EinsumAttrs("...ij,jk").subscripts == "...ij,jk->...ik"
    assert EinsumAttrs("iJ").subscripts == "iJ->Ji"
    assert parse_subscripts("ii").output == ""
