"""relaxjax.scipy.special: special functions with the names and semantics of
``jax.scipy.special`` (``erf``, ``erfc``, ``expit``, ``logit``, ``logsumexp``, ``ndtr``,
``log_ndtr``, ``xlogy``, ...).

>>> import relaxjax as relax, relaxjax.scipy.special as rsp
>>> relax.eval_shape(lambda x: rsp.erf(x) + rsp.logsumexp(x), relax.Tensor(("n",), "float32"))
Tensor((n,), "float32")

The implementation lives in ``relaxjax._scipy.special``; this module exports exactly its
``__all__``.
"""

from relaxjax._scipy import special as _special
from relaxjax._scipy.special import *  # noqa: F403

__all__ = sorted(_special.__all__)


def __dir__() -> list[str]:
    return list(__all__)
