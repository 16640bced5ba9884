"""Visitors and mutators over TIR with per-class dispatch, and substitution.

Dispatch is by class name: a visitor handles ``BufferLoad`` in ``visit_BufferLoad``.
``visit_expr`` / ``visit_stmt`` dispatch; every node type has a default that visits
(or rebuilds) its children. Dims (arith index math) go through ``visit_dim`` and
buffers through ``visit_buffer``, so a subclass can rewrite index math or swap
buffers everywhere by overriding one hook. A mutator rebuilds a node only when a
child changed (children compared by identity), so an unchanged tree comes back as
the very same object.

>>> class CountLoads(StmtVisitor):
...     def __init__(self):
...         self.count = 0
...     def visit_BufferLoad(self, load):
...         self.count += 1
...         super().visit_BufferLoad(load)

Binding variables (loop vars, block iterators, let vars) are not passed to
``visit_dim``; override ``visit_For`` etc. to rename them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.tir.buffer import Buffer, BufferRegion, Range
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
    binop,
    unary,
)
from relaxjax.tir.stmt import (
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


def _method(visitor: object, node: object):
    name = "visit_" + type(node).__name__
    method = getattr(visitor, name, None)
    if method is None:
        raise TypeError(f"{type(visitor).__name__} has no {name} for {node!r}")
    return method


class ExprVisitor:
    """Walks PrimExprs; override ``visit_<Class>`` and call ``super()`` to keep walking."""

    def visit_expr(self, expr: PrimExpr) -> None:
        _method(self, expr)(expr)

    def visit_dim(self, dim: Dim) -> None:
        """Called on every index dim (indices, extents, shapes); no-op by default."""

    def visit_buffer(self, buffer: Buffer) -> None:
        """Called on every buffer use; no-op by default."""

    def visit_index(self, index: Dim | PrimExpr) -> None:
        if isinstance(index, PrimExpr):
            self.visit_expr(index)
        else:
            self.visit_dim(index)

    def visit_IntImm(self, expr: IntImm) -> None:
        pass

    def visit_FloatImm(self, expr: FloatImm) -> None:
        pass

    def visit_Var(self, expr: Var) -> None:
        pass

    def visit_IndexExpr(self, expr: IndexExpr) -> None:
        self.visit_dim(expr.dim)

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        self.visit_buffer(expr.buffer)
        for index in expr.indices:
            self.visit_index(index)

    def visit_BinOp(self, expr: BinOp) -> None:
        self.visit_expr(expr.a)
        self.visit_expr(expr.b)

    def visit_UnaryOp(self, expr: UnaryOp) -> None:
        self.visit_expr(expr.a)

    def visit_Select(self, expr: Select) -> None:
        self.visit_expr(expr.condition)
        self.visit_expr(expr.true_value)
        self.visit_expr(expr.false_value)

    def visit_Cast(self, expr: Cast) -> None:
        self.visit_expr(expr.value)

    def visit_Call(self, expr: Call) -> None:
        for arg in expr.args:
            self.visit_expr(arg)


class StmtVisitor(ExprVisitor):
    """Walks statements and the expressions in them."""

    def visit_stmt(self, stmt: Stmt) -> None:
        _method(self, stmt)(stmt)

    def visit_region(self, region: BufferRegion) -> None:
        self.visit_buffer(region.buffer)
        for r in region.region:
            self.visit_dim(r.start)
            self.visit_dim(r.extent)

    def visit_buffer_def(self, buffer: Buffer) -> None:
        """Called where a buffer is declared (alloc_buffers, Allocate): visits its dims."""
        for dim in buffer.shape + (buffer.strides or ()):
            self.visit_dim(dim)

    def visit_For(self, stmt: For) -> None:
        self.visit_dim(stmt.start)
        self.visit_dim(stmt.extent)
        self.visit_stmt(stmt.body)

    def visit_Block(self, stmt: Block) -> None:
        for iv in stmt.iter_vars:
            self.visit_dim(iv.extent)
        for buffer in stmt.alloc_buffers:
            self.visit_buffer_def(buffer)
        for region in stmt.reads + stmt.writes:
            self.visit_region(region)
        if stmt.init is not None:
            self.visit_stmt(stmt.init)
        self.visit_stmt(stmt.body)

    def visit_BlockRealize(self, stmt: BlockRealize) -> None:
        for value in stmt.iter_values:
            self.visit_dim(value)
        self.visit_expr(stmt.predicate)
        self.visit_stmt(stmt.block)

    def visit_BufferStore(self, stmt: BufferStore) -> None:
        self.visit_buffer(stmt.buffer)
        self.visit_expr(stmt.value)
        for index in stmt.indices:
            self.visit_index(index)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.visit_expr(stmt.value)
        self.visit_stmt(stmt.body)

    def visit_IfThenElse(self, stmt: IfThenElse) -> None:
        self.visit_expr(stmt.condition)
        self.visit_stmt(stmt.then_case)
        if stmt.else_case is not None:
            self.visit_stmt(stmt.else_case)

    def visit_Allocate(self, stmt: Allocate) -> None:
        self.visit_buffer_def(stmt.buffer)
        self.visit_stmt(stmt.body)

    def visit_SeqStmt(self, stmt: SeqStmt) -> None:
        for s in stmt.stmts:
            self.visit_stmt(s)

    def visit_Evaluate(self, stmt: Evaluate) -> None:
        self.visit_expr(stmt.value)


def _same(new: Sequence[object], old: Sequence[object]) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))


class ExprMutator:
    """Rebuilds PrimExprs; ``visit_<Class>`` returns the replacement node."""

    def visit_expr(self, expr: PrimExpr) -> PrimExpr:
        return _method(self, expr)(expr)

    def visit_dim(self, dim: Dim) -> Dim:
        """Rewrites an index dim; identity by default."""
        return dim

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        """Rewrites a buffer (at every use and declaration); identity by default."""
        return buffer

    def visit_index(self, index: Dim | PrimExpr) -> Dim | PrimExpr:
        if isinstance(index, PrimExpr):
            return self.visit_expr(index)
        return self.visit_dim(index)

    def visit_IntImm(self, expr: IntImm) -> PrimExpr:
        return expr

    def visit_FloatImm(self, expr: FloatImm) -> PrimExpr:
        return expr

    def visit_Var(self, expr: Var) -> PrimExpr:
        return expr

    def visit_IndexExpr(self, expr: IndexExpr) -> PrimExpr:
        dim = self.visit_dim(expr.dim)
        return expr if dim is expr.dim else IndexExpr(dim)

    def visit_BufferLoad(self, expr: BufferLoad) -> PrimExpr:
        buffer = self.visit_buffer(expr.buffer)
        indices = tuple(self.visit_index(i) for i in expr.indices)
        if buffer is expr.buffer and _same(indices, expr.indices):
            return expr
        return BufferLoad(buffer, indices)

    def visit_BinOp(self, expr: BinOp) -> PrimExpr:
        a, b = self.visit_expr(expr.a), self.visit_expr(expr.b)
        return expr if a is expr.a and b is expr.b else binop(expr.op, a, b)

    def visit_UnaryOp(self, expr: UnaryOp) -> PrimExpr:
        a = self.visit_expr(expr.a)
        return expr if a is expr.a else unary(expr.op, a)

    def visit_Select(self, expr: Select) -> PrimExpr:
        parts = (expr.condition, expr.true_value, expr.false_value)
        new = tuple(self.visit_expr(p) for p in parts)
        return expr if _same(new, parts) else Select(*new)

    def visit_Cast(self, expr: Cast) -> PrimExpr:
        value = self.visit_expr(expr.value)
        return expr if value is expr.value else Cast(expr.dtype, value)

    def visit_Call(self, expr: Call) -> PrimExpr:
        args = tuple(self.visit_expr(a) for a in expr.args)
        return expr if _same(args, expr.args) else Call(expr.intrinsic, args)


class StmtMutator(ExprMutator):
    """Rebuilds statements (and the expressions in them) bottom-up."""

    def visit_stmt(self, stmt: Stmt) -> Stmt:
        return _method(self, stmt)(stmt)

    def visit_region(self, region: BufferRegion) -> BufferRegion:
        buffer = self.visit_buffer(region.buffer)
        ranges = tuple(self._range(r) for r in region.region)
        if buffer is region.buffer and _same(ranges, region.region):
            return region
        return BufferRegion(buffer, ranges)

    def _range(self, r: Range) -> Range:
        start, extent = self.visit_dim(r.start), self.visit_dim(r.extent)
        return r if start is r.start and extent is r.extent else Range(start, extent)

    def visit_buffer_def(self, buffer: Buffer) -> Buffer:
        """Rewrites a declared buffer (alloc_buffers, Allocate); ``visit_buffer`` by default."""
        return self.visit_buffer(buffer)

    def visit_For(self, stmt: For) -> Stmt:
        start, extent = self.visit_dim(stmt.start), self.visit_dim(stmt.extent)
        body = self.visit_stmt(stmt.body)
        if start is stmt.start and extent is stmt.extent and body is stmt.body:
            return stmt
        return For(stmt.var, start, extent, stmt.kind, body, stmt.annotations, stmt.thread_tag)

    def visit_iter_var(self, iv: IterVar) -> IterVar:
        extent = self.visit_dim(iv.extent)
        return iv if extent is iv.extent else IterVar(iv.var, extent, iv.kind)

    def visit_Block(self, stmt: Block) -> Stmt:
        iter_vars = tuple(self.visit_iter_var(iv) for iv in stmt.iter_vars)
        allocs = tuple(self.visit_buffer_def(b) for b in stmt.alloc_buffers)
        reads = tuple(self.visit_region(r) for r in stmt.reads)
        writes = tuple(self.visit_region(r) for r in stmt.writes)
        init = None if stmt.init is None else self.visit_stmt(stmt.init)
        body = self.visit_stmt(stmt.body)
        if (
            _same(iter_vars, stmt.iter_vars)
            and _same(allocs, stmt.alloc_buffers)
            and _same(reads, stmt.reads)
            and _same(writes, stmt.writes)
            and init is stmt.init
            and body is stmt.body
        ):
            return stmt
        return Block(stmt.name, iter_vars, reads, writes, init, body, allocs, stmt.annotations)

    def visit_BlockRealize(self, stmt: BlockRealize) -> Stmt:
        values = tuple(self.visit_dim(v) for v in stmt.iter_values)
        predicate = self.visit_expr(stmt.predicate)
        block = self.visit_stmt(stmt.block)
        if _same(values, stmt.iter_values) and predicate is stmt.predicate and block is stmt.block:
            return stmt
        if not isinstance(block, Block):
            raise TypeError(f"visit_Block must return a Block, got {type(block).__name__}")
        return BlockRealize(values, predicate, block)

    def visit_BufferStore(self, stmt: BufferStore) -> Stmt:
        buffer = self.visit_buffer(stmt.buffer)
        value = self.visit_expr(stmt.value)
        indices = tuple(self.visit_index(i) for i in stmt.indices)
        if buffer is stmt.buffer and value is stmt.value and _same(indices, stmt.indices):
            return stmt
        return BufferStore(buffer, value, indices)

    def visit_LetStmt(self, stmt: LetStmt) -> Stmt:
        value = self.visit_expr(stmt.value)
        body = self.visit_stmt(stmt.body)
        if value is stmt.value and body is stmt.body:
            return stmt
        return LetStmt(stmt.var, value, body)

    def visit_IfThenElse(self, stmt: IfThenElse) -> Stmt:
        condition = self.visit_expr(stmt.condition)
        then_case = self.visit_stmt(stmt.then_case)
        else_case = None if stmt.else_case is None else self.visit_stmt(stmt.else_case)
        if (
            condition is stmt.condition
            and then_case is stmt.then_case
            and else_case is stmt.else_case
        ):
            return stmt
        return IfThenElse(condition, then_case, else_case)

    def visit_Allocate(self, stmt: Allocate) -> Stmt:
        buffer = self.visit_buffer_def(stmt.buffer)
        body = self.visit_stmt(stmt.body)
        if buffer is stmt.buffer and body is stmt.body:
            return stmt
        return Allocate(buffer, body)

    def visit_SeqStmt(self, stmt: SeqStmt) -> Stmt:
        stmts = tuple(self.visit_stmt(s) for s in stmt.stmts)
        return stmt if _same(stmts, stmt.stmts) else seq(*stmts)

    def visit_Evaluate(self, stmt: Evaluate) -> Stmt:
        value = self.visit_expr(stmt.value)
        return stmt if value is stmt.value else Evaluate(value)


SubstKey = arith.Sym | str | Var


class Substituter(StmtMutator):
    """Replaces symbols by dims and value variables by expressions.

    Shapes of buffers are rewritten too (consistently at every use). A binder
    (loop variable, block iterator, let variable) mapped to another ``Sym`` (or
    ``Var``) is renamed; a binder mapped to anything else keeps its name.
    """

    def __init__(self, mapping: Mapping[SubstKey, object]):
        self.dims: dict[str, Dim] = {}
        self.values: dict[Var, PrimExpr] = {}
        for key, value in mapping.items():
            if isinstance(key, Var):
                if not isinstance(value, PrimExpr):
                    raise TypeError(f"substitute: {key.name} must map to a PrimExpr, got {value!r}")
                self.values[key] = value
            elif isinstance(key, (arith.Sym, str)):
                name = key.name if isinstance(key, arith.Sym) else key
                dim = getattr(value, "index_dim", value)
                if not isinstance(dim, (int, arith.Expr)) or isinstance(dim, bool):
                    raise TypeError(f"substitute: symbol {name} must map to a dim, got {value!r}")
                self.dims[name] = dim
            else:
                raise TypeError(f"substitute: keys are Syms, names or Vars, got {key!r}")
        self._buffers: dict[Buffer, Buffer] = {}

    def visit_dim(self, dim: Dim) -> Dim:
        if isinstance(dim, int) or not self.dims:
            return dim
        if not any(s.name in self.dims for s in arith.free_symbols(dim)):
            return dim
        return arith.subs(dim, self.dims)

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        new = self._buffers.get(buffer)
        if new is None:
            shape = tuple(self.visit_dim(d) for d in buffer.shape)
            strides = (
                None if buffer.strides is None else tuple(self.visit_dim(d) for d in buffer.strides)
            )
            unchanged = _same(shape, buffer.shape) and (
                strides is None or _same(strides, buffer.strides)
            )
            new = buffer if unchanged else buffer.with_shape(shape, strides)
            self._buffers[buffer] = new
        return new

    def visit_Var(self, expr: Var) -> PrimExpr:
        return self.values.get(expr, expr)

    def _rename(self, sym: arith.Sym) -> arith.Sym:
        target = self.dims.get(sym.name)
        return target if isinstance(target, arith.Sym) else sym

    def visit_For(self, stmt: For) -> Stmt:
        new = StmtMutator.visit_For(self, stmt)
        var = self._rename(stmt.var)
        if var is stmt.var:
            return new
        return For(var, new.start, new.extent, new.kind, new.body, new.annotations, new.thread_tag)

    def visit_iter_var(self, iv: IterVar) -> IterVar:
        new = StmtMutator.visit_iter_var(self, iv)
        var = self._rename(iv.var)
        return new if var is iv.var else IterVar(var, new.extent, new.kind)

    def visit_LetStmt(self, stmt: LetStmt) -> Stmt:
        new = StmtMutator.visit_LetStmt(self, stmt)
        if isinstance(stmt.var, arith.Sym):
            var = self._rename(stmt.var)
        else:
            target = self.values.get(stmt.var)
            var = target if isinstance(target, Var) else stmt.var
        if var is stmt.var:
            return new
        return LetStmt(var, new.value, new.body)


def substitute(node, mapping: Mapping[SubstKey, object]):
    """``node`` (a Stmt, PrimExpr or dim) with symbols/vars replaced per ``mapping``.

    Keys are ``arith.Sym`` (or their names) mapping to dims, or ``Var`` mapping to
    PrimExprs: ``substitute(stmt, {i: io * 32 + ii})``.
    """
    subst = Substituter(mapping)
    if isinstance(node, Stmt):
        return subst.visit_stmt(node)
    if isinstance(node, PrimExpr):
        return subst.visit_expr(node)
    if isinstance(node, (int, arith.Expr)):
        return subst.visit_dim(node)
    raise TypeError(f"substitute: expected a Stmt, PrimExpr or dim, got {type(node).__name__}")
