"""A coarse operand whose op attributes name symbols: the run-time shape rule sees their values."""

import numpy as np
import pytest

import relaxjax as relax


@relax.jit
def halves(x: relax.Tensor(("n",), "float32"), y: relax.Tensor(("m",), "float32")):
    k = (x + y).shape[0]  # x + y is coarse (n vs m unproven): k is bound at run time
    return (x + y).reshape(2, k // 2)  # coarse input, symbolic target shape


@pytest.mark.parametrize("n, m", [(6, 6), (4, 1), (1, 8)])
def test_reshape_of_a_coarse_operand_to_a_symbolic_shape(n, m):
    x, y = np.arange(n, dtype="float32"), np.ones(m, "float32")
    np.testing.assert_array_equal(halves(x, y), (x + y).reshape(2, -1))
    assert halves.cache_size() == 1


def test_an_odd_length_is_refused_before_any_kernel_runs():
    with pytest.raises(relax.ShapeError, match="reshape"):
        halves(np.arange(5, dtype="float32"), np.ones(5, "float32"))
