"""The hypothesis oracle for compound dims: random programs on specs whose dims are
expressions (``a*n + b``, products and sums of 1-3 symbols, ints), judged by jax.

Each program is a few ops (elementwise with broadcasting, reductions, reshapes,
concatenation, matmul, slicing, transposes) written once against a numpy-like module,
so the same code traces with ``relaxjax.numpy`` and runs with ``jax.numpy``:

- **shapes**: ``relax.eval_shape`` against ``jax.eval_shape`` on
  ``jax.export.symbolic_shape`` specs (jax's symbols are >= 1, so the dims are compared
  at every assignment of 1..3), and against ``jax.eval_shape`` on concrete shapes at
  assignments including 0 and 1;
- **calls**: the program compiled once with ``@relax.jit`` and run at random sizes,
  values against jax; then sizes perturbed so that they fit no assignment (a
  ``ShapeError`` naming an argument and axis) or fit exactly one (the program runs and
  matches jax for it, unless the only dims left to determine a symbol are nonlinear,
  ``n * n``, or have a coefficient that is 0 there, ``m * n`` at ``m = 0``: then the
  ShapeError says so). Which is which is decided by brute force over the symbols'
  values, independently of the runtime's solver.

A failure prints the program as a standalone repro.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.numpy as rnp
from op_cases import assert_matches
from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.arith.terms import to_terms

SYMBOLS = {name: arith.sym(name) for name in "nmk"}
F32 = "float32"


# --------------------------------------------------------------------------- programs


@dataclass
class Program:
    """Parameters (name -> dims) and ops; ``source`` is a standalone repro."""

    params: dict[str, tuple[Dim, ...]] = field(default_factory=dict)
    steps: list[tuple[str, tuple]] = field(default_factory=list)

    def add_param(self, dims: tuple[Dim, ...]) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = tuple(dims)
        return name

    def run(self, np_like, *args):
        """The program on arrays (or tracers) of ``np_like`` (rnp or jnp)."""
        env = dict(zip(self.params, args))
        x = args[0]
        for kind, operands in self.steps:
            x = _OPS[kind](np_like, x, env, *operands)
        return x

    def function(self) -> Callable:
        """``program(p0, p1, ...)`` with parameters annotated by their specs, as users
        write them."""
        names = list(self.params)
        namespace: dict = {}
        exec(  # noqa: S102 - a test building a function with named, annotated parameters
            f"def program({', '.join(f'{p}: specs[{i}]' for i, p in enumerate(names))}):\n"
            f"    return run(rnp, {', '.join(names)})\n",
            {"specs": self.specs(), "run": self.run, "rnp": rnp},
            namespace,
        )
        return namespace["program"]

    def specs(self) -> list[relax.Tensor]:
        return [relax.Tensor(dims, F32) for dims in self.params.values()]

    @property
    def source(self) -> str:
        specs = ", ".join(
            f"{name}: T({_text(dims)}, 'float32')" for name, dims in self.params.items()
        )
        header = [
            "import relaxjax as relax",
            "import relaxjax.numpy as rnp",
            "T = relax.Tensor",
            "",
        ]
        lines = [*header, "@relax.jit", f"def program({specs}):", "    x = p0"]
        lines += [f"    x = {_OP_TEXT[kind](*ops)}" for kind, ops in self.steps]
        return "\n".join([*lines, "    return x"])


def _text(dims: tuple[Dim, ...]) -> str:
    return "(" + "".join(f"{str(d)!r}, " for d in dims) + ")"


def _unary(np_like, x, env, name):
    return getattr(np_like, name)(x)


def _binary(np_like, x, env, name, param):
    return getattr(np_like, name)(x, env[param])


def _reduce(np_like, x, env, name, axis, keepdims):
    return getattr(np_like, name)(x, axis=axis, keepdims=keepdims)


def _merge(np_like, x, env, axis):
    s = x.shape
    return x.reshape(*s[:axis], s[axis] * s[axis + 1], *s[axis + 2 :])


def _flatten(np_like, x, env):
    return x.reshape(-1)


def _concat(np_like, x, env, param, axis):
    return np_like.concatenate([x, env[param]], axis=axis)


def _matmul(np_like, x, env, param):
    return x @ env[param]


def _slice(np_like, x, env, how):
    if how == "drop":
        return x[1:]
    if how == "step":
        return x[::2]
    if how == "reverse":
        return x[::-1]
    return x[: x.shape[0] // 2]


def _transpose(np_like, x, env):
    return x.T


_OPS = {
    "unary": _unary,
    "binary": _binary,
    "reduce": _reduce,
    "merge": _merge,
    "flatten": _flatten,
    "concat": _concat,
    "matmul": _matmul,
    "slice": _slice,
    "transpose": _transpose,
}
_SLICES = {"drop": "x[1:]", "step": "x[::2]", "reverse": "x[::-1]", "half": "x[: x.shape[0] // 2]"}
_OP_TEXT = {
    "unary": lambda name: f"rnp.{name}(x)",
    "binary": lambda name, p: f"rnp.{name}(x, {p})",
    "reduce": lambda name, axis, keep: f"rnp.{name}(x, axis={axis}, keepdims={keep})",
    "merge": lambda axis: (
        f"x.reshape(*x.shape[:{axis}], x.shape[{axis}] * x.shape[{axis + 1}], "
        f"*x.shape[{axis + 2}:])"
    ),
    "flatten": lambda: "x.reshape(-1)",
    "concat": lambda p, axis: f"rnp.concatenate([x, {p}], axis={axis})",
    "matmul": lambda p: f"x @ {p}",
    "slice": lambda how: _SLICES[how],
    "transpose": lambda: "x.T",
}


@st.composite
def dims_over(draw, names: list[str]) -> Dim:
    """An int, ``a*s + b``, a product or a sum of symbols."""
    syms = [SYMBOLS[name] for name in names]
    kind = draw(st.sampled_from(["int", "linear", "linear", "product", "sum"]))
    if kind == "int":
        return draw(st.integers(1, 3))
    s = draw(st.sampled_from(syms))
    if kind == "linear":
        return draw(st.integers(1, 3)) * s + draw(st.integers(0, 2))
    t = draw(st.sampled_from(syms))
    return s * t if kind == "product" else s + t


@st.composite
def programs(draw) -> Program:
    names = draw(st.lists(st.sampled_from("nmk"), min_size=1, max_size=3, unique=True))
    dim = dims_over(names)
    program = Program()
    shape = tuple(draw(st.lists(dim, min_size=1, max_size=3)))
    program.add_param(shape)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(sorted(_OPS)))
        rank = len(shape)
        if kind in ("reduce", "merge", "slice", "transpose") and rank == 0:
            continue
        if kind == "unary":
            program.steps.append((kind, (draw(st.sampled_from(["tanh", "abs", "negative"])),)))
        elif kind == "binary":
            keep = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
            other = tuple(d if k else 1 for d, k in zip(shape, keep))
            other = other[draw(st.integers(0, rank)) :]  # trailing dims broadcast too
            name = draw(st.sampled_from(["add", "multiply", "maximum"]))
            program.steps.append((kind, (name, program.add_param(other))))
            if len(other) < rank or any(d == 1 for d in other):
                pass  # the result keeps x's shape (broadcasting only ever widens a 1)
        elif kind == "reduce":
            axis = draw(st.integers(0, rank - 1))
            keepdims = draw(st.booleans())
            program.steps.append((kind, (draw(st.sampled_from(["sum", "mean"])), axis, keepdims)))
            shape = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1 :]
        elif kind == "merge":
            if rank < 2:
                continue
            axis = draw(st.integers(0, rank - 2))
            program.steps.append((kind, (axis,)))
            shape = shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2 :]
        elif kind == "flatten":
            program.steps.append((kind, ()))
            shape = (_product(shape),)
        elif kind == "concat":
            if rank == 0:
                continue
            axis = draw(st.integers(0, rank - 1))
            other = shape[:axis] + (draw(dim),) + shape[axis + 1 :]
            program.steps.append((kind, (program.add_param(other), axis)))
            shape = shape[:axis] + (shape[axis] + other[axis],) + shape[axis + 1 :]
        elif kind == "matmul":
            if rank == 0:
                continue
            columns = draw(dim)
            program.steps.append((kind, (program.add_param((shape[-1], columns)),)))
            shape = shape[:-1] + (columns,)
        elif kind == "slice":
            program.steps.append((kind, (draw(st.sampled_from(sorted(_SLICES))),)))
            shape = (_slice_dim(shape[0], program.steps[-1][1][0]),) + shape[1:]
        elif kind == "transpose":
            program.steps.append((kind, ()))
            shape = shape[::-1]
    _bind_every_symbol(draw, program, names)
    return program


def _product(shape: tuple[Dim, ...]) -> Dim:
    size: Dim = 1
    for d in shape:
        size = size * d
    return size


def _slice_dim(d: Dim, how: str) -> Dim:
    if how == "drop":
        return arith.max_(d - 1, 0)
    if how == "step":
        return (d + 1) // 2
    if how == "reverse":
        return d
    return d // 2


def _bind_every_symbol(draw, program: Program, names: list[str]) -> None:
    """A parameter ``(a*s + b,)`` for each symbol the parameters do not determine yet
    (a program whose symbols no argument determines is tested elsewhere)."""
    dims = [d for shape in program.params.values() for d in shape]
    _, undetermined = arith.solve_order(dims)
    for symbol in undetermined:
        program.add_param((draw(st.integers(1, 3)) * symbol + draw(st.integers(0, 2)),))


# --------------------------------------------------------------------------- oracles


def _symbols(program: Program) -> list[str]:
    found = {
        s.name for dims in program.params.values() for d in dims for s in arith.free_symbols(d)
    }
    return sorted(found)


def _sizes(program: Program, env: dict[str, int]) -> list[tuple[int, ...]]:
    return [tuple(arith.evaluate(d, env) for d in dims) for dims in program.params.values()]


def _jax_symbolic_specs(program: Program) -> list[jax.ShapeDtypeStruct]:
    scope = jax.export.SymbolicScope()
    return [
        jax.ShapeDtypeStruct(
            jax.export.symbolic_shape(
                ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else ""), scope=scope
            )
            if dims
            else (),
            jnp.float32,
        )
        for dims in program.params.values()
    ]


def _jax_function(program: Program) -> Callable:
    return lambda *args: program.run(jnp, *args)


def _check_shapes(program: Program, out: relax.Tensor) -> None:
    """Ours against jax on symbolic specs (symbols >= 1) and on concrete ones (>= 0)."""
    names = _symbols(program)
    jax_fn = _jax_function(program)
    try:
        theirs = jax.eval_shape(jax_fn, *_jax_symbolic_specs(program))
    except Exception as err:  # noqa: BLE001 - jax refuses some symbolic programs
        note(f"jax.eval_shape refused the symbolic specs: {type(err).__name__}: {err}")
        event("jax refused the symbolic specs")
        theirs = None
    if theirs is not None:
        assert out.dtype == str(theirs.dtype) and out.ndim == len(theirs.shape)
        event("coarse result" if out.shape is None else "symbolic shapes compared")
        if out.shape is not None:
            for values in itertools.product(range(1, 4), repeat=len(names)):
                env = dict(zip(names, values))
                ours = tuple(arith.evaluate(d, env) for d in out.shape)
                jax_dims = tuple(
                    d if isinstance(d, int) else d._evaluate(env) for d in theirs.shape
                )
                assert ours == jax_dims, (env, out, theirs)
    for values in [(0,) * len(names), (1,) * len(names), tuple(range(len(names)))]:
        env = dict(zip(names, values))
        specs = [jax.ShapeDtypeStruct(s, jnp.float32) for s in _sizes(program, env)]
        concrete = jax.eval_shape(jax_fn, *specs)
        assert out.ndim == len(concrete.shape)
        if out.shape is not None:
            assert tuple(arith.evaluate(d, env) for d in out.shape) == concrete.shape, (env, out)


def _fitting_envs(program: Program, shapes: list[tuple[int, ...]], names: list[str]) -> list[dict]:
    """Every assignment under which the parameters have these shapes, by brute force.

    The generated dims have positive coefficients, so a dim with a term ``c * s`` bounds
    ``s`` by its size; a symbol without one is searched up to the largest size.
    """
    if any(len(s) != len(d) for s, d in zip(shapes, program.params.values())):
        return []
    dims = [d for shape in program.params.values() for d in shape]
    sizes = [size for shape in shapes for size in shape]
    limits = dict.fromkeys(names, max(sizes, default=0) + 1)
    for dim, size in zip(dims, sizes):
        for monomial in to_terms(dim):
            if len(monomial) == 1 and monomial[0][1] == 1 and isinstance(monomial[0][0], arith.Sym):
                name = monomial[0][0].name
                limits[name] = min(limits[name], size)
    ranges = [range(limits[name] + 1) for name in names]
    assume(np.prod([len(r) for r in ranges]) <= 100_000)
    compute = arith.compile_dims(dims, names)
    return [
        dict(zip(names, values))
        for values in itertools.product(*ranges)
        if tuple(compute(*values)) == tuple(sizes)
    ]


def _run_and_compare(jitted, program: Program, arrays: list[np.ndarray]) -> None:
    ours = jitted(*arrays)
    theirs = np.asarray(_jax_function(program)(*[jnp.asarray(a) for a in arrays]))
    assert_matches(ours, [theirs], 1e-4, "values")


def _check_call(jitted, program: Program, shapes: list[tuple[int, ...]], rng) -> None:
    """Sizes that fit exactly one assignment run and match jax; sizes that fit none (or
    several: a symbol they do not determine) raise ShapeError before any kernel."""
    names = _symbols(program)
    fits = _fitting_envs(program, shapes, names)
    arrays = [rng.uniform(-2, 2, shape).astype(np.float32) for shape in shapes]
    note(f"shapes {shapes}: fitting assignments {fits[:3]}")
    event(f"sizes fitting {min(len(fits), 2)} assignment(s)")
    if len(fits) == 1:
        try:
            _run_and_compare(jitted, program, arrays)
        except relax.ShapeError as err:  # only a coefficient 0 here may stop the solving
            found = re.search(r"cannot determine \w+ when (.+) = 0 \(", err.message)
            assert found is not None, err.message
            assert arith.evaluate(arith.parse_dim(found.group(1)), fits[0]) == 0, err.message
            event("a unique fit only a nonlinear dim determines")
        return
    with pytest.raises(relax.ShapeError) as info:
        jitted(*arrays)
    if fits:
        assert "cannot determine" in info.value.message
    else:
        assert info.value.message.startswith("argument 'p"), info.value.message


@dataclass
class _Case:
    program: Program
    envs: list[dict[str, int]]
    perturbations: list[tuple[int, int, int]]  # (param, axis, delta)


@st.composite
def cases(draw) -> _Case:
    program = draw(programs())
    names = _symbols(program)
    env = st.fixed_dictionaries({name: st.integers(0, 3) for name in names})
    envs = [dict.fromkeys(names, 0), dict.fromkeys(names, 1), draw(env), draw(env)]
    slots = [(p, a) for p, dims in enumerate(program.params.values()) for a in range(len(dims))]
    perturb = st.tuples(st.sampled_from(slots), st.sampled_from([-1, 1, 2])).map(
        lambda t: (t[0][0], t[0][1], t[1])
    )
    perturbations = draw(st.lists(perturb, min_size=1, max_size=2)) if slots else []
    return _Case(program, envs, perturbations)


def _check_case(case: _Case) -> None:
    program = case.program
    note("repro:\n" + program.source)
    specs = program.specs()
    out = relax.eval_shape(program.function(), *specs)
    _check_shapes(program, out)
    jitted = relax.jit(program.function())
    rng = np.random.default_rng(0)
    for env in case.envs:
        _check_call(jitted, program, _sizes(program, env), rng)
    base = _sizes(program, case.envs[-1])
    for param, axis, delta in case.perturbations:
        shapes = [list(s) for s in base]
        shapes[param][axis] = max(shapes[param][axis] + delta, 0)
        _check_call(jitted, program, [tuple(s) for s in shapes], rng)
    assert jitted.cache_size() == 1


_FEW = settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
_MANY = settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])


@_FEW
@given(cases())
def test_compound_dims_against_jax(case):
    _check_case(case)


@pytest.mark.slow
@_MANY
@given(cases())
def test_compound_dims_against_jax_exhaustively(case):
    _check_case(case)


@settings(max_examples=40)
@given(programs())
def test_eval_shape_against_jax(program):
    note("repro:\n" + program.source)
    _check_shapes(program, relax.eval_shape(program.function(), *program.specs()))
