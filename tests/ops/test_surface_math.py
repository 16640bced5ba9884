"""relaxjax.numpy's elementwise math, logic and bit functions against jax (issue 10),
driven by the table in surface_math.py.

- values: one jitted program per dtype group (every function of the group, a symbolic
  ``n``) runs at n = 0, 1 and 9 on edge values (infinities, NaN, signed zeros, tiny and
  huge values, integer extremes, out-of-range shift amounts) and random ones, against
  jax on the same arrays; one executable serves every n;
- dtypes and shapes: ``relax.eval_shape`` against ``jax.eval_shape`` for every dtype, mixed
  dtypes and Python scalars, including which combinations both refuse;
- eager evaluation (numpy references) for the dtypes no group compiles;
- accuracy: float32 results within a few ulp of the float64 values on wide ranges;
- the functions that are not elementwise (allclose, array_equal, unwrap, ...) and the
  error messages.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import dtypes
from relaxjax.errors import ShapeError

sys.path.insert(0, str(Path(__file__).parent))
from surface_math import (  # noqa: E402
    BOOL,
    FLOAT,
    FUNCTIONS,
    INT,
    KEYWORDS,
    NAMES,
    Fn,
    bool_data,
    float_data,
    int_data,
)

#: (dtype, operand kind, whether functions that only convert ints to floats run) of each
#: compiled group (compiling dominates: about 0.2 s per function); the default runs
#: float32 and the integer and bool semantics, the rest runs with ``-m slow``.
SLOW = pytest.mark.slow
GROUPS = [
    pytest.param("float32", FLOAT, True, id="float32"),
    pytest.param("int32", INT, False, id="int32"),
    pytest.param("bool", BOOL, False, id="bool"),
    pytest.param("float64", FLOAT, True, id="float64", marks=SLOW),
    pytest.param("float16", FLOAT, True, id="float16", marks=SLOW),
    pytest.param("bfloat16", FLOAT, True, id="bfloat16", marks=SLOW),
    pytest.param("int32", INT, True, id="int32-converted", marks=SLOW),
    pytest.param("bool", BOOL, True, id="bool-converted", marks=SLOW),
    pytest.param("int8", INT, True, id="int8", marks=SLOW),
    pytest.param("uint8", INT, True, id="uint8", marks=SLOW),
    pytest.param("int64", INT, True, id="int64", marks=SLOW),
]
SIZES = (0, 1, 9)
ROWS = max(SIZES)
RTOL_SCALE = {"float64": 1e-7, "float32": 1.0, "float16": 5e3, "bfloat16": 4e4}


def _numpy_dtype(dtype: str) -> np.dtype:
    return dtypes.to_numpy(dtype)


def _data(kind: str, dtype: str, shift: int) -> np.ndarray:
    rng = np.random.default_rng(shift)
    shape = (ROWS, 3)
    if kind == FLOAT:
        return float_data(rng, shape, dtype, shift)
    if kind == INT:
        return int_data(rng, shape, dtype, shift)
    return bool_data(rng, shape, shift)


def _operands(fn: Fn, x, y, e):
    if fn.name == "ldexp":
        return x, e
    return (x, y)[: fn.arity]


def _group_program(functions: list[Fn], dtype: str):
    spec = relax.Tensor(("n", 3), dtype)
    exponent = relax.Tensor(("n", 3), "int32")

    def program(x: spec, y: spec, e: exponent):
        return {f.name: f.fn(rnp, *_operands(f, x, y, e)) for f in functions}

    return relax.jit(program)


def _leaves(value) -> list[np.ndarray]:
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(value)]


def assert_same(ours, theirs, what: str, rtol: float, zero_sign: bool = True) -> None:
    """Same leaves, dtypes and shapes; integers and bools exactly; floats: NaN where jax
    has NaN, the same infinities and signed zeros, finite values within ``rtol``.

    jax (XLA on CPU) flushes subnormal results to zero; ours are IEEE's, so a subnormal of
    ours matches jax's zero of the same sign.
    """
    ours, theirs = _leaves(ours), _leaves(theirs)
    assert len(ours) == len(theirs), f"{what}: {len(ours)} results vs jax's {len(theirs)}"
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs jax {b.dtype}"
        assert a.shape == b.shape, f"{what}: shape {a.shape} vs jax {b.shape}"
        if a.dtype.kind != "f" and a.dtype != ml_dtypes.bfloat16:
            np.testing.assert_array_equal(a, b, err_msg=what)
            continue
        tiny = float(ml_dtypes.finfo(a.dtype).smallest_normal)
        a, b = a.astype(np.float64), b.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{what}: NaN")
        flushed = (b == 0) & (np.abs(a) < tiny)
        a = np.where(flushed, np.copysign(0.0, a), a)
        exact = np.isinf(b) | (b == 0)
        np.testing.assert_array_equal(a[exact], b[exact], err_msg=f"{what}: inf/0")
        zeros = (a == 0) & (b == 0)
        if zero_sign:
            np.testing.assert_array_equal(
                np.signbit(a[zeros]), np.signbit(b[zeros]), err_msg=f"{what}: sign of zero"
            )
        finite = np.isfinite(b) & ~exact
        np.testing.assert_allclose(a[finite], b[finite], rtol=rtol, atol=0, err_msg=what)


@pytest.mark.parametrize(("dtype", "kind", "converted"), GROUPS)
def test_values_match_jax_for_every_size(dtype, kind, converted):
    functions = [
        f for f in FUNCTIONS + KEYWORDS if kind in f.kinds and (converted or not f.converts)
    ]
    program = _group_program(functions, dtype)
    x, y, e = _data(kind, dtype, 0), _data(kind, dtype, 7), _data(INT, "int32", 3)
    scale = RTOL_SCALE.get(dtype, 1.0)
    expected = {f.name: f.fn(jnp, *_operands(f, x, y, e)) for f in functions}
    for n in SIZES:
        got = program(x[:n], y[:n], e[:n])
        for f in functions:
            want = jax.tree_util.tree_map(lambda v, n=n: np.asarray(v)[:n], expected[f.name])
            what = f"{f.name} on {dtype} with n={n}"
            assert_same(got[f.name], want, what, f.rtol * scale, f.zero_sign)
    assert program.cache_size() == 1


# --------------------------------------------------------------------------- dtypes


SCALARS = (True, 2, 2.0)
MIXED = [
    ("int32", "float32"),
    ("uint8", "int8"),
    ("bool", "int32"),
    ("float16", "bfloat16"),
    ("int64", "float16"),
    ("int32", 2.0),
    ("float32", 2),
    ("int8", 3),
    ("bool", 2.0),
    (2.0, "float16"),
    (True, "int32"),
    ("weak-float64", "float32"),
    ("weak-float64", "int32"),
    ("weak-int64", "int8"),
    ("weak-int64", "weak-float64"),
    ("weak-int64", 2),
    (2.0, "weak-float64"),
]


#: Errors a refused dtype combination may raise (jax raises TypeError or ValueError).
REFUSALS = (TypeError, ValueError, NotImplementedError, ShapeError)


#: Weakly typed tensor operands: made from an int32 tensor as jax makes them.
WEAK = {
    "weak-float64": lambda m, x: m.add(x, 2.0),
    "weak-int64": lambda m, x: m.full(x.shape, 3),
}


def _operand(module, token: str, array):
    return WEAK[token](module, array) if token in WEAK else array


def _outcomes(functions: list[Fn], operands: tuple, module) -> dict:
    """Per function, ``[(dtype name, weak, shape)]`` of its results on the operands (dtype
    names are tensors of shape (n, 3), at n = 4 for jax; ``WEAK`` tokens weakly typed
    tensors; others Python scalars) through ``module``'s eval_shape, or the exception it
    raised: one trace for all functions."""
    tensors = ["int32" if o in WEAK else o for o in operands if isinstance(o, str)]
    errors: dict[str, Exception] = {}

    def program(*arrays):
        results = {}
        for f in functions:
            it = iter(arrays)
            values = [_operand(module, o, next(it)) if isinstance(o, str) else o for o in operands]
            try:
                results[f.name] = f.fn(module, *values)
            except REFUSALS as error:
                errors[f.name] = error
        return results

    if module is rnp:
        out = relax.eval_shape(program, *(relax.Tensor(("n", 3), d) for d in tensors))
    else:
        out = jax.eval_shape(program, *(jax.ShapeDtypeStruct((4, 3), d) for d in tensors))
    outcomes = dict(errors)
    for name, value in out.items():
        leaves = jax.tree_util.tree_leaves(value) if module is jnp else _relax_leaves(value)
        outcomes[name] = [
            (dtypes.canonical(leaf.dtype), _is_weak(leaf), tuple(leaf.shape)) for leaf in leaves
        ]
    return outcomes


def _is_weak(leaf) -> bool:
    """jax's weak_type or ours; a weak bool promotes as a bool (we never make one)."""
    weak = bool(getattr(leaf, "weak_type", getattr(leaf, "weak", False)))
    return weak and dtypes.canonical(leaf.dtype) != "bool"


def _relax_leaves(out) -> list:
    if isinstance(out, (tuple, list)):
        return [leaf for item in out for leaf in _relax_leaves(item)]
    return [out]


#: Weak types of jax that depend on how its formula folds constants: heaviside of a
#: Python scalar and a weak tensor is weak in jax (of two weak tensors it is strong).
WEAK_EXCEPTIONS = {("heaviside", (2.0, "weak-float64"))}


def _compare_types(functions: list[Fn], operands: tuple) -> None:
    ours, theirs = _outcomes(functions, operands, rnp), _outcomes(functions, operands, jnp)
    for f in functions:
        if (f.name, operands) in WEAK_EXCEPTIONS:
            continue
        mine, jax_s = ours[f.name], theirs[f.name]
        where = f"{f.name}{operands}"
        if isinstance(jax_s, Exception):
            assert isinstance(mine, Exception), f"{where}: we give {mine}, jax raises {jax_s!r}"
            continue
        assert not isinstance(mine, Exception), f"{where}: we raise {mine!r}, jax: {jax_s}"
        assert len(mine) == len(jax_s), f"{where}: {mine} vs {jax_s}"
        for (dtype, weak, shape), (jax_dtype, jax_weak, jax_shape) in zip(mine, jax_s):
            assert dtype == jax_dtype, f"{where}: dtype {dtype} vs jax {jax_dtype}"
            assert weak == jax_weak, f"{where}: weak type {weak} vs jax {jax_weak}"
            concrete = tuple(d if isinstance(d, int) else d.subs({"n": 4}) for d in shape)
            assert concrete == jax_shape, f"{where}: shape {shape} at n=4 vs jax {jax_shape}"


SWEPT = [f for f in FUNCTIONS + KEYWORDS if f.sweep and f.name != "ldexp"]
LDEXP = [f for f in FUNCTIONS if f.name == "ldexp"]
#: The dtypes every function runs on by default (the others with ``-m slow``).
SAMPLE = ("bool", "uint8", "int32", "int64", "bfloat16", "float32")


def _sample(dtype: str):
    return () if dtype in SAMPLE else (pytest.mark.slow,)


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=_sample(d)) for d in dtypes.DTYPES])
def test_dtypes_and_shapes_match_jax(dtype):
    """Every function on tensors of one dtype (both operands alike), against jax's
    eval_shape: result dtypes and symbolic shapes, and the same refusals."""
    _compare_types([f for f in SWEPT if f.arity == 1], (dtype,))
    _compare_types([f for f in SWEPT if f.arity == 2], (dtype, dtype))
    for exponent in ("int32", "bool", "float32", "weak-int64"):
        _compare_types(LDEXP, (dtype, exponent))


@pytest.mark.parametrize("operands", MIXED, ids=str)
def test_mixed_dtypes_and_python_scalars_match_jax(operands):
    _compare_types([f for f in SWEPT if f.arity == 2], operands)


#: Operand shapes that broadcast (or not) with symbolic dims, and symbol values.
SHAPE_PAIRS = [
    (("n", 1), ("m",)),
    (("n", 3), (3,)),
    (("n", 3), ("n", 1)),
    ((2, "n"), (3, "n")),
    (("n",), ("m",)),
    ((), ("n", "m")),
]
ENVS = [{"n": 0, "m": 2}, {"n": 1, "m": 1}, {"n": 3, "m": 3}, {"n": 2, "m": 5}]


@pytest.mark.parametrize(("first", "second"), SHAPE_PAIRS, ids=str)
def test_broadcast_shapes_match_jax(first, second):
    """Deduced shapes (symbolic) equal jax's at every symbol value where jax accepts the
    operands; where jax refuses, tracing raised ShapeError or the shape is left to a
    run-time check (coarse)."""
    functions = [f for f in SWEPT if f.arity == 2 and FLOAT in f.kinds and f.name != "ldexp"]
    specs = (relax.Tensor(first, "float32"), relax.Tensor(second, "float32"))
    try:
        ours = relax.eval_shape(lambda x, y: {f.name: f.fn(rnp, x, y) for f in functions}, *specs)
    except ShapeError:
        ours = None
    for env in ENVS:
        concrete = [tuple(env.get(d, d) for d in shape) for shape in (first, second)]
        structs = [jax.ShapeDtypeStruct(shape, np.float32) for shape in concrete]
        try:
            theirs = jax.eval_shape(
                lambda x, y: {f.name: f.fn(jnp, x, y) for f in functions}, *structs
            )
        except (TypeError, ValueError):
            continue  # jax refuses: a ShapeError while tracing, or a run-time check
        assert ours is not None, f"{first}, {second} at {env}: we refused, jax accepts"
        for f in functions:
            for mine, jax_s in zip(
                _relax_leaves(ours[f.name]), jax.tree_util.tree_leaves(theirs[f.name])
            ):
                if mine.shape is None:
                    continue
                got = tuple(
                    relax.arith.subs(d, env) if not isinstance(d, int) else d for d in mine.shape
                )
                assert got == jax_s.shape, f"{f.name}{concrete}: {mine!r} at {env} vs {jax_s.shape}"


def _jax_values(functions: list[Fn], operands: tuple) -> dict:
    """Per function, jax's results on the operands (numpy arrays; Python scalars stay
    Python scalars), or the exception it raised: one jitted program for all."""
    arrays = [o for o in operands if isinstance(o, np.ndarray)]
    errors: dict[str, Exception] = {}

    def program(*traced):
        results = {}
        for f in functions:
            it = iter(traced)
            values = [next(it) if isinstance(o, np.ndarray) else o for o in operands]
            try:
                results[f.name] = f.fn(jnp, *values[: f.arity])
            except REFUSALS as error:
                errors[f.name] = error
        return results

    values = jax.jit(program)(*arrays)
    return {**errors, **values}


@pytest.mark.parametrize("value", SCALARS, ids=repr)
def test_python_scalars_give_jax_s_values_and_dtypes(value):
    """Functions of Python scalars alone, evaluated eagerly (weakly typed operands)."""
    for arity, functions in ((1, [f for f in SWEPT if f.arity == 1]), (2, SWEPT)):
        functions = [f for f in functions if f.arity == arity]
        theirs = _jax_values(functions, (value,) * arity)
        for f in functions:
            where = f"{f.name}{(value,) * arity}"
            if isinstance(theirs[f.name], Exception):
                with pytest.raises(REFUSALS):
                    f.fn(rnp, *(value,) * arity)
                continue
            ours = f.fn(rnp, *(value,) * arity)
            assert_same(ours, theirs[f.name], where, f.rtol, f.zero_sign)
    theirs = _jax_values(LDEXP, (value, 3))["ldexp"]
    if isinstance(theirs, Exception):
        with pytest.raises(REFUSALS):
            rnp.ldexp(value, 3)
    else:
        assert_same(rnp.ldexp(value, 3), theirs, f"ldexp({value}, 3)", 1e-7)


# --------------------------------------------------------------------------- eager


EAGER = [
    pytest.param("bfloat16", FLOAT, id="bfloat16"),
    pytest.param("uint8", INT, id="uint8"),
    pytest.param("float16", FLOAT, id="float16", marks=pytest.mark.slow),
    pytest.param("int8", INT, id="int8", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("dtype", "kind"), EAGER)
def test_eager_evaluation_matches_jax(dtype, kind):
    """Outside a trace the functions evaluate with the ops' numpy references."""
    x, y, e = _data(kind, dtype, 1), _data(kind, dtype, 5), _data(INT, "int32", 2)
    scale = RTOL_SCALE.get(dtype, 1.0)
    functions = [f for f in FUNCTIONS + KEYWORDS if kind in f.kinds and f.name != "ldexp"]
    theirs = _jax_values(functions, (x, y))
    for f in functions:
        ours = f.fn(rnp, *(x, y)[: f.arity])
        assert all(isinstance(leaf, np.ndarray) for leaf in _relax_leaves(ours)), f.name
        what = f"eager {f.name} on {dtype}"
        assert_same(ours, theirs[f.name], what, f.rtol * scale, f.zero_sign)
    if kind == FLOAT:
        assert_same(rnp.ldexp(x, e), jnp.ldexp(x, e), f"eager ldexp on {dtype}", 0)


# --------------------------------------------------------------------------- accuracy


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """The distance in float32 ulps between ``got`` and the float64 ``exact`` values."""
    exact32 = exact.astype(np.float32)
    spacing = np.abs(np.spacing(exact32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


#: (function, numpy float64 function, domain, max ulps): libm's float32 functions are
#: within 1-2 ulp of the correctly rounded result.
ACCURACY = [
    ("tan", np.tan, (-1e4, 1e4), 2),
    ("arcsin", np.arcsin, (-1, 1), 2),
    ("arccos", np.arccos, (-1, 1), 2),
    ("arctan", np.arctan, (-1e6, 1e6), 2),
    ("sinh", np.sinh, (-89, 89), 2),
    ("cosh", np.cosh, (-89, 89), 2),
    ("arcsinh", np.arcsinh, (-1e30, 1e30), 2),
    ("arccosh", np.arccosh, (1, 1e30), 2),
    ("arctanh", np.arctanh, (-1, 1), 2),
    ("exp2", np.exp2, (-149, 127), 2),
    ("expm1", np.expm1, (-100, 88), 2),
    ("log2", np.log2, (0, 3e38), 2),
    ("log10", np.log10, (0, 3e38), 2),
    ("log1p", np.log1p, (-1, 3e38), 2),
    ("cbrt", np.cbrt, (-3e38, 3e38), 2),
    ("deg2rad", np.deg2rad, (-1e6, 1e6), 1),
]


def _wide(low: float, high: float, rng: np.random.Generator) -> np.ndarray:
    """Points over ``[low, high]``: log-spaced magnitudes (tiny to huge, both signs where
    the domain has them), uniform ones, and the bounds."""
    count = 4000
    top = max(abs(low), abs(high))
    magnitudes = np.exp(rng.uniform(np.log(1e-30), np.log(top), count))
    signs = rng.choice([-1.0, 1.0], count) if low < 0 else np.ones(count)
    values = np.concatenate([signs * magnitudes, rng.uniform(low, high, count), [low, high]])
    return np.clip(values, low, high).astype(np.float32)


def test_float32_transcendentals_are_within_a_few_ulps():
    rng = np.random.default_rng(0)
    inputs = {name: _wide(*domain, rng) for name, _, domain, _ in ACCURACY}
    spec = relax.Tensor(("n",), "float32")

    @relax.jit
    def program(x: spec):
        return {name: getattr(rnp, name)(x) for name, _, _, _ in ACCURACY}

    for name, reference, _, bound in ACCURACY:
        x = inputs[name]
        got = program(x)[name]
        with np.errstate(all="ignore"):
            exact = reference(x.astype(np.float64))
        finite = np.isfinite(exact) & (np.abs(exact) < 3e38)
        worst = _ulps(got[finite], exact[finite]).max()
        assert worst <= bound, f"{name}: {worst} ulps (bound {bound})"


def test_stable_formulas_stay_finite_where_naive_ones_overflow():
    x = np.array([-1e30, -100.0, -20.0, 0.0, 1e-10, 20.0, 100.0, 1e30], np.float32)

    @relax.jit
    def program(a: relax.Tensor(("n",), "float32")):
        return rnp.logaddexp(a, a), rnp.logaddexp2(a, 0.0), rnp.log1p(a * 1e-3), rnp.expm1(a)

    same, base2, small, grown = program(x)
    wide = x.astype(np.float64)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(same, wide + np.log(2), rtol=1e-6)
        np.testing.assert_allclose(base2, np.logaddexp2(wide, 0), rtol=1e-6)
        np.testing.assert_allclose(
            small, np.log1p(np.float32(1e-3) * x).astype(np.float64), rtol=1e-6
        )
    assert grown[4] == np.float32(1e-10)  # expm1, not exp(x) - 1 (which gives 0 there)
    assert rnp.cbrt(np.float32(-8.0)) == -2.0


# --------------------------------------------------------------------------- the others


def test_allclose_array_equal_array_equiv_match_jax():
    a = np.array([[1.0, np.nan, np.inf], [0.0, -0.0, 2.0]], np.float32)
    b = a + np.float32(1e-6)
    cases = [
        (lambda m: m.allclose(a, b)),
        (lambda m: m.allclose(a, b, equal_nan=True)),
        (lambda m: m.allclose(a, a + 1, atol=2.0, equal_nan=True)),
        (lambda m: m.array_equal(a, a)),
        (lambda m: m.array_equal(a, a, equal_nan=True)),
        (lambda m: m.array_equal(a, a[:1])),
        (lambda m: m.array_equal(a[:, :2], a[:, :2] + 0)),
        (lambda m: m.array_equiv(a[:1, :2], a[:, :2][:1])),
        (lambda m: m.array_equiv(np.ones(3), np.ones((2, 3)))),
        (lambda m: m.array_equiv(np.ones(3), np.ones((2, 2)))),
        (lambda m: m.allclose(np.zeros((0, 3)), np.zeros((0, 3)))),
    ]
    for i, case in enumerate(cases):
        ours, theirs = np.asarray(case(rnp)), np.asarray(case(jnp))
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape == (), i
        assert ours == theirs, f"case {i}: {ours} vs jax {theirs}"


def test_array_equal_decides_symbolic_sizes_at_run_time():
    @relax.jit
    def same(x: relax.Tensor(("n",), "float32"), y: relax.Tensor(("m",), "float32")):
        return rnp.array_equal(x, y), rnp.allclose(x[:1], y[:1])

    ones = np.ones(4, np.float32)
    assert bool(same(ones, ones)[0]) is True
    assert bool(same(ones, ones[:3])[0]) is False
    assert bool(same(ones[:0], ones[:0])[0]) is True
    assert bool(same(ones, np.zeros(4, np.float32))[1]) is False
    assert same.cache_size() == 1


def test_unwrap_matches_jax():
    rng = np.random.default_rng(0)
    phases = np.cumsum(rng.uniform(-4, 4, (3, 8)), axis=1)

    @relax.jit
    def program(p: relax.Tensor((3, "n"), "float64")):
        return rnp.unwrap(p), rnp.unwrap(p, axis=0), rnp.unwrap(p, discont=4.0, period=5.0)

    for n in (0, 1, 8):
        ours = program(phases[:, :n])
        theirs = (
            jnp.unwrap(phases[:, :n]),
            jnp.unwrap(phases[:, :n], axis=0),
            jnp.unwrap(phases[:, :n], discont=4.0, period=5.0),
        )
        assert_same(ours, theirs, f"unwrap n={n}", 1e-12)
    ints = np.array([0, 5, 11, 2], np.int32)
    assert_same(rnp.unwrap(ints, period=8), jnp.unwrap(ints, period=8), "unwrap int", 0)


def test_complex_objects_are_recognised_as_numpy_does():
    for value in (1j, np.complex64(1), np.ones(2, np.complex64)):
        assert rnp.iscomplexobj(value) and not rnp.isrealobj(value)
    for value in (1.0, 2, np.ones(2, np.float32), rnp.asarray(1.0), None):
        assert not rnp.iscomplexobj(value) and rnp.isrealobj(value)
    assert (
        relax.eval_shape(
            lambda x: rnp.asarray(rnp.iscomplexobj(x)), relax.Tensor((2,), "float32")
        ).dtype
        == "bool"
    )


def test_every_name_of_the_family_is_exported():
    missing = [name for name in NAMES if name not in rnp.__all__]
    assert not missing
    assert all(hasattr(jnp, name) for name in NAMES)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rnp.gcd(np.float32(1.0), 2), TypeError, "gcd does not accept dtype float32"),
        (lambda: rnp.left_shift(np.ones(2), 1), TypeError, "left_shift .* expected an integer"),
        (lambda: rnp.invert(np.ones(2, np.float32)), TypeError, "invert .* dtype float32"),
        (lambda: rnp.bitwise_count(np.ones(2)), TypeError, "bitwise_count .* float64"),
        (lambda: rnp.ldexp(np.ones(2), np.ones(2)), TypeError, "ldexp .* integer or bool exp"),
        (lambda: rnp.round(np.array([True])), TypeError, "round does not accept dtype bool"),
        (lambda: rnp.sign(np.array([True])), TypeError, "sign does not accept dtype bool"),
        (lambda: rnp.round(np.ones(2), 1.5), TypeError, "decimals must be a Python int"),
        (lambda: rnp.round(np.ones(2, np.int32), -1), NotImplementedError, "decimals < 0"),
        (lambda: rnp.round(np.ones(2), out=np.ones(2)), NotImplementedError, "out"),
        (lambda: rnp.logaddexp(1.0, 2.0, where=True), NotImplementedError, "where"),
        (lambda: rnp.isposinf(np.ones(2), out=np.ones(2)), NotImplementedError, "out"),
        (lambda: rnp.arctan2(np.ones(2), np.ones(3)), ShapeError, "broadcast"),
        (lambda: rnp.unwrap(np.ones(3), axis=1), ValueError, "axis 1 is out of bounds"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_bad_inputs_are_caught_while_tracing():
    spec = relax.Tensor(("n", 3), "float32")
    with pytest.raises(TypeError, match="bitwise_and does not accept dtype float32"):
        relax.eval_shape(lambda x: rnp.bitwise_and(x, x), spec)
    with pytest.raises(ShapeError, match="hypot"):
        relax.eval_shape(lambda x: rnp.hypot(x, x[:, :2]), spec)


# --------------------------------------------------------------------------- packing, printing


@pytest.mark.parametrize(
    ("shape", "axis", "bitorder"),
    [((13,), None, "big"), ((3, 11), 1, "little"), ((9, 2), 0, "big"), ((0,), None, "big")],
)
def test_packbits_and_unpackbits_match_jax(shape, axis, bitorder):
    rng = np.random.default_rng(0)
    values = rng.integers(-2, 3, shape).astype(np.int8)
    for a in (values, values != 0):
        ours = rnp.packbits(a, axis=axis, bitorder=bitorder)
        theirs = jnp.packbits(a, axis=axis, bitorder=bitorder)
        assert_same(ours, theirs, f"packbits {shape} axis={axis}", 0)
        for count in (None, 0, 5, 30, -3):
            assert_same(
                rnp.unpackbits(ours, axis=axis, count=count, bitorder=bitorder),
                jnp.unpackbits(np.asarray(theirs), axis=axis, count=count, bitorder=bitorder),
                f"unpackbits {shape} axis={axis} count={count}",
                0,
            )


def test_packbits_round_trip_with_symbolic_lengths():
    @relax.jit
    def program(x: relax.Tensor((2, "n"), "float32")):
        packed = rnp.packbits(x > 0, axis=1)
        return packed, rnp.unpackbits(packed, axis=-1, count=x.shape[1])

    rng = np.random.default_rng(1)
    for n in (0, 1, 8, 13):
        x = rng.standard_normal((2, n)).astype(np.float32)
        packed, bits = program(x)
        np.testing.assert_array_equal(packed, jnp.packbits(x > 0, axis=1))
        np.testing.assert_array_equal(bits, (x > 0).astype(np.uint8))
    assert program.cache_size() == 1
    spec = relax.eval_shape(program, relax.Tensor((2, "n"), "float32"))
    assert str(spec[0].shape) == "(2, (n + 7) // 8)" and str(spec[1].shape) == "(2, n)"
    with pytest.raises(TypeError, match="integer or boolean"):
        rnp.packbits(np.ones(3))
    with pytest.raises(TypeError, match="unsigned byte"):
        rnp.unpackbits(np.ones(3, np.int8))
    with pytest.raises(ValueError, match="'little' or 'big'"):
        rnp.packbits(np.ones(3, bool), bitorder="middle")


def test_printing_is_numpy_s_for_concrete_arrays():
    x = np.array([1.0, 2.5])
    assert rnp.array_str(x) == jnp.array_str(x) and rnp.array_repr(x) == jnp.array_repr(x)
    with rnp.printoptions(precision=2):
        assert rnp.get_printoptions()["precision"] == 2 == jnp.get_printoptions()["precision"]
    assert rnp.set_printoptions is not None
    with pytest.raises(TypeError, match="array_str: a traced value has no value"):
        relax.eval_shape(rnp.array_str, relax.Tensor((2,), "float32"))
