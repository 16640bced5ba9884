"""Test-wide configuration: a deterministic hypothesis profile for CI and jax in x64 mode."""

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("dev", deadline=None, max_examples=40)
settings.register_profile("exhaustive", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session", autouse=True)
def _jax_x64():
    """API.md: dtype results follow jax.numpy with 64-bit types enabled."""
    try:
        import jax
    except ImportError:  # jax is the oracle; tests that need it import it themselves
        return
    jax.config.update("jax_enable_x64", True)
    # The oracle computes on the CPU (exact float32 matmuls, no TF32); on a GPU machine
    # (tools/gpu_check.sh sets RELAXJAX_JAX_GPU=1) jax may also see the GPU, for DLPack tests.
    jax.config.update("jax_platforms", "cpu,cuda" if os.environ.get("RELAXJAX_JAX_GPU") else "cpu")


@pytest.fixture(autouse=True)
def _compile_every_executable(monkeypatch):
    """Tests exercise the compiler, not executables a previous session left on disk (whose
    key does not see a test's monkeypatching of a pass): the disk cache holds object code
    only. tests/runtime/test_artifact.py turns the executable cache on for itself;
    ``RELAXJAX_TEST_DISK_CACHE=all`` runs every test with it (run twice with one
    ``RELAXJAX_CACHE_DIR``, the second run checks loaded executables against the oracles)."""
    monkeypatch.setenv("RELAXJAX_DISK_CACHE", os.environ.get("RELAXJAX_TEST_DISK_CACHE", "objects"))


# Shared test tables (tests/op_cases.py) import by module name from any test directory.
sys.path.insert(0, str(Path(__file__).parent))
