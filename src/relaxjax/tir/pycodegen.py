"""Compiles a PrimFunc to a Python function over numpy arrays (the interpreter's engine).

Values are numpy scalars of the exact dtype (so float32 rounds like float32 and int8
wraps like int8; helpers in :mod:`relaxjax.tir.pyruntime`); index math is Python ints.
Loads and stores whose indices are not proven in bounds (by relaxing them over the
enclosing loops with arith) are checked, as are block iterator values, so an
out-of-bounds access raises ``IndexError`` instead of wrapping around as numpy negative
indices would. Innermost loops that :mod:`relaxjax.tir.fastpath` proves safe run as
whole-array numpy operations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from relaxjax import arith, dtypes
from relaxjax.arith import Dim
from relaxjax.tir.analysis import relax_dim
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import (
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
)
from relaxjax.tir.fastpath import (
    REDUCE_UFUNCS,
    Reduction,
    depends,
    reduction_pattern,
    vectorizable,
)
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.intrinsics import LAZY_SELECT, LDMATRIX, MMA, SHUFFLES
from relaxjax.tir.printer import expr_text
from relaxjax.tir.pyruntime import RUNTIME
from relaxjax.tir.simt import is_barrier, run_block, uses_sync
from relaxjax.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

# Python refuses more than 20 statically nested loops in one function; deeper nests
# continue in a nested function.
_MAX_LOOP_DEPTH = 16

_UFUNCS = {
    "exp": "exp",
    "exp2": "exp2",
    "expm1": "expm1",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "log1p": "log1p",
    "sqrt": "sqrt",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "round": "rint",
    "abs": "abs",
    "isnan": "isnan",
    "isinf": "isinf",
    "isfinite": "isfinite",
    "pow": "power",
    "atan2": "arctan2",
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
    "cbrt": "cbrt",
    "hypot": "hypot",
    "copysign": "copysign",
    "fmod": "fmod",
    "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    "bitwise_not": "invert",
}
_BINARY = {
    "+": "({a} + {b})",
    "-": "({a} - {b})",
    "*": "({a} * {b})",
    "/": "({a} / {b})",
    "//": "_rt_np.floor_divide({a}, {b})",
    "%": "_rt_np.mod({a}, {b})",
    "min": "_rt_np.minimum({a}, {b})",
    "max": "_rt_np.maximum({a}, {b})",
    "==": "({a} == {b})",
    "!=": "({a} != {b})",
    "<": "({a} < {b})",
    "<=": "({a} <= {b})",
    ">": "({a} > {b})",
    ">=": "({a} >= {b})",
    "and": "_rt_np.logical_and({a}, {b})",
    "or": "_rt_np.logical_or({a}, {b})",
}


@dataclass
class _Frame:
    """Index ranges known where code is being emitted (for bounds proofs)."""

    ranges: list[tuple[arith.Sym, Dim, Dim | None]] = field(default_factory=list)


class _Codegen:
    def __init__(self, func, vectorize: bool, reverse_parallel: bool):
        self.func = func
        self.vectorize = vectorize
        self.reverse_parallel = reverse_parallel
        self.lines: list[str] = []
        self.globals: dict[str, object] = dict(RUNTIME)
        self.counter = 0
        self.frame = _Frame()
        self.vector_var: str | None = None
        self.loop_depth = 0
        self.shapes: dict[str, tuple[Dim, ...]] = {p.name: p.shape for p in func.params}
        self.simt = False  # inside a SIMT nest (a thread's generator, see tir.simt)
        self.sites = 0

    # names and constants -------------------------------------------------------------

    def constant(self, value: object) -> str:
        name = f"_rt_c{self.counter}"
        self.counter += 1
        self.globals[name] = value
        return name

    def dim(self, dim: Dim) -> str:
        if isinstance(dim, int):
            return repr(dim)
        if isinstance(dim, arith.Sym):
            return f"s_{dim.name}"
        rename = {s.name: f"s_{s.name}" for s in arith.free_symbols(dim)}
        return f"({arith.to_python(dim, rename)})"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    # expressions --------------------------------------------------------------------------

    def expr(self, e: PrimExpr) -> str:
        if isinstance(e, IndexExpr):
            return f"_rt_i64({self.dim(e.dim)})"
        if isinstance(e, IntImm):
            return self.constant(dtypes.to_numpy(e.dtype).type(e.value))
        if isinstance(e, FloatImm):
            return self.constant(_float_constant(e.value, e.dtype))
        if isinstance(e, Var):
            return f"v_{e.name}"
        if isinstance(e, BufferLoad):
            return self.access(e.buffer, e.indices, "load")
        if isinstance(e, BinOp):
            return _BINARY[e.op].format(a=self.expr(e.a), b=self.expr(e.b))
        if isinstance(e, UnaryOp):
            fn = "negative" if e.op == "-" else "logical_not"
            return f"_rt_np.{fn}({self.expr(e.a)})"
        if isinstance(e, Select):
            helper = "_rt_vselect" if self.vector_var else "_rt_select"
            parts = ", ".join(self.expr(p) for p in (e.condition, e.true_value, e.false_value))
            return f"{helper}({parts})"
        if isinstance(e, Cast):
            return f"_rt_cast({self.expr(e.value)}, {self.constant(dtypes.to_numpy(e.dtype))})"
        if isinstance(e, Call):
            return self.call(e)
        raise TypeError(f"the interpreter cannot evaluate {type(e).__name__}")

    def call(self, e: Call) -> str:
        args = [self.expr(a) for a in e.args]
        if e.intrinsic in SHUFFLES:
            site = self.sync_site(e.intrinsic)
            return f"(yield ({e.intrinsic!r}, {site}, {args[0]}, {args[1]}))"
        if e.intrinsic in (MMA, LDMATRIX):
            site = self.sync_site(e.intrinsic)
            return f"(yield ({e.intrinsic!r}, {site}, ({', '.join(args)},), 0))"
        if e.intrinsic == LAZY_SELECT:
            return f"({args[1]} if {args[0]} else {args[2]})"
        special = {
            "rsqrt": "_rt_rsqrt",
            "sigmoid": "_rt_sigmoid",
            "erf": "_rt_erf",
            "erfc": "_rt_erfc",
            "fma": "_rt_fma",
            "ldexp": "_rt_ldexp",
            "nextafter": "_rt_nextafter",
            "shift_left": "_rt_shift_left",
            "shift_right": "_rt_shift_right",
            "popcount": "_rt_popcount",
        }
        if e.intrinsic in special:
            return f"{special[e.intrinsic]}({', '.join(args)})"
        return f"_rt_np.{_UFUNCS[e.intrinsic]}({', '.join(args)})"

    def access(self, buffer: Buffer, indices, kind: str) -> str:
        parts = []
        for axis, index in enumerate(indices):
            if isinstance(index, PrimExpr):
                code = self.expr(index)
                proven = False
            else:
                code = self.dim(index)
                proven = self.in_bounds(index, buffer.shape[axis])
            if not proven:
                what = self.constant(
                    f"kernel {self.func.name}: {kind} {buffer.name}"
                    f"[{', '.join(_index_text(i) for i in indices)}] axis {axis}"
                )
                code = f"_rt_check({code}, b_{buffer.name}.shape[{axis}], {what})"
            parts.append(code)
        if not parts:
            return f"b_{buffer.name}[()]"
        return f"b_{buffer.name}[{', '.join(parts)},]"

    def in_bounds(self, index: Dim, extent: Dim) -> bool:
        relaxed = relax_dim(index, tuple(self.frame.ranges))
        if relaxed is None:
            return False
        low, high = relaxed
        return arith.prove_ge(low, 0) and arith.prove_lt(high, extent)

    # statements ------------------------------------------------------------------------------

    def stmt(self, s: Stmt, depth: int) -> None:
        getattr(self, "stmt_" + type(s).__name__)(s, depth)

    def stmt_SeqStmt(self, s: SeqStmt, depth: int) -> None:
        for inner in s.stmts:
            self.stmt(inner, depth)

    def stmt_Evaluate(self, s: Evaluate, depth: int) -> None:
        if is_barrier(s):
            self.emit(depth, f"yield ('sync', {self.sync_site('syncthreads()')})")
            return
        self.emit(depth, self.expr(s.value))

    def sync_site(self, what: str) -> int:
        """A number for a barrier or shuffle (threads must meet at the same one)."""
        if not self.simt:
            raise TypeError(
                f"kernel {self.func.name}: {what} outside a thread_binding nest over threadIdx"
            )
        self.sites += 1
        return self.sites

    def stmt_BufferStore(self, s: BufferStore, depth: int) -> None:
        self.emit(depth, f"{self.access(s.buffer, s.indices, 'store')} = {self.expr(s.value)}")

    def stmt_LetStmt(self, s: LetStmt, depth: int) -> None:
        if isinstance(s.var, arith.Sym):
            value = self.expr(s.value)
            if not self.vector_var:
                value = f"int({value})"
            self.emit(depth, f"s_{s.var.name} = {value}")
            self.frame.ranges.append((s.var, 0, None))
            self.stmt(s.body, depth)
            self.frame.ranges.pop()
        else:
            self.emit(depth, f"v_{s.var.name} = {self.expr(s.value)}")
            self.stmt(s.body, depth)

    def stmt_IfThenElse(self, s: IfThenElse, depth: int) -> None:
        self.emit(depth, f"if {self.expr(s.condition)}:")
        self.stmt(s.then_case, depth + 1)
        if s.else_case is not None:
            self.emit(depth, "else:")
            self.stmt(s.else_case, depth + 1)

    def stmt_Allocate(self, s: Allocate, depth: int) -> None:
        self.allocate(s.buffer, depth)
        self.stmt(s.body, depth)

    def allocate(self, buffer: Buffer, depth: int) -> None:
        shape = ", ".join(self.dim(d) for d in buffer.shape)
        dtype = self.constant(dtypes.to_numpy(buffer.dtype))
        self.emit(
            depth, f"b_{buffer.name} = _rt_alloc(({shape}{',' if buffer.shape else ''}), {dtype})"
        )

    def stmt_For(self, s: For, depth: int) -> None:
        if _is_thread_loop(s) and not self.simt and uses_sync(s.body):
            self.simt_nest(s, depth)
            return
        if self.loop_depth >= _MAX_LOOP_DEPTH:
            name = self.constant(None).replace("_rt_c", "_rt_f")
            self.emit(depth, f"def {name}():")
            saved, self.loop_depth = self.loop_depth, 0
            self.stmt_For(s, depth + 1)
            self.loop_depth = saved
            if self.simt:
                self.emit(depth + 1, "yield from ()")
                self.emit(depth, f"yield from {name}()")
            else:
                self.emit(depth, f"{name}()")
            return
        start, stop = self.dim(s.start), self.dim(s.start + s.extent)
        var = f"s_{s.var.name}"
        self.frame.ranges.append((s.var, s.start, s.extent))
        fast = self.vectorize and self.vector_var is None and not uses_sync(s.body)
        reduction = None
        reverse = self.reverse_parallel and s.kind not in ("serial", "unrolled")
        if fast and not vectorizable(s):
            reduction = None if reverse else reduction_pattern(s)
            fast = reduction is not None
        if fast:
            self.emit(depth, f"{var} = _rt_np.arange({start}, {stop}, dtype=_rt_np.int64)")
            self.emit(depth, f"if {var}.size:")
            self.vector_var = var
            if reduction is None:
                self.stmt(s.body, depth + 1)
            else:
                self.reduction(reduction, depth + 1)
            self.vector_var = None
        else:
            if reverse:
                self.emit(depth, f"for {var} in range({stop} - 1, {start} - 1, -1):")
            else:
                self.emit(depth, f"for {var} in range({start}, {stop}):")
            self.loop_depth += 1
            self.stmt(s.body, depth + 1)
            self.loop_depth -= 1
        self.frame.ranges.pop()

    def simt_nest(self, s: For, depth: int) -> None:
        """A perfect nest of threadIdx loops using barriers or shuffles: one generator
        per thread, run by ``tir.simt.run_block`` (see that module)."""
        loops: dict[str, For] = {}
        stmt: Stmt = s
        while _is_thread_loop(stmt):
            axis = stmt.thread_tag[-1]
            if axis in loops:
                raise TypeError(f"kernel {self.func.name}: {stmt.thread_tag} is bound twice")
            loops[axis] = stmt
            stmt = stmt.body
        if _has_thread_loop(stmt):
            raise TypeError(
                f"kernel {self.func.name}: the threadIdx loops around a barrier or shuffle "
                "must form one perfect nest"
            )
        name = self.constant(None).replace("_rt_c", "_rt_t")
        self.emit(depth, f"def {name}(_x, _y, _z):")
        for axis, param in zip("xyz", ("_x", "_y", "_z")):
            if axis in loops:
                self.emit(depth + 1, f"s_{loops[axis].var.name} = {param}")
        for loop in loops.values():
            self.frame.ranges.append((loop.var, loop.start, loop.extent))
        saved = (self.simt, self.loop_depth)
        self.simt, self.loop_depth = True, self.loop_depth + len(loops)
        self.stmt(stmt, depth + 1)
        self.emit(depth + 1, "yield from ()")
        self.simt, self.loop_depth = saved
        for _ in loops:
            self.frame.ranges.pop()
        ranges = ", ".join(
            f"({self.dim(loops[a].start)}, {self.dim(loops[a].extent)})" if a in loops else "(0, 1)"
            for a in "xyz"
        )
        kernel = self.constant(self.func.name)
        self.emit(depth, f"_rt_simt({name}, ({ranges}), {self.reverse_parallel}, {kernel})")

    def stmt_BlockRealize(self, s: BlockRealize, depth: int) -> None:
        block = s.block
        self.realize_head(s, depth)
        depth += 0 if _is_true(s.predicate) else 1
        outer, self.frame = self.frame, _Frame([(iv.var, 0, iv.extent) for iv in block.iter_vars])
        self.block_body(block, depth)
        self.frame = outer

    def realize_head(self, s: BlockRealize, depth: int) -> None:
        """The predicate test (opening an indented scope unless it is True) and the
        iterator bindings, checked unless proven within their extents."""
        block = s.block
        if not _is_true(s.predicate):
            condition = self.expr(s.predicate)
            if self.vector_var and depends(s.predicate, {self.vector_var[2:]}):
                self.emit(depth, f"{self.vector_var} = {self.vector_var}[{condition}]")
                self.emit(depth, f"if {self.vector_var}.size:")
            else:
                self.emit(depth, f"if {condition}:")
            depth += 1
        for iv, value in zip(block.iter_vars, s.iter_values):
            code = self.dim(value)
            if not self.in_bounds(value, iv.extent):
                what = self.constant(
                    f"kernel {self.func.name}: block {block.name!r} iterator {iv.var.name}"
                )
                code = f"_rt_check({code}, {self.dim(iv.extent)}, {what})"
            self.emit(depth, f"s_{iv.var.name} = {code}")

    def reduction(self, r: Reduction, depth: int) -> None:
        """A reduction loop as one ``ufunc.accumulate`` (see :mod:`relaxjax.tir.fastpath`)."""
        block = r.realize.block
        self.realize_head(r.realize, depth)
        depth += 1 if not _is_true(r.realize.predicate) else 0
        outer, self.frame = self.frame, _Frame([(iv.var, 0, iv.extent) for iv in block.iter_vars])
        target = self.access(r.store.buffer, r.store.indices, "store")
        current = self.access(r.store.buffer, r.store.indices, "load")
        if r.init is None:
            init, condition = "None", "False"
        else:
            init = f"lambda: {self.expr(r.init.value)}"
            reduce_vars = [iv.var.name for iv in block.iter_vars if iv.kind == "reduce"]
            condition = " & ".join(f"(s_{name} == 0)" for name in reduce_vars)
        ufunc = f"_rt_np.{REDUCE_UFUNCS[r.op]}"
        terms = self.expr(r.rhs)
        self.emit(
            depth,
            f"{target} = _rt_fold({ufunc}, {current}, {init}, {condition}, {terms}, "
            f"{self.vector_var}.size)",
        )
        self.frame = outer

    def stmt_Block(self, s: Block, depth: int) -> None:
        raise TypeError(f"block {s.name!r} must be inside a BlockRealize")

    def block_body(self, block: Block, depth: int) -> None:
        for buffer in block.alloc_buffers:
            self.allocate(buffer, depth)
        if block.init is not None:
            reduce_vars = [iv.var.name for iv in block.iter_vars if iv.kind == "reduce"]
            condition = " and ".join(f"s_{name} == 0" for name in reduce_vars)
            self.emit(depth, f"if {condition}:")
            self.stmt(block.init, depth + 1)
        self.stmt(block.body, depth)


def _is_true(predicate: PrimExpr) -> bool:
    return isinstance(predicate, IntImm) and predicate.value == 1


def _is_thread_loop(stmt: Stmt) -> bool:
    return (
        isinstance(stmt, For)
        and stmt.kind == "thread_binding"
        and stmt.thread_tag.startswith("threadIdx")
    )


def _has_thread_loop(stmt: Stmt) -> bool:
    found = []

    class _Find(StmtVisitor):
        def visit_For(self, loop: For) -> None:
            if _is_thread_loop(loop):
                found.append(loop)
            super().visit_For(loop)

    _Find().visit_stmt(stmt)
    return bool(found)


def _index_text(index) -> str:
    return expr_text(index) if isinstance(index, PrimExpr) else str(index)


def _float_constant(value: float, dtype: str):
    if dtype == "bfloat16":
        return ml_dtypes.bfloat16(np.float32(value))
    return dtypes.to_numpy(dtype).type(value)


@dataclass(frozen=True)
class CompiledKernel:
    """A PrimFunc compiled to Python: ``function(*buffers, *symbol_values)``."""

    function: Callable[..., None]
    source: str


def compile_kernel(func, vectorize: bool = True, reverse_parallel: bool = False) -> CompiledKernel:
    """The Python function that runs ``func`` (arguments: param arrays, then the values
    of ``func.symbols()``). ``vectorize`` enables the fast paths; ``reverse_parallel``
    runs the iterations of non-serial loops backwards (to expose order dependences)."""
    gen = _Codegen(func, vectorize, reverse_parallel)
    gen.globals["_rt_simt"] = run_block
    args = [f"b_{p.name}" for p in func.params] + [f"s_{s.name}" for s in func.symbols()]
    gen.emit(0, f"def kernel_{func.name}({', '.join(args)}):")
    gen.stmt(func.body, 1)
    gen.emit(1, "return None")
    source = "\n".join(gen.lines) + "\n"
    namespace: dict[str, object] = {}
    exec(compile(source, f"<tir kernel {func.name}>", "exec"), gen.globals, namespace)
    return CompiledKernel(namespace[f"kernel_{func.name}"], source)
