"""Which argument size determines which symbol: the plan the argument code follows.

Every dim of a parameter is a *size fact*: the size given for that axis (or the value
given for a scalar parameter) must equal the dim. A fact whose dim is linear in the
one symbol it leaves unknown (``a * n + b``, ``a`` non-zero, ``a`` and ``b`` over
symbols already known) *solves* that symbol: ``n = (size - b) / a``, which must be an
integer within the symbol's declared bounds (and ``a``, when symbolic, must not be 0
at the call). Solved symbols make more facts solvable, so the
plan repeats until nothing changes; the facts left over are checks. All of it is
decided when the executable is built, in a fixed order (facts in parameter order,
then axis order; the first solvable fact first, constant coefficients before symbolic
ones; :func:`arith.solve_order`), so the generated code is straight
line::

    x: Tensor((n * 2,), "float32"), y: Tensor((n + m,), "float32")
    -> solve n from x axis 0 (n * 2), then m from y axis 0 (m + n); no checks left

A symbol that no fact determines (``n * m`` alone, ``n // 2``, ``n * n``) is
*undetermined*: no call can give it a value, and :func:`undetermined_error` says so.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim, Sym
from relaxjax.errors import ShapeError, SourceLocation
from relaxjax.ir import PrimInfo, TensorInfo, Var
from relaxjax.runtime import messages
from relaxjax.runtime.env import SymbolTable
from relaxjax.runtime.source import SourceWriter

__all__ = [
    "SizeFact",
    "Solution",
    "SolvePlan",
    "emit_solution",
    "plan_solutions",
    "size_facts",
    "undetermined_error",
]


@dataclass(frozen=True, slots=True)
class SizeFact:
    """The size of ``param``'s axis ``axis`` (the value of a scalar parameter when
    ``axis`` is None) must equal ``dim``; ``where`` names it for users."""

    param: int
    axis: int | None
    dim: Dim
    where: str

    @property
    def from_shape(self) -> bool:
        """Sizes read from a shape are never negative; scalar values may be."""
        return self.axis is not None


@dataclass(frozen=True, slots=True)
class Solution:
    """``symbol = (size - rest) / coeff`` from the size given for ``fact`` (``coeff`` is
    an int, or a dim over symbols known by then)."""

    symbol: Sym
    fact: SizeFact
    coeff: Dim
    rest: Dim


@dataclass(frozen=True, slots=True)
class SolvePlan:
    """The solutions in the order to compute them, the facts left to check, and the
    symbols nothing determines (sorted by name)."""

    solutions: tuple[Solution, ...]
    checks: tuple[SizeFact, ...]
    undetermined: tuple[Sym, ...]


def size_facts(params: Sequence[Var]) -> list[SizeFact]:
    """Every dim of every parameter (tensor axes and scalar values), in order."""
    facts: list[SizeFact] = []
    for index, param in enumerate(params):
        what = f"argument '{param.name_hint}'"
        info = param.info
        if isinstance(info, TensorInfo) and info.shape is not None:
            facts.extend(
                SizeFact(index, axis, dim, f"{what} axis {axis}")
                for axis, dim in enumerate(info.shape)
            )
        elif isinstance(info, PrimInfo) and info.value is not None:
            facts.append(SizeFact(index, None, info.value, what))
    return facts


def plan_solutions(facts: Sequence[SizeFact], known: Collection[str] = ()) -> SolvePlan:
    """Solve what ``facts`` determine, given the symbols ``known`` already (by name),
    in the order of :func:`arith.solve_order`."""
    steps, undetermined = arith.solve_order([f.dim for f in facts], known)
    solutions = tuple(Solution(s.symbol, facts[s.index], s.coeff, s.rest) for s in steps)
    used = {s.index for s in steps}
    checks = tuple(f for i, f in enumerate(facts) if i not in used)
    return SolvePlan(solutions, checks, undetermined)


def emit_solution(
    w: SourceWriter,
    symbols: SymbolTable,
    solution: Solution,
    size: str,
    location: SourceLocation | None = None,
) -> None:
    """Code binding ``n = (size - rest) / coeff`` (``size``: source of the given size),
    which must be an integer within the symbol's bounds, else a ``ShapeError`` naming
    where the size comes from, the dim and the size; a symbolic coefficient that is 0 at
    the call determines nothing, which is an error too."""
    fact, symbol, coeff = solution.fact, solution.symbol, solution.coeff
    names = symbols.names()
    sites = {name: symbols.site(name) for name in names}
    env = symbols.env_code()

    def raise_if(conditions: Sequence[str], error, hint: str) -> None:
        def make(got: int, env_values: tuple[int, ...]) -> ShapeError:
            made = error(fact.where, fact.dim, symbol, got, dict(zip(names, env_values)), sites)
            made.location = location
            return made

        helper = w.constant(make, hint)
        w.line(f"if {' or '.join(conditions)}:")
        w.line(f"raise {helper}({size}, {env})", 2)

    rest = solution.rest
    rest = "" if rest == 0 else str(rest) if isinstance(rest, int) else f"({symbols.code(rest)})"
    divisor = str(coeff)
    if not isinstance(coeff, int):  # known by now, but 0 would determine nothing
        divisor = w.fresh("c")
        w.line(f"{divisor} = {symbols.code(coeff)}")

        def zero(where: str, dim: Dim, unknown: Sym, got: int, *context: Mapping) -> ShapeError:
            return messages.zero_coefficient(where, dim, unknown, coeff, got, *context)

        raise_if([f"{divisor} == 0"], zero, "undetermined")
    local = symbols.bind(symbol, f"{fact.where} ({fact.dim})")
    difference = f"{size} - {rest}" if rest else size
    if coeff == 1:
        w.line(f"{local} = {difference}")
    elif coeff == -1:
        w.line(f"{local} = {rest} - {size}" if rest else f"{local} = -{size}")
    else:
        w.line(f"{local} = {f'({difference})' if rest else size} // {divisor}")
    conditions = [] if coeff in (1, -1) else [f"{local} * {divisor} != {difference}"]
    lower_implied = (
        fact.from_shape
        and isinstance(coeff, int)
        and coeff > 0
        and isinstance(solution.rest, int)
        and symbol.lower is not None
        and symbol.lower * coeff + solution.rest <= 0
    )
    if symbol.lower is not None and not lower_implied:
        conditions.append(f"{local} < {symbol.lower}")
    if symbol.upper is not None:
        conditions.append(f"{local} > {symbol.upper}")
    elif not fact.from_shape:  # a scalar's value may exceed the int64 kernels take
        conditions.append(f"{local} > {messages.INT64_MAX}")
    if conditions:
        raise_if(conditions, messages.no_solution, "solve")


def undetermined_error(function: str, plan: SolvePlan) -> ShapeError:
    """No argument can give these symbols a value: what to do about it."""
    names = [s.name for s in plan.undetermined]
    symbols = f"symbol {names[0]}" if len(names) == 1 else f"symbols {', '.join(names)}"
    places = [
        f"{fact.where}: {fact.dim}"
        for fact in plan.checks
        if any(s.name in names for s in arith.free_symbols(fact.dim))
    ]
    example = names[0]
    return ShapeError(
        f"function {function}: no argument determines the {symbols} (used only in "
        f"{'; '.join(places)}). A size determines a symbol when its dim is the symbol alone "
        f"or linear in it (like {example} * 2 + 1) once the dim's other symbols are known; "
        "products of unknown symbols, //, %, min and max are not solved. Give each such "
        f"symbol a parameter axis of its own (just {example}), make it a symbolic scalar "
        f'parameter ({example}: relax.sym("{example}")), or declare the axis as one new '
        "symbol and relate it to the others with relax.match_cast inside the function"
    )
