"""Every op of API.md §5 compiles with the default rules (through ``relax.jit``) and
matches jax, for row counts that leave tails (and 0).

The shapes are wide enough for the rules to split, vectorise and tile (37 columns,
not a multiple of any vector width; 70-column matrices). Every kernel of the
compiled program must carry the name of the rule that scheduled it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from op_cases import Case, assert_matches, expected, jitted, op_cases, random_arrays
from relaxjax.ops.decompositions import LIBRARY_OPS
from relaxjax.runtime import build_executable
from relaxjax.schedule.rules import RULE_ATTR


#: API.md §5, relaxjax.numpy and relaxjax.nn.
def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split())


NUMPY_OPS = _names(
    "add subtract multiply divide floor_divide mod power negative abs exp log sqrt rsqrt tanh "
    "sin cos maximum minimum where equal not_equal less less_equal greater greater_equal "
    "logical_and logical_or logical_not matmul dot einsum reshape transpose swapaxes "
    "expand_dims squeeze broadcast_to concatenate stack split take tril triu sum mean max min "
    "prod argmax argmin var cumsum astype zeros ones full arange zeros_like ones_like "
    "full_like pad clip"
)
NN_OPS = _names(
    "relu gelu silu sigmoid softmax log_softmax one_hot layer_norm rms_norm dot_product_attention"
)

_LOOSER = {
    "sum": {"min_n": 1},
    "mean": {"rtol": 1e-4},
    "prod": {"low": 0.9, "high": 1.1, "min_n": 1, "rtol": 1e-4},
    "log_softmax": {"rtol": 1e-4},
}
W = 37  # columns: a tail for every vector width and split factor

#: Wide operands, so the rules split, vectorise and tile; a few looser tolerances for
#: the longer reductions this width gives.
CASES = [
    replace(case, **_LOOSER.get(case.op, {}))
    for case in op_cases(width=W, matmul_cols=70, einsum_cols=9, head_dim=8)
]

#: One op per family runs by default; ``-m slow`` runs the whole table.
FAST = {"add", "gelu", "sum", "matmul", "transpose", "softmax", "layer_norm", "concatenate"}


#: Kernels written as statements (serial scans, or rows in parallel each a serial walk:
#: ops/nonzero.py, ops/unique.py, ops/repeat.py, ops/sort.py, ops/scan.py, ops/search.py,
#: ops/counting.py, ops/gather.py: scatter; loops with local state: ops/bitwise.py: gcd, lcm,
#: ops/transcendental.py: i0, i0e).
SERIAL_KERNELS = {
    "nonzero", "argwhere", "flatnonzero", "sort", "unique", "repeat", "cumsum", "cumprod",
    "searchsorted", "bincount", "scatter", "gcd", "lcm", "i0", "i0e",
}  # fmt: skip


def test_the_table_covers_every_op_of_the_api():
    assert set(NUMPY_OPS + NN_OPS) - {case.op for case in CASES} == set()


def _params() -> list:
    return [
        pytest.param(case, id=case.op, marks=() if case.op in FAST else pytest.mark.slow)
        for case in CASES
    ]


@pytest.mark.parametrize("case", _params())
def test_op_compiles_with_the_default_rules_and_matches_jax(case: Case):
    program = jitted(case)
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 70):
        env = {"n": max(n, case.min_n), "m": 3}
        arrays = random_arrays(case, env, rng)
        what = f"{case.op} with n={env['n']}"
        assert_matches(program(*arrays), expected(case, arrays), case.rtol, what)
    assert program.cache_size() == 1
    for library in (True,) if case.op in LIBRARY_OPS else (True, False):  # LAPACK-only ops
        exe = build_executable(program.trace(), library=library)
        for name, kernel in exe.module.kernels().items():
            rule = dict(kernel.attrs).get(RULE_ATTR)
            if name.split("_")[0] in SERIAL_KERNELS:
                continue  # written as serial scans: no rule applies, and none is needed
            assert rule in ("matmul", "reduction", "injective"), f"{case.op}: kernel {name}: {rule}"
    if case.op in ("matmul", "einsum"):
        arrays = random_arrays(case, {"n": 70, "m": 3}, rng)
        (ours,) = exe(*arrays)
        assert_matches(ours, expected(case, arrays), case.rtol, f"{case.op} without BLAS")
        assert any(dict(k.attrs)[RULE_ATTR] == "matmul" for k in exe.module.kernels().values())
