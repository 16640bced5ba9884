"""relaxjax.ops: every operator, defined once (shape rule, numpy reference, lowering).

Importing the package registers every op; look them up with :func:`get` and
:func:`registry`.
"""

from relaxjax.ops import (
    attention,
    creation,
    elementwise,
    index,
    kernel,
    linalg,
    manipulate,
    nn,
    reduction,
)
from relaxjax.ops.base import (
    PATTERNS,
    InferContext,
    Op,
    as_tensor_info,
    broadcast_infos,
    broadcast_shapes,
    fail,
    get,
    normalize_axis,
    promote_types,
    register,
    registry,
    tensor_args,
)

__all__ = [
    "attention",
    "creation",
    "elementwise",
    "index",
    "kernel",
    "linalg",
    "manipulate",
    "nn",
    "reduction",
    "PATTERNS",
    "InferContext",
    "Op",
    "as_tensor_info",
    "broadcast_infos",
    "broadcast_shapes",
    "fail",
    "get",
    "normalize_axis",
    "promote_types",
    "register",
    "registry",
    "tensor_args",
]
