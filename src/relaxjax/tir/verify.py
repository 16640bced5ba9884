"""Well-formedness of a kernel body: scoping of symbols, variables and buffers.

Rules (each violation raises :class:`~relaxjax.errors.VerifyError` naming it):

- every symbol used is a kernel symbol (from the signature), or bound by an enclosing
  loop, let or block iterator; inside a block only its own iterators and the kernel's
  symbols are visible (block isolation), never the enclosing loop variables;
- every value ``Var`` is used inside its let;
- every buffer used is a parameter or allocated by an enclosing block or ``Allocate``,
  and is used with its declared shape;
- every name (buffers, symbols, loop variables, iterators, let variables) is defined
  once in the kernel, so the printed text parses back unambiguously.
"""

from __future__ import annotations

from collections.abc import Iterable

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.errors import VerifyError
from relaxjax.tir.buffer import Buffer
from relaxjax.tir.expr import Var
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    For,
    LetStmt,
    Stmt,
)


class _Verifier(StmtVisitor):
    def __init__(self, kernel: str, params: Iterable[Buffer], symbols: Iterable[arith.Sym]):
        self.kernel = kernel
        self.kernel_syms = {s.name for s in symbols}
        self.syms: set[str] = set(self.kernel_syms)
        self.hidden: set[str] = set()
        self.vars: set[Var] = set()
        self.buffers: dict[str, Buffer] = {}
        self.names: dict[str, str] = {name: "a kernel symbol" for name in self.kernel_syms}
        self.where = f"kernel {kernel}"
        for buffer in params:
            self._declare_buffer(buffer, "a parameter")

    def fail(self, message: str) -> None:
        raise VerifyError(f"kernel {self.kernel}: {message} (in {self.where})")

    def _declare(self, name: str, what: str) -> None:
        previous = self.names.get(name)
        if previous is not None:
            self.fail(f"name {name!r} is defined twice: as {previous} and as {what}")
        self.names[name] = what

    def _declare_buffer(self, buffer: Buffer, what: str) -> None:
        self._declare(buffer.name, f"{what} buffer")
        self.buffers[buffer.name] = buffer

    # uses ---------------------------------------------------------------------------

    def visit_dim(self, dim: Dim) -> None:
        if isinstance(dim, int):
            return
        for symbol in arith.free_symbols(dim):
            if symbol.name not in self.syms:
                hint = ""
                if symbol.name in self.hidden:
                    hint = (
                        "; inside a block only its iterators and the kernel's symbols are "
                        "visible, not enclosing loop variables"
                    )
                self.fail(f"symbol {symbol.name} is not defined here{hint}")

    def visit_Var(self, expr: Var) -> None:
        if expr not in self.vars:
            self.fail(f"variable {expr.name} ({expr.dtype}) is used outside its let")

    def visit_buffer(self, buffer: Buffer) -> None:
        declared = self.buffers.get(buffer.name)
        if declared is None:
            self.fail(
                f"buffer {buffer.name} is neither a parameter nor allocated in an enclosing scope"
            )
        if declared != buffer:
            self.fail(f"buffer {buffer.name} is used as {buffer!r} but declared as {declared!r}")

    # binders ------------------------------------------------------------------------

    def visit_For(self, stmt: For) -> None:
        self.where = f"loop {stmt.var}"
        self.visit_dim(stmt.start)
        self.visit_dim(stmt.extent)
        self._declare(stmt.var.name, "a loop variable")
        self.syms.add(stmt.var.name)
        self.visit_stmt(stmt.body)
        self.syms.discard(stmt.var.name)

    def visit_LetStmt(self, stmt: LetStmt) -> None:
        self.where = f"let {stmt.var!r}"
        self.visit_expr(stmt.value)
        if isinstance(stmt.var, arith.Sym):
            self._declare(stmt.var.name, "a let symbol")
            self.syms.add(stmt.var.name)
            self.visit_stmt(stmt.body)
            self.syms.discard(stmt.var.name)
        else:
            self._declare(stmt.var.name, "a let variable")
            self.vars.add(stmt.var)
            self.visit_stmt(stmt.body)
            self.vars.discard(stmt.var)

    def visit_Allocate(self, stmt: Allocate) -> None:
        self.where = f"allocate {stmt.buffer.name}"
        self.visit_buffer_def(stmt.buffer)
        self._declare_buffer(stmt.buffer, "an allocated")
        self.visit_stmt(stmt.body)
        del self.buffers[stmt.buffer.name]

    def visit_BlockRealize(self, stmt: BlockRealize) -> None:
        self.where = f"block {stmt.block.name!r}"
        for value in stmt.iter_values:
            self.visit_dim(value)
        self.visit_expr(stmt.predicate)
        for iv in stmt.block.iter_vars:
            self.visit_dim(iv.extent)
        saved = (self.syms, self.hidden, self.vars)
        self.hidden = self.syms | self.hidden
        self.syms = set(self.kernel_syms)
        self.vars = set()
        self.visit_stmt(stmt.block)
        self.syms, self.hidden, self.vars = saved

    def visit_Block(self, stmt: Block) -> None:
        for iv in stmt.iter_vars:
            self._declare(iv.var.name, f"an iterator of block {stmt.name!r}")
            self.syms.add(iv.var.name)
        for buffer in stmt.alloc_buffers:
            self.visit_buffer_def(buffer)
            self._declare_buffer(buffer, f"block {stmt.name!r}'s allocated")
        for region in stmt.reads + stmt.writes:
            self.visit_region(region)
        if stmt.init is not None:
            self.visit_stmt(stmt.init)
        self.visit_stmt(stmt.body)
        for buffer in stmt.alloc_buffers:
            del self.buffers[buffer.name]

    def visit_BufferStore(self, stmt: BufferStore) -> None:
        self.where = f"store to {stmt.buffer.name}"
        super().visit_BufferStore(stmt)


def verify_body(
    kernel: str, params: Iterable[Buffer], symbols: Iterable[arith.Sym], body: Stmt
) -> None:
    """Check the scoping rules of the module docstring; raise ``VerifyError`` otherwise."""
    _Verifier(kernel, params, symbols).visit_stmt(body)
