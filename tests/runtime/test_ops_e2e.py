"""Every registered op, traced with symbolic shapes, compiled and run end to end.

For each case: ``relax.jit`` of the public wrapper (annotated with symbolic dims) is
run for several random symbol values and random data, and compared with jax on the
same arrays and with the same program whose kernels run in the tir reference
interpreter (``target="reference"``). One executable serves every value of the
symbols (``cache_size() == 1``). Ops whose lowering does not exist yet are skipped
with the op's own error, so the skip list is the list of missing lowerings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax import ops
from relaxjax.errors import LoweringError
from relaxjax.runtime import build_executable


@dataclass(frozen=True)
class Case:
    """``fn(np_like, nn_like, *args)`` on arguments of ``specs`` ((shape, dtype) pairs)."""

    op: str
    fn: Callable
    specs: tuple
    low: float = -2.0
    high: float = 2.0
    min_n: int = 0
    jax_fn: Callable | None = None
    rtol: float = 1e-5

    @property
    def id(self) -> str:
        return self.op


F, I, B = "float32", "int32", "bool"
X = (("n", 3), F)
Y = ((3,), F)
XI = (("n", 3), I)


def _binary(op, dtype=F, low=-2.0, high=2.0):
    spec = (("n", 3), dtype)
    return Case(op, lambda m, nn, x, y: getattr(m, op)(x, y), (spec, ((3,), dtype)), low, high)


def _unary(op, low=-2.0, high=2.0, module="np", dtype=F, rtol=1e-5):
    if module == "np":
        return Case(
            op, lambda m, nn, x: getattr(m, op)(x), ((("n", 3), dtype),), low, high, rtol=rtol
        )
    return Case(op, lambda m, nn, x: getattr(nn, op)(x), ((("n", 3), dtype),), low, high, rtol=rtol)


def _layer_norm_jax(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * g + b


def _rms_norm_jax(x, w):
    return x / jnp.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w


CASES = [
    *(_binary(op) for op in ("add", "subtract", "multiply", "maximum", "minimum")),
    _binary("divide", low=0.5, high=3.0),
    _binary("floor_divide", low=0.5, high=3.0),
    _binary("mod", low=0.5, high=3.0),
    _binary("power", low=0.5, high=2.0),
    *(_binary(op) for op in ("equal", "not_equal", "less", "less_equal", "greater")),
    _binary("greater_equal"),
    _binary("logical_and", B),
    _binary("logical_or", B),
    _unary("logical_not", dtype=B),
    *(_unary(op) for op in ("negative", "abs", "tanh", "sin", "cos")),
    _unary("exp", rtol=1e-5),
    _unary("log", 0.1, 3.0),
    _unary("sqrt", 0.1, 3.0),
    Case("rsqrt", lambda m, nn, x: m.rsqrt(x), ((("n", 3), F),), 0.1, 3.0, jax_fn=jax.lax.rsqrt),
    *(_unary(op, module="nn", rtol=1e-5) for op in ("relu", "gelu", "silu", "sigmoid")),
    Case("where", lambda m, nn, x, y: m.where(x > 0, x, y), (X, Y)),
    Case("clip", lambda m, nn, x: m.clip(x, -1.0, 1.0), (X,)),
    Case("astype", lambda m, nn, x: x.astype("int32"), (X,)),
    Case("zeros", lambda m, nn, x: m.zeros(x.shape) + x, (X,)),
    Case("ones", lambda m, nn, x: m.ones(x.shape, "float32") * x, (X,)),
    Case("full", lambda m, nn, x: m.full(x.shape, 2.5, "float32"), (X,)),
    Case("arange", lambda m, nn, x: m.arange(x.shape[0]), (X,)),
    Case("zeros_like", lambda m, nn, x: m.zeros_like(x), (X,)),
    Case("ones_like", lambda m, nn, x: m.ones_like(x), (X,)),
    Case("full_like", lambda m, nn, x: m.full_like(x, 7), (XI,)),
    Case("sum", lambda m, nn, x: m.sum(x, axis=0), (X,)),
    Case("mean", lambda m, nn, x: m.mean(x, axis=-1), (X,)),
    Case("max", lambda m, nn, x: m.max(x, axis=0), (X,), min_n=1),
    Case("min", lambda m, nn, x: m.min(x, axis=1), (X,)),
    Case("prod", lambda m, nn, x: m.prod(x, axis=0), (X,), 0.5, 1.5),
    Case("argmax", lambda m, nn, x: m.argmax(x, axis=0), (X,), min_n=1),
    Case("argmin", lambda m, nn, x: m.argmin(x, axis=1), (X,)),
    Case("var", lambda m, nn, x: m.var(x, axis=-1), (X,), rtol=1e-4),
    Case("cumsum", lambda m, nn, x: m.cumsum(x, axis=0), (X,), rtol=1e-4),
    Case("matmul", lambda m, nn, x, w: m.matmul(x, w), (X, ((3, 5), F)), rtol=1e-4),
    Case("dot", lambda m, nn, x, v: m.dot(x, v), (X, ((3,), F)), rtol=1e-4),
    Case("einsum", lambda m, nn, x, w: m.einsum("ij,jk->ik", x, w), (X, ((3, 2), F)), rtol=1e-4),
    Case("reshape", lambda m, nn, x: m.reshape(x, (-1,)), (X,)),
    Case("transpose", lambda m, nn, x: m.transpose(x), (X,)),
    Case("swapaxes", lambda m, nn, x: m.swapaxes(x, 0, 1), (X,)),
    Case("expand_dims", lambda m, nn, x: m.expand_dims(x, 1), (X,)),
    Case("squeeze", lambda m, nn, x: m.squeeze(x, 1), ((("n", 1, 3), F),)),
    Case("broadcast_to", lambda m, nn, x: m.broadcast_to(x, (2, x.shape[0], 3)), (X,)),
    Case("concatenate", lambda m, nn, x, y: m.concatenate([x, y], axis=0), (X, (("m", 3), F))),
    Case("stack", lambda m, nn, x, y: m.stack([x, y], axis=1), (X, X)),
    Case("split", lambda m, nn, x: m.split(x, [1], axis=1), (X,)),
    Case("take", lambda m, nn, x, i: m.take(x, i, axis=1), (X, ((4,), I)), 0, 3),
    Case("tril", lambda m, nn, x: m.tril(x), (X,)),
    Case("triu", lambda m, nn, x: m.triu(x, 1), (X,)),
    Case("pad", lambda m, nn, x: m.pad(x, ((1, 2), (0, 1))), (X,)),
    Case("strided_slice", lambda m, nn, x: x[1:, ::-1], (X,)),
    Case("softmax", lambda m, nn, x: nn.softmax(x), (X,), rtol=1e-5),
    Case("log_softmax", lambda m, nn, x: nn.log_softmax(x, axis=0), (X,), min_n=1, rtol=1e-5),
    Case("one_hot", lambda m, nn, i: nn.one_hot(i, 5), ((("n",), I),), 0, 5),
    Case(
        "layer_norm",
        lambda m, nn, x, g, b: nn.layer_norm(x, g, b),
        (X, Y, Y),
        jax_fn=_layer_norm_jax,
        rtol=1e-4,
    ),
    Case(
        "rms_norm", lambda m, nn, x, w: nn.rms_norm(x, w), (X, Y), jax_fn=_rms_norm_jax, rtol=1e-4
    ),
    Case(
        "dot_product_attention",
        lambda m, nn, q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
        ((("n", 2, 4), F), (("n", 2, 4), F), (("n", 2, 4), F)),
        min_n=1,
        jax_fn=lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True),
        rtol=1e-4,
    ),
]


def test_every_registered_op_has_a_case():
    covered = {case.op for case in CASES}
    assert set(ops.registry()) - covered == set()


def _annotations(case: Case) -> list:
    return [relax.Tensor(shape, dtype) for shape, dtype in case.specs]


def _jitted(case: Case, target: str = "llvm") -> relax.jit:
    annotations = _annotations(case)
    names = [f"a{i}" for i in range(len(annotations))]
    namespace: dict = {}
    exec(  # a function with annotated parameters, as users write them
        f"def program({', '.join(f'{p}: ann[{i}]' for i, p in enumerate(names))}):\n"
        f"    return fn(rnp, rnn, {', '.join(names)})\n",
        {"ann": annotations, "fn": case.fn, "rnp": rnp, "rnn": rnn},
        namespace,
    )
    return relax.jit(namespace["program"], target=target)


def _arrays(case: Case, env: dict, rng: np.random.Generator) -> list[np.ndarray]:
    arrays = []
    for shape, dtype in case.specs:
        concrete = tuple(env[d] if isinstance(d, str) else d for d in shape)
        if dtype == B:
            arrays.append(rng.random(concrete) < 0.5)
        elif dtype == I:
            arrays.append(rng.integers(int(case.low), int(case.high), concrete).astype(np.int32))
        else:
            arrays.append(rng.uniform(case.low, case.high, concrete).astype(np.float32))
    return arrays


def _expected(case: Case, arrays: list[np.ndarray]) -> list:
    if case.jax_fn is not None:
        result = case.jax_fn(*arrays)
    else:
        result = case.fn(jnp, jax.nn, *[jnp.asarray(a) for a in arrays])
    return [np.asarray(r) for r in jax.tree_util.tree_leaves(result)]


def _assert_matches(ours, theirs, rtol: float, what: str) -> None:
    ours = list(ours) if isinstance(ours, (tuple, list)) else [ours]
    assert len(ours) == len(theirs), what
    for a, b in zip(ours, theirs):
        a = np.asarray(a)
        assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
        assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, err_msg=what)
        else:
            np.testing.assert_array_equal(a, b, err_msg=what)


_COMPILED: dict[str, tuple] = {}


def _compiled(case: Case):
    """The jitted function and the reference-interpreter executable, built once per case."""
    if case.op not in _COMPILED:
        jitted = _jitted(case)
        try:
            reference = build_executable(jitted.lower(), target="reference")
        except LoweringError as err:
            pytest.skip(f"no lowering: {err}")
        _COMPILED[case.op] = (jitted, reference)
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
    jitted, reference = _compiled(case)
    env = {"n": max(n, case.min_n), "m": m}
    arrays = _arrays(case, env, np.random.default_rng(seed))
    ours = jitted(*arrays)
    what = f"{case.op} with n={env['n']}, m={m}"
    _assert_matches(ours, _expected(case, arrays), case.rtol, what + " vs jax")
    _assert_matches(ours, reference(*arrays), case.rtol, what + " vs the tir interpreter")
    assert jitted.cache_size() == 1


@pytest.mark.parametrize("reduce, identity", [("sum", 0.0), ("prod", 1.0)])
def test_reduction_over_an_empty_axis_gives_the_identity(reduce, identity):
    """numpy/jax: sum over a size-0 axis is 0, prod is 1 (the kernel must initialise)."""
    case = Case(reduce, lambda m, nn, x: getattr(m, reduce)(x, axis=0), (X,))
    jitted = _jitted(case)
    for _ in range(3):  # garbage in uninitialised memory differs between calls
        out = jitted(np.zeros((0, 3), np.float32))
        np.testing.assert_array_equal(out, np.full(3, identity, np.float32))
