"""One table of cases covering every op of API.md §5, shared by the end-to-end tests
(tests/runtime/test_ops_e2e.py) and the default-rules tests
(tests/schedule/test_rules_ops.py), which run it at different widths.

A case is ``fn(np_like, nn_like, *args)`` on arguments of ``specs`` ((shape, dtype)
pairs, dims named "n"/"m" are symbolic); ``jitted`` turns it into a function with
annotated parameters, as users write them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

import relaxjax as relax
import relaxjax.lax as rlax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp

F, I, B = "float32", "int32", "bool"


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


def _layer_norm_jax(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * g + b


def _rms_norm_jax(x, w):
    return x / jnp.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w


def _lax(m):
    """The ``lax`` module that goes with the numpy-like module ``m``."""
    return rlax if m is rnp else jax.lax


def _well_conditioned(m, a):
    """``a @ a.T + 4 I``: symmetric positive definite, well conditioned."""
    return a @ a.T + 4.0 * (m.arange(4)[:, None] == m.arange(4)[None, :]).astype(a.dtype)


def _factorization_cases() -> list[Case]:
    """The LAPACK library calls on 4 x 4 matrices (values compared where they are
    unique: eigenvectors and singular vectors are compared in tests/ops)."""
    sq = (((4, 4), F),)
    return [
        Case("det", lambda m, nn, a: m.linalg.det(_well_conditioned(m, a)), sq, rtol=1e-3),
        Case("slogdet", lambda m, nn, a: m.linalg.slogdet(a), sq, rtol=1e-4),
        Case("inv", lambda m, nn, a: m.linalg.inv(_well_conditioned(m, a)), sq, rtol=1e-4),
        Case(
            "solve",
            lambda m, nn, a, b: m.linalg.solve(_well_conditioned(m, a), b),
            (((4, 4), F), (("n", 4, 2), F)),
            rtol=1e-4,
        ),
        Case(
            "cholesky", lambda m, nn, a: m.linalg.cholesky(_well_conditioned(m, a)), sq, rtol=1e-4
        ),
        Case("qr", lambda m, nn, a: abs(m.linalg.qr(a, mode="r")), sq, rtol=1e-4),
        Case("eigh", lambda m, nn, a: m.linalg.eigvalsh(_well_conditioned(m, a)), sq, rtol=1e-4),
        Case("svd", lambda m, nn, a: m.linalg.svdvals(a), sq, rtol=1e-4),
    ]


def op_cases(width: int, matmul_cols: int, einsum_cols: int, head_dim: int) -> list[Case]:
    """Every op on (n, width) operands; the other sizes set the contractions' outputs."""
    from op_cases_math import math_op_cases  # noqa: PLC0415 - it imports Case from here

    x, row, xi = (("n", width), F), ((width,), F), (("n", width), I)

    def binary(op, dtype=F, low=-2.0, high=2.0):
        specs = ((("n", width), dtype), ((width,), dtype))
        return Case(op, lambda m, nn, a, b: getattr(m, op)(a, b), specs, low, high)

    def unary(op, low=-2.0, high=2.0, module="np", dtype=F):
        specs = ((("n", width), dtype),)
        if module == "np":
            return Case(op, lambda m, nn, a: getattr(m, op)(a), specs, low, high)
        return Case(op, lambda m, nn, a: getattr(nn, op)(a), specs, low, high)

    qkv = (("n", 2, head_dim), F)
    return [
        *(binary(op) for op in ("add", "subtract", "multiply", "maximum", "minimum")),
        binary("divide", low=0.5, high=3.0),
        binary("floor_divide", low=0.5, high=3.0),
        binary("mod", low=0.5, high=3.0),
        binary("power", low=0.5, high=2.0),
        *(binary(op) for op in ("equal", "not_equal", "less", "less_equal", "greater")),
        binary("greater_equal"),
        binary("logical_and", B),
        binary("logical_or", B),
        unary("logical_not", dtype=B),
        *(unary(op) for op in ("negative", "abs", "tanh", "sin", "cos", "exp")),
        unary("log", 0.1, 3.0),
        unary("sqrt", 0.1, 3.0),
        Case("rsqrt", lambda m, nn, a: m.rsqrt(a), (x,), 0.1, 3.0, jax_fn=jax.lax.rsqrt),
        *(unary(op, module="nn") for op in ("relu", "gelu", "silu", "sigmoid")),
        Case("where", lambda m, nn, a, b: m.where(a > 0, a, b), (x, row)),
        Case("clip", lambda m, nn, a: m.clip(a, -1.0, 1.0), (x,)),
        Case("astype", lambda m, nn, a: a.astype("int32"), (x,)),
        Case("zeros", lambda m, nn, a: m.zeros(a.shape) + a, (x,)),
        Case("ones", lambda m, nn, a: m.ones(a.shape, "float32") * a, (x,)),
        Case("full", lambda m, nn, a: m.full(a.shape, 2.5, "float32"), (x,)),
        Case("arange", lambda m, nn, a: m.arange(a.shape[0]), (x,)),
        Case("zeros_like", lambda m, nn, a: m.zeros_like(a), (x,)),
        Case("ones_like", lambda m, nn, a: m.ones_like(a), (x,)),
        Case("full_like", lambda m, nn, a: m.full_like(a, 7), (xi,)),
        Case("sum", lambda m, nn, a: m.sum(a, axis=0), (x,)),
        Case("mean", lambda m, nn, a: m.mean(a, axis=-1), (x,)),
        Case("max", lambda m, nn, a: m.max(a, axis=0), (x,), min_n=1),
        Case("min", lambda m, nn, a: m.min(a, axis=1), (x,)),
        Case("prod", lambda m, nn, a: m.prod(a, axis=0), (x,), 0.5, 1.5),
        Case("argmax", lambda m, nn, a: m.argmax(a, axis=0), (x,), min_n=1),
        Case("argmin", lambda m, nn, a: m.argmin(a, axis=1), (x,)),
        Case("var", lambda m, nn, a: m.var(a, axis=-1), (x,), rtol=1e-4),
        Case("cumsum", lambda m, nn, a: m.cumsum(a, axis=0), (x,), rtol=1e-4),
        Case("cumprod", lambda m, nn, a: m.cumprod(a, axis=1), (x,), 0.5, 1.5, rtol=1e-4),
        Case("sort", lambda m, nn, a: (m.sort(a, axis=0), m.argsort(a, descending=True)), (x,)),
        Case("searchsorted", lambda m, nn, a, v: m.searchsorted(m.sort(v), a), (x, row)),
        Case("bincount", lambda m, nn, i: m.bincount(i, length=5), ((("n",), I),), 0, 6),
        Case("bincount_length", lambda m, nn, i: m.bincount(i, minlength=2), ((("n",), I),), 0, 6),
        Case(
            "matmul", lambda m, nn, a, w: m.matmul(a, w), (x, ((width, matmul_cols), F)), rtol=1e-4
        ),
        Case("dot", lambda m, nn, a, v: m.dot(a, v), (x, ((width,), F)), rtol=1e-4),
        Case(
            "einsum",
            lambda m, nn, a, w: m.einsum("ij,jk->ik", a, w),
            (x, ((width, einsum_cols), F)),
            rtol=1e-4,
        ),
        Case("reshape", lambda m, nn, a: m.reshape(a, (-1,)), (x,)),
        Case("transpose", lambda m, nn, a: m.transpose(a), (x,)),
        Case("swapaxes", lambda m, nn, a: m.swapaxes(a, 0, 1), (x,)),
        Case("expand_dims", lambda m, nn, a: m.expand_dims(a, 1), (x,)),
        Case("squeeze", lambda m, nn, a: m.squeeze(a, 1), ((("n", 1, width), F),)),
        Case("broadcast_to", lambda m, nn, a: m.broadcast_to(a, (2, a.shape[0], width)), (x,)),
        Case(
            "concatenate",
            lambda m, nn, a, b: m.concatenate([a, b], axis=0),
            (x, (("m", width), F)),
        ),
        Case("stack", lambda m, nn, a, b: m.stack([a, b], axis=1), (x, x)),
        Case("split", lambda m, nn, a: m.split(a, [1], axis=1), (x,)),
        Case("take", lambda m, nn, a, i: m.take(a, i, axis=1), (x, ((4,), I)), 0, 3),
        Case("gather", lambda m, nn, a, i: a[::-1, i, None], (x, ((2, 2), I)), -5, 5),
        Case("scatter", lambda m, nn, a, i: a.at[1:, i].add(1.0), (x, ((4,), I)), -5, 5),
        Case(
            "dynamic_slice",
            lambda m, nn, a: _lax(m).dynamic_slice(a, (a.shape[0] - 3, -1), (2, 1)),
            (x,),
            min_n=2,
        ),
        Case(
            "dynamic_update_slice",
            lambda m, nn, a, u: _lax(m).dynamic_update_slice(a, u, (a.shape[0] // 2, 0)),
            (x, ((1, width), F)),
            min_n=1,
        ),
        Case("tril", lambda m, nn, a: m.tril(a), (x,)),
        Case("triu", lambda m, nn, a: m.triu(a, 1), (x,)),
        Case("pad", lambda m, nn, a: m.pad(a, ((1, 2), (0, 1))), (x,)),
        Case("strided_slice", lambda m, nn, a: a[1:, ::-1], (x,)),
        Case("count_nonzero", lambda m, nn, a: m.count_nonzero(a > 0, axis=0), (x,)),
        Case("nonzero_count", lambda m, nn, a: a[a > 0.5] * 2.0, (x,)),
        Case("nonzero", lambda m, nn, a: m.nonzero(a > 0), (x,)),
        Case("argwhere", lambda m, nn, a: m.argwhere(a > 0), (x,)),
        Case("flatnonzero", lambda m, nn, a: m.flatnonzero(a > 0, size=4, fill_value=-1), (x,)),
        Case(
            "unique",
            lambda m, nn, a: m.unique(
                (a * 2).astype("int32"), return_index=True, return_inverse=True, return_counts=True
            ),
            (x,),
        ),
        Case("unique_count", lambda m, nn, a: m.unique(a > 0), (x,)),
        Case(
            "sort_permutation",
            lambda m, nn, a: m.unique((a > 0).astype("int8"), axis=0, return_counts=True),
            (x,),
        ),
        Case(
            "repeat_indices",
            lambda m, nn, a, r: m.repeat(a, r, axis=0, total_repeat_length=5),
            (x, (("n",), I)),
            0,
            3,
            min_n=1,
        ),
        Case("repeat_total", lambda m, nn, a, r: m.repeat(a, r, axis=0), (x, (("n",), I)), 0, 3),
        Case(
            "take_along_axis",
            lambda m, nn, a, i: m.take_along_axis(a, i, axis=1),
            (x, (("n", 2), I)),
            -4,
            4,
        ),
        Case("diagonal", lambda m, nn, a: m.diagonal(a, 1), (x,)),
        Case(
            "correlate",
            lambda m, nn, a, v: m.convolve(a, v, "same"),
            ((("n",), F), ((3,), F)),
            min_n=1,
            rtol=1e-4,
        ),
        *_factorization_cases(),
        Case("softmax", lambda m, nn, a: nn.softmax(a), (x,)),
        Case("log_softmax", lambda m, nn, a: nn.log_softmax(a, axis=0), (x,), min_n=1),
        Case("one_hot", lambda m, nn, i: nn.one_hot(i, 5), ((("n",), I),), 0, 5),
        Case(
            "layer_norm",
            lambda m, nn, a, g, b: nn.layer_norm(a, g, b),
            (x, row, row),
            jax_fn=_layer_norm_jax,
            rtol=1e-4,
        ),
        Case(
            "rms_norm",
            lambda m, nn, a, w: nn.rms_norm(a, w),
            (x, row),
            jax_fn=_rms_norm_jax,
            rtol=1e-4,
        ),
        Case(
            "dot_product_attention",
            lambda m, nn, q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
            (qkv, qkv, qkv),
            min_n=1,
            jax_fn=lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True),
            rtol=1e-4,
        ),
        *math_op_cases(width),
    ]


def jitted(case: Case, target: str = "llvm", library: bool = True) -> relax.jit:
    """``relax.jit`` of the case's function, its parameters annotated with its specs
    (``library=False``: matmuls as generated kernels, not BLAS / cuBLAS calls)."""
    annotations = [relax.Tensor(shape, dtype) for shape, dtype in case.specs]
    names = [f"a{i}" for i in range(len(annotations))]
    namespace: dict = {}
    exec(  # a function with annotated parameters, as users write them
        f"def program({', '.join(f'{p}: ann[{i}]' for i, p in enumerate(names))}):\n"
        f"    return fn(rnp, rnn, {', '.join(names)})\n",
        {"ann": annotations, "fn": case.fn, "rnp": rnp, "rnn": rnn},
        namespace,
    )
    return relax.jit(namespace["program"], target=target, library=library)


def random_arrays(case: Case, env: dict, rng: np.random.Generator) -> list[np.ndarray]:
    """Random arguments for the case, its symbols given their values in ``env``."""
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


def expected(case: Case, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """jax's result leaves for the case on ``arrays``."""
    if case.jax_fn is not None:
        result = case.jax_fn(*arrays)
    else:
        result = case.fn(jnp, jax.nn, *[jnp.asarray(a) for a in arrays])
    return [np.asarray(r) for r in jax.tree_util.tree_leaves(result)]


def assert_matches(ours, theirs, rtol: float, what: str) -> None:
    """Same leaves, shapes and dtypes; floats within ``rtol``, the rest exactly."""
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
