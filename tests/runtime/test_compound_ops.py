"""Every op of the shared table (tests/op_cases.py) on operands whose symbolic dims are
expressions: ``n`` becomes ``2*n + 1``, ``m`` becomes ``m + 2``. The arguments' sizes
solve the symbols; every kernel (fused, scheduled, or a library call) gets the values
it needs; results match jax; one executable serves every size.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from op_cases import Case, assert_matches, expected, jitted, op_cases
from relaxjax import arith

CASES = op_cases(width=3, matmul_cols=5, einsum_cols=2, head_dim=4)
COMPOUND = {"n": "2 * n + 1", "m": "m + 2"}
FAST = {"add", "exp", "sum", "argmax", "reshape", "concatenate", "layer_norm", "matmul", "cumsum"}


def _compound(case: Case) -> Case:
    specs = tuple(
        (tuple(COMPOUND.get(d, d) if isinstance(d, str) else d for d in shape), dtype)
        for shape, dtype in case.specs
    )
    return dataclasses.replace(case, specs=specs)


def _arrays(case: Case, env: dict[str, int], rng: np.random.Generator) -> list[np.ndarray]:
    arrays = []
    for shape, dtype in case.specs:
        concrete = tuple(
            arith.evaluate(arith.parse_dim(d), env) if isinstance(d, str) else d for d in shape
        )
        if dtype == "bool":
            arrays.append(rng.random(concrete) < 0.5)
        elif dtype == "int32":
            arrays.append(rng.integers(int(case.low), int(case.high), concrete).astype(np.int32))
        else:
            arrays.append(rng.uniform(case.low, case.high, concrete).astype(np.float32))
    return arrays


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(case, id=case.id, marks=() if case.op in FAST else pytest.mark.slow)
        for case in CASES
    ],
)
def test_op_on_expression_dims(case: Case):
    compound = _compound(case)
    program = jitted(compound)
    rng = np.random.default_rng(0)
    for env in ({"n": 0, "m": 0}, {"n": 1, "m": 3}, {"n": 3, "m": 1}):
        if 2 * env["n"] + 1 < case.min_n:  # the op needs a longer axis (dynamic_slice)
            continue
        arrays = _arrays(compound, env, rng)
        what = f"{case.op} with {env} on {compound.specs}"
        assert_matches(program(*arrays), expected(case, arrays), case.rtol, what)
    assert program.cache_size() == 1
