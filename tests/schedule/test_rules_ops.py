"""Every op of API.md §5 compiles with the default rules (through ``relax.jit``) and
matches jax, for row counts that leave tails (and 0).

The shapes are wide enough for the rules to split, vectorise and tile (37 columns,
not a multiple of any vector width; 70-column matrices). Every kernel of the
compiled program must carry the name of the rule that scheduled it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
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

F, I, B = "float32", "int32", "bool"
W = 37  # columns: a tail for every vector width and split factor
X = (("n", W), F)
ROW = ((W,), F)


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


def _binary(op, dtype=F, low=-2.0, high=2.0):
    return Case(
        op, lambda m, nn, x, y: getattr(m, op)(x, y), ((("n", W), dtype), ((W,), dtype)), low, high
    )


def _unary(op, low=-2.0, high=2.0, module="np", dtype=F):
    if module == "np":
        return Case(op, lambda m, nn, x: getattr(m, op)(x), ((("n", W), dtype),), low, high)
    return Case(op, lambda m, nn, x: getattr(nn, op)(x), ((("n", W), dtype),), low, high)


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
    *(_unary(op) for op in ("negative", "abs", "tanh", "sin", "cos", "exp")),
    _unary("log", 0.1, 3.0),
    _unary("sqrt", 0.1, 3.0),
    Case("rsqrt", lambda m, nn, x: m.rsqrt(x), (X,), 0.1, 3.0, jax_fn=jax.lax.rsqrt),
    *(_unary(op, module="nn") for op in ("relu", "gelu", "silu", "sigmoid")),
    Case("where", lambda m, nn, x, y: m.where(x > 0, x, y), (X, ROW)),
    Case("clip", lambda m, nn, x: m.clip(x, -1.0, 1.0), (X,)),
    Case("astype", lambda m, nn, x: x.astype("int32"), (X,)),
    Case("zeros", lambda m, nn, x: m.zeros(x.shape) + x, (X,)),
    Case("ones", lambda m, nn, x: m.ones(x.shape, "float32") * x, (X,)),
    Case("full", lambda m, nn, x: m.full(x.shape, 2.5, "float32"), (X,)),
    Case("arange", lambda m, nn, x: m.arange(x.shape[0]), (X,)),
    Case("zeros_like", lambda m, nn, x: m.zeros_like(x), (X,)),
    Case("ones_like", lambda m, nn, x: m.ones_like(x), (X,)),
    Case("full_like", lambda m, nn, x: m.full_like(x, 7), ((("n", W), I),)),
    Case("sum", lambda m, nn, x: m.sum(x, axis=0), (X,), min_n=1),
    Case("mean", lambda m, nn, x: m.mean(x, axis=-1), (X,), rtol=1e-4),
    Case("max", lambda m, nn, x: m.max(x, axis=0), (X,), min_n=1),
    Case("min", lambda m, nn, x: m.min(x, axis=1), (X,)),
    Case("prod", lambda m, nn, x: m.prod(x, axis=0), (X,), 0.9, 1.1, min_n=1, rtol=1e-4),
    Case("argmax", lambda m, nn, x: m.argmax(x, axis=0), (X,), min_n=1),
    Case("argmin", lambda m, nn, x: m.argmin(x, axis=1), (X,)),
    Case("var", lambda m, nn, x: m.var(x, axis=-1), (X,), rtol=1e-4),
    Case("cumsum", lambda m, nn, x: m.cumsum(x, axis=0), (X,), rtol=1e-4),
    Case("matmul", lambda m, nn, x, w: m.matmul(x, w), (X, ((W, 70), F)), rtol=1e-4),
    Case("dot", lambda m, nn, x, v: m.dot(x, v), (X, ((W,), F)), rtol=1e-4),
    Case("einsum", lambda m, nn, x, w: m.einsum("ij,jk->ik", x, w), (X, ((W, 9), F)), rtol=1e-4),
    Case("reshape", lambda m, nn, x: m.reshape(x, (-1,)), (X,)),
    Case("transpose", lambda m, nn, x: m.transpose(x), (X,)),
    Case("swapaxes", lambda m, nn, x: m.swapaxes(x, 0, 1), (X,)),
    Case("expand_dims", lambda m, nn, x: m.expand_dims(x, 1), (X,)),
    Case("squeeze", lambda m, nn, x: m.squeeze(x, 1), ((("n", 1, W), F),)),
    Case("broadcast_to", lambda m, nn, x: m.broadcast_to(x, (2, x.shape[0], W)), (X,)),
    Case("concatenate", lambda m, nn, x, y: m.concatenate([x, y], axis=0), (X, (("m", W), F))),
    Case("stack", lambda m, nn, x, y: m.stack([x, y], axis=1), (X, X)),
    Case("split", lambda m, nn, x: m.split(x, [1], axis=1), (X,)),
    Case("take", lambda m, nn, x, i: m.take(x, i, axis=1), (X, ((4,), I)), 0, 3),
    Case("tril", lambda m, nn, x: m.tril(x), (X,)),
    Case("triu", lambda m, nn, x: m.triu(x, 1), (X,)),
    Case("pad", lambda m, nn, x: m.pad(x, ((1, 2), (0, 1))), (X,)),
    Case("softmax", lambda m, nn, x: nn.softmax(x), (X,)),
    Case("log_softmax", lambda m, nn, x: nn.log_softmax(x, axis=0), (X,), min_n=1, rtol=1e-4),
    Case("one_hot", lambda m, nn, i: nn.one_hot(i, 5), ((("n",), I),), 0, 5),
    Case(
        "layer_norm",
        lambda m, nn, x, g, b: nn.layer_norm(x, g, b),
        (X, ROW, ROW),
        jax_fn=_layer_norm_jax,
        rtol=1e-4,
    ),
    Case(
        "rms_norm", lambda m, nn, x, w: nn.rms_norm(x, w), (X, ROW), jax_fn=_rms_norm_jax, rtol=1e-4
    ),
    Case(
        "dot_product_attention",
        lambda m, nn, q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
        ((("n", 2, 8), F), (("n", 2, 8), F), (("n", 2, 8), F)),
        min_n=1,
        jax_fn=lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True),
        rtol=1e-4,
    ),
]

#: One op per family runs by default; ``-m slow`` runs the whole table.
FAST = {"add", "gelu", "sum", "matmul", "transpose", "softmax", "layer_norm", "concatenate"}


def test_the_table_covers_every_op_of_the_api():
    assert set(NUMPY_OPS + NN_OPS) - {case.op for case in CASES} == set()


def _jitted(case: Case):
    annotations = [relax.Tensor(shape, dtype) for shape, dtype in case.specs]
    names = [f"a{i}" for i in range(len(annotations))]
    namespace: dict = {}
    exec(  # a function with annotated parameters, as users write them
        f"def program({', '.join(f'{p}: ann[{i}]' for i, p in enumerate(names))}):\n"
        f"    return fn(rnp, rnn, {', '.join(names)})\n",
        {"ann": annotations, "fn": case.fn, "rnp": rnp, "rnn": rnn},
        namespace,
    )
    return relax.jit(namespace["program"])


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


def _expected(case: Case, arrays: list[np.ndarray]) -> list[np.ndarray]:
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
        assert a.shape == b.shape and a.dtype == b.dtype, (
            f"{what}: {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
        )
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, err_msg=what)
        else:
            np.testing.assert_array_equal(a, b, err_msg=what)


def _params() -> list:
    return [
        pytest.param(case, id=case.op, marks=() if case.op in FAST else pytest.mark.slow)
        for case in CASES
    ]


@pytest.mark.parametrize("case", _params())
def test_op_compiles_with_the_default_rules_and_matches_jax(case: Case):
    jitted = _jitted(case)
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 70):
        env = {"n": max(n, case.min_n), "m": 3}
        arrays = _arrays(case, env, rng)
        what = f"{case.op} with n={env['n']}"
        _assert_matches(jitted(*arrays), _expected(case, arrays), case.rtol, what)
    assert jitted.cache_size() == 1
    for library in (True, False):
        exe = build_executable(jitted.trace(), library=library)
        for name, kernel in exe.module.kernels().items():
            rule = dict(kernel.attrs).get(RULE_ATTR)
            assert rule in ("matmul", "reduction", "injective"), f"{case.op}: kernel {name}: {rule}"
    if case.op in ("matmul", "einsum"):
        arrays = _arrays(case, {"n": 70, "m": 3}, rng)
        (ours,) = exe(*arrays)
        _assert_matches(ours, _expected(case, arrays), case.rtol, f"{case.op} without BLAS")
        assert any(dict(k.attrs)[RULE_ATTR] == "matmul" for k in exe.module.kernels().values())
