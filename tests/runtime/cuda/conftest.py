from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[2] / "backends" / "cuda"))

from binding import bind_kernel  # noqa: E402
from fake_driver import FakeDriver, FakeGemm  # noqa: E402

from relaxjax.runtime.cuda import reset_device, set_gpu_schedule, use_driver  # noqa: E402


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    directory = tmp_path_factory.getbasetemp().parent / "relaxjax-backend-tests-cache"
    monkeypatch.setenv("RELAXJAX_CACHE_DIR", str(directory))


@pytest.fixture
def fake():
    """The runtime on a fake driver (and the test binding as GPU schedule)."""
    driver = FakeDriver()
    device = use_driver(driver, FakeGemm)
    previous = set_gpu_schedule(bind_kernel)
    yield driver, device
    set_gpu_schedule(previous)
    reset_device()


@pytest.fixture
def emulated(monkeypatch):
    """The runtime on a driver that runs the kernels (emulated on the CPU, thread by
    thread), with the test binding as GPU schedule."""
    from emulator import EmulatedCublas, EmulatingDriver

    from relaxjax.runtime.cuda import launcher

    driver = EmulatingDriver()
    device = use_driver(driver, EmulatedCublas)
    previous = set_gpu_schedule(bind_kernel)
    original = launcher.KernelLauncher.__init__

    def attaching(self, device, kernel):
        driver.attach(kernel.module)
        original(self, device, kernel)

    monkeypatch.setattr(launcher.KernelLauncher, "__init__", attaching)
    yield driver, device
    set_gpu_schedule(previous)
    reset_device()
