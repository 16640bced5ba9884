"""Visitors, mutators, substitution and the analyses built on them."""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given

from relaxjax import arith, tir
from relaxjax.tir import te
from relaxjax.tir.interpreter import run

sys.path.insert(0, str(Path(__file__).parent))
from tir_kernels import matmul, random_kernels, softmax  # noqa: E402

n, m = arith.syms("n m")
i, j, io, ii = arith.syms("i j io ii")


class CountNodes(tir.StmtVisitor):
    def __init__(self):
        self.loads = 0
        self.loops = 0
        self.dims = 0

    def visit_BufferLoad(self, expr):
        self.loads += 1
        super().visit_BufferLoad(expr)

    def visit_For(self, stmt):
        self.loops += 1
        super().visit_For(stmt)

    def visit_dim(self, dim):
        self.dims += 1


def test_visitor_dispatches_per_class():
    counter = CountNodes()
    counter.visit_stmt(matmul().body)
    assert counter.loads == 3  # C (accumulator), A, B
    assert counter.loops == 3
    assert counter.dims > 10


def test_visitor_without_a_method_names_it():
    class Partial(tir.StmtVisitor):
        pass

    Partial.visit_For = None
    with pytest.raises(TypeError, match="Partial has no visit_For"):
        Partial().visit_stmt(matmul().body.block.body)


@given(random_kernels())
def test_identity_mutator_returns_the_same_objects(f):
    assert tir.StmtMutator().visit_stmt(f.body) is f.body


def test_mutator_rebuilds_only_the_changed_path():
    class AddOne(tir.StmtMutator):
        def visit_FloatImm(self, expr):
            return tir.FloatImm(expr.value + 1, expr.dtype)

    f = softmax()
    new = AddOne().visit_stmt(f.body)
    assert new != f.body
    old_blocks = {r.block.name: r for r in tir.iter_blocks(f.body)}
    new_blocks = {r.block.name: r for r in tir.iter_blocks(new)}
    assert new_blocks["e"] is old_blocks["e"]  # no float constant there: untouched
    assert new_blocks["s"] is not old_blocks["s"]


def test_mutator_folds_when_an_operand_becomes_an_index():
    k = tir.Var("k", "int64")
    expr = tir.IndexExpr(i) + k
    assert tir.substitute(expr, {k: tir.IndexExpr(j)}) == tir.IndexExpr(i + j)


def test_substitute_splits_a_loop_and_keeps_the_meaning():
    a = tir.Buffer("a", (n,), "float32")
    b = tir.Buffer("b", (n,), "float32")
    body = tir.BufferStore(b, a[i] * 2.0, (i,))
    split = tir.substitute(body, {i: io * 4 + ii})
    assert split == tir.BufferStore(b, a[io * 4 + ii] * 2.0, (io * 4 + ii,))
    guarded = tir.IfThenElse(tir.IndexExpr(io * 4 + ii) < n, split)
    nest = tir.For(io, 0, (n + 3) // 4, "serial", tir.For(ii, 0, 4, "vectorized", guarded))
    f = tir.PrimFunc("split", (a, b), nest)
    data = np.arange(7, dtype="float32")
    np.testing.assert_array_equal(run(f, data), data * 2)


def test_substitute_renames_binders_and_rewrites_buffer_shapes():
    f = matmul()
    loop = f.body.block.body
    renamed = tir.substitute(loop, {"i": arith.Sym("row")})
    assert renamed.var.name == "row"
    realize = tir.find_block(renamed, "C")
    assert realize.iter_values[0] == arith.Sym("row")
    tmp = tir.Buffer("t", (n,), "float32", scope="local")
    alloc = tir.Allocate(tmp, tir.BufferStore(tmp, tmp[0], (0,)))
    changed = tir.substitute(alloc, {n: m * 2})
    assert changed.buffer.shape == (m * 2,)
    assert changed.body.buffer is changed.buffer and changed.body.value.buffer is changed.buffer


def test_substitute_validates_its_mapping():
    with pytest.raises(TypeError, match="symbol i must map to a dim"):
        tir.substitute(tir.IndexExpr(i), {i: 1.5})
    with pytest.raises(TypeError, match="x must map to a PrimExpr"):
        tir.substitute(tir.IndexExpr(i), {tir.Var("x", "float32"): 2})
    assert tir.substitute(i + 1, {"i": 3}) == 4


def test_specialize_gives_a_concrete_kernel():
    f = matmul().specialize({"n": 2, "K": 3})
    assert f.params[0].shape == (2, 3)
    a, b = np.ones((2, 3), "float32"), np.ones((3, 5), "float32")
    np.testing.assert_array_equal(run(f, a, b), np.full((2, 5), 3.0))


def test_block_access_regions_relax_inner_loops():
    a = tir.Buffer("a", (n, 16), "float32")
    b = tir.Buffer("b", (n,), "float32")
    vi, k = arith.syms("vi k")
    body = tir.seq(
        tir.BufferStore(b, tir.const(0.0, "float32"), (vi,)),
        tir.For(k, 2, 8, "serial", tir.BufferStore(b, b[vi] + a[vi, k * 2 - 1], (vi,))),
    )
    block = tir.Block("acc", (tir.IterVar(vi, n),), (), (), None, body)
    reads, writes = tir.block_access_regions(block)
    assert {repr(r) for r in reads} == {"b[vi]", "a[vi, 3:18]"}
    assert [repr(w) for w in writes] == ["b[vi]"]


def test_block_access_regions_of_a_reduction_skip_the_accumulator():
    block = tir.find_block(matmul().body, "C").block
    reads, writes = tir.block_access_regions(block)
    assert [repr(r) for r in reads] == ["A[v_i, v_k]", "B[v_k, v_j]"]
    assert [repr(w) for w in writes] == ["C[v_i, v_j]"]


def test_data_dependent_and_nonaffine_indices_cover_the_axis():
    table = tir.Buffer("table", (m,), "float32")
    ids = tir.Buffer("ids", (n,), "int32")
    out = tir.Buffer("out", (n,), "float32")
    vi, k = arith.syms("vi k")
    store = tir.BufferStore(out, table[ids[vi]] + table[vi * vi], (vi,))
    block = tir.Block("g", (tir.IterVar(vi, n),), (), (), None, store)
    reads, _ = tir.block_access_regions(block)
    assert {repr(r) for r in reads} == {"table[0:m]", "ids[vi]"}
    square = tir.For(k, 0, 4, "serial", tir.BufferStore(out, table[k * k], (vi,)))
    reads, _ = tir.block_access_regions(tir.Block("h", (tir.IterVar(vi, n),), (), (), None, square))
    assert [repr(r) for r in reads] == ["table[0:m]"]


def test_find_block_and_free_symbols():
    f = softmax()
    assert tir.find_block(f.body, "e").block.name == "e"
    with pytest.raises(KeyError, match="no block named 'z'; blocks: e, mx, root, s, y"):
        tir.find_block(f.body, "z")
    assert tir.free_symbols(f.body) == {arith.Sym("n"), arith.Sym("m")}
    x = tir.Var("x", "float32")
    assert tir.free_vars(tir.LetStmt(x, tir.const(1.0, "float32"), tir.Evaluate(x))) == set()
    assert tir.free_vars(tir.Evaluate(x + 1.0)) == {x}


def test_collect_accesses_in_program_order():
    f = te.create_prim_func(
        [
            a := te.placeholder((n,), "float32", "a"),
            te.compute((n,), lambda i: a[i] + a[i], name="b"),
        ]
    )
    accesses = tir.collect_accesses(f.body)
    assert [(x.buffer.name, x.is_write) for x in accesses] == [
        ("b", True),
        ("a", False),
        ("a", False),
    ]
    assert [loop[0].name for loop in accesses[0].loops] == ["i"]
