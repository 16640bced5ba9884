"""relax.jit / eval_shape / lower: specs, structures, keyword arguments, caching, errors."""

import functools

import jax
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax.ir import IRModule, PrimInfo


@relax.jit
def mlp(
    x: relax.Tensor(("n", 8), "float32"),
    w1: relax.Tensor((8, 16), "float32"),
    w2: relax.Tensor((16, 8), "float32"),
):
    """A two-layer perceptron."""
    return rnn.gelu(x @ w1) @ w2


def test_jit_wraps_the_function():
    assert mlp.__name__ == "mlp"
    assert mlp.__doc__ == "A two-layer perceptron."
    assert isinstance(mlp, relax.Jitted)
    assert repr(mlp) == "<relax.jit mlp target='llvm'>"
    assert relax.jit(target="llvm")(mlp.__wrapped__).target == "llvm"


def test_eval_shape_of_an_annotated_jitted_function():
    assert relax.eval_shape(mlp) == relax.Tensor(("n", 8), "float32")
    assert mlp.eval_shape() == relax.Tensor(("n", 8), "float32")


def test_lower_names_the_graph_function_after_the_python_function():
    mod = mlp.trace()
    assert isinstance(mod, IRModule)
    assert list(mod.graph_functions()) == ["mlp"]
    assert [p.name_hint for p in mod["mlp"].params] == ["x", "w1", "w2"]
    assert mlp.trace() is mod  # traced once


def test_eval_shape_of_an_unannotated_function_with_specs_arrays_and_jax_structs():
    def f(x, y):
        return x * y

    n = relax.sym("n")
    assert relax.eval_shape(f, relax.Tensor((n, 1), "float32"), relax.Tensor((3,), "float32")) == (
        relax.Tensor((n, 3), "float32")
    )
    assert relax.eval_shape(f, np.ones((2, 3), np.int8), jax.ShapeDtypeStruct((3,), "int16")) == (
        relax.Tensor((2, 3), "int16")
    )
    assert relax.eval_shape(f, np.ones(3, np.float32), 2.0) == relax.Tensor((3,), "float32")
    assert relax.eval_shape(f, 2, 3) == relax.Tensor((), "int64", weak=True)  # as jax


def test_traces_are_cached_per_symbol_bounds():
    def f(x):
        return x[1:]

    jitted = relax.jit(f)
    bounded = jitted.eval_shape(relax.Tensor((relax.sym("n", lower=1),), "float32"))
    unbounded = jitted.eval_shape(relax.Tensor(("n",), "float32"))
    assert str(bounded) == 'Tensor((n - 1,), "float32")'
    assert str(unbounded) != str(bounded)  # n may be 0 here: not the bounded trace
    assert jitted.eval_shape(relax.Tensor((relax.sym("n", lower=1),), "float32")) is bounded


def test_specs_override_annotations_in_eval_shape():
    out = relax.eval_shape(mlp, relax.Tensor((5, 8), "float32"))
    assert out == relax.Tensor((5, 8), "float32")
    out = relax.eval_shape(mlp, w1=relax.Tensor((8, 16), "float32"))
    assert out == relax.Tensor(("n", 8), "float32")


def test_structured_arguments_and_outputs():
    def f(params, x):
        h = x @ params["w"] + params["b"]
        return {"out": h, "stats": (h.sum(), [x.shape[0] + 1])}

    specs = {"w": relax.Tensor((4, 3), "float32"), "b": relax.Tensor((3,), "float32")}
    out = relax.eval_shape(f, specs, relax.Tensor(("n", 4), "float32"))
    assert out == {
        "out": relax.Tensor(("n", 3), "float32"),
        "stats": (relax.Tensor((), "float32"), [relax.Tensor((), "int64", weak=True)]),
    }
    params = relax.jit(f).trace(specs, relax.Tensor(("n", 4), "float32"))["f"].params
    assert [p.name_hint for p in params] == ["params_b", "params_w", "x"]


def test_annotated_structured_parameter():
    @relax.jit
    def f(pair: (relax.Tensor(("n",), "float32"), relax.Tensor(("n",), "float32"))):
        a, b = pair
        return a - b

    assert relax.eval_shape(f) == relax.Tensor(("n",), "float32")


def test_outputs_may_be_parameters_constants_scalars_and_dims():
    def f(x):
        return x, np.arange(3), 1.5, x.shape[0], None

    out = relax.eval_shape(f, relax.Tensor(("n",), "int8"))
    assert out == (
        relax.Tensor(("n",), "int8"),
        relax.Tensor((3,), "int64"),
        relax.Tensor((), "float64", weak=True),  # a returned scalar: a weak 0-d array, as jax
        relax.Tensor((), "int64", weak=True),
        None,
    )


def test_non_array_output_names_its_path():
    def f(x):
        return x, {"k": "text"}

    with pytest.raises(TypeError, match=r"f\(\): output\[1\]\['k'\] is a str; a traced function"):
        relax.eval_shape(f, relax.Tensor((2,), "float32"))
    with pytest.raises(TypeError, match=r"lambda_\(\): the output is a str"):
        relax.eval_shape(lambda x: "text", relax.Tensor((2,), "float32"))


def test_keyword_arguments_and_defaults():
    def f(x, y, *, scale=2.0, shift=None):
        out = x * scale + y
        return out if shift is None else out + shift

    spec = relax.Tensor(("n",), "float32")
    jitted = relax.jit(f)
    assert jitted.eval_shape(y=spec, x=spec) == spec
    mod = jitted.trace(spec, spec, shift=np.float64(1.0))
    assert [p.name_hint for p in mod["f"].params] == ["x", "y", "shift"]
    assert jitted.eval_shape(spec, spec, shift=np.float64(1.0)).dtype == "float64"


def test_static_argnames_bake_values():
    @functools.partial(relax.jit, static_argnames=("axis",))
    def total(x, axis):
        return x.sum(axis=axis)

    spec = relax.Tensor((3, "n"), "float32")
    assert total.eval_shape(spec, axis=0) == relax.Tensor(("n",), "float32")
    assert total.eval_shape(spec, 1) == relax.Tensor((3,), "float32")
    assert [p.name_hint for p in total.trace(spec, 1)["total"].params] == ["x"]
    with pytest.raises(TypeError, match="static argument 'axis' must be hashable, got list"):
        total.eval_shape(spec, [0])
    with pytest.raises(TypeError, match=r"total\(\) has no parameter 'ax' \(in static_argnames\)"):
        relax.jit(total.__wrapped__, static_argnames=("ax",))


def test_variadic_parameters():
    def f(*xs, **named):
        return sum(xs[1:], xs[0]) * named["k"]

    spec = relax.Tensor(("n",), "float32")
    assert relax.eval_shape(f, spec, spec, spec, k=spec) == spec


def test_nested_jitted_functions_with_inline_are_traced_into_the_caller():
    @relax.jit(inline=True)
    def inner(x):
        return x * 2

    @relax.jit
    def outer(x: relax.Tensor(("n",), "float32")):
        return inner(x) + 1

    mod = outer.trace()
    assert [b.value.op.name for b in mod["outer"].body.blocks[0].bindings[:2]] == [
        "multiply",
        "add",
    ]
    assert list(mod.graph_functions()) == ["outer"]
    assert inner.cache_size() == 0


# --------------------------------------------------------------------------- errors


def test_wrong_arity_names_the_function():
    with pytest.raises(TypeError, match=r"mlp\(\) missing a required argument: 'w2'"):
        mlp(np.ones((2, 8), np.float32), np.ones((8, 16), np.float32))
    with pytest.raises(TypeError, match=r"mlp\(\) too many positional arguments"):
        mlp.eval_shape(*[relax.Tensor((1,))] * 4)
    with pytest.raises(TypeError, match=r"mlp\(\) got an unexpected keyword argument 'z'"):
        mlp.eval_shape(z=relax.Tensor((1,)))


def test_missing_spec_for_an_unannotated_parameter():
    def f(x, y: relax.Tensor((2,), "float32")):
        return x + y

    with pytest.raises(TypeError, match=r"f\(\): parameter 'x' has no spec: annotate it"):
        relax.jit(f).trace()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("abc", r"f\(\): argument 'x': expected a spec, got str 'abc'; give a spec such as"),
        (relax.Tensor, r"argument 'x': got the class relax.Tensor itself; give a spec"),
        (
            [relax.Tensor((2,)), object],
            r"argument 'x'\[1\]: expected a spec, got type <class 'object'>",
        ),
        (np.ones(2, np.complex64), "complex64"),
    ],
)
def test_bad_specs_raise_type_error(spec, message):
    def f(x):
        return x

    with pytest.raises(TypeError, match=message):
        relax.eval_shape(f, spec)


def test_bad_annotations_raise_type_error():
    def class_annotation(x: relax.Tensor):
        return x

    with pytest.raises(TypeError, match="parameter 'x': annotated with the class relax.Tensor"):
        relax.eval_shape(class_annotation)

    def mixed(x: (relax.Tensor((2,)), 3)):
        return x

    with pytest.raises(TypeError, match="parameter 'x': the annotation mixes specs with int 3"):
        relax.eval_shape(mixed)


BOUNDED = relax.sym("bounded", lower=1)


def test_string_annotations_are_evaluated_in_the_functions_scope():
    n = relax.sym("n", lower=2)

    def f(x: "relax.Tensor((BOUNDED, n), 'float32')"):
        return x * n  # n is in f's closure, BOUNDED in its globals

    out = relax.eval_shape(f)
    assert out.shape[0].lower == 1
    assert out.shape[1].lower == 2

    def g(x: "relax.Tensor((undefined_name,))"):  # noqa: F821
        return x

    with pytest.raises(TypeError, match=r"cannot evaluate the annotation .* NameError"):
        relax.eval_shape(g)


def test_non_spec_annotations_are_ignored():
    def f(x: np.ndarray, k: int = 2):
        return x * k

    assert relax.eval_shape(f, np.ones(2, np.float32)) == relax.Tensor((2,), "float32")


def test_jit_rejects_non_callables_and_bad_targets():
    with pytest.raises(TypeError, match="relax.jit expects a function, got int"):
        relax.jit(3)
    with pytest.raises(TypeError, match="target must be a str"):
        relax.jit(lambda x: x, target=None)


# --------------------------------------------------------------------------- calls


def test_call_runs_and_returns_the_output_structure(reference_runtime):
    @relax.jit
    def f(x: relax.Tensor(("n", 3), "float32"), *, bias):
        y = x + bias
        return {"sum": y, "pair": (y * 2, x.shape[0] + 1)}

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    bias = np.ones(3, np.float32)
    out = f(x, bias=bias)
    np.testing.assert_allclose(out["sum"], x + 1)
    np.testing.assert_allclose(out["pair"][0], (x + 1) * 2)
    assert out["pair"][1] == 3
    assert reference_runtime[0] is f.trace(bias=bias)


def test_keyword_arguments_are_passed_in_parameter_order(reference_runtime):
    @relax.jit
    def f(a, b):
        return a - b

    a, b = np.float32([5.0]), np.float32([2.0])
    np.testing.assert_allclose(f(b=b, a=a), [3.0])
    assert f.cache_size() == 1
    np.testing.assert_allclose(f(a, b=b), [3.0])
    assert f.cache_size() == 1


def test_annotated_symbolic_arguments_compile_once(reference_runtime):
    for n in (1, 4, 9):
        x = np.random.default_rng(n).standard_normal((n, 8)).astype(np.float32)
        w1 = np.ones((8, 16), np.float32)
        w2 = np.ones((16, 8), np.float32)
        out = mlp(x, w1, w2)
        assert out.shape == (n, 8)
    assert mlp.cache_size() == 1
    assert len(reference_runtime) == 1


def test_unannotated_arguments_specialise_on_shape_and_dtype(reference_runtime):
    @relax.jit
    def f(x, y: relax.Tensor(("n",), "float32")):
        return x * y

    y = np.ones(4, np.float32)
    f(np.ones(4, np.float32), y)
    f(np.ones(4, np.float32) * 2, np.ones(7, np.float32)[:4])
    assert f.cache_size() == 1
    f(np.ones(1, np.float32), y)
    assert f.cache_size() == 2
    f(np.ones(4, np.float16), y)
    assert f.cache_size() == 3
    f(2.0, y)  # a Python scalar: a weakly typed float64 scalar parameter
    f(3.0, y)
    assert f.cache_size() == 4
    assert reference_runtime[-1]["f"].params[0].info == PrimInfo("float64", weak=True)


def test_non_array_arguments_raise_type_error(reference_runtime):
    @relax.jit
    def f(x):
        return x

    with pytest.raises(TypeError, match=r"f\(\): argument 'x'\[0\]: expected an array or a "):
        f(["text"])
    with pytest.raises(TypeError, match=r"argument 'x': expected an array or a Python scalar"):
        f(object())


def test_annotated_argument_structure_must_match(reference_runtime):
    @relax.jit
    def f(pair: (relax.Tensor(("n",), "float32"), relax.Tensor(("n",), "float32"))):
        return pair[0]

    with pytest.raises(
        TypeError, match=r"f\(\): argument 'pair': expected a tuple of 2 \(annotated"
    ):
        f(np.ones(2, np.float32))


def test_jitted_wrappers_also_work_eagerly_inside_numpy_code():
    x = np.arange(4, dtype=np.float32)
    out = rnp.exp(x) + 1.0
    np.testing.assert_allclose(out, np.exp(x) + 1.0, rtol=1e-6)
    assert out.dtype == np.float32
