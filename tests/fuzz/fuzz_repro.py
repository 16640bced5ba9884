"""A failure as a standalone Python script: paste it, run it, watch it fail.

The script holds the imports, the symbols, the program (written once against the
jax.numpy API), the ``@relax.jit`` wrapper with its specs, the seeded inputs, the jax
reference and the assertion of the failure's kind.
"""

from __future__ import annotations

import fuzz_check
import fuzz_jax
from fuzz_check import Failure
from fuzz_model import Program

_CHECK_SOURCE = '''\
def check(got, want, rtol):
    """relaxjax's outputs against jax's: structure, shapes, dtypes, then values (rtol 0:
    exactly; else also atol = rtol * the largest finite magnitude, at least 1)."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree, (got_tree, want_tree)
    for g, w in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.shape, g.dtype) == (w.shape, w.dtype), ((g.shape, g.dtype), (w.shape, w.dtype))
        if not rtol or w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            w64 = w.astype(np.float64)
            finite = np.isfinite(w64)
            scale = max(1.0, float(np.abs(w64[finite]).max())) if finite.any() else 1.0
            np.testing.assert_allclose(g.astype(np.float64), w64, rtol=rtol, atol=rtol * scale)
'''


def _header(program: Program, failure: Failure) -> list[str]:
    lines = [
        f"# relaxjax fuzzer repro (seed {program.seed}): {failure.kind}",
        *(f"# {line}" for line in str(failure).splitlines()),
        "import jax",
        "import jax.numpy as jnp",
        "import ml_dtypes  # noqa: F401 - bfloat16 inputs",
        "import numpy as np",
    ]
    if program.uses_nn_shim():
        lines.append("import types")
    lines += [
        "",
        "import relaxjax as relax",
        "import relaxjax.nn as rnn",
        "import relaxjax.numpy as rnp",
        "",
        'jax.config.update("jax_enable_x64", True)  # relaxjax follows jax with x64',
        "",
    ]
    return lines


def _inputs(program: Program, env: int, suffix: str = "") -> list[str]:
    return [
        f"{inp.name}{suffix} = {fuzz_check.input_call(program, env, i)}"
        for i, inp in enumerate(program.inputs)
    ]


def repro(program: Program, failure: Failure) -> str:
    """The standalone script reproducing ``failure`` of ``program``."""
    lines = _header(program, failure)
    lines.append(program.source())
    lines.append(fuzz_check.jit_source(program))
    lines.append("")
    nn = "jax.nn"
    if program.uses_nn_shim():
        lines.append(fuzz_jax.NN_SHIM_SOURCE)
        nn = "jnn"
    lines.append(fuzz_check.INPUT_SOURCE)
    names = ", ".join(i.name for i in program.inputs)
    # jax's reference sees jax arrays (numpy arrays would follow numpy's promotion)
    jax_names = ", ".join(f"jnp.asarray({i.name})" for i in program.inputs)
    env = failure.env if failure.env is not None else 0
    bound = program.envs[env]
    lines.append(f"# symbol values {bound}")
    lines += _inputs(program, env)
    if failure.kind == "bad-input":
        lines += _bad_input_lines(program, failure)
    elif failure.kind == "died":
        lines.append(f"f({names})")
        for e in range(1, program.runs):
            lines.append(f"# symbol values {program.envs[e]}")
            lines += _inputs(program, e)
            lines.append(f"f({names})  # the process dies at one of these calls")
    elif failure.kind == "cache":
        for e in range(program.runs):
            lines.append(f"# symbol values {program.envs[e]}")
            lines += _inputs(program, e)
            lines.append(f"f({names})")
        lines.append("assert f.cache_size() == 1, f'{f.cache_size()} executables'")
    elif failure.kind == "deduction":
        lines += _deduction_lines(program, failure, bound, nn, names, jax_names)
    elif failure.kind in ("refused", "crash"):
        lines.append(f"want = program(jnp, {nn}, {jax_names})  # jax computes it")
        lines.append(f"got = f({names})  # raises {failure.message}")
    else:
        rtol = max(program.values()[o].tol for o in program.outputs)
        lines.append(_CHECK_SOURCE)
        lines.append(f"want = jax.jit(lambda {names}: program(jnp, {nn}, {names}))({names})")
        lines.append(f"got = f({names})")
        lines.append(f"check(got, want, rtol={rtol!r})")
    return "\n".join(lines) + "\n"


def _deduction_lines(program, failure, bound, nn, names, jax_names) -> list[str]:
    specs = ", ".join(i.name if i.scalar else i.spec() for i in program.inputs)
    target = failure.key if failure.key in program.values() else program.outputs[0]
    return [
        f"want = program(jnp, {nn}, {jax_names})",
        f"spec = relax.eval_shape(lambda {names}: program(rnp, rnn, {names}), {specs})",
        "want_leaves = jax.tree_util.tree_leaves(want)",
        "is_spec = lambda s: isinstance(s, relax.Tensor)  # noqa: E731",
        "spec_leaves = jax.tree_util.tree_leaves(spec, is_leaf=is_spec)",
        f"for s, w in zip(spec_leaves, want_leaves):  # {target}",
        "    assert str(s.dtype) == str(w.dtype), (s, w.dtype)",
        "    if s.shape is not None:",
        f"        deduced = tuple(d if isinstance(d, int) else d.subs({bound!r}) for d in s.shape)",
        "        assert deduced == w.shape, (s, deduced, w.shape)",
    ]


def _bad_input_lines(program: Program, failure: Failure) -> list[str]:
    what, index, (how, payload) = failure.variant
    names = [i.name for i in program.inputs]
    lines = [f"# a bad input ({what}) must raise relax.ShapeError or TypeError before any kernel"]
    if how == "shapes":
        for i, (inp, shape) in enumerate(zip(program.inputs, payload)):
            lines.append(f"{inp.name} = {fuzz_check.input_call(program, failure.env, i, shape)}")
    else:
        inp = program.inputs[index]
        if how == "shape":
            value = fuzz_check.input_call(program, failure.env, index, payload)
        elif how == "dtype":
            value = f"np.zeros({inp.shape(program.envs[failure.env])!r}, {payload!r})"
        else:
            value = repr(payload)
        lines.append(f"{inp.name} = {value}")
    lines += [
        "try:",
        f"    f({', '.join(names)})",
        "except (relax.ShapeError, TypeError) as err:",
        '    assert "argument \'" in str(err), err',
        "else:",
        f"    raise AssertionError('f accepted a bad input: {what}')",
    ]
    return lines
