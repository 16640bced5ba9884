"""relaxjax.nn: neural-network functions with the names and semantics of jax.nn.

The core activations and normalisations record one dedicated op each (so the printed
graph shows ``gelu(x, approximate=False)`` rather than its expansion, and fusion sees one
kernel); the others are jax's own formulas over ``relaxjax.numpy``. ``layer_norm`` and
``rms_norm`` normalise over the last axis with per-feature parameters of shape
``x.shape[-1:]``.

>>> import relaxjax as relax, relaxjax.nn as rnn
>>> relax.eval_shape(rnn.softmax, relax.Tensor(("n", 10), "float32"))
Tensor((n, 10), "float32")

The wrappers live in ``relaxjax._nn``; this module exports exactly their ``__all__``.
"""

from relaxjax._nn import activations as _activations
from relaxjax._nn import attention as _attention
from relaxjax._nn import functions as _functions
from relaxjax._nn.activations import *  # noqa: F403
from relaxjax._nn.attention import *  # noqa: F403
from relaxjax._nn.functions import *  # noqa: F403

__all__ = sorted({*_activations.__all__, *_attention.__all__, *_functions.__all__})


def __dir__() -> list[str]:
    return list(__all__)
