"""GPU codegen tests: kernels bound by the minimal test binding (``binding.py``) until
the default GPU rules are on main; the toolchain tests need the NVIDIA wheels."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from binding import bind_kernel  # noqa: E402

from relaxjax.runtime.cuda import set_gpu_schedule  # noqa: E402


@pytest.fixture(autouse=True)
def test_binding():
    """Compile cuda programs with the test binding as their GPU schedule."""
    previous = set_gpu_schedule(bind_kernel)
    yield
    set_gpu_schedule(previous)
