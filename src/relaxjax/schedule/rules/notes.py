"""No silent cliffs: why a scheduled kernel is not parallel or not vectorised.

A kernel the default rules emit should run its outer loops on every core and its
innermost loops in SIMD registers. When it does not, the reason is written on the
kernel (the attr ``schedule_note``), so that ``print(kernel)``, ``f.profile()`` and
the docs' "profiling a slow model" page can show it instead of leaving a slow
kernel unexplained. :func:`audit` reads a scheduled kernel's loops;
:func:`schedule_note` explains what is missing, from the kernel as the rule got it::

    >>> from relaxjax import arith
    >>> from relaxjax.tir import te
    >>> x = te.placeholder((arith.sym("n"),), "float32", "x")
    >>> r = te.reduce_axis(arith.sym("n"), "r")
    >>> total = te.compute((), lambda: te.sum(x[r], axis=r), name="total")
    >>> func = te.create_prim_func([x, total], name="total")
    >>> print(schedule_note(func, func))  # doctest: +NORMALIZE_WHITESPACE
    not parallel: a reduction to one value (no kept axis to share among threads);
    not vectorised: loop r runs n iterations one by one: a reduction over a symbolic
    extent (n): vector partial sums need a constant extent that the vector width divides

The rules' own limits are the usual reasons: a reduction to a single value has no
kept axis to split among threads; a loop nest too small to share (a few thousand
iterations in all) stays on one thread; a reduction is vectorised with partial
sums only over a constant extent that the vector width divides; a loop that carries
a dependence (a scan) or a hand-written serial algorithm (sorting) is not a rule's
to change. A serial innermost loop counts when it may run many iterations (its
extent is symbolic or at least :data:`LONG_LOOP`); short tails and the horizontal
sums of partial-sum vectors do not.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaxjax import arith
from relaxjax.errors import ScheduleError
from relaxjax.schedule.rules.patterns import simple_nests
from relaxjax.schedule.schedule import Schedule
from relaxjax.tir.expr import BufferLoad
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.stmt import BlockRealize, BufferStore, For

__all__ = [
    "LONG_LOOP",
    "NOTE_ATTR",
    "SMALL_WORK",
    "Audit",
    "audit",
    "reads_along",
    "schedule_note",
    "worth_threads",
]

#: The attr holding the reason a kernel is not parallel or not vectorised.
NOTE_ATTR = "schedule_note"
#: A serial innermost loop of at least this many iterations (or a symbolic extent)
#: runs scalar code where vector code could run.
LONG_LOOP = 64
#: A loop nest of at most this many iterations in all is not worth several threads
#: (the injective rule keeps a lone loop this short on one thread).
SMALL_WORK = 4096


@dataclass(frozen=True, slots=True)
class Audit:
    """What a scheduled kernel's loops do: whether any loop is parallel, and the serial
    innermost loops that may run long (``(loop name, extent, kind)``, the kind being
    ``"reduction"`` for an accumulation along the contiguous axis of what it reads,
    ``"strided"`` for one along another axis, ``"other"`` for a loop that accumulates
    nothing)."""

    parallel: bool
    scalar_loops: tuple[tuple[str, arith.Dim, str], ...]

    @property
    def vectorized(self) -> bool:
        """True when no long innermost loop runs scalar."""
        return not self.scalar_loops


class _Loops(StmtVisitor):
    def __init__(self) -> None:
        self.parallel = False
        self.scalar: list[tuple[str, arith.Dim, str]] = []
        self._vector_depth = 0

    def visit_For(self, stmt: For) -> None:
        self.parallel = self.parallel or stmt.kind == "parallel"
        vector = stmt.kind == "vectorized"
        self._vector_depth += vector
        before = len(self.scalar)
        inner = _has_loop(stmt.body)
        super().visit_For(stmt)
        self._vector_depth -= vector
        if inner or self._vector_depth or stmt.kind != "serial" or len(self.scalar) > before:
            return
        if _long(stmt.extent):
            self.scalar.append((stmt.var.name, stmt.extent, _loop_kind(stmt)))


def _long(extent: arith.Dim) -> bool:
    upper = arith.bounds(extent)[1]
    return upper is None or upper >= LONG_LOOP


class _HasLoop(StmtVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_For(self, stmt: For) -> None:
        self.found = True

    def visit_BlockRealize(self, stmt: BlockRealize) -> None:
        self.visit_stmt(stmt.block.body)


def _has_loop(stmt) -> bool:
    finder = _HasLoop()
    finder.visit_stmt(stmt)
    return finder.found


class _Accumulation(StmtVisitor):
    """Whether a loop's body updates an element it also reads without the loop's
    variable in the index (``acc[i] = acc[i] + x[i, k]`` over ``k``), and whether the
    loop's variable indexes the last axis of some other buffer it reads."""

    def __init__(self, var: str) -> None:
        self.var = var
        self.found = False
        self.contiguous = False

    def visit_BufferStore(self, stmt: BufferStore) -> None:
        loads = _Loads()
        loads.visit_expr(stmt.value)
        for load in loads.loads:
            if load.buffer == stmt.buffer and tuple(load.indices) == tuple(stmt.indices):
                self.found = self.found or self.var not in _names(stmt.indices)
            elif load.indices and self.var in _names(load.indices[-1:]):
                self.contiguous = True
        super().visit_BufferStore(stmt)


def _names(indices) -> set[str]:
    names: set[str] = set()
    for index in indices:
        if isinstance(index, (int, arith.Expr)):
            names |= {s.name for s in arith.free_symbols(index)}
    return names


class _Loads(StmtVisitor):
    def __init__(self) -> None:
        self.loads: list[BufferLoad] = []

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        self.loads.append(expr)
        super().visit_BufferLoad(expr)


def reads_along(stmt, var: str) -> bool:
    """Whether ``stmt`` loads some buffer with ``var`` in the index of its last (contiguous)
    axis, other than an element it also stores to (an accumulator)."""
    finder = _Accumulation(var)
    finder.visit_stmt(stmt)
    return finder.contiguous


def _loop_kind(loop: For) -> str:
    finder = _Accumulation(loop.var.name)
    finder.visit_stmt(loop.body)
    if not finder.found:
        return "other"
    return "reduction" if finder.contiguous else "strided"


def audit(func: PrimFunc) -> Audit:
    """The parallel loops and long scalar innermost loops of ``func`` (see the module doc)."""
    loops = _Loops()
    loops.visit_stmt(func.body)
    return Audit(loops.parallel, tuple(loops.scalar))


def schedule_note(original: PrimFunc, scheduled: PrimFunc, rule: str = "") -> str | None:
    """Why ``scheduled`` (``original`` after the rule named ``rule``) is not parallel or
    not vectorised; None when it is both."""
    found = audit(scheduled)
    serial = not found.parallel and worth_threads(original)
    if not serial and found.vectorized:
        return None
    if simple_nests(original) is None:
        return _hand_written(original, serial, found.scalar_loops)
    reasons = []
    if serial:
        reasons.append("not parallel: " + _why_serial(original, rule))
    for name, extent, kind in found.scalar_loops:
        reasons.append(
            f"not vectorised: loop {name} runs {extent} iterations one by one: "
            + _why_scalar(extent, kind, rule)
        )
    return "; ".join(dict.fromkeys(reasons))


class _Work(StmtVisitor):
    """An upper bound of the innermost iterations a kernel runs (None: unbounded)."""

    def __init__(self) -> None:
        self.total: int | None = 0
        self._scale: list[int | None] = [1]

    def visit_For(self, stmt: For) -> None:
        upper = arith.bounds(stmt.extent)[1]
        outer = self._scale[-1]
        scale = None if upper is None or outer is None else outer * upper
        self._scale.append(scale)
        if not _has_loop(stmt.body):
            self.total = None if scale is None or self.total is None else self.total + scale
        super().visit_For(stmt)
        self._scale.pop()


def worth_threads(func: PrimFunc) -> bool:
    """Whether ``func`` may run more than :data:`SMALL_WORK` innermost iterations, so
    that it is worth running on several threads."""
    work = _Work()
    work.visit_stmt(func.body)
    return work.total is None or work.total > SMALL_WORK


def _why_serial(func: PrimFunc, rule: str) -> str:
    nests = simple_nests(func) or ()
    if all(not n.loops or n.kinds()[0] == "reduce" for n in nests):
        if any(n.loops for n in nests):
            return "a reduction to one value (no kept axis to share among threads)"
        return "no loops (the kernel computes one element)"
    anchor = next(n for n in reversed(nests) if n.loops and n.kinds()[0] == "spatial")
    sch = Schedule(func)
    try:
        sch.parallel(sch.get_loops(sch.get_block(anchor.name))[0])
    except ScheduleError as err:
        return str(err)
    return f"{_by(rule)} left its outer loops serial, though a parallel outer loop is legal"


def _hand_written(func: PrimFunc, serial: bool, scalar_loops) -> str:
    missing = []
    if serial:
        missing.append("not parallel")
    if scalar_loops:
        names = ", ".join(name for name, _, _ in scalar_loops)
        missing.append(f"not vectorised (loops {names})")
    return (
        f"{' and '.join(missing)}: kernel {func.name} is written as statements by its op "
        "(a serial algorithm, not loop nests of blocks the rules can transform)"
    )


def _why_scalar(extent: arith.Dim, kind: str, rule: str) -> str:
    if kind == "other":
        return "it carries a dependence or is not the innermost axis of its data"
    if kind == "strided":
        return (
            "a reduction along an axis that is not the innermost one of its data (strided "
            "reads); vector lanes would come from the kept innermost axis, which "
            f"{_by(rule)} did not vectorise"
        )
    if isinstance(extent, int) and extent % 16 == 0:
        return f"a reduction over {extent} elements that {_by(rule)} left in scalar code"
    what = f"{extent} elements" if isinstance(extent, int) else f"a symbolic extent ({extent})"
    return (
        f"a reduction over {what}: vector partial sums need a constant extent that "
        "the vector width divides"
    )


def _by(rule: str) -> str:
    return f"the {rule} rule" if rule and rule != "none" else "no rule"
