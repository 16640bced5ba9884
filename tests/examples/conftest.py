"""The examples import each other by module name (as ``python examples/generate.py`` runs
them): put ``examples/`` on the path, and this directory for the jax reference."""

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE.parents[1] / "examples"), str(HERE)]
