"""relaxjax.tir: the loop-level IR.

Buffers with symbolic shapes, value expressions (:mod:`.expr`), statements with
TVM-style blocks (:mod:`.stmt`), kernels (:class:`PrimFunc`), a compute builder
(:mod:`.compute`), visitors/mutators (:mod:`.functor`), a printer whose text parses
back (:mod:`.printer`, :mod:`.parser`) and a numpy reference interpreter
(:mod:`.interpreter`). Index math is :mod:`relaxjax.arith`.
"""

from relaxjax.tir import compute as te
from relaxjax.tir.analysis import (
    Access,
    block_access_regions,
    collect_accesses,
    find_block,
    free_symbols,
    free_vars,
    iter_blocks,
)
from relaxjax.tir.buffer import SCOPES, Buffer, BufferRegion, Range
from relaxjax.tir.compute import (
    CommReducer,
    ReduceAxis,
    Tensor,
    argmax,
    argmin,
    comm_reducer,
    compute,
    create_prim_func,
    placeholder,
    prod,
    reduce_axis,
)
from relaxjax.tir.expr import (
    BINARY_OPS,
    INDEX_DTYPE,
    UNARY_OPS,
    BinOp,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IndexExpr,
    IntImm,
    PrimExpr,
    Select,
    UnaryOp,
    Var,
    as_expr,
    binop,
    const,
    max_value,
    min_value,
    unary,
)
from relaxjax.tir.function import PrimFunc, SymbolSource
from relaxjax.tir.functor import (
    ExprMutator,
    ExprVisitor,
    StmtMutator,
    StmtVisitor,
    Substituter,
    substitute,
)
from relaxjax.tir.intrinsics import INTRINSICS, LAZY_SELECT
from relaxjax.tir.math import (
    abs,
    acos,
    asin,
    atan,
    atan2,
    call,
    cast,
    ceil,
    cos,
    cosh,
    eq,
    erf,
    exp,
    exp2,
    expm1,
    floor,
    fma,
    if_then_else,
    isfinite,
    isinf,
    isnan,
    log,
    log1p,
    log2,
    log10,
    logical_and,
    logical_not,
    logical_or,
    max,
    min,
    ne,
    pow,
    round,
    rsqrt,
    select,
    sigmoid,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
)
from relaxjax.tir.stmt import (
    FOR_KINDS,
    ITER_KINDS,
    THREAD_TAGS,
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    IterVar,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from relaxjax.tir.verify import verify_body

# The reducers share names with the math functions (tir.max is the binary op); the
# reducers are te.sum / te.max / te.min / te.prod, and tir.sum for the common case.
sum = te.sum

__all__ = [
    "Access", "Allocate", "BINARY_OPS", "BinOp", "Block", "BlockRealize", "Buffer",
    "BufferLoad", "BufferRegion", "BufferStore", "Call", "Cast", "CommReducer", "Evaluate",
    "ExprMutator", "ExprVisitor", "FOR_KINDS", "FloatImm", "For", "INDEX_DTYPE", "INTRINSICS",
    "ITER_KINDS", "IfThenElse", "IndexExpr", "IntImm", "IterVar", "LAZY_SELECT", "LetStmt",
    "PrimExpr", "PrimFunc", "Range", "ReduceAxis", "SCOPES", "Select", "SeqStmt", "Stmt",
    "StmtMutator", "StmtVisitor", "Substituter", "SymbolSource", "THREAD_TAGS", "Tensor",
    "UNARY_OPS", "UnaryOp", "Var", "abs", "acos", "argmax", "argmin", "as_expr", "asin",
    "atan", "atan2", "binop", "block_access_regions", "call", "cast", "ceil",
    "collect_accesses", "comm_reducer", "compute", "const", "cos", "cosh",
    "create_prim_func", "eq", "erf", "exp", "exp2", "expm1", "find_block", "floor", "fma",
    "free_symbols", "free_vars", "if_then_else", "isfinite", "isinf", "isnan", "iter_blocks",
    "log", "log10", "log1p", "log2", "logical_and", "logical_not", "logical_or", "max",
    "max_value", "min", "min_value", "ne", "placeholder", "pow", "prod", "reduce_axis",
    "round", "rsqrt", "select", "seq", "sigmoid", "sin", "sinh", "sqrt", "substitute", "sum",
    "tan", "tanh", "te", "trunc", "unary", "verify_body",
]
