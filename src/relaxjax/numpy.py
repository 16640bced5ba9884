"""relaxjax.numpy: array functions with the names, signatures and semantics of jax.numpy.

Each function records one op while tracing (and evaluates eagerly with the ops' numpy
references outside a trace). Arguments may be traced tensors, numpy arrays, Python
scalars (weakly typed, as in jax) or symbolic dims.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.exp(x) + 1.0, relax.Tensor(("n", 4), "float32"))
Tensor((n, 4), "float32")

The wrappers live in ``relaxjax._numpy`` (one module per family); this module
exports exactly their ``__all__``.
"""

from relaxjax._numpy import core as _core
from relaxjax._numpy import creation as _creation
from relaxjax._numpy import datadep as _datadep
from relaxjax._numpy import dtypes as _dtypes
from relaxjax._numpy import reduction as _reduction
from relaxjax._numpy import shape as _shape
from relaxjax._numpy import ufuncs as _ufuncs
from relaxjax._numpy.core import *  # noqa: F403
from relaxjax._numpy.creation import *  # noqa: F403
from relaxjax._numpy.datadep import *  # noqa: F403
from relaxjax._numpy.dtypes import *  # noqa: F403
from relaxjax._numpy.reduction import *  # noqa: F403
from relaxjax._numpy.shape import *  # noqa: F403
from relaxjax._numpy.ufuncs import *  # noqa: F403

__all__ = sorted(
    {
        *_core.__all__,
        *_creation.__all__,
        *_datadep.__all__,
        *_dtypes.__all__,
        *_reduction.__all__,
        *_shape.__all__,
        *_ufuncs.__all__,
    }
)


def __dir__() -> list[str]:
    return list(__all__)
