"""The differential fuzzer: random programs through relaxjax and jax (tests/fuzz/).

``test_random_programs_agree_with_jax`` runs a few hundred seeds in CI, over as many
processes as the machine has cores (two at most); the slow test runs 10^4, sharded by
``RELAXJAX_FUZZ_SEEDS`` (``start:stop``, default ``100000:110000``). Every failure is
printed as a standalone script that reproduces it (shrunk to a few statements).

The rest checks the fuzzer itself: generation is deterministic and covers every op
family, dtype and kind of dim; the checker catches a wrong value, a wrong dtype and an
accepted bad input, and its repro script fails the same way.
"""

from __future__ import annotations

import collections
import os

import fuzz_check
import fuzz_gen
import fuzz_repro
import fuzz_run
import fuzz_shrink
import numpy as np
import pytest
from fuzz_model import DTYPES, Input, Program, SpecDim, Symbol
from fuzz_ops import FAMILY_TAGS

import relaxjax as relax
import relaxjax.numpy as rnp

#: The default suite's seeds: a few hundred programs, about a minute on two cores.
CI_SEEDS = range(0, 200)


def _workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def _failures(reports) -> str:
    return "\n\n".join(str(r) for r in reports)


def test_random_programs_agree_with_jax():
    reports = fuzz_run.run_parallel(list(CI_SEEDS), _workers())
    if reports:
        pytest.fail(f"{len(reports)} failing programs:\n\n{_failures(reports)}", pytrace=False)


def _slow_shards() -> list:
    start, stop = (
        int(x) for x in os.environ.get("RELAXJAX_FUZZ_SEEDS", "100000:110000").split(":")
    )
    step = 500
    return [range(s, min(s + step, stop)) for s in range(start, stop, step)]


@pytest.mark.slow
@pytest.mark.parametrize("seeds", _slow_shards(), ids=lambda r: f"{r.start}-{r.stop}")
def test_many_random_programs_agree_with_jax(seeds):
    reports = fuzz_run.run_parallel(list(seeds), _workers())
    if reports:
        pytest.fail(f"{len(reports)} failing programs:\n\n{_failures(reports)}", pytrace=False)


# --------------------------------------------------------------------------- the generator


def test_generation_is_deterministic_and_covers_every_family_dtype_and_dim_kind():
    programs = [fuzz_gen.generate(seed) for seed in range(80)]
    again = [fuzz_gen.generate(seed) for seed in range(3)]
    assert [p.source() for p in again] == [p.source() for p in programs[:3]]
    families = collections.Counter(s.family for p in programs for s in p.stmts)
    assert set(families) == FAMILY_TAGS, families
    dtypes = {i.dtype for p in programs for i in p.inputs}
    assert dtypes == set(DTYPES)
    dims = [d for p in programs for i in p.inputs for d in i.dims]
    assert any(d.is_bare_symbol for d in dims) and any(d.text == "1" for d in dims)
    runs = [env for p in programs for env in p.run_envs]
    assert any(0 in env.values() for env in runs) and any(1 in env.values() for env in runs)
    assert all(len(p.stmts) + 2 >= 3 for p in programs)  # pruning may drop a few


def test_compound_dims_are_generated_behind_their_flag():
    features = fuzz_gen.Features(compound_dims=True)
    programs = [fuzz_gen.generate(seed, features) for seed in range(25)]
    dims = [d for p in programs for i in p.inputs for d in i.dims]
    assert any(d.coef >= 2 for d in dims) and any(d.offset and d.symbol for d in dims)
    for p in programs:  # every symbol is bound by a dim linear in it alone
        for symbol in p.used_symbols():
            assert any(d.symbol == symbol.name and not d.product for i in p.inputs for d in i.dims)
    default = [
        d for p in (fuzz_gen.generate(s) for s in range(25)) for i in p.inputs for d in i.dims
    ]
    assert not any(d.coef >= 2 or (d.offset and d.symbol) for d in default)


def _compound_dims_supported() -> bool:
    try:
        relax.eval_shape(lambda x: x, relax.Tensor((2 * relax.sym("n"),), "float32"))
    except relax.TraceError:
        return False
    return True


@pytest.mark.skipif(
    not _compound_dims_supported(), reason="issue 9 part 1 (compound dims) not merged"
)
def test_random_programs_with_compound_dims_agree_with_jax():
    features = fuzz_gen.Features(compound_dims=True)
    reports = [fuzz_run.run_seed(seed, features=features) for seed in range(500, 530)]
    reports = [r for r in reports if r is not None]
    if reports:
        pytest.fail(_failures(reports), pytrace=False)


# --------------------------------------------------------------------------- the checker


def _program_with_exp() -> Program:
    """Three statements, one of them ``np_.exp``, over a float32 ``(n, 3)`` input."""
    x = Input("x0", (SpecDim("n", symbol="n"), SpecDim("3", 3)), "float32", -2.0, 2.0)
    exprs = ["x0 * 2.0", "np_.exp(v0)", "np_.sum(v1, axis=1)"]
    return fuzz_gen.handmade((Symbol("n"),), (x,), exprs)


def test_a_wrong_value_is_caught_shrunk_and_reproduced(monkeypatch):
    program = _program_with_exp()
    assert fuzz_check.check(program) == []
    exp = rnp.exp
    monkeypatch.setattr(rnp, "exp", lambda x: exp(x) * 1.01)  # a 1% error in one op
    failures = fuzz_check.check(program, bad_inputs=False)
    assert failures and failures[0].kind == "mismatch", failures
    small, failure = fuzz_shrink.shrink(program, failures[0])
    assert failure.kind == "mismatch"
    assert [s.expr for s in small.stmts] == ["np_.exp(v0)", "np_.sum(v1, axis=1)"]
    script = fuzz_repro.repro(small, failure)
    assert "@relax.jit" in script and "make_input(" in script and "check(got, want" in script
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        exec(compile(script, "<repro>", "exec"), {})  # noqa: S102 - the repro fails too


def test_compare_value_is_exact_for_exact_values_and_tolerant_for_rounded_ones():
    a = np.array([1.0, np.nan, np.inf, -2.0], np.float32)
    assert fuzz_check.compare_value(a.copy(), a, 0.0) is None
    assert "exact values differ" in fuzz_check.compare_value(a + np.float32(1e-6), a, 0.0)
    assert fuzz_check.compare_value(a * np.float32(1 + 1e-5), a, 2e-4) is None
    assert "values differ" in fuzz_check.compare_value(a * np.float32(1.01), a, 2e-4)
    nan_moved = np.array([np.nan, 1.0, np.inf, -2.0], np.float32)
    assert "NaN" in fuzz_check.compare_value(nan_moved, a, 2e-4)
    assert "infinities" in fuzz_check.compare_value(-a, a, 2e-4)
    assert "dtype float64, jax float32" in fuzz_check.compare_value(a.astype(np.float64), a, 2e-4)
    assert "shape (3,), jax (4,)" in fuzz_check.compare_value(a[:3], a, 2e-4)
    ints = np.array([1, 2], np.int8)
    assert "values differ" in fuzz_check.compare_value(ints + 1, ints, 2e-4)


def test_bad_inputs_must_raise_shape_or_type_errors_naming_an_argument():
    @relax.jit
    def f(x: relax.Tensor(("n", 2), "float32")):
        return x + 1

    def accepts(*args):
        return None

    def value_error(*args):
        raise ValueError("argument 'x': no")

    def anonymous(*args):
        raise TypeError("bad")

    good = [np.ones((3, 2), np.float32)]
    assert fuzz_check.bad_call_problem(f, [np.ones((3, 3), np.float32)]) is None
    assert fuzz_check.bad_call_problem(f, [None]) is None
    assert fuzz_check.bad_call_problem(accepts, good) == "no error"
    assert "expected relax.ShapeError or TypeError" in fuzz_check.bad_call_problem(
        value_error, good
    )
    assert "does not name the argument" in fuzz_check.bad_call_problem(anonymous, good)


def test_bad_input_variants_cover_rank_dtype_relations_bounds_and_non_arrays():
    n, m = Symbol("n", 1), Symbol("m")
    x = Input("x0", (SpecDim("n", symbol="n"), SpecDim("3", 3)), "float32", -1, 1)
    y = Input("x1", (SpecDim("m", symbol="m"), SpecDim("n", symbol="n")), "int32", 0, 5)
    program = Program(0, (n, m), (x, y), (), (), "tuple", ({"n": 2, "m": 0},), 1)
    whats = [v[0] for v in fuzz_check.bad_variants(program, 0)]
    for expected in (
        "rank+1",
        "rank-1",
        "static axis 1",
        "dtype int32",
        "dtype float32",
        "None",
        "list",
        "str",
        "relation n at x1 axis 1",
        "n below its lower bound",
    ):
        assert expected in whats, whats


def test_an_error_raised_after_a_kernel_ran_is_reported():
    source = (
        "def run_f(a0, late):\n"
        "    if not late:\n"
        "        raise TypeError(\"argument 'x': early\")\n"
        "    status = len(a0)\n"
        "    raise TypeError(\"argument 'x': late\")\n"
    )
    scope: dict = {}
    exec(compile(source, "<relaxjax executable run_f>", "exec"), scope)  # noqa: S102
    run = scope["run_f"]

    class Executable:
        pass

    executable = Executable()
    executable.run, executable.source = run, source

    class Fake:
        _executables = {"key": executable}

        def __call__(self, *args):
            return run(*args)

    assert fuzz_check.bad_call_problem(Fake(), [[1], False]) is None
    problem = fuzz_check.bad_call_problem(Fake(), [[1], True])
    assert problem == "raised after a kernel ran: TypeError: argument 'x': late"
