"""Arrays of other libraries as arguments and results through DLPack: jax (always
installed in tests) and torch (skipped without it), zero-copy where the layout allows
(asserted with data pointers), bfloat16 and bool included, and the refusals."""

import gc

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import relaxjax as relax
from relaxjax import dlpack
from relaxjax.runtime.arguments import coerce_array

T = relax.Tensor
BF16 = np.dtype(ml_dtypes.bfloat16)


def _pointer(array) -> int:
    if isinstance(array, np.ndarray):
        return array.ctypes.data
    if isinstance(array, jax.Array):
        return array.unsafe_buffer_pointer()
    return array.data_ptr()  # torch


# --------------------------------------------------------------------------- jax


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool", "int8", "float64"])
def test_jax_arrays_are_read_in_place(dtype):
    array = jnp.ones((3, 4), dtype)
    imported = dlpack.as_numpy(array)
    assert imported.dtype == np.dtype(BF16 if dtype == "bfloat16" else dtype)
    assert _pointer(imported) == _pointer(array)
    coerced = coerce_array(T((3, 4), dtype), "argument 'x'")(array)
    assert _pointer(coerced) == _pointer(array)


def test_jax_arguments_annotated_and_not():
    @relax.jit
    def f(x: T(("n", 4), "bfloat16"), y):
        return x.astype("float32") * 2 + y

    x = jnp.arange(8, dtype=jnp.bfloat16).reshape(2, 4)
    y = jnp.ones(4, jnp.float32)
    np.testing.assert_array_equal(f(x, y), np.asarray(x, np.float32) * 2 + 1)
    assert relax.eval_shape(f, x, y) == T((2, 4), "float32")
    assert relax.eval_shape(f, jax.ShapeDtypeStruct((5, 4), jnp.bfloat16), y) == T(
        (5, 4), "float32"
    )


@pytest.mark.parametrize("shape", [(3,), (2, 3), (1 << 19,)])  # small (np.empty) and pooled
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool", "int64"])
def test_results_go_to_jax_without_a_copy(shape, dtype):
    @relax.jit
    def f(x):
        return x | x if dtype == "bool" else x + x

    x = np.ones(shape, BF16 if dtype == "bfloat16" else dtype)
    y = f(x)
    for take in (jax.dlpack.from_dlpack, jnp.from_dlpack):
        imported = take(y)
        assert imported.dtype == jnp.dtype(dtype) and imported.shape == shape
        assert _pointer(imported) == _pointer(y)
        np.testing.assert_array_equal(np.asarray(imported), y)


def test_results_are_aligned_writable_arrays():
    y = relax.jit(lambda x: x * 2)(np.ones(3, np.float32))
    assert type(y) is np.ndarray and y.flags.writeable and y.ctypes.data % 64 == 0
    z = relax.jit(lambda x: x * 2)(np.ones(3, BF16))
    assert isinstance(z, dlpack.DLPackArray) and isinstance(z, np.ndarray) and z.dtype == BF16


def test_bfloat16_export_lives_until_the_consumer_lets_go():
    y = dlpack.exportable(np.arange(6, dtype=BF16).reshape(2, 3))
    imported = jax.dlpack.from_dlpack(y)
    del y
    gc.collect()
    np.testing.assert_array_equal(np.asarray(imported, np.float32), np.arange(6).reshape(2, 3))
    capsule = dlpack.exportable(np.ones(2, BF16)).__dlpack__()  # never consumed
    del capsule
    gc.collect()
    assert len(dlpack._EXPORTED) <= 1  # the jax import above may still hold its export
    del imported
    gc.collect()
    assert not dlpack._EXPORTED


def test_exportable_leaves_other_dtypes_alone():
    array = np.ones(3, np.float32)
    assert dlpack.exportable(array) is array
    view = dlpack.exportable(np.ones(3, BF16))
    assert view.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="cannot export a host array to device"):
        view.__dlpack__(dl_device=(2, 0))
    view.flags.writeable = False
    with pytest.raises(BufferError, match="read-only bfloat16 array"):
        view.__dlpack__()
    assert dlpack.exportable(np.ones(3, np.float32)).__dlpack__() is not None


class _DeviceArray:
    """An array on a device the host cannot read (kDLCUDA), as cupy's."""

    shape, dtype = (2,), np.dtype(np.float32)

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        raise BufferError("device memory")


def test_arrays_the_host_cannot_read_are_refused():
    with pytest.raises(TypeError, match="cannot read _DeviceArray through DLPack"):
        dlpack.as_numpy(_DeviceArray())
    with pytest.raises(TypeError, match=r"argument 'x': cannot read _DeviceArray through DLPack"):
        relax.jit(lambda x: x + 1)(_DeviceArray())


# --------------------------------------------------------------------------- torch


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool", "int64", "uint8", "float16"])
def test_torch_tensors_are_read_in_place(torch, dtype):
    tensor = torch.ones((3, 4), dtype=getattr(torch, dtype))
    imported = dlpack.as_numpy(tensor)
    assert imported.dtype == np.dtype(BF16 if dtype == "bfloat16" else dtype)
    assert _pointer(imported) == _pointer(tensor)
    transposed = dlpack.as_numpy(tensor.t())  # strided: read in place, copied by the runtime
    assert _pointer(transposed) == _pointer(tensor) and transposed.shape == (4, 3)
    tensor[0, 0] = 0
    assert imported[0, 0] == 0


def test_torch_arguments_annotated_unannotated_and_specs(torch):
    @relax.jit
    def f(x: T(("n", 3), "float32"), y):
        return x @ y.T, (x[:, 0] > 0)

    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = torch.ones(4, 3)
    out, mask = f(x, y)
    np.testing.assert_array_equal(out, (x @ y.T).numpy())
    np.testing.assert_array_equal(mask, [False, True])
    np.testing.assert_array_equal(f(x.t().contiguous().t(), y)[0], out)  # a strided tensor
    assert relax.eval_shape(f, torch.ones(5, 3), y) == (T((5, 4), "float32"), T((5,), "bool"))
    lowered = relax.jit(lambda x: x * 2).lower(torch.ones(2, 3, dtype=torch.bfloat16))
    assert 'Tensor((2, 3), "bfloat16")' in str(lowered)


def test_results_go_to_torch_without_a_copy(torch):
    @relax.jit
    def f(x):
        return x * 2, x > 1, (x * 3).astype("bfloat16")

    x = torch.arange(6, dtype=torch.float32)
    for result, dtype in zip(f(x), (torch.float32, torch.bool, torch.bfloat16)):
        tensor = torch.from_dlpack(result)
        assert tensor.dtype == dtype and _pointer(tensor) == _pointer(result)
        np.testing.assert_array_equal(tensor.float().numpy(), np.asarray(result, np.float32))


def test_torch_round_trip_and_closed_over_tensors(torch):
    table = torch.arange(12, dtype=torch.float32).reshape(4, 3)

    @relax.jit
    def f(x, i):
        return x + table[1], relax.numpy.asarray(table)[i]

    rows, gathered = f(torch.zeros(3), torch.tensor([3, 0]))
    back = torch.from_dlpack(rows)
    assert torch.equal(back, table[1])
    np.testing.assert_array_equal(gathered, table[[3, 0]].numpy())


def test_torch_refusals_name_the_argument(torch):
    f = relax.jit(lambda x: x * 2)
    with pytest.raises(
        TypeError, match=r"argument 'x': cannot read Tensor as a host array: .*detach"
    ):
        f(torch.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match=r"unsupported dtype torch.complex64"):
        f(torch.ones(2, dtype=torch.complex64))


def test_docstring_examples():
    import doctest

    failures, tried = doctest.testmod(dlpack)
    assert tried > 0 and failures == 0


# --------------------------------------------------------------------------- round trips


def test_jax_round_trip_through_from_dlpack_without_copies():
    import relaxjax.numpy as rnp

    x = jnp.arange(8.0, dtype=jnp.float32)
    imported = rnp.from_dlpack(x)
    assert isinstance(imported, np.ndarray) and _pointer(imported) == _pointer(x)
    assert _pointer(rnp.from_dlpack(x, copy=True)) != _pointer(x)
    y = relax.jit(lambda a: a * 2.0)(imported)
    back = jnp.from_dlpack(y)
    assert _pointer(back) == _pointer(y)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(x) * 2)
    # inside a trace the imported array is a constant of the program
    np.testing.assert_array_equal(relax.jit(lambda a: a + rnp.from_dlpack(x))(imported), x * 2)


def test_torch_round_trip_through_from_dlpack_without_copies(torch):
    import relaxjax.numpy as rnp

    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    imported = rnp.from_dlpack(x)
    assert _pointer(imported) == _pointer(x)
    y = relax.jit(lambda a: a.T @ a)(imported)
    back = torch.from_dlpack(y)
    assert _pointer(back) == _pointer(y)
    assert torch.equal(back, x.T @ x)


def test_from_dlpack_refusals():
    import relaxjax.numpy as rnp

    with pytest.raises(TypeError, match=r"from_dlpack: list has no __dlpack__ method"):
        rnp.from_dlpack([1, 2])
    with pytest.raises(ValueError, match=r"arrays live on the host, got device='cuda:0'"):
        rnp.from_dlpack(jnp.ones(2), device="cuda:0")
