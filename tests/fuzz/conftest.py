"""Make the fuzzer's modules (tests/fuzz/fuzz_*.py) importable by name."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
