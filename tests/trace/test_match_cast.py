"""relax.match_cast: run-time shape assertions that bind new symbols downstream."""

import numpy as np
import pytest

import relaxjax as relax
from relaxjax.ir import MatchCast
from relaxjax.ir.printer import module_to_text

T = relax.Tensor


def _match_casts(mod, name):
    return [b for blk in mod[name].body.blocks for b in blk.bindings if isinstance(b, MatchCast)]


def test_match_cast_binds_new_symbols_for_everything_downstream():
    @relax.jit
    def f(x: T(dtype="float32"), w: T((4, 5), "float32")):
        y = relax.match_cast(x, T(("m", 4), "float32"))
        assert str(y.shape) == "(m, 4)"
        return y @ w, y.shape[0] * 2

    out, dim = relax.eval_shape(f)
    m = relax.sym("m")
    assert out == T((m, 5), "float32")
    assert dim == T((), "int64", weak=True)  # a returned dim: a weak 0-d int64, as in jax
    mod = f.trace()
    (cast,) = _match_casts(mod, "f")
    assert cast.info == T((m, 4), "float32")
    text = module_to_text(mod, locations=False)
    assert 'lv0: Tensor((m, 4), "float32") = match_cast(x, Tensor((m, 4), "float32"))' in text
    assert 'lv1: Tensor((m, 5), "float32") = matmul(lv0, w)' in text


def test_match_cast_refines_a_coarse_deduction():
    def f(x, y):
        z = x + y  # (n,) with (k,): rank 1, dims unknown
        assert z.info.shape is None
        return relax.match_cast(z, T(("n",), "float32")) * 2

    out = relax.eval_shape(f, T(("n",), "float32"), T(("k",), "float32"))
    assert out == T(("n",), "float32")


def test_a_known_name_asserts_equality_with_that_symbol():
    n = relax.sym("n", lower=1, upper=512)

    def f(x, y):
        y2 = relax.match_cast(y, T(("n", 3), "float32"))
        return x + y2

    out = relax.eval_shape(f, T((n, 3), "float32"), T(ndim=2, dtype="float32"))
    assert out == T((n, 3), "float32")
    assert out.shape[0].upper == 512  # the function's symbol, with its declared bounds


def test_new_symbols_keep_declared_bounds():
    def f(x):
        return relax.match_cast(x, T((relax.sym("m", lower=2),), "int32"))

    out = relax.eval_shape(f, T(ndim=1, dtype="int32"))
    assert out.shape[0].lower == 2


def test_conflicting_bounds_with_the_functions_symbol():
    def f(x):
        return relax.match_cast(x, T((relax.sym("n", lower=3), 2), "float32"))

    with pytest.raises(TypeError, match="symbol 'n' is declared with conflicting bounds"):
        relax.eval_shape(f, T((relax.sym("n", lower=1), 2), "float32"))


def test_impossible_match_is_a_shape_error_naming_the_line():
    def f(x):
        return relax.match_cast(x, T(("m", 5), "float32"))

    with pytest.raises(relax.ShapeError, match=r"can never match Tensor\(\(m, 5\)") as info:
        relax.eval_shape(f, T(("n", 4), "float32"))
    assert info.value.location.lineno == f.__code__.co_firstlineno + 1


def test_dtype_mismatch_is_a_type_error():
    def f(x):
        return relax.match_cast(x, T(("m",), "float16"))

    with pytest.raises(TypeError, match="match_cast: the value has dtype float32 but the spec"):
        relax.eval_shape(f, T(("n",), "float32"))


def test_bad_spec():
    def f(x):
        return relax.match_cast(x, "n, 4")

    with pytest.raises(TypeError, match="match_cast: the spec: expected a spec, got str"):
        relax.eval_shape(f, T(("n",), "float32"))


def test_a_symbol_that_no_dim_binds_is_refused():
    def f(x):
        return relax.match_cast(x, T(("m * m",), "float32"))

    with pytest.raises(relax.TraceError, match="symbol m .* no dim determines it"):
        relax.eval_shape(f, T(ndim=1, dtype="float32"))


def test_eager_match_cast_checks_arrays():
    x = np.zeros((3, 4), np.float32)
    assert relax.match_cast(x, T(("m", 4), "float32")) is x
    assert relax.match_cast(x, T(("m", "m + 1"), "float32")) is x
    with pytest.raises(relax.ShapeError, match=r"axis 1 of .*: expected m \+ 2 = 5, got 4"):
        relax.match_cast(x, T(("m", "m + 2"), "float32"))
    with pytest.raises(relax.ShapeError, match=r"expected rank 1 for .*, got shape \(3, 4\)"):
        relax.match_cast(x, T(("m",), "float32"))
    with pytest.raises(relax.ShapeError, match=r"axis 0: m = 3 is outside its declared bounds"):
        relax.match_cast(x, T((relax.sym("m", lower=4), 4), "float32"))
    with pytest.raises(TypeError, match="dtype float32 but the spec"):
        relax.match_cast(x, T(("m", 4), "int32"))
