"""The harness of the jax.numpy surface tables (tests/ops/surface_*.py): one :class:`Case`
per row, checked three ways against jax (x64):

- **values**: ``relax.jit`` of the case (parameters annotated with symbolic dims) is
  compiled once and run at every size of ``sizes`` (0 and 1 included where legal); each
  result equals jax's on the same arrays (shape, dtype, values) and one executable
  serves every size;
- **shapes**: ``relax.eval_shape`` on the symbolic specs agrees with ``jax.eval_shape``
  at every size, for the case's dtype and every dtype of ``dtype_sets``;
- **eager**: the function on numpy arrays (no trace) equals jax's, for the case's dtypes
  (every dtype set under ``-m slow``).

``fn(np_like, *arrays)`` is the code under test: it is called with ``relaxjax.numpy``
and with ``jax.numpy``, so it holds the keyword arguments and Python scalars to check.
``edge`` puts NaN, infinities and -0.0 into float inputs. Cases whose sizes depend on the
data (jax cannot trace them) set ``shapes=False`` and ``jax_fn`` (jax or numpy run
eagerly); their symbolic shapes are tested on their own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import arith, dtypes
from relaxjax.ir import TensorInfo

sys.path.insert(0, str(Path(__file__).parent))
from oracle import jax_outcome, random_array  # noqa: E402

SIZES = ({"n": 0, "m": 2}, {"n": 1, "m": 1}, {"n": 3, "m": 4})
NONEMPTY = ({"n": 1, "m": 1}, {"n": 2, "m": 3}, {"n": 4, "m": 2})


@dataclass(frozen=True)
class Case:
    """``fn(np_like, *arrays)`` on arrays of ``specs`` ((shape, dtype); "n" and "m" are
    symbolic), covering the jax.numpy ``names``."""

    names: tuple[str, ...]
    fn: Callable
    specs: tuple
    sizes: tuple = SIZES
    low: float = -3.0
    high: float = 3.0
    rtol: float = 1e-5
    edge: bool = False
    dtype_sets: tuple = ()
    data: Callable | None = None
    jax_fn: Callable | None = None
    label: str = ""
    shapes: bool = True

    @property
    def id(self) -> str:
        return self.label or "-".join(self.names)

    def with_dtypes(self, dtype_set: tuple[str, ...]) -> Case:
        specs = tuple((shape, d) for (shape, _), d in zip(self.specs, dtype_set))
        return Case(**{**self.__dict__, "specs": specs})


def concrete_shape(shape: tuple, env: dict) -> tuple[int, ...]:
    return tuple(env[d] if isinstance(d, str) else d for d in shape)


def make_arrays(case: Case, env: dict, seed: int = 0) -> list[np.ndarray]:
    """Random inputs for the case at symbol values ``env``."""
    rng = np.random.default_rng(seed)
    arrays = []
    for position, (shape, dtype) in enumerate(case.specs):
        concrete = concrete_shape(shape, env)
        if case.data is not None:
            value = case.data(rng, concrete, dtype, position)
        else:
            value = random_array(rng, concrete, dtype, low=case.low, high=case.high)
        if case.edge and dtypes.is_floating(dtype) and value.size:
            value = _with_edge_values(rng, value)
        arrays.append(np.asarray(value, dtype=dtypes.to_numpy(dtype)))
    return arrays


def _with_edge_values(rng: np.random.Generator, value: np.ndarray) -> np.ndarray:
    flat = value.astype(np.float64).ravel()
    specials = np.array([np.nan, np.inf, -np.inf, -0.0])
    count = max(1, flat.size // 4)
    positions = rng.choice(flat.size, size=min(count, flat.size), replace=False)
    flat[positions] = rng.choice(specials, size=positions.size)
    return flat.reshape(value.shape).astype(value.dtype)


def jitted(case: Case) -> relax.jit:
    """``relax.jit`` of the case with its parameters annotated, as users write them."""
    annotations = [relax.Tensor(shape, dtype) for shape, dtype in case.specs]
    names = [f"a{i}" for i in range(len(annotations))]
    namespace: dict = {}
    exec(  # a function with annotated parameters
        f"def program({', '.join(f'{p}: ann[{i}]' for i, p in enumerate(names))}):\n"
        f"    return fn(rnp, {', '.join(names)})\n",
        {"ann": annotations, "fn": case.fn, "rnp": rnp},
        namespace,
    )
    return relax.jit(namespace["program"])


_JAX_JITTED: dict[Callable, Callable] = {}


def jax_result(case: Case, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """jax's result leaves for the case on ``arrays`` (``jax.jit`` of the case, compiled
    once per shape; ``jax_fn`` runs as given)."""
    if case.jax_fn is not None:
        result = case.jax_fn(*arrays)
    else:
        if case.fn not in _JAX_JITTED:
            _JAX_JITTED[case.fn] = jax.jit(lambda *xs: case.fn(jnp, *xs))
        result = _JAX_JITTED[case.fn](*arrays)
    return [np.asarray(r) for r in jax.tree_util.tree_leaves(result)]


def assert_same(ours: object, theirs: list[np.ndarray], rtol: float, what: str) -> None:
    """Same leaves, shapes and dtypes; floats within ``rtol`` (NaN equals NaN)."""
    leaves = jax.tree_util.tree_leaves(ours)
    assert len(leaves) == len(theirs), f"{what}: {len(leaves)} results vs jax's {len(theirs)}"
    for k, (a, b) in enumerate(zip(leaves, theirs)):
        a = np.asarray(a)
        where = f"{what} (result {k})"
        assert a.shape == b.shape, f"{where}: shape {a.shape} != jax's {b.shape}"
        assert a.dtype == b.dtype, f"{where}: dtype {a.dtype} != jax's {b.dtype}"
        if a.dtype.kind == "f" or b.dtype == dtypes.to_numpy("bfloat16"):
            tol = max(rtol, 1e-2) if a.dtype.itemsize <= 2 else rtol
            np.testing.assert_allclose(
                a.astype(np.float64), b.astype(np.float64), rtol=tol, atol=tol, err_msg=where
            )
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)


def check_values(case: Case) -> None:
    """The jitted case equals jax at every size, with one executable."""
    program = jitted(case)
    for k, env in enumerate(case.sizes):
        arrays = make_arrays(case, env, seed=k)
        what = f"{case.id} at {env}"
        assert_same(program(*arrays), jax_result(case, arrays), case.rtol, what)
    assert program.cache_size() == 1, f"{case.id}: {program.cache_size()} executables"


def _symbolic_specs(case: Case) -> list:
    return [relax.Tensor(shape, dtype) for shape, dtype in case.specs]


def check_shapes(case: Case) -> None:
    """``relax.eval_shape`` on symbolic specs agrees with ``jax.eval_shape`` at every size
    (the symbols substituted) and dtype set."""
    if not case.shapes:
        return
    for variant in (case, *(case.with_dtypes(d) for d in case.dtype_sets)):
        ours = jax.tree_util.tree_leaves(
            relax.eval_shape(lambda *xs, v=variant: v.fn(rnp, *xs), *_symbolic_specs(variant))
        )
        for env in variant.sizes:
            concrete = [
                TensorInfo(concrete_shape(shape, env), dtype) for shape, dtype in variant.specs
            ]
            theirs = jax_outcome(lambda *xs, v=variant: v.fn(jnp, *xs), concrete)
            where = f"{variant.id} with {[d for _, d in variant.specs]} at {env}"
            assert not isinstance(theirs, Exception), f"{where}: jax raises {theirs!r}"
            theirs = jax.tree_util.tree_leaves(theirs)
            assert len(ours) == len(theirs), f"{where}: {len(ours)} results vs {len(theirs)}"
            for k, (mine, jaxs) in enumerate(zip(ours, theirs)):
                got = tuple(arith.subs(d, env) for d in mine.shape)
                assert got == tuple(jaxs.shape), f"{where} result {k}: {mine} vs {jaxs.shape}"
                assert mine.dtype == dtypes.canonical(jaxs.dtype), f"{where} result {k}: dtype"
                # a weak bool promotes as a bool: relaxjax never makes one (tests/ops/oracle.py)
                weak = bool(getattr(jaxs, "weak_type", False)) and mine.dtype != "bool"
                assert mine.weak == weak, f"{where} result {k}: weak {mine.weak} vs jax's {weak}"


def check_eager(case: Case, dtype_sets: bool = False) -> None:
    """Outside a trace, the function on numpy arrays equals jax's, for the case's dtypes
    (and every dtype set when ``dtype_sets``: jax compiles each, so those runs are slow)."""
    variants = [case.with_dtypes(d) for d in case.dtype_sets] if dtype_sets else [case]
    for variant in variants:
        env = variant.sizes[-1]
        arrays = make_arrays(variant, env, seed=7)
        what = f"{variant.id} eagerly with {[a.dtype.name for a in arrays]} at {env}"
        assert_same(variant.fn(rnp, *arrays), jax_result(variant, arrays), variant.rtol, what)


def covered_names(cases: list[Case]) -> set[str]:
    return {name for case in cases for name in case.names}
