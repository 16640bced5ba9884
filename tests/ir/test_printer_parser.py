"""Printer golden text and print -> parse round trips (hand-built and random programs)."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ir_fakes import OPS, FakeKernel, add, gelu, matmul, nsum, parse_fake_kernel, relu, split

from relaxjax import arith
from relaxjax.errors import SourceLocation
from relaxjax.ir import (
    Binding,
    BindingBlock,
    BlockBuilder,
    Call,
    Constant,
    DataflowBlock,
    ExternDecl,
    ExternFunc,
    Function,
    GlobalVar,
    IRModule,
    PrimInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    TensorInfo,
    Tuple,
    TupleGetItem,
    Var,
    call_extern,
    call_tir,
    module_to_html,
    module_to_text,
    parse_module,
    structural_equal,
    verify,
)

n, m = arith.syms("n m")


def _mlp():
    x = Var("x", TensorInfo((n, 512), "float32"))
    w1 = Var("w1", TensorInfo((512, 2048), "float32"))
    bb = BlockBuilder()
    with bb.function("mlp", [x, w1]):
        with bb.dataflow():
            lv0 = bb.emit(Call(matmul, [x, w1]), location=SourceLocation("/src/model.py", 12))
            lv1 = bb.emit(Call(gelu, [lv0], gelu.Attrs(approximate=False)))
            gv = bb.emit_output(lv1)
        bb.emit_func_output(gv)
    return bb.finalize()


MLP_TEXT = """\
@function
def mlp(x: Tensor((n, 512), "float32"), w1: Tensor((512, 2048), "float32")) -> Tensor((n, 2048), "float32"):
    with dataflow():
        lv0: Tensor((n, 2048), "float32") = matmul(x, w1)  # model.py:12
        lv1: Tensor((n, 2048), "float32") = gelu(lv0, approximate=False)
        gv: Tensor((n, 2048), "float32") = output(lv1)
    return gv
"""  # noqa: E501


def test_golden_text_of_a_small_program():
    mod = _mlp()
    assert str(mod) == MLP_TEXT
    assert module_to_text(mod, locations=False) == MLP_TEXT.replace("  # model.py:12", "")
    assert module_to_html(mod).startswith("<pre>@function")
    assert "-&gt; Tensor" in mod._repr_html_()


def test_round_trip_of_the_small_program():
    mod = _mlp()
    parsed = parse_module(str(mod), OPS)
    assert parsed == mod and structural_equal(parsed, mod)
    assert str(parsed) == str(mod).replace("  # model.py:12", "")
    verify(parsed)


def _every_form():
    """One module using every node kind and printed form."""
    bounded = arith.sym("b", lower=1, upper=4096)
    x = Var("x", TensorInfo((bounded, 4), "float32"))
    y = Var("y", TensorInfo((m, 4), "float32"))
    s = Var("s", PrimInfo("int64", value=m))
    bb = BlockBuilder()
    kernel = bb.add_func(FakeKernel("relu_kernel", "out[i] = max(x[i], 0)"), "relu_kernel")
    bb.add_func(ExternDecl("sgemm", "cblas_sgemm", "openblas"), "sgemm")
    bb.add_func(ExternDecl("plain", "plain_fn"), "plain")
    y_inner = Var("y", TensorInfo((m, 4), "float32"))
    with bb.function("helper", [y_inner, s], attrs={"inline": True, "tag": "h", "eps": 1e-5}):
        bb.emit_func_output(bb.emit(Call(relu, [y_inner])))
    with bb.function("main", [x, y]):
        lv = bb.emit(Call(add, [x, y]))  # a broadcast check is recorded
        lv = bb.emit_match_cast(lv, TensorInfo((bounded, 4), "float32"))
        with bb.dataflow():
            a = bb.emit(Call(add, [lv, PrimValue(2.5, weak=True)]))
            b = bb.emit(Call(add, [a, PrimValue(-3, weak=True)]))
            c = bb.emit(Call(add, [b, PrimValue(True, weak=True)]))
            d = bb.emit(Call(add, [c, PrimValue(float("inf"), weak=True)]))
            e = bb.emit(Call(add, [d, PrimValue(2, "int8")]))
            f = bb.emit(Call(add, [e, PrimValue(bounded * 2 + 1, weak=True)]))
            g = bb.emit(Call(add, [f, PrimValue(float("nan"), "float32")]))
            small = Constant(np.array([[1.5, -2.0, 0.1, 3.0]], np.float32))
            h = bb.emit(Call(add, [g, small]))
            big = Constant(np.arange(40, dtype=np.float32).reshape(10, 4))
            i = bb.emit(Call(add, [h, big]))  # broadcast(b, 10): coarse until cast
            i = bb.emit_match_cast(i, TensorInfo((bounded, 4), "float32"))
            parts = bb.emit(Call(split, [i], split.Attrs(2, axis=1)))
            j = bb.emit(TupleGetItem(parts, 1))
            red = bb.emit(Call(nsum, [j], nsum.Attrs(axis=(0,), scale=math.inf, label='a "q"')))
            tup = bb.emit(Tuple([red, ShapeExpr([bounded, 4]), Tuple([])]))
            kern = bb.emit(call_tir(kernel, [j], TensorInfo((bounded, 2)), ShapeExpr([m])))
            ext = bb.emit(call_extern(ExternFunc("cblas_sgemm"), [kern, j], j.info))
            gv = bb.emit_output(Tuple([ext, tup]))
        with bb.dataflow():
            pass  # an empty block adds nothing
        cast = bb.emit_match_cast(gv, gv.info)
        called = bb.emit(Call(GlobalVar("helper"), [y, PrimValue(m)]))
        bb.emit_func_output(Tuple([cast, called]))
    empty = Constant(np.zeros((0, 3), ml_dtypes.bfloat16))
    with bb.function("consts", []):
        z = bb.emit(Tuple([empty, Constant(np.array(True)), Constant(np.int8(-5))]))
        bb.emit_func_output(z)
    return bb.finalize()


def test_round_trip_of_symbolic_bounds():
    # a data-dependent size k0 (0 <= k0 <= b * 4) bound by a match_cast of a scalar
    b = arith.sym("b", lower=1, upper=64)
    k0 = arith.sym("k0", upper=b * 4)
    x = Var("x", TensorInfo((b, 4), "float32"))
    count = Var("count", PrimInfo("int64"))
    bb = BlockBuilder()
    with bb.function("main", [x, count]):
        with bb.dataflow():
            cast = bb.emit_match_cast(count, PrimInfo("int64", value=k0))
            gv = bb.emit_output(cast)
        bb.emit_func_output(gv)
    mod = bb.finalize()
    verify(mod)
    text = module_to_text(mod)
    assert '@function(bounds={"b": (1, 64), "k0": (0, b * 4)})' in text
    parsed = parse_module(text, OPS)
    assert parsed == mod and module_to_text(parsed) == text
    bound = parsed["main"].body.blocks[0].bindings[0].info.value
    assert bound.upper == b * 4 and arith.prove_le(bound, 256)


def test_round_trip_of_every_form():
    mod = _every_form()
    verify(mod)
    meta = []
    text = module_to_text(mod, meta)
    assert len(meta) == 1 and meta[0].shape == (10, 4)
    for form in [
        '@function(bounds={"b": (1, 4096)})',
        '@function(attrs={"eps": 1e-05, "inline": True, "tag": "h"})',
        'assert broadcast(b, m), "add: shapes must broadcast"',
        "add(lv1, 2.5)",
        "add(lv2, -3)",
        "add(lv3, True)",
        'add(lv4, float("inf"))',
        'add(lv5, prim(2, "int8"))',
        'add(lv6, prim(b * 2 + 1, "int64", weak=True))',
        'add(lv7, prim(float("nan"), "float32"))',
        'const([[1.5, -2.0, 0.10000000149011612, 3.0]], "float32")',
        'const(meta[0], "float32")',
        "split(lv11, sections=2, axis=1)",
        'lv13: Tensor((b, 2), "float32") = lv12[1]',
        'nn.sum(lv13, axis=(0,), keepdims=False, scale=float("inf"), label="a \\"q\\"")',
        "(lv14, shape(b, 4), ())",
        'call_tir(mod.relu_kernel, (lv13,), shape(m), out_info=Tensor((b, 2), "float32"))',
        'call_extern(extern("cblas_sgemm"), (lv16, lv13), out_info=Tensor((b, 2), "float32"))',
        "match_cast(gv, Tuple(",
        'mod.helper(y, prim(m, "int64"))',
        'const([], "bfloat16", shape=(0, 3))',
        'const(True, "bool")',
        'sgemm = extern_decl("cblas_sgemm", library="openblas")',
        'plain = extern_decl("plain_fn")',
        "# kernel relu_kernel\nkernel relu_kernel:\n    out[i] = max(x[i], 0)\n"
        "# end kernel relu_kernel",
    ]:
        assert form in text, form
    parsed = parse_module(text, OPS, meta=meta, parse_kernel=parse_fake_kernel)
    assert parsed == mod
    assert module_to_text(parsed, []) == text
    assert list(parsed) == list(mod)  # insertion order kept
    verify(parsed)
    bounded = parsed["main"].params[0].info.shape[0]
    assert (bounded.lower, bounded.upper) == (1, 4096)


def test_structural_equal_notices_differences():
    base = _mlp()
    assert base != _every_form()
    func = base["mlp"]
    renamed = Function(func.params, func.body, func.ret_info, "mlp", {"x": 1})
    assert IRModule({"mlp": renamed}) != base
    other = parse_module(MLP_TEXT.replace("approximate=False", "approximate=True"), OPS)
    assert other != base
    swapped = parse_module(MLP_TEXT.replace("matmul(x, w1)", "matmul(w1, x)"), OPS)
    assert swapped != base
    x = Var("x", TensorInfo((n,)))
    y = Var("y", TensorInfo((n,)))
    assert structural_equal(Call(relu, [x], None, x.info), Call(relu, [x], None, x.info))
    assert not structural_equal(Call(relu, [x], None, x.info), Call(relu, [y], None, x.info))
    assert structural_equal(Constant(np.ones(2)), Constant(np.ones(2)))
    assert not structural_equal(Constant(np.ones(2)), Constant(np.ones(2, np.float32)))
    assert not structural_equal(PrimValue(1), PrimValue(1.0))


def test_adjacent_plain_blocks_stay_apart():
    x = Var("x", TensorInfo((n,)))
    a = Var("a", TensorInfo((n,)))
    b = Var("b", TensorInfo((n,)))
    blocks = [
        BindingBlock([Binding(a, Call(relu, [x], None, x.info))]),
        BindingBlock([Binding(b, Call(relu, [a], None, x.info))]),
        DataflowBlock([]),
    ]
    func = Function([x], SeqExpr(blocks, b), x.info, "main")
    mod = IRModule({"main": func})
    assert "\n    pass\n" in str(mod)
    assert "    with dataflow():\n        pass\n" in str(mod)
    assert parse_module(str(mod), OPS) == mod


def test_var_names_are_made_unique_and_valid():
    x = Var("x", TensorInfo((n,)))
    first = Var("x", TensorInfo((n,)))
    weird = Var("lambda", TensorInfo((n,)))
    odd = Var("3 d", TensorInfo((n,)))
    blocks = [
        BindingBlock(
            [
                Binding(first, Call(relu, [x], None, x.info)),
                Binding(weird, Call(relu, [first], None, x.info)),
                Binding(odd, Call(relu, [weird], None, x.info)),
            ]
        )
    ]
    mod = IRModule({"main": Function([x], SeqExpr(blocks, odd), x.info, "main")})
    text = str(mod)
    assert "x_1: " in text and "lambda_: " in text and "v3_d: " in text
    assert parse_module(text, OPS) == mod


def test_kernels_need_a_kernel_parser():
    mod = IRModule({"k": FakeKernel("k")})
    assert str(mod) == "# kernel k\nkernel k:\n    pass\n# end kernel k\n"
    with pytest.raises(ValueError, match="line 1: the text holds kernel k; pass parse_kernel"):
        parse_module(str(mod), OPS)
    assert parse_module(str(mod), OPS, parse_kernel=parse_fake_kernel) == mod


@pytest.mark.parametrize(
    "text,message",
    [
        ("x = 1\n", "line 1: expected `name = extern_decl"),
        ("def f(:\n", "line 1: "),
        ("@function\ndef f() -> Object():\n    return y\n", "line 3: undefined variable y"),
        (
            '@function\ndef f(x: Tensor((n,), "float32")) -> Object():\n'
            "    a: Object() = frob(x)\n    return a\n",
            "line 3: unknown op 'frob' (not in the op registry given)",
        ),
        (
            '@function\ndef f(x: Tensor((n,), "float32")) -> Object():\n'
            "    a: Object() = relu(x, alpha=2)\n    return a\n",
            "line 3: relu takes no attributes, got ['alpha']",
        ),
        (
            '@function\ndef f(x: Tensor((n,), "float32")) -> Object():\n'
            "    a: Object() = split(x, parts=2)\n    return a\n",
            "line 3: bad attributes for split:",
        ),
        (
            '@function\ndef f(x: Tensor((n,), "float32")) -> Object():\n'
            "    assert n == 1\n    return x\n",
            "line 3: an assert (run-time check) must follow the binding of a call",
        ),
        (
            '@function\ndef f(x: Tensor((n,), "float32")) -> Object():\n'
            "    a: Object() = relu(x)\n    assert n < 1\n    return a\n",
            "line 4: unknown run-time check 'n < 1'",
        ),
        (
            '@function\ndef f(x: Tensor((n,), "float7")) -> Object():\n    return x\n',
            "line 2: bad Tensor",
        ),
        (
            "@function\ndef f(x) -> Object():\n    return x\n",
            "line 2: parameter x needs its struct info",
        ),
        (
            "@function\ndef f() -> Object():\n    pass\n",
            "line 3: a function must end with `return value`",
        ),
        (
            '@function\ndef f(x: Tensor((n,), "float32")) -> Object():\n'
            '    a: Object() = const(meta[2], "float32")\n    return a\n',
            "line 3: meta[2] is not among the 0 given arrays",
        ),
    ],
)
def test_parse_errors_name_the_line(text, message):
    with pytest.raises(ValueError) as info:
        parse_module(text, OPS)
    assert str(info.value).startswith(message)


# -- random small programs -------------------------------------------------------------

SHAPES = [(n, 4), (4, 4), (1, 4), (n, 1), (m, 4)]


@st.composite
def programs(draw):
    """A random straight-line program over elementwise, matmul and tuple ops."""
    params = [
        Var(f"p{i}", TensorInfo(draw(st.sampled_from(SHAPES)), "float32"))
        for i in range(draw(st.integers(1, 3)))
    ]
    bb = BlockBuilder()
    with bb.function("main", params):
        values = list(params)
        use_dataflow = draw(st.booleans())
        with bb.dataflow() if use_dataflow else _nothing():
            for _ in range(draw(st.integers(1, 6))):
                kind = draw(st.sampled_from(["relu", "gelu", "add", "scalar", "tuple", "cast"]))
                a = draw(st.sampled_from(values))
                tensor = isinstance(a.info, TensorInfo)
                if kind == "relu" and tensor:
                    values.append(bb.emit(Call(relu, [a])))
                elif kind == "gelu" and tensor:
                    attrs = gelu.Attrs(draw(st.booleans()))
                    values.append(bb.emit(Call(gelu, [a], attrs)))
                elif kind == "add" and tensor:
                    b = draw(st.sampled_from(values))
                    if isinstance(b.info, TensorInfo) and b.info.ndim == a.info.ndim:
                        values.append(bb.emit(Call(add, [a, b])))
                elif kind == "scalar" and tensor:
                    scalar = draw(st.sampled_from([PrimValue(2.0, weak=True), PrimValue(3)]))
                    values.append(bb.emit(Call(add, [a, scalar])))
                elif kind == "tuple":
                    values.append(bb.emit(Tuple([a, draw(st.sampled_from(values))])))
                elif kind == "cast" and tensor:
                    values.append(bb.emit_match_cast(a, TensorInfo(ndim=a.info.ndim)))
            last = values[-1]
            out = bb.emit_output(last) if use_dataflow else last
        bb.emit_func_output(out)
    return bb.finalize()


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


@given(programs())
def test_random_programs_round_trip_and_verify(mod):
    verify(mod)
    parsed = parse_module(str(mod), OPS)
    assert parsed == mod
    assert str(parsed) == str(mod)
    verify(parsed)


def test_expr_repr_is_its_text():
    x = Var("x", TensorInfo((n,)))
    assert repr(Call(add, [x, PrimValue(1, weak=True)])) == "add(x, 1)"
    assert repr(Tuple([x])) == "(x,)"
    assert repr(Constant(np.array([1, 2], np.int32))) == 'const([1, 2], "int32")'
    assert repr(add) != ""
    assert 'def main(x: Tensor((n,), "float32"))' in repr(
        Function([x], SeqExpr([], x), x.info, "main")
    )


def test_parse_refuses_ops_named_like_text_forms():
    class Shape:
        name = "shape"
        Attrs = None

    with pytest.raises(ValueError, match=r"op names \['shape'\] clash with forms of the IR text"):
        parse_module(MLP_TEXT, {**OPS, "shape": Shape()})


def test_an_op_named_mod_is_not_a_module_reference():
    class Mod:
        name = "mod"
        Attrs = None

        def infer(self, args, attrs, ctx):
            return args[0]

    x = Var("x", TensorInfo((n,)))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(Call(Mod(), [x, x])))
    mod = bb.finalize()
    assert "= mod(x, x)" in str(mod)
    assert parse_module(str(mod), {"mod": mod["main"].body.blocks[0].bindings[0].value.op}) == mod


@pytest.mark.parametrize(
    "data",
    [
        np.array([1.5, -2.25, np.nan, np.inf], ml_dtypes.bfloat16),
        np.array([0.1, -0.0, -np.inf], np.float16),
        np.array([[1, 2], [3, 255]], np.uint8),
        np.array([[-128, 127]], np.int8),
        np.array([True, False]),
        np.float64(0.1),
        np.zeros((2, 0), np.int64),
    ],
)
def test_inline_constants_round_trip_bit_exactly(data):
    const = Constant(data)
    mod = IRModule({"main": Function([], SeqExpr([], const), const.info, "main")})
    parsed = parse_module(str(mod))
    assert parsed == mod
    assert parsed["main"].body.body.data.tobytes() == np.asarray(data).tobytes()


def test_modules_pickle_for_the_disk_cache():
    import pickle

    x = Var("x", TensorInfo((n, 4), "float32"))
    bb = BlockBuilder()
    kernel = bb.add_func(FakeKernel("k"), "k")
    with bb.function("main", [x]):
        lv = bb.emit(Call(add, [x, Constant(np.ones((1, 4), np.float32))]))
        lv = bb.emit(call_tir(kernel, [lv], lv.info))
        bb.emit_func_output(bb.emit(Call(add, [lv, x])))
    mod = bb.finalize()
    again = pickle.loads(pickle.dumps(mod))
    assert again == mod
    assert str(again) == str(mod)
    const = again["main"].body.blocks[0].bindings[0].value.args[1]
    assert not const.data.flags.writeable
    verify(again)  # call_tir is still the builtin singleton
