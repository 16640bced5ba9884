"""float16/bfloat16 elementwise and row kernels compile to PTX with the default GPU rules.

libnvvm (CUDA 13.0) used to reject them: it merged the unrolled lanes' scalar half
operations into vector half operations its NVPTX back end cannot lower ("unsupported
operation", "Do not know how to split the result"); the NVVM dialect now widens half with
``cvt.f32.f16`` and computes half arithmetic in float32."""

from __future__ import annotations

import warnings

import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax.backends.cuda.compile import nvvm_available

PROGRAMS = {
    "add": lambda x: x + x * 2.0,
    "exp": rnp.exp,
    "gelu": rnn.gelu,
    "to_float32": lambda x: x.astype("float32"),
    "from_float32": lambda x: x.astype("float32").astype(x.dtype),
    "transpose": lambda x: x.T * 2.0,
    "softmax": lambda x: rnn.softmax(x, axis=-1),
    "layer_norm": lambda x: rnn.layer_norm(x, x[0], x[1]),
}


@pytest.mark.skipif(not nvvm_available(), reason="libnvvm is not installed")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_half_kernels_compile_with_nvvm(name, dtype):
    program = PROGRAMS[name]
    f = relax.jit(lambda x: program(x), target="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no kernel may fall back to the host
        ptx = f.ptx(relax.Tensor(("n", 64), dtype), arch="sm_90")
    assert ".entry" in ptx
