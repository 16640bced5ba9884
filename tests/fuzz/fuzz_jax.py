"""The jax side of the fuzzer: the reference namespaces and abstract evaluation.

``relaxjax.nn`` has ``layer_norm`` and ``rms_norm``, which ``jax.nn`` lacks; the
reference takes them from :data:`NN_SHIM_SOURCE`, which a repro script prints verbatim.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

jax.config.update("jax_enable_x64", True)  # API.md: dtypes follow jax with x64 enabled
jax.config.update("jax_platforms", "cpu")  # as tests/conftest.py: the reference runs on CPU

NN_SHIM_SOURCE = """\
def _layer_norm(x, gamma, beta, eps=1e-5):
    x = x.astype(jnp.result_type(x, gamma, beta))  # computed in the result's dtype
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * gamma + beta


def _rms_norm(x, weight, eps=1e-6):
    x = x.astype(jnp.result_type(x, weight))
    return x / jnp.sqrt((x * x).mean(-1, keepdims=True) + eps) * weight


# jax.nn plus the two norms relaxjax.nn adds (layer_norm, rms_norm)
jnn = types.SimpleNamespace(**vars(jax.nn), layer_norm=_layer_norm, rms_norm=_rms_norm)
"""


def _shim() -> object:
    import types

    scope: dict[str, object] = {"jax": jax, "jnp": jnp, "types": types}
    exec(NN_SHIM_SOURCE, scope)  # noqa: S102 - our own source, printed in repros
    return scope["jnn"]


#: ``jax.nn`` with ``layer_norm`` and ``rms_norm``.
JAX_NN = _shim()


def np_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of a relaxjax dtype name (bfloat16 from ml_dtypes)."""
    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


def lambda_of(params: tuple[str, ...], expr: str, np_: object, nn: object):
    """``lambda <params>: <expr>`` over the namespaces ``np_`` and ``nn``."""
    return eval(f"lambda {', '.join(params)}: {expr}", {"np_": np_, "nn": nn})  # noqa: S307


def abstract_results(fn, avals: list[tuple[tuple[int, ...], str, bool]]) -> list[tuple]:
    """``jax.eval_shape`` of ``fn`` on (shape, dtype, weak) arguments: a list of
    (shape, dtype name, weak) per result leaf. Raises whatever jax raises."""
    args = [
        jax.ShapeDtypeStruct(shape, np_dtype(dtype), weak_type=weak) for shape, dtype, weak in avals
    ]
    out = jax.eval_shape(fn, *args)
    leaves = jax.tree_util.tree_leaves(out)
    return [(tuple(leaf.shape), str(leaf.dtype), bool(leaf.weak_type)) for leaf in leaves]
