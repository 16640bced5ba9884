"""Make the kernel/module builders of tests/runtime importable as ``rt_build``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
