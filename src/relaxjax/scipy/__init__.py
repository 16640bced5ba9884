"""relaxjax.scipy: the parts of ``jax.scipy`` relaxjax provides (``special``).

>>> import numpy as np, relaxjax.scipy.special as rsp
>>> float(rsp.logsumexp(np.array([1000.0, 1000.0])))
1000.6931471805599
"""

from relaxjax.scipy import special

__all__ = ["special"]


def __dir__() -> list[str]:
    return list(__all__)
