"""Minimising a failing program while it keeps failing the same way.

The steps know the program's structure, so a 12-statement failure shrinks in tens of
compiles: keep only the failing environment and (for a wrong value or deduction) the
failing value as the one output; cut statements by turning a statement's result into a
new input of the same spec (its dims written as a spec dim of the same sizes at every
environment); drop the inputs nothing reads. A candidate is kept when :func:`fuzz_check.check`
still reports a failure of the same kind and key.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import fuzz_check
from fuzz_check import Failure
from fuzz_gen import prune
from fuzz_model import Dim, Input, Program, SpecDim, Val, is_float


def _same(a: Failure, b: Failure) -> bool:
    return a.kind == b.kind and a.key == b.key


def reproduces(program: Program, failure: Failure) -> Failure | None:
    """The failure of ``program`` like ``failure`` (same kind and key), checking only
    what ``failure`` needs; None when it is gone."""
    envs = [failure.env] if failure.env is not None else None
    if failure.kind == "bad-input":
        try:
            scope = fuzz_check.definitions(program)
            variants = [
                v for v in fuzz_check.bad_variants(program, failure.env) if v[0] == failure.key
            ]
            found = []
            for variant in variants:
                args = fuzz_check._bad_args(program, scope, failure.env, variant)
                problem = fuzz_check.bad_call_problem(scope["f"], args)
                if problem is not None:
                    found.append(
                        Failure(
                            "bad-input",
                            failure.env,
                            f"{variant[0]}: {problem}",
                            variant[0],
                            variant,
                        )
                    )
        except Exception:  # noqa: BLE001 - a candidate that breaks differently: not kept
            return None
    else:
        deductions = failure.kind == "deduction"
        if failure.kind == "cache":
            envs = None
        try:
            found = fuzz_check.check(program, envs, bad_inputs=False, deductions=deductions)
        except Exception:  # noqa: BLE001
            return None
        if any(f.kind == "reference" for f in found) and failure.kind != "reference":
            return None  # the candidate is not a valid program any more
    return next((f for f in found if _same(f, failure)), None)


def shrink(
    program: Program, failure: Failure, budget: int = 80, log: Callable[[str], None] | None = None
) -> tuple[Program, Failure]:
    """A smaller program failing like ``failure`` (at most ``budget`` checks)."""
    state = {"checks": 0}

    def attempt(candidate: Program) -> Failure | None:
        if state["checks"] >= budget:
            return None
        state["checks"] += 1
        return reproduces(candidate, failure)

    best, best_failure = program, failure
    value = failure.key.split(":")[0]
    if value in best.values() and best.outputs != (value,):
        candidate = prune(best.with_(outputs=(value,), output_kind="single"))
        found = attempt(candidate)
        if found is not None:
            best, best_failure = candidate, found
    elif len(best.outputs) > 1:
        for name in best.outputs:
            candidate = prune(best.with_(outputs=(name,), output_kind="single"))
            found = attempt(candidate)
            if found is not None:
                best, best_failure = candidate, found
                break
    changed = True
    while changed and state["checks"] < budget:
        changed = False
        for stmt in reversed(best.stmts):
            if set(stmt.targets) & set(best.outputs):
                continue
            candidate = promote(best, stmt.targets)
            if candidate is None:
                continue
            found = attempt(candidate)
            if found is not None:
                best, best_failure, changed = candidate, found, True
                break
        if not changed:
            for inp in best.inputs:
                if any(inp.name in s.uses for s in best.stmts):
                    continue
                candidate = best.with_(inputs=tuple(i for i in best.inputs if i is not inp))
                found = attempt(candidate)
                if found is not None:
                    best, best_failure, changed = candidate, found, True
                    break
    if log is not None:
        log(
            f"shrunk seed {program.seed} in {state['checks']} checks: "
            f"{len(program.stmts)} -> {len(best.stmts)} statements"
        )
    return best, best_failure


def _spec_dim(program: Program, dim: Dim) -> SpecDim | None:
    """A spec dim with ``dim``'s sizes at every environment, if the program has one."""
    if dim.static is not None:
        return SpecDim(str(dim.static), offset=dim.static)
    for inp in program.inputs:
        for spec in inp.dims:
            if tuple(spec.size(env) for env in program.envs) == dim.vals:
                return spec
    return None


def _input_of(program: Program, val: Val) -> Input | None:
    dims = [_spec_dim(program, d) for d in val.shape]
    if any(d is None for d in dims):
        return None
    rng = val.range
    if is_float(val.dtype):
        low, high = (rng.lo, rng.hi) if rng.finite and rng.hi - rng.lo < 1e6 else (-2.0, 2.0)
        if low == high:
            high = low + 1.0
    elif val.dtype == "bool":
        low, high = 0, 1
    else:
        low, high = (rng.lo, rng.hi) if rng.finite and rng.hi - rng.lo <= 1000 else (-5, 5)
        low, high = math.ceil(low), math.floor(high)
    return Input(val.name, tuple(dims), val.dtype, low, high)


def promote(program: Program, targets: tuple[str, ...]) -> Program | None:
    """``program`` with the statement binding ``targets`` replaced by new inputs."""
    values = program.values()
    new_inputs = []
    for name in targets:
        made = _input_of(program, values[name])
        if made is None:
            return None
        new_inputs.append(made)
    stmts = tuple(s for s in program.stmts if s.targets != targets)
    return prune(program.with_(inputs=program.inputs + tuple(new_inputs), stmts=stmts))
