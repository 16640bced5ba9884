"""One thread budget: after a library call, numpy's BLAS workers do not keep spinning.

Each check runs in a fresh interpreter: OpenBLAS's pool is process state, and the
measurement (CPU time the process burns while it sleeps right after a matmul) must
not see other tests' threads.
"""

import json
import os
import subprocess
import sys

import pytest

from relaxjax.runtime import blas

_PROBE = r"""
import json, time
import numpy as np
import relaxjax as relax
from relaxjax.runtime import blas

@relax.jit
def mm(a: relax.Tensor(("n", 768), "float32"), b: relax.Tensor((768, 768), "float32")):
    return a @ b

rng = np.random.default_rng(0)
a = rng.standard_normal((512, 768)).astype(np.float32)
b = rng.standard_normal((768, 768)).astype(np.float32)
np.testing.assert_allclose(mm(a, b), a @ b, rtol=1e-4, atol=1e-3)
burnt = []
for _ in range(5):
    mm(a, b)                                    # OpenBLAS runs on every core
    cpu, wall = time.process_time(), time.perf_counter()
    time.sleep(0.05)                            # ... then the process should be idle
    burnt.append((time.process_time() - cpu) / (time.perf_counter() - wall))
print(json.dumps({"burnt": sorted(burnt)[2], "restarted": list(blas.share_blas_threads())}))
"""


def _probe(**env: str) -> dict:
    environment = {**os.environ, **env}
    environment.setdefault("OPENBLAS_NUM_THREADS", "2")  # a pool even on one core
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def openblas() -> list[str]:
    import numpy  # noqa: F401

    paths = blas.blas_libraries()
    if not paths:
        pytest.skip("numpy's BLAS is not OpenBLAS here")
    return paths


def test_blas_workers_sleep_right_after_a_library_call(openblas):
    result = _probe()
    assert result["restarted"], "the OpenBLAS pool was not restarted"
    # Spinning workers burn 0.2-1 core while the caller sleeps; sleeping ones ~0.
    assert result["burnt"] < 0.05, result


def test_a_users_own_blas_timeout_is_left_alone(openblas):
    result = _probe(OPENBLAS_THREAD_TIMEOUT="30")
    assert result["restarted"] == []


def test_the_loaded_openblas_is_found(openblas):
    assert all("openblas" in os.path.basename(p).lower() for p in openblas)
    assert len(set(openblas)) == len(openblas)
