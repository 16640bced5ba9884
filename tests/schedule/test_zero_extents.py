"""Zero extents (issue 9, part 6): a loop or an axis of size 0 runs nothing, and every
schedule primitive and default rule must stay valid for it.

The primitives are checked on kernels with a static 0 dim (the loop nest, the trace
round trip, equivalence with the reference interpreter); the default rules through
``relax.jit`` on every op family of ``tests/op_cases.py`` with a 0 dim, static and
symbolic, against jax: the same result, or an error where jax raises one too.
"""

from __future__ import annotations

from dataclasses import replace

import jax
import numpy as np
import pytest
from sched_kernels import assert_equivalent, assert_replays

import relaxjax as relax
import relaxjax.numpy as rnp
from op_cases import Case, assert_matches, expected, jitted, op_cases, random_arrays
from relaxjax import arith, schedule
from relaxjax.errors import ShapeError
from relaxjax.tir import te

N = arith.sym("n")


def _elementwise(shape) -> object:
    a = te.placeholder(shape, "float32", "A")
    b = te.compute(shape, lambda *i: a[i] * 2.0, name="B")
    return te.create_prim_func([a, b], name="elementwise")


def _check(sch) -> None:
    assert_replays(sch)
    assert_equivalent(sch.original, sch.func)


# --------------------------------------------------------------------------- primitives


@pytest.mark.parametrize("shape", [(N, 0), (3, 0), (0, N), (2, 0, 4), (0, 0)])
def test_fusing_loops_of_a_zero_extent(shape):
    sch = schedule.Schedule(_elementwise(shape))
    loops = sch.get_loops(sch.get_block("B"))
    fused = sch.fuse(*loops)
    text = str(sch.func)
    assert f"for {fused.name} in range(0):" in text
    assert "% 0" not in text and "// 0" not in text
    _check(sch)
    # what a rule does next: split the fused loop, vectorise its inner part
    outer, inner = sch.split(fused, factors=[None, 8])
    sch.vectorize(inner)
    _check(sch)


def test_fusing_a_zero_extent_symbolic_loop_keeps_the_digits():
    """A symbolic extent may be 0 only for some values: the digits stay (they are never
    evaluated when it is 0, the loop running no iteration)."""
    sch = schedule.Schedule(_elementwise((5, N)))
    i, j = sch.get_loops(sch.get_block("B"))
    fused = sch.fuse(i, j)
    text = str(sch.func)
    assert f"{fused.name} // n" in text and f"{fused.name} % n" in text
    _check(sch)


# --------------------------------------------------------------------------- the bug


@pytest.mark.parametrize(
    ("spec", "axis", "shape"),
    [
        (("k", 0), 1, (3, 0)),
        ((3, 0), 1, (3, 0)),
        (("k", 0), None, (3, 0)),
        (("k", 0), 0, (2, 0)),
        ((0, "k"), 1, (0, 4)),
        ((0, "k"), None, (0, 4)),
        (("k", 0, 2), 2, (3, 0, 2)),
    ],
)
def test_cumsum_over_zero_extents(spec, axis, shape):
    @relax.jit
    def f(x: relax.Tensor(spec, "float32")):
        return rnp.cumsum(x, axis=axis)

    x = np.zeros(shape, np.float32)
    got = np.asarray(f(x))
    want = np.asarray(jax.numpy.cumsum(x, axis=axis))
    assert got.shape == want.shape and got.dtype == want.dtype


def test_reshape_of_a_static_empty_array():
    @relax.jit
    def f(x: relax.Tensor((3, 0, 2), "float32")):
        return x.reshape(0, 6), x.reshape(2, 0, 3)

    got = f(np.zeros((3, 0, 2), np.float32))
    assert [np.asarray(g).shape for g in got] == [(0, 6), (2, 0, 3)]


# --------------------------------------------------------------------------- every op


def _zero_cases() -> list[tuple[str, Case, dict]]:
    """Every op case with a zero width, the other sizes 0 too, and with zero rows."""
    found = []
    configs = {
        "width0": op_cases(width=0, matmul_cols=5, einsum_cols=2, head_dim=0),
        "cols0": op_cases(width=3, matmul_cols=0, einsum_cols=0, head_dim=4),
    }
    for label, cases in configs.items():
        for case in cases:
            found.append((label, case))
    return found


def _symbolic(case: Case) -> Case:
    """The case with its static 0 dims turned into a symbol ``w`` (bound to 0)."""
    specs = tuple(
        (tuple("w" if d == 0 and not isinstance(d, str) else d for d in shape), dtype)
        for shape, dtype in case.specs
    )
    return replace(case, specs=specs)


def _run(program, case: Case, env: dict, rng) -> bool:
    """Runs the program where jax runs (same result) and expects a clear error where jax
    refuses the input. Returns whether it ran."""
    arrays = random_arrays(case, env, rng)
    what = f"{case.op} on {[a.shape for a in arrays]}"
    try:
        theirs = expected(case, arrays)
    except Exception:  # noqa: BLE001 - jax refuses the input: so must we, clearly
        with pytest.raises((ShapeError, ValueError, TypeError)):
            program(*arrays)
        return False
    assert_matches(program(*arrays), theirs, case.rtol, what)
    return True


#: One op per family runs by default (the bug's family among them); ``-m slow`` all.
FAST = {"add", "sum", "max", "cumsum", "reshape", "matmul", "softmax", "concatenate", "pad"}


def _params() -> list:
    params = []
    for label, case in _zero_cases():
        has_zero = any(d == 0 for shape, _ in case.specs for d in shape if isinstance(d, int))
        for symbolic in (False, True) if has_zero else (False,):
            marks = () if case.op in FAST else pytest.mark.slow
            kind = "symbolic" if symbolic else "static"
            params.append(
                pytest.param(case, label, symbolic, id=f"{case.op}-{label}-{kind}", marks=marks)
            )
    return params


@pytest.mark.parametrize(("case", "label", "symbolic"), _params())
def test_op_with_a_zero_dim_compiles_with_the_default_rules(case, label, symbolic):
    if symbolic:
        case = _symbolic(case)
        assert any("w" in shape for shape, _ in case.specs), case.specs
    rng = np.random.default_rng(0)
    program = jitted(case)
    ran = [_run(program, case, {"n": max(n, case.min_n), "m": 2, "w": 0}, rng) for n in (0, 1, 3)]
    if any(ran):
        assert program.cache_size() == 1
