"""GPU schedule tests: shared kernels import by module name (gpu_kernels.py, and the
schedule and tir tests' sched_kernels.py and tir_kernels.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[2] / "tir"))  # tir_kernels: random kernels
