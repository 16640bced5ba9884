"""relaxjax.numpy.linalg: the linear-algebra functions of ``jax.numpy.linalg`` (norms, the
array-API products, and the factorisations, which are LAPACK calls through
``numpy.linalg``), with jax's names, signatures and semantics.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.linalg.norm(x, axis=-1), relax.Tensor(("n", 4), "int32"))
Tensor((n,), "float32")

The implementation is :mod:`relaxjax._numpy.linalg` and
:mod:`relaxjax._numpy.factorizations`; this module exports exactly their ``__all__``.
"""

from relaxjax._numpy import factorizations as _factorizations
from relaxjax._numpy import linalg as _linalg
from relaxjax._numpy.factorizations import *  # noqa: F403
from relaxjax._numpy.linalg import *  # noqa: F403

__all__ = sorted({*_factorizations.__all__, *_linalg.__all__})


def __dir__() -> list[str]:
    return list(__all__)
