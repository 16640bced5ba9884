"""relaxjax.trace: turning Python functions on tensors into typed graph programs.

- :func:`emit` — the entry point of every op wrapper (``relaxjax.numpy``, ``relaxjax.nn``);
- :class:`Tracer` — a traced value, with operators, ``.shape``, indexing and array methods;
- :func:`match_cast` — assert a shape at run time and bind new symbols;
- :func:`data_dependent_size` — a count computed at run time as a fresh symbol;
- :func:`trace_function` — trace one function for given parameter specs;
- :mod:`~relaxjax.trace.pytree` — flattening nested tuples/lists/dicts of values.

``relax.jit`` and ``relax.eval_shape`` (in :mod:`relaxjax.jit`) are built on these.
"""

from relaxjax.trace import pytree
from relaxjax.trace.context import TraceState, current
from relaxjax.trace.function import Traced, trace_function
from relaxjax.trace.match_cast import match_cast
from relaxjax.trace.sizes import data_dependent_size
from relaxjax.trace.spec import ParamSpec
from relaxjax.trace.tracer import Tracer, constant, emit

__all__ = [
    "ParamSpec",
    "TraceState",
    "Traced",
    "Tracer",
    "constant",
    "current",
    "data_dependent_size",
    "emit",
    "match_cast",
    "pytree",
    "trace_function",
]
