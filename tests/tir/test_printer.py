"""Printed text of kernels: a golden matmul, exact round trips, parse errors."""

import sys
from pathlib import Path

import pytest
from hypothesis import given

from relaxjax import arith, tir
from relaxjax.tir import te

sys.path.insert(0, str(Path(__file__).parent))
from tir_kernels import matmul, random_kernels, softmax  # noqa: E402

MATMUL_HEADER = (
    "@prim_func(outputs=1)\n"
    'def matmul(A: Buffer((n, K), "float32"), B: Buffer((K, m), "float32"), '
    'C: Buffer((n, m), "float32")):\n'
)
MATMUL_TEXT = (
    MATMUL_HEADER
    + """\
    with block("root"):
        for i in range(n):
            for j in range(m):
                for k in range(K):
                    with block("C"):
                        v_i = axis.spatial(n, i)
                        v_j = axis.spatial(m, j)
                        v_k = axis.reduce(K, k)
                        reads(A[v_i, v_k], B[v_k, v_j])
                        writes(C[v_i, v_j])
                        with init():
                            C[v_i, v_j] = float32(0.0)
                        C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]"""
)


def test_matmul_golden_text():
    f = matmul()
    assert str(f) == MATMUL_TEXT
    assert repr(f) == MATMUL_TEXT
    assert tir.parse_prim_func(MATMUL_TEXT) == f


def test_html_repr_escapes_and_highlights():
    html = softmax()._repr_html_()
    assert html.startswith('<pre class="relaxjax-tir">') and html.endswith("</pre>")
    assert "<b>for</b> i <b>in</b> range(n):" in html
    assert '"float32"' not in html and "&quot;float32&quot;" in html


def test_round_trip_of_builder_kernels():
    for f in (matmul(), matmul("bfloat16"), softmax(), softmax(width=16)):
        assert tir.parse_prim_func(str(f)) == f


def every_construct() -> tir.PrimFunc:
    """A kernel with each statement kind, loop kind, option and odd expression."""
    n = arith.Sym("n", lower=1, upper=64)
    s = arith.sym("s")
    i, j, vi, t = arith.syms("i j vi t")
    a = tir.Buffer("a", (n, 4), "float16", strides=(8, 1))
    out = tir.Buffer("out", (n,), "bfloat16")
    shared = tir.Buffer("sh", (s, 2), "float32", scope="shared")
    x = tir.Var("x", "float32")
    widened = tir.cast(a[vi, 0], "float32")
    value = tir.select(
        tir.isnan(widened) | (widened >= 2.0),
        tir.if_then_else(
            tir.IndexExpr(vi) < s, sh_load(shared, vi), tir.const(float("-inf"), "float32")
        ),
        -tir.fma(x, x, tir.const(float("nan"), "float32")) // 3.0 % x,
    )
    inner = tir.LetStmt(
        x,
        tir.max(tir.exp2(widened), tir.const(-0.0, "float32")),
        tir.seq(
            tir.IfThenElse(
                tir.ne(tir.IndexExpr(vi % 2), 1) & ~tir.ne(x, x),
                tir.BufferStore(out, tir.cast(value, "bfloat16"), (vi,)),
                tir.Evaluate(tir.call("isinf", x)),
            ),
            tir.LetStmt(
                t,
                tir.IndexExpr(vi * 2 + 1),
                tir.BufferStore(out, tir.const(1.0, "bfloat16"), (t // 3,)),
            ),
        ),
    )
    block = tir.Block(
        "odd block",
        (tir.IterVar(vi, n),),
        (a[vi, 0:4], shared[0:s, 0:2]),
        (tir.BufferRegion.point(out, (vi,)),),
        None,
        tir.Allocate(tir.Buffer("tmp", (s,), "int8", scope="local"), inner),
        (tir.Buffer("blk_local", (4,), "float32", scope="local"),),
        {"schedule_rule": "none", "tile": (8, 4)},
    )
    realize = tir.BlockRealize((i * 2 + j,), tir.IndexExpr(i * 2 + j) < n, block)
    loops = tir.For(j, 0, 2, "vectorized", realize, {"pragma_unroll": True, "level": 1.5})
    loops = tir.For(i, s, (n + 1) // 2, "thread_binding", loops, thread_tag="threadIdx.x")
    body = tir.Allocate(
        shared, tir.seq(loops, tir.For(arith.Sym("u"), 0, 3, "unrolled", tir.seq()))
    )
    return tir.PrimFunc("every", (a, out), body, 1, (s,), {"global_symbol": "every", "opt": 3})


def sh_load(shared, vi):
    return shared[vi % 2, 1]


def test_round_trip_of_every_construct():
    f = every_construct()
    text = str(f)
    assert text.startswith(
        "@prim_func(outputs=1, bounds={'n': (1, 64)}, attrs={'global_symbol': 'every', 'opt': 3})\n"
        'def every(a: Buffer((n, 4), "float16", strides=(8, 1)), out: Buffer((n,), "bfloat16"), '
        "s: int64):"
    )
    assert 'for i in thread_binding(s, s + (n + 1) // 2, thread="threadIdx.x"):' in text
    assert "for j in vectorized(2, annotations={'level': 1.5, 'pragma_unroll': True}):" in text
    assert "where(i * 2 + j < n)" in text
    assert 'with allocate((s, 2), "float32", scope="shared") as sh:' in text
    assert "reads(a[vi, 0:4], sh[0:s, 0:2])" in text
    assert 'float32("nan")' in text and "float32(-0.0)" in text
    g = tir.parse_prim_func(text)
    assert g == f
    assert g.symbols()[0].upper == 64
    assert str(g) == text


@given(random_kernels())
def test_round_trip_of_random_kernels(f):
    assert tir.parse_prim_func(str(f)) == f


def test_statement_repr_is_text():
    i = arith.sym("i")
    buf = tir.Buffer("B", (4,), "int32")
    loop = tir.For(
        i, 0, 4, "parallel", tir.BufferStore(buf, tir.cast(tir.IndexExpr(i), "int32"), (i,))
    )
    assert repr(loop) == 'for i in parallel(4):\n    B[i] = cast(i, "int32")'


def test_parse_expr_with_names():
    i = arith.sym("i")
    buf = tir.Buffer("B", (4,), "int32")
    e = tir.parse_expr('B[i + 1] * int32(2) + cast(i, "int32")', {"B": buf, "i": i})
    assert e == buf[i + 1] * 2 + tir.cast(tir.IndexExpr(i), "int32")
    assert tir.parse_expr("min(i, 3) + 1", {"i": i}) == tir.IndexExpr(arith.min_(i, 3) + 1)


@pytest.mark.parametrize(
    "text, message",
    [
        ("def f(:\n", "line 1"),
        ("x = 1\n", "exactly one @prim_func"),
        ("def f(A: Buffer((4,), 'float32')):\n    pass\n", "decorated with @prim_func"),
        (
            "@prim_func()\ndef f(A: Buffer((4,), 'float32')):\n    A[0] = 1.0\n",
            "line 3: a bare constant 1.0 needs a dtype",
        ),
        (
            "@prim_func()\ndef f(A: Buffer((4,), 'float32')):\n    A[q] = float32(1.0)\n",
            "line 3: name 'q' is not defined here",
        ),
        (
            "@prim_func()\ndef f(A: Buffer((4,), 'float32')):\n"
            "    for i in loop(4):\n        pass\n",
            "line 3: unknown loop kind 'loop'",
        ),
        (
            "@prim_func()\ndef f(A: Buffer((4,), 'float32')):\n"
            "    A[0] = float32(1.0) + int32(1)\n",
            "different dtypes",
        ),
        (
            "@prim_func()\ndef f(A: Buffer((4,), 'float32')):\n    A[0, 1] = float32(1.0)\n",
            "buffer A has 1 dimension",
        ),
        ("@prim_func()\ndef f(A):\n    pass\n", "parameter A needs an annotation"),
    ],
)
def test_parse_errors_name_the_line(text, message):
    with pytest.raises(ValueError, match=message):
        tir.parse_prim_func(text)


def test_printed_names_of_builder_loops():
    n = arith.sym("n")
    a = te.placeholder((n,), "float32", "i")  # a buffer named like the default loop var
    b = te.compute((n,), lambda i: a[i] * 2.0, name="b")
    f = te.create_prim_func([a, b])
    text = str(f)
    assert "for i_1 in range(n):" in text and "v_i = axis.spatial(n, i_1)" in text
    assert tir.parse_prim_func(text) == f
