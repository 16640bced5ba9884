"""gather and scatter (ops/gather.py): deduction with symbolic dims, references against
jax (x[key], x.at[key]), kernels against the references, and every error path."""

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
from relaxjax.ir import PrimInfo, TensorInfo
from relaxjax.ops import get
from relaxjax.ops.gather import GatherAttrs, ScatterAttrs
from relaxjax.tir import interpreter

sys.path.insert(0, str(Path(__file__).parent))
from oracle import N, assert_close, check_lowering, deduce, random_array  # noqa: E402

T = TensorInfo


def _jax_gather(attrs, x, *indices):
    """What gather computes, written with jax indexing: slice, move the indexed axes to
    the front, index them (jax wraps negatives and clamps), move the batch to position."""
    key = [slice(None)] * x.ndim
    for axis, b, e, s in zip(attrs.slice_axes, attrs.begin, attrs.end, attrs.step):
        key[axis] = slice(b, e, s)
    sliced = x[tuple(key)]
    k = len(attrs.axes)
    front = jnp.moveaxis(sliced, attrs.axes, tuple(range(k)))
    mode = "clip" if attrs.mode == "clip" else "fill"
    batch = jnp.broadcast_shapes(*(jnp.shape(i) for i in indices)) if indices else ()
    taken = front.at[tuple(indices)].get(
        mode=mode, fill_value=attrs.fill_value, wrap_negative_indices=attrs.wrap
    )
    return jnp.moveaxis(
        taken, tuple(range(len(batch))), tuple(range(attrs.position, attrs.position + len(batch)))
    )


CASES = [
    # (x shape, index shapes, attrs)
    ((5, 3, 4), [(2,)], GatherAttrs(axes=(0,))),
    ((5, 3, 4), [(2, 2), (2,)], GatherAttrs(axes=(0, 2), position=1)),
    ((5, 3, 4), [(), (3,)], GatherAttrs(axes=(2, 1))),
    (
        (5, 3, 4),
        [(2, 1)],
        GatherAttrs(axes=(1,), position=2, slice_axes=(0,), begin=(1,), end=(None,), step=(2,)),
    ),
    ((5, 3, 4), [(3,)], GatherAttrs(axes=(0,), mode="fill", fill_value=-1.5)),
    ((5, 3, 4), [(3,)], GatherAttrs(axes=(0,), mode="fill", wrap=False)),
    ((5, 3, 4), [], GatherAttrs(axes=(), slice_axes=(1,), begin=(None,), end=(None,), step=(-1,))),
    ((0, 3), [(2,)], GatherAttrs(axes=(0,), mode="fill")),
    ((4,), [(0,)], GatherAttrs(axes=(0,))),
]


def _indices(rng, shapes, size):
    return [rng.integers(-size - 2, size + 2, shape).astype(np.int64) for shape in shapes]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2].mode}")
def test_gather_reference_and_kernel_match_jax(case):
    shape, index_shapes, attrs = case
    rng = np.random.default_rng(0)
    x = random_array(rng, shape, "float32")
    size = shape[attrs.axes[0]] if attrs.axes else 1
    indices = _indices(rng, index_shapes, size)
    ours = get("gather").reference(x, *indices, attrs=attrs)
    if 0 in shape:  # jax cannot gather from an empty axis; in "fill" mode every index is out
        expected = np.full(ours.shape, np.nan, np.float32)
    else:
        expected = _jax_gather(attrs, jnp.asarray(x), *map(jnp.asarray, indices))
    assert_close(ours, expected)
    infos = [T(shape, "float32"), *(T(i.shape, "int64") for i in indices)]
    info, checks = get("gather").deduce(infos, attrs)
    assert info.shape == ours.shape and not checks
    kernel = get("gather").lower(infos, attrs, info)
    assert_close(interpreter.run(kernel, x, *indices), ours)


def test_gather_deduces_symbolic_shapes_and_checks():
    attrs = GatherAttrs(
        axes=(0, 2), position=1, slice_axes=(1,), begin=(1,), end=(None,), step=(1,)
    )
    m = arith.sym("m", lower=2)
    d = deduce("gather", [T((N, m, 4), "float32"), T(("k",), "int32"), T((1,), "int64")], attrs)
    assert str(d.info) == 'Tensor((m - 1, k), "float32")'
    # clip mode needs an element to clamp to: an indexed axis of size n must not be empty
    assert [c.relation() for c in d.checks] == ["min(1, k) <= n"]
    # broadcasting index shapes that may not broadcast is checked at run time
    d = deduce(
        "gather",
        [T((N, 4), "float32"), T(("k",), "int32"), T(("j",), "int32")],
        GatherAttrs(axes=(0, 1)),
    )
    assert "broadcast(k, j)" in [c.relation() for c in d.checks]
    assert d.info.ndim == 1
    d = deduce(
        "gather", [T((N, 4), "float32"), PrimInfo("int64", weak=True)], GatherAttrs(axes=(1,))
    )
    assert str(d.info) == 'Tensor((n,), "float32")'
    d = deduce("gather", [T(ndim=2, dtype="float32"), T(("k",), "int32")], GatherAttrs(axes=(1,)))
    assert str(d.info) == 'Tensor(ndim=2, dtype="float32")'


def test_gather_and_scatter_errors():
    x = T((N, 4), "float32")
    with pytest.raises(TypeError, match="gather: indices must have an integer type, got float32"):
        get("gather").deduce([x, T((2,), "float32")], GatherAttrs(axes=(0,)))
    with pytest.raises(TypeError, match="got bool .boolean masks are converted"):
        get("gather").deduce([x, T((2,), "bool")], GatherAttrs(axes=(0,)))
    with pytest.raises(ShapeError, match="gather: the key indexes 2 axes with arrays, got 1 index"):
        get("gather").deduce([x, T((2,), "int32")], GatherAttrs(axes=(0, 1)))
    with pytest.raises(ShapeError, match="gather: axis 2 is out of bounds for an array of rank 2"):
        get("gather").deduce([x, T((2,), "int32")], GatherAttrs(axes=(2,)))
    with pytest.raises(ShapeError, match="position 3 is past the 1 axes not indexed by arrays"):
        get("gather").deduce([x, T((2,), "int32")], GatherAttrs(axes=(0,), position=3))
    with pytest.raises(ShapeError, match=r"cannot index axis 0 of \(0, 4\) .* the axis is empty"):
        get("gather").deduce([T((0, 4), "float32"), T((2,), "int32")], GatherAttrs(axes=(0,)))
    upd = ScatterAttrs(axes=(0,))
    with pytest.raises(
        ShapeError,
        match=r"scatter: the updates \(3,\) must have the shape of the indexed part \(2, 4\)",
    ):
        get("scatter").deduce([x, T((3,), "float32"), T((2,), "int32")], upd)
    with pytest.raises(ShapeError, match=r"scatter: updates axis 1 is 5, x\[key\] \(2, 4\) has 4"):
        get("scatter").deduce([x, T((2, 5), "float32"), T((2,), "int32")], upd)
    d = deduce("scatter", [x, T(("k", 4), "float32"), T((2,), "int32")], upd)
    assert [c.relation() for c in d.checks] == ["k == 2"] and d.info == x
    with pytest.raises(TypeError, match="scatter: add does not accept bool values"):
        get("scatter").deduce(
            [T((3,), "bool"), T((1,), "bool"), T((1,), "int32")],
            ScatterAttrs(axes=(0,), reduction="add"),
        )


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: GatherAttrs(axes=(0, 0)), "each axis is indexed once"),
        (
            lambda: GatherAttrs(axes=(1,), slice_axes=(1,), begin=(0,), end=(None,), step=(1,)),
            "each axis is indexed once",
        ),
        (
            lambda: GatherAttrs(axes=(0,), mode="drop"),
            r"gather: mode must be one of \('clip', 'fill'\)",
        ),
        (
            lambda: GatherAttrs(axes=(0,), fill_value="x"),
            "fill_value must be a bool, int, float or None",
        ),
        (lambda: GatherAttrs(axes=(0,), position=-1), "position must be >= 0"),
        (
            lambda: GatherAttrs(axes=(0,), slice_axes=(1,), begin=(0,), end=(1,), step=(0,)),
            "slice step cannot be zero",
        ),
        (lambda: ScatterAttrs(axes=(0,), reduction="mean"), "scatter: reduction must be one of"),
        (
            lambda: ScatterAttrs(axes=(0,), mode="fill"),
            r"scatter: mode must be one of \('clip', 'drop'\)",
        ),
        (lambda: ScatterAttrs(axes=[0]), "ScatterAttrs.axes must be a tuple of ints"),
    ],
)
def test_attribute_errors(make, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make()


# --------------------------------------------------------------------------- scatter


def _jax_scatter(x, key, reduction, values, mode):
    ref = jnp.asarray(x).at[key]
    method = {
        "set": ref.set,
        "add": ref.add,
        "subtract": ref.subtract,
        "multiply": ref.multiply,
        "min": ref.min,
        "max": ref.max,
    }[reduction]
    return method(values, mode=mode)


@settings(max_examples=30)
@given(
    reduction=st.sampled_from(["add", "subtract", "multiply", "min", "max"]),
    mode=st.sampled_from(["drop", "clip"]),
    dtype=st.sampled_from(["float32", "int32", "uint8", "float64"]),
    seed=st.integers(0, 2**16),
)
def test_scatter_reference_accumulates_repeated_indices_as_jax(reduction, mode, dtype, seed):
    rng = np.random.default_rng(seed)
    x = random_array(rng, (4, 3), dtype, low=0, high=5)
    i0 = rng.integers(-6, 6, (5,))
    values = random_array(rng, (5,), dtype, low=0, high=3)
    attrs = ScatterAttrs(
        axes=(0,),
        position=0,
        slice_axes=(1,),
        begin=(None,),
        end=(None,),
        step=(-2,),
        reduction=reduction,
        mode=mode,
    )
    upd = np.broadcast_to(values[:, None], (5, 2)).copy()
    ours = get("scatter").reference(x, upd, i0, attrs=attrs)
    theirs = _jax_scatter(x, (i0, slice(None, None, -2)), reduction, upd, mode)
    assert_close(ours, theirs, f"{reduction} {mode}")
    infos = [T(x.shape, dtype), T(upd.shape, dtype), T(i0.shape, "int64")]
    kernel = get("scatter").lower(infos, attrs, infos[0])
    assert_close(interpreter.run(kernel, x, upd, i0), ours)


def test_scatter_set_keeps_the_last_of_repeated_indices():
    x = np.zeros(4, np.float32)
    attrs = ScatterAttrs(axes=(0,))
    updates = np.array([1, 2, 3, 4, 5], np.float32)
    indices = np.array([2, 0, 2, -4, 9])  # -4 is 0; 9 is dropped
    ours = get("scatter").reference(x, updates, indices, attrs=attrs)
    np.testing.assert_array_equal(ours, [4, 0, 3, 0])
    kernel = get("scatter").lower(
        [T((4,), "float32"), T((5,), "float32"), T((5,), "int64")], attrs, T((4,), "float32")
    )
    np.testing.assert_array_equal(interpreter.run(kernel, x, updates, indices), ours)
    clipped = ScatterAttrs(axes=(0,), mode="clip")
    np.testing.assert_array_equal(
        get("scatter").reference(x, updates, indices, attrs=clipped), [4, 0, 3, 5]
    )


def test_scatter_computes_in_the_updates_dtype_and_stores_in_x_dtype():
    x = np.array([1, 5], np.int32)
    attrs = ScatterAttrs(axes=(0,), reduction="add")
    out = get("scatter").reference(x, np.array([-0.6]), np.array([0]), attrs=attrs)
    assert out.dtype == np.int32 and out.tolist() == [0, 5]  # (1 - 0.6) -> 0, as jax
    kernel = get("scatter").lower(
        [T((2,), "int32"), T((1,), "float64"), T((1,), "int64")], attrs, T((2,), "int32")
    )
    np.testing.assert_array_equal(interpreter.run(kernel, x, np.array([-0.6]), np.array([0])), out)
    boolean = get("scatter").reference(
        np.array([True, False]),
        np.array([False, True]),
        np.array([0, 1]),
        attrs=ScatterAttrs(axes=(0,), reduction="max"),
    )
    assert boolean.tolist() == [True, True]


@settings(max_examples=15)
@given(
    n=st.integers(0, 4),
    seed=st.integers(0, 2**16),
    reduction=st.sampled_from(["set", "add", "min"]),
    mode=st.sampled_from(["drop", "clip"]),
)
def test_symbolic_kernels_match_the_references(n, seed, reduction, mode):
    env = {"n": n}
    gather = GatherAttrs(
        axes=(1,), position=1, slice_axes=(0,), begin=(N - 2,), end=(None,), step=(1,), mode="fill"
    )
    indices = lambda rng, shape, dtype, k: random_array(rng, shape, dtype, low=-5, high=5)  # noqa: E731
    check_lowering(
        "gather", [T((N, 4), "float32"), T((3, 1), "int32")], gather, env, seed=seed, data=indices
    )
    scatter = ScatterAttrs(axes=(0,), position=0, reduction=reduction, mode=mode)
    operands = [T((N, 2), "float32"), T((3, 2), "float32"), T((3,), "int64")]
    if n > 0 or mode == "drop":
        check_lowering("scatter", operands, scatter, env, seed=seed, data=indices)


def test_inplace_kernel_updates_its_output_without_copying():
    # the protocol of passes.inplace_updates: the kernel takes the other operands in order,
    # then the updated operand as its output
    assert get("scatter").inplace_operand == 0
    attrs = ScatterAttrs(axes=(0,), reduction="add")
    infos = [T((N, 2), "float32"), T((3, 2), "float32"), T((3,), "int64")]
    kernel = get("scatter").lower_inplace(infos, attrs, infos[0])
    assert [b.name for b in kernel.params] == [
        "updates",
        "i0",
        "out",
    ] and kernel.name == "scatter_inplace"
    out = np.arange(8, dtype=np.float32).reshape(4, 2)
    updates, indices = np.ones((3, 2), np.float32), np.array([1, 1, -1])
    expected = get("scatter").reference(out, updates, indices, attrs=attrs)
    interpreter.run(kernel, updates, indices, out)
    np.testing.assert_array_equal(out, expected)
    assert "c0" not in str(kernel)  # no copy loop
    assert arith.sym("n") not in kernel.scalar_params
    m = arith.sym("m")
    sliced = ScatterAttrs(axes=(0,), slice_axes=(1,), begin=(m,), end=(None,), step=(1,))
    infos = [T((N, 4), "float32"), T((2, "j"), "float32"), T((2,), "int64")]
    kernel = get("scatter").lower_inplace(infos, sliced, infos[0])
    assert kernel.scalar_params == (m,)  # a slice bound no buffer shape binds
