"""Known bugs the generator steers around until they are fixed, by name.

Each entry says what goes wrong and whose part of issue 9 fixes it. The generator asks
``avoid(name)`` where it would produce the pattern; deleting an entry here (once the fix
is merged) makes the fuzzer generate the pattern again, so the fix is fuzzed too.
"""

from __future__ import annotations

KNOWN_BUGS: dict[str, str] = {}


def avoid(name: str) -> bool:
    """True while the bug ``name`` is known and unfixed: do not generate its pattern."""
    if name not in KNOWN_BUGS and name not in FIXED:
        raise KeyError(f"no known bug named {name!r}")
    return name in KNOWN_BUGS


#: Bugs the fuzzer found and that were fixed (kept so the names stay valid).
FIXED: dict[str, str] = {
    "static-zero-extent": (
        "fixed on main (issue 9 part 2, filed as 'rnp.cumsum on zero-extent axes'): a "
        "static 0 in a shape breaks compilation with ZeroDivisionError (integer modulo by "
        "zero), not only in cumsum: the schedule primitive fuse (schedule/loops.py, "
        "`% loop.extent`) and ops/axes.unravel (reshape, cumsum axis=None) divide by the "
        "static extent; e.g. x.reshape(1, 1, 0) for x: (1, 0), cumsum(x, axis=1) for x: "
        "(3, 0). Symbolic dims that are 0 at run time work"
    ),
    "weak-scalar-results": (
        "fixed on main (issue 9 part 2): an op's result is never weakly typed, so a "
        "Python scalar of a higher kind than the tensor gives a strong result: "
        "(x_i32 + 2.0) * y_f32 is float64 (jax: float32), (b_bool + 1) * x_i32 is int64 "
        "(jax: int32), where(c, x_i32, 0.5) and jnp.full(s, 1) likewise"
    ),
    "squeeze-no-axis-symbolic": (
        "fixed on main (issue 9 part 2): rnp.squeeze(x) without axis= on symbolic dims "
        "fails at the first call (LoweringError) or later ('the rank ... is not known')"
    ),
}
