#!/usr/bin/env bash
# The GPU checks of target="cuda" in one short run (< 8 minutes), for a machine with an
# NVIDIA GPU (the project's H100/H200 machine: Python 3.12 with torch, jax, cupy, numba's
# llvmlite and cuda-bindings; CUDA 13.0 driver and toolkit; no package registry).
#
#     tools/gpu_check.sh                 # from the repository root
#     OUT=/some/dir tools/gpu_check.sh   # where the logs go (default: ./gpu_check_out)
#
# Steps, each under its own time limit, each logged to $OUT:
#   1. env.txt      the device, Python packages, and the PTX compiler/assembler relaxjax
#                   finds (libnvvm + ptxas of the NVIDIA wheels or of $CUDA_HOME, else
#                   llvmlite's NVPTX and the driver's JIT), then one small program run on
#                   the GPU against numpy (a smoke test: if this fails, read it first);
#   2. pytest.log   the `gpu`-marked tests (tests/runtime/cuda/test_gpu.py: every op vs jax,
#                   MLP and GPT block at several n with one executable, DLPack with
#                   torch/jax/cupy, CUDA-graph replay, allocator reuse) + junit.xml;
#   3. bench.txt    bench/gpu.py --quick --profile (bandwidth, matmul vs cuBLAS, GPT-2 block vs
#                   torch/torch.compile/jax).
# Wheels the machine lacks can be carried in ./.whl (see docs/gpu.md); they are installed
# into /tmp/site first. The script never downloads anything.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu_check_out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
# jax (the oracle) computes on the CPU; it may see the GPU for the DLPack test, without
# taking 75% of its memory up front (several pytest workers share the GPU).
export RELAXJAX_JAX_GPU=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
# Time limits (seconds): smoke test, tests, all three steps.
SMOKE_LIMIT=${SMOKE_LIMIT:-90} TEST_LIMIT=${TEST_LIMIT:-270} TOTAL_LIMIT=${TOTAL_LIMIT:-450}
export RELAXJAX_CACHE_DIR=${RELAXJAX_CACHE_DIR:-/tmp/relaxjax-gpu-check-cache}
# libnvvm, libdevice and ptxas of the system toolkit, when no NVIDIA wheel has them
# (cuda.pathfinder looks at CUDA_PATH/CUDA_HOME after site-packages).
if [ -z "${CUDA_HOME:-}${CUDA_PATH:-}" ] && [ -d /usr/local/cuda ]; then
    export CUDA_HOME=/usr/local/cuda
fi
if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
start=$(date +%s)

echo "== 1. environment and smoke test (limit $SMOKE_LIMIT s)"
timeout "$SMOKE_LIMIT" "$PY" - >"$OUT/env.txt" 2>&1 <<'EOF'
import importlib.metadata as md, platform, subprocess, sys, time
print("python", sys.version.split()[0], platform.machine())
try:
    print(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip())
except OSError as err:
    print("nvidia-smi:", err)
for name in ("numpy", "llvmlite", "ml_dtypes", "cuda-bindings", "cuda-pathfinder", "nvidia-nvvm",
             "nvidia-cuda-nvcc", "nvidia-nvjitlink", "torch", "jax", "cupy-cuda13x", "pytest"):
    try:
        print(f"  {name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"  {name} -")
import numpy as np
import relaxjax as relax, relaxjax.nn as rnn, relaxjax.numpy as rnp
from relaxjax.backends.cuda import CudaTarget, build as cuda_build
from relaxjax.backends.cuda.compile import libdevice_path, ptx_isa, ptxas_path
from relaxjax.runtime.cuda import current_device, gpu_schedule, probe
print(cuda_build.describe_toolchain(), "| libdevice:", libdevice_path())
if ptxas_path():
    print(subprocess.run([ptxas_path(), "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1])
print("GPU schedule rules:", "installed" if gpu_schedule() is not None else "MISSING (one thread per nest)")
@relax.jit(target="cuda")
def smoke(x: relax.Tensor(("n", 64), "float32")):
    return rnn.softmax(rnp.tanh(x) * 2.0, axis=-1)

found = probe()
print("probe:", found)
arch = current_device().arch if found.available else "sm_90"
print(f"PTX ISA for {arch}:", ptx_isa(smoke.ptx(arch=arch)))
if not found.available:
    sys.exit(1)
print("device:", current_device().driver.device_name(), arch)
for n in (1, 7, 300):
    x = np.random.default_rng(n).standard_normal((n, 64)).astype(np.float32)
    t = time.perf_counter()
    y = np.asarray(smoke(x))
    e = np.exp(np.tanh(x) * 2.0); e /= e.sum(-1, keepdims=True)
    print(f"smoke n={n}: max abs err {np.abs(y - e).max():.2e} ({(time.perf_counter() - t) * 1e3:.1f} ms)")
    assert np.allclose(y, e, rtol=1e-5, atol=1e-6)
print("smoke OK; cache_size", smoke.cache_size())
EOF
smoke=$?
cat "$OUT/env.txt"
echo "(exit $smoke, $(( $(date +%s) - start )) s so far)"

echo "== 2. gpu-marked tests (limit $TEST_LIMIT s)"
XDIST=""
if "$PY" -c "import xdist" 2>/dev/null; then XDIST="-n ${WORKERS:-4}"; fi
timeout "$TEST_LIMIT" "$PY" -m pytest -q -m gpu -p no:cacheprovider $XDIST -rfEs --durations=10 \
    --junitxml="$OUT/junit.xml" tests/runtime/cuda/test_gpu.py >"$OUT/pytest.log" 2>&1
tests=$?
tail -n 40 "$OUT/pytest.log"
echo "(exit $tests, $(( $(date +%s) - start )) s so far)"

echo "== 3. bench/gpu.py --quick (limit $(( TOTAL_LIMIT - ($(date +%s) - start) )) s)"
left=$(( TOTAL_LIMIT - ($(date +%s) - start) ))
if [ "$left" -gt 30 ]; then
    timeout "$left" "$PY" bench/gpu.py --quick --profile >"$OUT/bench.txt" 2>&1
    bench=$?
    cat "$OUT/bench.txt"
else
    bench=124
    echo "skipped: no time left" | tee "$OUT/bench.txt"
fi
echo "== done in $(( $(date +%s) - start )) s: smoke=$smoke tests=$tests bench=$bench (124: timed out)"
[ "$smoke" -eq 0 ] && [ "$tests" -eq 0 ] && [ "$bench" -eq 0 ]
