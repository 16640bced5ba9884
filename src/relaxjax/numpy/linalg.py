"""relaxjax.numpy.linalg: the linear-algebra functions of ``jax.numpy.linalg`` (norms and the
array-API products), with jax's names, signatures and semantics.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.linalg.norm(x, axis=-1), relax.Tensor(("n", 4), "int32"))
Tensor((n,), "float32")

The implementation is :mod:`relaxjax._numpy.linalg`; this module exports exactly its
``__all__``.
"""

from relaxjax._numpy import linalg as _linalg
from relaxjax._numpy.linalg import *  # noqa: F403

__all__ = list(_linalg.__all__)


def __dir__() -> list[str]:
    return list(__all__)
