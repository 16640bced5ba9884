"""Make the fake ops of tests/ir importable as ``ir_fakes`` (tests use importlib mode)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
