"""relaxjax.passes: graph passes, each a pure ``IRModule -> IRModule`` function.

- :func:`legalize`: every op call becomes a ``call_tir`` of a shape-generic kernel;
- :func:`dedup_kernels`: structurally identical kernels are stored once;
- :func:`dispatch_library`: float matmul becomes a ``call_extern`` of BLAS (numpy);
- :func:`dispatch_cublas`: on the GPU, float matmul becomes a ``call_extern`` of cuBLAS;
- :func:`eliminate_dead_code`: unused bindings and orphaned kernels are dropped;
- :func:`inplace_updates`: an update of a dead, owned operand (``dynamic_update_slice``)
  becomes a ``call_tir_inplace`` writing into it;
- :func:`make_views`: layout ops that only move elements become views (``call_view``);
- :func:`strided_operands`: kernels read their view operands through strides;
- :func:`default_pipeline`: the passes ``relax.jit`` runs, as a :class:`Pipeline`.
"""

from relaxjax.passes.dce import eliminate_dead_bindings, eliminate_dead_code
from relaxjax.passes.dedup import dedup_kernels
from relaxjax.passes.dispatch import LIBRARY_CALLS, LibraryCall, dispatch_library
from relaxjax.passes.dispatch_cuda import dispatch_cublas
from relaxjax.passes.inplace import inplace_updates
from relaxjax.passes.legalize import LegalizedAttrs, is_op_call, known_shape, legalize
from relaxjax.passes.pipeline import (
    LOWERING,
    TARGETS,
    Pass,
    Pipeline,
    default_pipeline,
    lower_pipeline,
)
from relaxjax.passes.strides import strided_operands
from relaxjax.passes.views import make_views

__all__ = [
    "LIBRARY_CALLS",
    "LOWERING",
    "TARGETS",
    "LibraryCall",
    "LegalizedAttrs",
    "Pass",
    "Pipeline",
    "dedup_kernels",
    "dispatch_cublas",
    "dispatch_library",
    "default_pipeline",
    "eliminate_dead_bindings",
    "eliminate_dead_code",
    "inplace_updates",
    "is_op_call",
    "known_shape",
    "legalize",
    "lower_pipeline",
    "make_views",
    "strided_operands",
]
