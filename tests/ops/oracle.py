"""The shared oracle harness of the op tests: jax is the independent judge.

An op's deduction runs once on symbolic operand infos; then, for concrete symbol
values, the same program's shapes go through ``jax.eval_shape`` and the two must agree:

- **soundness**: a deduced dim equals jax's once the symbols are substituted; the dtype
  and the weak type equal jax's; a deduction error means jax fails too; when jax fails, a recorded
  run-time check fails for those values, or the deduction was coarse and the concrete
  re-deduction (what the runtime does) raises ``ShapeError``; when jax succeeds every
  check holds (no valid program is rejected) and the concrete re-deduction is exact.
- **precision** is asserted separately, for the standard cases (``assert_precise``).

Operands are ``TensorInfo``s with known (possibly symbolic) shapes, or Python scalars,
which are weakly typed (``PrimInfo(weak=True)`` for us, inlined constants for jax).

Usage (the op test files import this module; pytest runs in importlib mode)::

    sys.path.insert(0, str(Path(__file__).parent))
    from oracle import M, N, assert_precise, check_sound  # noqa: E402

    d = check_sound("add", [TensorInfo((N, 1)), TensorInfo((1, M))], None, jnp.add, env)
    assert_precise(d)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import jax
import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from relaxjax import arith, dtypes
from relaxjax.errors import ShapeError
from relaxjax.ir import PrimInfo, StructInfo, TensorInfo, TupleInfo
from relaxjax.ir.struct_info import erase, is_base_of, subs_info
from relaxjax.ops import get

N = arith.sym("n")
M = arith.sym("m")
SYMBOLS = (N, M)
SYMBOLIC_DIMS = (N, M, N + 1, 2 * N)
CONCRETE_DIMS = (0, 1, 1, 2, 3, 4)
ALL_DTYPES = dtypes.DTYPES
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8")

Operand = TensorInfo | bool | int | float

#: For hypothesis tests parametrized over many ops: fewer examples per op (the loaded
#: profile's other settings still apply).
per_op = settings(max_examples=15)

#: The dtypes numerics tests run by default; the others are marked slow.
SAMPLE_DTYPES = ("int32", "bfloat16", "float32")


def dtype_params(sample: Sequence[str] = SAMPLE_DTYPES) -> list:
    """Every dtype as a pytest param, those outside ``sample`` marked slow."""
    return [pytest.param(d, marks=() if d in sample else pytest.mark.slow) for d in ALL_DTYPES]


# --------------------------------------------------------------------------- strategies


def dims(symbolic: bool = True, bare: bool = False) -> st.SearchStrategy:
    """A dim: a small int (1 often, 0 sometimes) or, when ``symbolic``, n, m, n+1, 2n
    (only n and m when ``bare``: function parameters must bind their symbols)."""
    concrete = st.sampled_from(CONCRETE_DIMS)
    if not symbolic:
        return concrete
    return st.one_of(concrete, st.sampled_from(SYMBOLS if bare else SYMBOLIC_DIMS))


def shapes(
    min_rank: int = 0, max_rank: int = 3, symbolic: bool = True, bare: bool = False
) -> st.SearchStrategy:
    """A shape of random rank whose dims come from :func:`dims`."""
    return st.lists(dims(symbolic, bare), min_size=min_rank, max_size=max_rank).map(tuple)


def envs(low: int = 0, high: int = 4) -> st.SearchStrategy:
    """Values for the symbols n and m."""
    return st.fixed_dictionaries({"n": st.integers(low, high), "m": st.integers(low, high)})


def tensors(
    dtype: st.SearchStrategy | None = None, min_rank: int = 0, max_rank: int = 3
) -> st.SearchStrategy:
    """A ``TensorInfo`` with a random (symbolic) shape."""
    dtype = dtype if dtype is not None else st.sampled_from(ALL_DTYPES)
    return st.builds(TensorInfo, shapes(min_rank, max_rank), dtype)


def weak_scalars() -> st.SearchStrategy:
    """A Python scalar (weakly typed in jax and in relaxjax)."""
    return st.sampled_from([True, 2, -3, 0.5, 2.0])


# --------------------------------------------------------------------------- deduction


@dataclass(frozen=True)
class Deduction:
    """What the op deduced: an info and its run-time checks, or the error it raised."""

    info: StructInfo | None
    checks: tuple
    error: Exception | None


def struct_info_of(operand: Operand) -> StructInfo:
    """Our info for an operand: a Python scalar is a weak ``PrimInfo``."""
    if isinstance(operand, StructInfo):
        return operand
    if isinstance(operand, bool):
        return PrimInfo("bool", weak=True)
    if isinstance(operand, int):
        return PrimInfo("int64", operand, weak=True)
    return PrimInfo("float64", weak=True)


def deduce(op_name: str, operands: Sequence[Operand], attrs: object = None) -> Deduction:
    """Run the op's deduction, capturing a ``ShapeError`` or ``TypeError``."""
    try:
        info, checks = get(op_name).deduce([struct_info_of(o) for o in operands], attrs)
    except (ShapeError, TypeError) as error:
        return Deduction(None, (), error)
    return Deduction(info, checks, None)


def concrete(operands: Sequence[Operand], env: Mapping[str, int]) -> list[Operand]:
    """The operands with symbol values substituted."""
    return [subs_info(o, env) if isinstance(o, StructInfo) else o for o in operands]


def subs_value(value: object, env: Mapping[str, int]) -> object:
    """``value`` (a dim, a tuple of them, an attrs dataclass) with symbol values substituted."""
    if isinstance(value, arith.Expr):
        return arith.subs(value, env)
    if isinstance(value, tuple):
        return tuple(subs_value(v, env) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: subs_value(getattr(value, f.name), env) for f in dataclasses.fields(value)
        }
        return dataclasses.replace(value, **changes)
    return value


def jax_struct(info: TensorInfo) -> jax.ShapeDtypeStruct:
    """A jax abstract value of a concrete tensor info."""
    return jax.ShapeDtypeStruct(tuple(info.shape), dtypes.to_numpy(info.dtype))


def jax_outcome(fn: Callable, operands: Sequence[Operand]) -> object:
    """``jax.eval_shape`` of ``fn`` on concrete operands (scalars inlined), or its error."""
    tensor_positions = [i for i, o in enumerate(operands) if isinstance(o, TensorInfo)]

    def call(*tensors: object) -> object:
        args = list(operands)
        for position, value in zip(tensor_positions, tensors):
            args[position] = value
        return fn(*args)

    try:
        return jax.eval_shape(call, *(jax_struct(operands[i]) for i in tensor_positions))
    except Exception as error:  # noqa: BLE001 - any jax failure is an outcome
        return error


def _leaves(info: StructInfo) -> list[TensorInfo]:
    return (
        [f for field in info.fields for f in _leaves(field)]
        if isinstance(info, TupleInfo)
        else [info]
    )


def _jax_leaves(value: object) -> list:
    return list(jax.tree_util.tree_leaves(value))


def _assert_matches(info: StructInfo, result: object, env: Mapping[str, int], where: str) -> None:
    ours = _leaves(info)
    theirs = _jax_leaves(result)
    assert len(ours) == len(theirs), f"{where}: {len(ours)} outputs vs jax's {len(theirs)}"
    for mine, jaxs in zip(ours, theirs):
        assert isinstance(mine, TensorInfo), f"{where}: {mine!r} is not a tensor"
        assert mine.dtype == dtypes.canonical(jaxs.dtype), (
            f"{where}: dtype {mine.dtype} vs jax {jaxs.dtype}"
        )
        # weak types as jax's (a weak bool promotes as a bool: we never make one)
        weak = bool(getattr(jaxs, "weak_type", False)) and not dtypes.is_bool(mine.dtype)
        assert mine.weak == weak, f"{where}: {mine!r} vs jax weak_type={weak}"
        if mine.ndim is not None:
            assert mine.ndim == len(jaxs.shape), f"{where}: {mine!r} vs jax shape {jaxs.shape}"
        if mine.shape is not None:
            got = tuple(arith.subs(d, env) for d in mine.shape)
            assert got == tuple(jaxs.shape), f"{where}: {mine!r} at {env} is {got} vs {jaxs.shape}"


def _is_coarse(info: StructInfo) -> bool:
    return any(leaf.shape is None for leaf in _leaves(info))


def check_sound(
    op_name: str,
    operands: Sequence[Operand],
    attrs: object,
    jax_fn: Callable,
    env: Mapping[str, int],
) -> Deduction:
    """Assert that the deduction for ``operands`` is sound at symbol values ``env``."""
    ours = deduce(op_name, operands, attrs)
    fixed = concrete(operands, env)
    theirs = jax_outcome(jax_fn, fixed)
    where = f"{op_name}{tuple(fixed)!r} attrs={attrs} env={env}"
    if ours.error is not None:
        assert isinstance(theirs, Exception), (
            f"{where}: we raised {ours.error!r} but jax gives {theirs}"
        )
        return ours
    failing = [c for c in ours.checks if not c.holds(dict(env))]
    again = deduce(op_name, fixed, subs_value(attrs, env))
    if isinstance(theirs, Exception):
        if failing:
            return ours
        assert _is_coarse(ours.info) and isinstance(again.error, ShapeError), (
            f"{where}: jax raises {theirs!r} but no check fails and we deduce {ours.info!r} "
            f"(concrete re-deduction: {again})"
        )
        return ours
    assert not failing, f"{where}: jax accepts it but checks fail: {failing}"
    _assert_matches(ours.info, theirs, env, where)
    assert again.error is None, f"{where}: concrete re-deduction raised {again.error!r}"
    assert not again.checks, f"{where}: concrete deduction left checks {again.checks}"
    assert not _is_coarse(again.info), f"{where}: concrete deduction is coarse: {again.info!r}"
    _assert_matches(again.info, theirs, env, where + " (concrete)")
    return ours


def check_coarsening(op_name: str, operands: Sequence[Operand], attrs: object) -> None:
    """Forgetting operand dims (keeping ranks) must give a coarser, never contradicting, info."""
    precise = deduce(op_name, operands, attrs)
    erased = [erase(o, "shape") if isinstance(o, TensorInfo) else o for o in operands]
    coarse = deduce(op_name, erased, attrs)
    if coarse.error is not None:
        assert precise.error is not None, (
            f"{op_name}: erasing shapes raised {coarse.error!r} but {operands} deduce "
            f"{precise.info!r}"
        )
        return
    if precise.error is None:
        assert is_base_of(coarse.info, precise.info) is not False, (
            f"{op_name}: {coarse.info!r} (erased operands) contradicts {precise.info!r}"
        )


def assert_precise(deduction: Deduction, shape: Sequence[arith.Dim] | None = None) -> None:
    """Every dim of the result is known (and equals ``shape`` when given)."""
    assert deduction.error is None, f"unexpected error {deduction.error!r}"
    for leaf in _leaves(deduction.info):
        assert leaf.shape is not None, f"expected a precise shape, got {leaf!r}"
    if shape is not None:
        assert deduction.info.shape == tuple(shape), f"{deduction.info!r} != {tuple(shape)}"


# --------------------------------------------------------------------------- numerics


def random_array(rng: np.random.Generator, shape: Sequence[int], dtype: str, *, low=-3.0, high=3.0):
    """Random data of ``dtype`` in ``[low, high)`` (bools are fair coins)."""
    if dtypes.is_bool(dtype):
        return rng.random(shape) < 0.5
    if dtypes.is_integer(dtype):
        low = max(low, 0) if dtypes.is_unsigned(dtype) else low
        return rng.integers(int(np.floor(low)), int(np.ceil(high)) + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtypes.to_numpy(dtype))


TOLERANCES = {
    "float16": (2e-2, 2e-2),
    "bfloat16": (5e-2, 5e-2),
    "float32": (2e-5, 2e-5),
    "float64": (1e-10, 1e-10),
}


def assert_close(
    ours: np.ndarray, theirs: object, what: str = "", precision: str | None = None
) -> None:
    """Same dtype and shape as jax's result, values equal within the tolerance of the
    result's dtype (or of ``precision``, when a narrower input bounds the accuracy)."""
    theirs = np.asarray(theirs)
    assert isinstance(ours, np.ndarray), f"{what}: reference returned {type(ours).__name__}"
    assert ours.dtype == theirs.dtype, f"{what}: dtype {ours.dtype} vs jax {theirs.dtype}"
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} vs jax {theirs.shape}"
    name = precision or dtypes.canonical(ours.dtype)
    if name in TOLERANCES:
        rtol, atol = TOLERANCES[name]
        np.testing.assert_allclose(
            ours.astype(np.float64), theirs.astype(np.float64), rtol=rtol, atol=atol, err_msg=what
        )
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=what)


# --------------------------------------------------------------------------- lowering


def kernel_input(operand: Operand, value: object) -> np.ndarray:
    """The array a kernel takes for an operand: scalars are 0-d buffers of their dtype."""
    if isinstance(operand, TensorInfo):
        return value
    return np.asarray(value, dtype=dtypes.to_numpy(struct_info_of(operand).dtype))


def check_lowering(
    op_name: str,
    operands: Sequence[Operand],
    attrs: object,
    env: Mapping[str, int],
    *,
    seed: int = 0,
    data: Callable | None = None,
    precision: str | None = None,
) -> bool:
    """Lower the op for symbolic ``operands``, run the kernel with the reference
    interpreter at symbol values ``env`` and compare with the numpy reference.

    ``data(rng, shape, dtype, position)`` makes the input arrays (default: uniform in
    [-3, 3)); ``precision`` names a narrower dtype that bounds the result's accuracy
    (see :func:`assert_close`). Returns False (checking nothing) when the program is
    invalid at ``env``.
    """
    from relaxjax.tir import interpreter

    op = get(op_name)
    infos = [struct_info_of(o) for o in operands]
    info, checks = op.deduce(infos, attrs)
    if not all(c.holds(dict(env)) for c in checks):
        return False
    rng = np.random.default_rng(seed)
    make = data or (lambda rng, shape, dtype, position: random_array(rng, shape, dtype))
    values = [
        make(rng, tuple(o.shape), o.dtype, k) if isinstance(o, TensorInfo) else o
        for k, o in enumerate(concrete(operands, env))
    ]
    try:
        expected = op.reference(*values, attrs=subs_value(attrs, env))
    except ShapeError:
        return False
    kernel = op.lower(infos, attrs, info)
    out = np.zeros(expected.shape, dtype=expected.dtype)
    scalars = {s.name: env[s.name] for s in kernel.scalar_params}
    inputs = [kernel_input(o, v) for o, v in zip(operands, values)]
    interpreter.run(kernel, *inputs, out, **scalars)
    what = f"lowered {op_name}{tuple(operands)} attrs={attrs} env={env}"
    assert_close(out, expected, what, precision)
    return True


# --------------------------------------------------------------------------- public API


def check_eval_shape(
    relax_fn: Callable, jax_fn: Callable, specs: Sequence[TensorInfo], env: Mapping[str, int]
) -> object:
    """``relax.eval_shape`` of ``relax_fn`` on symbolic ``specs`` agrees with
    ``jax.eval_shape`` of ``jax_fn`` on the specs at symbol values ``env``.

    A ``ShapeError`` while tracing means jax fails too; a deduced dim equals jax's.
    Returns the deduced spec (or the error).
    """
    import relaxjax as relax

    try:
        ours = relax.eval_shape(relax_fn, *specs)
    except ShapeError as error:
        ours = error
    fixed = concrete(specs, env)
    theirs = jax_outcome(jax_fn, fixed)
    where = f"eval_shape on {tuple(fixed)!r} env={env}"
    if isinstance(ours, ShapeError):
        assert isinstance(theirs, Exception), f"{where}: we raised {ours!r}, jax gives {theirs}"
    elif not isinstance(theirs, Exception):
        _assert_matches(ours, theirs, env, where)
    return ours
