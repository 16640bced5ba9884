"""relaxjax.arith: symbolic integer expressions (dims), canonical and provable.

A dim is ``int | Expr``; constants are always plain ints. See ``docs/internals.md``
(section ``arith/``) for the contract and :mod:`relaxjax.arith.expr` for the
canonical form and its print order.
"""

# expr first: its operators bind the modules that build its nodes.
from relaxjax.arith.expr import Dim, Expr, FloorDiv, Max, Min, Mod, Poly, Sym, set_value_of_dim

# isort: split
from relaxjax.arith.algebra import as_dim, exact_div, floordiv, mod
from relaxjax.arith.bounds import bounds
from relaxjax.arith.cases import decide_by_cases
from relaxjax.arith.codegen import compile_dims, to_python
from relaxjax.arith.compare import (
    compare,
    prove_equal,
    prove_ge,
    prove_gt,
    prove_le,
    prove_lt,
    prove_ne,
)
from relaxjax.arith.extremum import max_, min_
from relaxjax.arith.parse import parse_dim
from relaxjax.arith.solve import SolveStep, linear_in, solve_order
from relaxjax.arith.subst import evaluate, free_symbols, subs
from relaxjax.arith.symbols import sym, syms

__all__ = [
    "Dim",
    "Expr",
    "FloorDiv",
    "Max",
    "Min",
    "Mod",
    "Poly",
    "SolveStep",
    "Sym",
    "as_dim",
    "bounds",
    "compare",
    "compile_dims",
    "decide_by_cases",
    "evaluate",
    "exact_div",
    "floordiv",
    "free_symbols",
    "linear_in",
    "max_",
    "min_",
    "mod",
    "parse_dim",
    "prove_equal",
    "prove_ge",
    "prove_gt",
    "prove_le",
    "prove_lt",
    "prove_ne",
    "set_value_of_dim",
    "solve_order",
    "subs",
    "sym",
    "syms",
    "to_python",
]
