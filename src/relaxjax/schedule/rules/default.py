"""``default_schedule``: a fast kernel without tuning, or the kernel as it was.

A rule is a function ``(func, target) -> PrimFunc | None`` that returns ``None`` when
it does not apply. ``default_schedule`` tries :data:`CPU_RULES` in order and keeps the
first result that passes validation; when none applies, or a rule fails (a
primitive refused, or the result does not keep the kernel's signature), the
unscheduled kernel is returned — always correct, only slower. Float32 ``tanh`` is
replaced by a vectorisable approximation (:mod:`.approx`) either way. The chosen rule is
recorded in the kernel's attrs as ``schedule_rule``, so ``print(kernel)`` says how a
kernel was scheduled::

    >>> from relaxjax import arith
    >>> from relaxjax.tir import te
    >>> n = arith.sym("n")
    >>> x = te.placeholder((n, 64), "float32", "x")
    >>> y = te.compute((n, 64), lambda i, j: x[i, j] * 2.0, name="y")
    >>> scheduled = default_schedule(te.create_prim_func([x, y], name="scale"))
    >>> dict(scheduled.attrs)["schedule_rule"]
    'injective'

``schedule_kernels(mod)`` applies it to every kernel of a module (a graph pass).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from relaxjax.errors import RelaxError, ScheduleError
from relaxjax.ir import IRModule
from relaxjax.schedule.gpu import finish_gpu, is_finished
from relaxjax.schedule.rules.approx import approximate_tanh
from relaxjax.schedule.rules.gpu import GPU_RULES, is_gpu_target
from relaxjax.schedule.rules.injective import injective_rule
from relaxjax.schedule.rules.matmul import matmul_rule
from relaxjax.schedule.rules.reduction import reduction_rule
from relaxjax.schedule.rules.target import cpu_params
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtVisitor
from relaxjax.tir.stmt import For

__all__ = [
    "CPU_RULES",
    "RULE_ATTR",
    "Rule",
    "ScheduleKernels",
    "default_schedule",
    "is_scheduled",
    "schedule_kernels",
]

Rule = Callable[[PrimFunc, object], "PrimFunc | None"]

#: The attr naming the rule that scheduled a kernel ("none" when none applied).
RULE_ATTR = "schedule_rule"

#: The CPU rules, most specific first, with the names recorded in ``RULE_ATTR``.
CPU_RULES: tuple[tuple[str, Rule], ...] = (
    ("matmul", matmul_rule),
    ("reduction", reduction_rule),
    ("injective", injective_rule),
)


def _signature(func: PrimFunc) -> tuple:
    return (func.params, func.num_outputs, func.scalar_params)


def _valid(original: PrimFunc, scheduled: object) -> bool:
    """The rule's result is a kernel with the very same signature."""
    return isinstance(scheduled, PrimFunc) and _signature(scheduled) == _signature(original)


def _thread_bound(func: PrimFunc) -> bool:
    found = []

    class _Find(StmtVisitor):
        def visit_For(self, loop: For) -> None:
            if loop.kind == "thread_binding":
                found.append(loop)
            super().visit_For(loop)

    _Find().visit_stmt(func.body)
    return bool(found)


def is_scheduled(func: PrimFunc) -> bool:
    """True when ``func`` went through ``default_schedule`` already."""
    return RULE_ATTR in dict(func.attrs)


def _finish(func: PrimFunc, name: str, target: object) -> PrimFunc:
    """The chosen kernel, its math made vectorisable and its rule recorded."""
    if is_gpu_target(target):
        return func.with_attrs({**dict(func.attrs), RULE_ATTR: name})
    try:
        fast_tanh = cpu_params(target).fast_tanh
    except ValueError:
        fast_tanh = False
    if fast_tanh:
        func = approximate_tanh(func)
    return func.with_attrs({**dict(func.attrs), RULE_ATTR: name})


def default_schedule(
    func: PrimFunc,
    target: object = "llvm",
    rules: Sequence[tuple[str, Rule]] | None = None,
    strict: bool = False,
) -> PrimFunc:
    """``func`` scheduled by the first rule of ``rules`` that applies (see the module
    doc); the unscheduled ``func`` (marked ``schedule_rule="none"``) when none does.
    ``rules`` defaults to :data:`CPU_RULES`, or to the GPU rules for ``target="cuda"``
    (:mod:`relaxjax.schedule.rules.gpu`), whose kernels are finished for the GPU;
    there a kernel no rule schedules raises ``ScheduleError`` (a GPU kernel cannot
    stay unscheduled), and a kernel already bound to GPU threads (scheduled by hand)
    is only finished (``finish_gpu``), recorded as rule ``"user"``.

    With ``strict``, an error inside a rule propagates instead of falling back (tests
    use it to see why a rule did not apply)."""
    if not isinstance(func, PrimFunc):
        raise TypeError(f"default_schedule expects a tir.PrimFunc, got {type(func).__name__}")
    if is_scheduled(func):
        return func
    gpu = is_gpu_target(target)
    if rules is None:
        rules = GPU_RULES if gpu else CPU_RULES
    if gpu and (is_finished(func) or _thread_bound(func)):
        # Scheduled by hand for the GPU (e.g. through with_kernels): finished as it is.
        return _finish(finish_gpu(func), "user", target)
    failure: Exception | None = None
    for name, rule in rules:
        try:
            scheduled = rule(func, target)
        except (RelaxError, ValueError, TypeError, KeyError) as err:
            # A rule that trips over a kernel it half-recognised must not break
            # compilation: the next rule, or the unscheduled kernel, serves instead.
            if strict:
                raise
            failure = err
            continue
        if scheduled is not None and _valid(func, scheduled):
            return _finish(scheduled, name, target)
    if gpu:
        raise ScheduleError(
            f"default_schedule: no GPU rule schedules kernel {func.name}"
            + (f": {failure}" if failure is not None else "")
        )
    return _finish(func, "none", target)


@dataclass(frozen=True, slots=True)
class ScheduleKernels:
    """The graph pass: every kernel of a module replaced by ``default_schedule`` of it
    (kernels already scheduled, by a rule or marked by the user, are kept); for
    ``target="cuda"`` every kernel comes out finished for the GPU."""

    target: object = "llvm"

    def __call__(self, mod: IRModule) -> IRModule:
        changed = {}
        for name, item in mod.functions.items():
            if isinstance(item, PrimFunc) and not is_scheduled(item):
                changed[name] = default_schedule(item, self.target)
        if not changed:
            return mod
        items = {name: changed.get(name, item) for name, item in mod.functions.items()}
        return IRModule(items)


def schedule_kernels(mod: IRModule, target: object = "llvm") -> IRModule:
    """``mod`` with every kernel scheduled by the default rules for ``target``."""
    return ScheduleKernels(target)(mod)
