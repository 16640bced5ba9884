"""relaxjax.numpy: array functions with the names, signatures and semantics of jax.numpy.

Each function records one op while tracing (and evaluates eagerly with the ops' numpy
references outside a trace). Arguments may be traced tensors, numpy arrays, Python
scalars (weakly typed, as in jax) or symbolic dims.

>>> import relaxjax as relax, relaxjax.numpy as rnp
>>> relax.eval_shape(lambda x: rnp.exp(x) + 1.0, relax.Tensor(("n", 4), "float32"))
Tensor((n, 4), "float32")

The wrappers live in ``relaxjax._numpy`` (one module per family); this module
exports exactly their ``__all__``, and ``relaxjax.numpy.linalg`` (also reachable as
``rnp.linalg``) the linear-algebra functions of ``jax.numpy.linalg``.
"""

from relaxjax._numpy import contractions as _contractions
from relaxjax._numpy import core as _core
from relaxjax._numpy import counting as _counting
from relaxjax._numpy import creation as _creation
from relaxjax._numpy import datadep as _datadep
from relaxjax._numpy import dtypes as _dtypes
from relaxjax._numpy import entries as _entries
from relaxjax._numpy import index as _index
from relaxjax._numpy import index_tricks as _index_tricks
from relaxjax._numpy import joining as _joining
from relaxjax._numpy import manipulation as _manipulation
from relaxjax._numpy import packing as _packing
from relaxjax._numpy import polynomial as _polynomial
from relaxjax._numpy import printing as _printing
from relaxjax._numpy import quantile as _quantile
from relaxjax._numpy import reduction as _reduction
from relaxjax._numpy import selection as _selection
from relaxjax._numpy import sets as _sets
from relaxjax._numpy import shape as _shape
from relaxjax._numpy import signal as _signal
from relaxjax._numpy import sorting as _sorting
from relaxjax._numpy import statistics as _statistics
from relaxjax._numpy import ufuncs as _ufuncs
from relaxjax._numpy import updates as _updates
from relaxjax._numpy.contractions import *  # noqa: F403
from relaxjax._numpy.core import *  # noqa: F403
from relaxjax._numpy.counting import *  # noqa: F403
from relaxjax._numpy.creation import *  # noqa: F403
from relaxjax._numpy.datadep import *  # noqa: F403
from relaxjax._numpy.dtypes import *  # noqa: F403
from relaxjax._numpy.entries import *  # noqa: F403
from relaxjax._numpy.index import *  # noqa: F403
from relaxjax._numpy.index_tricks import *  # noqa: F403
from relaxjax._numpy.joining import *  # noqa: F403
from relaxjax._numpy.manipulation import *  # noqa: F403
from relaxjax._numpy.packing import *  # noqa: F403
from relaxjax._numpy.polynomial import *  # noqa: F403
from relaxjax._numpy.printing import *  # noqa: F403
from relaxjax._numpy.quantile import *  # noqa: F403
from relaxjax._numpy.reduction import *  # noqa: F403
from relaxjax._numpy.selection import *  # noqa: F403
from relaxjax._numpy.sets import *  # noqa: F403
from relaxjax._numpy.shape import *  # noqa: F403
from relaxjax._numpy.signal import *  # noqa: F403
from relaxjax._numpy.sorting import *  # noqa: F403
from relaxjax._numpy.statistics import *  # noqa: F403
from relaxjax._numpy.ufuncs import *  # noqa: F403
from relaxjax._numpy.updates import *  # noqa: F403
from relaxjax.numpy import linalg as linalg

__all__ = sorted(
    {
        *_contractions.__all__,
        *_core.__all__,
        *_counting.__all__,
        *_creation.__all__,
        *_datadep.__all__,
        *_dtypes.__all__,
        *_entries.__all__,
        *_index.__all__,
        *_index_tricks.__all__,
        *_joining.__all__,
        *_manipulation.__all__,
        *_packing.__all__,
        *_polynomial.__all__,
        *_printing.__all__,
        *_quantile.__all__,
        *_reduction.__all__,
        *_selection.__all__,
        *_sets.__all__,
        *_shape.__all__,
        *_signal.__all__,
        *_sorting.__all__,
        *_statistics.__all__,
        *_ufuncs.__all__,
        *_updates.__all__,
        "linalg",
    }
)


def __dir__() -> list[str]:
    return list(__all__)
