"""relaxjax: compile numerical Python once for every value of its symbolic dimensions.

>>> import relaxjax as relax
>>> n = relax.sym("n")
>>> relax.Tensor((n, 4), "float32")
Tensor((n, 4), "float32")

See ``docs/tutorial.md`` for a first walk through symbolic dims, ``eval_shape``
and the printed graph program.
"""

from relaxjax import schedule, tir, tree_util
from relaxjax.arith import max_ as max
from relaxjax.arith import min_ as min
from relaxjax.arith import prove_equal, sym, syms
from relaxjax.backends import build
from relaxjax.errors import DeviceError, InconclusiveShapeError, ShapeError, TraceError
from relaxjax.ir import IRModule
from relaxjax.ir import TensorInfo as Tensor
from relaxjax.jit import Jitted, eval_shape, jit
from relaxjax.trace import match_cast

__all__ = [
    "DeviceError",
    "IRModule",
    "InconclusiveShapeError",
    "Jitted",
    "ShapeError",
    "Tensor",
    "TraceError",
    "build",
    "eval_shape",
    "jit",
    "match_cast",
    "max",
    "min",
    "prove_equal",
    "schedule",
    "sym",
    "syms",
    "tir",
    "tree_util",
]
