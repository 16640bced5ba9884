"""Statements and kernels: validation, symbol binding, verification (scoping)."""

import pytest

from relaxjax import arith, tir
from relaxjax.errors import VerifyError

n, m, k = arith.syms("n m k")
i, j, vi = arith.syms("i j vi")
A = tir.Buffer("A", (n, m), "float32")
B = tir.Buffer("B", (n, m), "float32")
ONE = tir.const(1.0, "float32")


def copy_kernel(**kwargs) -> tir.PrimFunc:
    body = tir.For(
        i, 0, n, "serial", tir.For(j, 0, m, "parallel", tir.BufferStore(B, A[i, j], (i, j)))
    )
    return tir.PrimFunc("copy", (A, B), body, **kwargs)


def test_store_checks_dtype_and_accepts_python_scalars():
    store = tir.BufferStore(A, 2, (i, j))
    assert store.value == tir.const(2.0, "float32")
    with pytest.raises(
        TypeError, match="cannot store a int64 value into buffer A of dtype float32"
    ):
        tir.BufferStore(A, tir.IndexExpr(i), (i, j))


def test_store_to_an_input_buffer_is_fine():
    body = tir.For(i, 0, n, "serial", tir.For(j, 0, m, "serial", tir.BufferStore(A, ONE, (i, j))))
    f = tir.PrimFunc("fill", (A, B), body)
    assert f.inputs == (A,) and f.outputs == (B,)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: tir.For(i, 0, n, "sequential", tir.seq()), "kind must be one of"),
        (lambda: tir.For(i, 0, -1, "serial", tir.seq()), "negative extent -1"),
        (lambda: tir.For(n + 1, 0, n, "serial", tir.seq()), "loop variable must be an arith.Sym"),
        (lambda: tir.For(i, 0, n, "thread_binding", tir.seq()), "needs a thread_tag"),
        (
            lambda: tir.For(i, 0, n, "parallel", tir.seq(), thread_tag="threadIdx.x"),
            "needs kind 'thread_binding'",
        ),
        (lambda: tir.For(i, 0, n, "serial", A[i, 0]), "body of loop i must be a Stmt"),
        (lambda: tir.For(i, 0, n, "serial", tir.seq(), {"k": object()}), "annotation 'k'"),
        (lambda: tir.IterVar(vi, n, "scan"), "kind must be one of"),
        (lambda: tir.SeqStmt((tir.seq(),)), "at least two statements"),
        (lambda: tir.IfThenElse(A[i, 0], tir.seq()), "must be a bool expression"),
        (lambda: tir.LetStmt(arith.Sym("t"), A[i, 0], tir.seq()), "needs an int64 value"),
        (lambda: tir.LetStmt(tir.Var("t", "int32"), A[i, 0], tir.seq()), "bound to a float32"),
        (
            lambda: tir.Block("b", (tir.IterVar(vi, n),), (), (), tir.seq(), tir.seq()),
            "has an init but no reduce iterator",
        ),
        (
            lambda: tir.BlockRealize(
                (i, j), True, tir.Block("b", (tir.IterVar(vi, n),), (), (), None, tir.seq())
            ),
            "has 1 iterator\\(s\\) but 2 iter value",
        ),
    ],
)
def test_statement_validation(build, message):
    with pytest.raises((TypeError, ValueError), match=message):
        build()


def test_seq_flattens_and_unwraps():
    s1, s2, s3 = (tir.Evaluate(tir.IndexExpr(x)) for x in (1, 2, 3))
    assert tir.seq(s1) is s1
    assert tir.seq(s1, tir.seq(s2, s3)).stmts == (s1, s2, s3)
    assert tir.SeqStmt((s1, tir.SeqStmt((s2, s3)))).stmts == (s1, s2, s3)
    assert tir.seq() == tir.Evaluate(tir.IndexExpr(0))


def test_symbols_in_order_of_first_occurrence_then_scalars():
    c = tir.Buffer("C", (m * 2, k), "float32")
    body = tir.Evaluate(tir.IndexExpr(0))
    f = tir.PrimFunc("f", (A, c), body, scalar_params=(arith.Sym("s"),))
    assert [s.name for s in f.symbols()] == ["n", "m", "k", "s"]
    sources = {src.sym.name: src for src in f.symbol_sources()}
    assert (sources["n"].param, sources["n"].axis) == (0, 0)
    assert (sources["k"].param, sources["k"].axis) == (1, 1)
    assert sources["s"].scalar == 0 and sources["s"].param is None


def test_unbound_symbol_must_be_a_scalar_param():
    c = tir.Buffer("C", (n * 2,), "float32")
    body = tir.Evaluate(tir.IndexExpr(0))
    with pytest.raises(ValueError, match="symbol n in the shape of C is not bound"):
        tir.PrimFunc("f", (c,), body)
    f = tir.PrimFunc("f", (c,), body, scalar_params=(n,))
    assert f.symbols() == (n,)
    with pytest.raises(ValueError, match="scalar param n is already bound"):
        tir.PrimFunc("f", (A,), body, scalar_params=(n,))


@pytest.mark.parametrize("outputs", [-1, 3])
def test_num_outputs_range(outputs):
    with pytest.raises(ValueError, match=r"num_outputs must be in \[0, 2\]"):
        copy_kernel(num_outputs=outputs)


def test_params_must_be_global_buffers():
    local = tir.Buffer("L", (4,), scope="local")
    with pytest.raises(ValueError, match="parameter L must be in global scope"):
        tir.PrimFunc("f", (local,), tir.seq())


def verify_error(body, params=(A, B)):
    with pytest.raises(VerifyError) as info:
        tir.PrimFunc("f", params, body)
    return str(info.value)


def test_verify_undefined_symbol():
    message = verify_error(tir.BufferStore(B, ONE, (i, 0)))
    assert "kernel f: symbol i is not defined here (in store to B)" in message


def test_verify_loop_var_inside_block_is_refused():
    block = tir.Block(
        "b", (tir.IterVar(vi, n),), (), (), None, tir.BufferStore(B, A[i, 0], (vi, 0))
    )
    body = tir.For(i, 0, n, "serial", tir.BlockRealize((i,), True, block))
    message = verify_error(body)
    assert "symbol i is not defined here; inside a block only its iterators" in message


def test_verify_unknown_buffer_and_wrong_shape():
    c = tir.Buffer("C", (4,), "float32")
    assert "buffer C is neither a parameter nor allocated" in verify_error(
        tir.BufferStore(c, ONE, (0,))
    )
    a_other = tir.Buffer("A", (n, 3), "float32")
    message = verify_error(tir.BufferStore(a_other, ONE, (0, 0)))
    assert "buffer A is used as Buffer(A, (n, 3), 'float32') but declared as" in message


def test_verify_duplicate_names():
    inner = tir.For(i, 0, m, "serial", tir.BufferStore(B, ONE, (i, i)))
    message = verify_error(tir.For(i, 0, n, "serial", inner))
    assert "name 'i' is defined twice: as a loop variable and as a loop variable" in message
    clash = tir.For(arith.Sym("A"), 0, n, "serial", tir.seq())
    assert (
        "name 'A' is defined twice: as a parameter buffer and as a loop variable"
        in verify_error(clash)
    )


def test_verify_var_out_of_scope():
    t = tir.Var("t", "float32")
    body = tir.seq(tir.LetStmt(t, ONE, tir.seq()), tir.BufferStore(B, t, (0, 0)))
    assert "variable t (float32) is used outside its let" in verify_error(body)


def test_allocated_buffers_are_scoped():
    tmp = tir.Buffer("T", (n,), "float32", scope="local")
    ok = tir.Allocate(
        tmp, tir.seq(tir.BufferStore(tmp, ONE, (0,)), tir.BufferStore(B, tmp[0], (0, 0)))
    )
    tir.PrimFunc("f", (A, B), ok)
    after = tir.seq(tir.Allocate(tmp, tir.seq()), tir.BufferStore(B, tmp[0], (0, 0)))
    assert "buffer T is neither a parameter nor allocated" in verify_error(after)


def test_prim_func_rebuilders_and_specialize():
    f = copy_kernel()
    assert f.with_name("g").name == "g"
    assert dict(f.with_attrs({"global_symbol": "copy"}).attrs) == {"global_symbol": "copy"}
    g = f.specialize({n: 8})
    assert g.params[0].shape == (8, m) and g.symbols() == (m,)
    h = f.specialize({n: k * 2})
    assert h.params[0].shape == (k * 2, m) and h.scalar_params == (k,)
    assert f.buffer("B") is B
    with pytest.raises(KeyError, match="no parameter 'Z'; parameters: A, B"):
        f.buffer("Z")
