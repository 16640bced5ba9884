"""String annotations (``from __future__ import annotations``) may name symbols local to
the function that decorates, as typing.get_type_hints(localns=...) would see them."""

from __future__ import annotations

import relaxjax as relax


def _decorated_in_a_function():
    n = relax.sym("n", upper=16)

    @relax.jit
    def double(x: relax.Tensor((n, 4), "float32")):
        return x * 2

    return double


def test_jit_sees_locals_of_the_decorating_frame():
    spec = relax.eval_shape(_decorated_in_a_function())
    assert spec == relax.Tensor(("n", 4), "float32")
    assert spec.shape[0].upper == 16  # the declared bound survives


def test_eval_shape_sees_locals_of_its_caller():
    m = relax.sym("m")

    def inc(x: relax.Tensor((m,), "float32")):
        return x + 1

    assert relax.eval_shape(inc) == relax.Tensor(("m",), "float32")
