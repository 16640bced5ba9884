"""The runtime behind ``relax.jit``: one executable for every symbol value, checked calls."""

import numpy as np
import pytest

import relaxjax as relax


@relax.jit
def broadcast_add(x: relax.Tensor(("n",), "float32"), y: relax.Tensor(("m",), "float32")):
    return x + y


@pytest.mark.parametrize("n, m", [(3, 1), (1, 4), (5, 5), (0, 1), (1, 0)])
def test_coarse_shapes_are_computed_at_run_time(n, m):
    x = np.arange(n, dtype=np.float32)
    y = np.arange(m, dtype=np.float32) * 10
    np.testing.assert_array_equal(broadcast_add(x, y), x + y)
    assert broadcast_add.cache_size() == 1


def test_a_broken_run_time_check_names_the_op_values_and_line():
    with pytest.raises(relax.ShapeError) as err:
        broadcast_add(np.ones(3, np.float32), np.ones(4, np.float32))
    text = str(err.value)
    assert text.startswith("add: cannot broadcast shapes (n,), (m,)")
    assert "got n = 3, m = 4" in text
    assert "n bound by argument 'x' axis 0" in text
    assert "test_jit_runtime.py" in text and "return x + y" in text


@relax.jit
def scale(x: relax.Tensor(("n", 4), "float32"), y: relax.Tensor(("n", 4), "float32")):
    return x * 2.0 + y, (x - y,)


def test_structured_outputs_and_keyword_arguments():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y = np.ones((2, 4), np.float32)
    total, (difference,) = scale(y=y, x=x)
    np.testing.assert_array_equal(total, x * 2 + y)
    np.testing.assert_array_equal(difference, x - y)


def test_bad_arguments_through_jit():
    x = np.ones((2, 4), np.float32)
    with pytest.raises(relax.ShapeError, match=r"^argument 'y' axis 0: expected n = 2 \(bound"):
        scale(x, np.ones((3, 4), np.float32))
    with pytest.raises(TypeError, match="^argument 'y': expected dtype float32, got int32$"):
        scale(x, np.ones((2, 4), np.int32))
    with pytest.raises(relax.ShapeError, match="^argument 'x': expected rank 2"):
        scale(np.ones(4, np.float32), x)
    assert scale.cache_size() == 1


def test_unannotated_python_scalars_work():
    @relax.jit
    def times(x, s):
        return x * s

    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(times(x, 2.0), x * 2)
    np.testing.assert_array_equal(times(x, 3.0), x * 3)
