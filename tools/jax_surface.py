"""How much of jax's public surface relaxjax shares: names in both, and the ones missing.

    python tools/jax_surface.py            # counts per module
    python tools/jax_surface.py --missing  # also list the names relaxjax lacks

Compares ``dir()`` of jax.numpy, jax.numpy.linalg, jax.nn, jax.lax and
jax.scipy.special with relaxjax's modules of the same names (public names only).
The names left out on purpose, with the reason, are listed in docs/ops.md.
"""

from __future__ import annotations

import argparse
import importlib

PAIRS = (
    ("jax.numpy", "relaxjax.numpy"),
    ("jax.numpy.linalg", "relaxjax.numpy.linalg"),
    ("jax.nn", "relaxjax.nn"),
    ("jax.lax", "relaxjax.lax"),
    ("jax.scipy.special", "relaxjax.scipy.special"),
)


def public_names(module_name: str) -> set[str] | None:
    """The public names of a module, or None when it cannot be imported."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return {name for name in dir(module) if not name.startswith("_")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list the names relaxjax lacks")
    args = parser.parse_args()
    for jax_name, ours_name in PAIRS:
        theirs = public_names(jax_name)
        ours = public_names(ours_name)
        if theirs is None:
            print(f"{jax_name}: not importable")
            continue
        shared = theirs & (ours or set())
        status = "" if ours is not None else f" ({ours_name} does not exist)"
        print(f"{ours_name}: {len(shared)} of {jax_name}'s {len(theirs)} names{status}")
        if args.missing:
            print("  missing:", " ".join(sorted(theirs - shared)) or "-")


if __name__ == "__main__":
    main()
