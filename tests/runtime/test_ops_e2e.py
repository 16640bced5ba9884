"""Every registered op, traced with symbolic shapes, compiled and run end to end.

For each case: ``relax.jit`` of the public wrapper (annotated with symbolic dims) is
run for several random symbol values and random data, and compared with jax on the
same arrays and with the same program whose kernels run in the tir reference
interpreter (``target="reference"``). One executable serves every value of the
symbols (``cache_size() == 1``). Ops whose lowering does not exist yet are skipped
with the op's own error, so the skip list is the list of missing lowerings.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from op_cases import Case, assert_matches, expected, jitted, op_cases, random_arrays
from relaxjax import ops
from relaxjax.errors import LoweringError
from relaxjax.runtime import build_executable

#: Small operands: 3 columns, (3, 5) and (3, 2) contractions, head dim 4.
CASES = op_cases(width=3, matmul_cols=5, einsum_cols=2, head_dim=4)
X = (("n", 3), "float32")


def test_every_registered_op_has_a_case():
    covered = {case.op for case in CASES}
    assert set(ops.registry()) - covered == set()


_COMPILED: dict[str, tuple] = {}


def _compiled(case: Case):
    """The jitted function and the reference-interpreter executable, built once per case."""
    if case.op not in _COMPILED:
        program = jitted(case)
        try:
            reference = build_executable(program.lower(), target="reference")
        except LoweringError as err:
            pytest.skip(f"no lowering: {err}")
        _COMPILED[case.op] = (program, reference)
    return _COMPILED[case.op]


#: One op per family runs by default; the whole table runs with ``-m slow`` (jax compiles
#: every op for every new shape, which dominates the time).
FAST = {"add", "exp", "gelu", "where", "sum", "argmax", "reshape", "concatenate", "layer_norm"}


def _params() -> list:
    return [
        pytest.param(case, id=case.id, marks=() if case.op in FAST else pytest.mark.slow)
        for case in CASES
    ]


@pytest.mark.parametrize("case", _params())
@settings(max_examples=4, deadline=None)
@given(n=st.integers(0, 5), m=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_op_end_to_end(case: Case, n: int, m: int, seed: int):
    program, reference = _compiled(case)
    env = {"n": max(n, case.min_n), "m": m}
    arrays = random_arrays(case, env, np.random.default_rng(seed))
    ours = program(*arrays)
    what = f"{case.op} with n={env['n']}, m={m}"
    assert_matches(ours, expected(case, arrays), case.rtol, what + " vs jax")
    assert_matches(ours, reference(*arrays), case.rtol, what + " vs the tir interpreter")
    assert program.cache_size() == 1


@pytest.mark.parametrize("reduce, identity", [("sum", 0.0), ("prod", 1.0)])
def test_reduction_over_an_empty_axis_gives_the_identity(reduce, identity):
    """numpy/jax: sum over a size-0 axis is 0, prod is 1 (the kernel must initialise)."""
    case = Case(reduce, lambda m, nn, x: getattr(m, reduce)(x, axis=0), (X,))
    program = jitted(case)
    for _ in range(3):  # garbage in uninitialised memory differs between calls
        out = program(np.zeros((0, 3), np.float32))
        np.testing.assert_array_equal(out, np.full(3, identity, np.float32))
