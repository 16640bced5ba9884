"""The executable: a graph function compiled once for every value of its symbols.

``build_executable(mod, target)`` legalises the module if it still calls ops
(``passes.default_pipeline``), compiles every kernel that the entry function and
the graph functions it calls use, in one go (``backends.build``), and writes the
generated code of each of those functions once, callees first
(:mod:`relaxjax.runtime.calls`), then the entry's executable
(:mod:`relaxjax.runtime.program`). Calling it with the flat arguments, in
parameter order, returns the flat outputs as a tuple of numpy arrays::

    >>> exe = build_executable(mlp.lower())             # doctest: +SKIP
    >>> (y,) = exe(x, w1, w2)                            # doctest: +SKIP

Bad arguments raise ``ShapeError`` / ``TypeError`` before any kernel runs.

For the ``llvm`` target the legalised module and its machine code are kept in the disk
cache of whole executables (:mod:`relaxjax.runtime.artifact`), keyed by the module as
given: a new process building the same module links the stored code and writes the
host program, skipping the passes and LLVM.
"""

from __future__ import annotations

import functools
import marshal
from collections.abc import Callable, Mapping, Sequence

from relaxjax import backends
from relaxjax.backends import llvm
from relaxjax.errors import LoweringError, ShapeError
from relaxjax.ir import Function, IRModule
from relaxjax.ops.decompositions import LIBRARY_OPS
from relaxjax.passes import default_pipeline, dispatch_library, is_op_call
from relaxjax.passes.walk import called_functions, called_kernels, reachable_functions
from relaxjax.runtime import artifact
from relaxjax.runtime.arguments import undetermined_symbols
from relaxjax.runtime.calls import write_callee
from relaxjax.runtime.profiling import Profile, ProfilingBuild, profile_call
from relaxjax.runtime.program import CalleeCode, KernelHandle, write_program
from relaxjax.runtime.source import known_code, text_digest
from relaxjax.tir import interpreter

__all__ = ["Executable", "build_executable", "entry_function"]

#: "llvm": machine code for this CPU; "reference": kernels run by the tir reference
#: interpreter (slow; the ground truth the tests compare against).
TARGETS = ("llvm", "reference")


class Executable:
    """A compiled graph function; ``exe(*flat_args)`` returns a tuple of numpy arrays.

    ``module`` is the legalised module it was built from, ``function`` the entry
    function, ``callees`` the code of the graph functions it calls, ``source`` the
    generated Python of the call path (for debugging).
    """

    __slots__ = ("module", "function", "compiled", "_run", "_callees", "_handles", "_profiling")

    def __init__(
        self,
        module: IRModule,
        function: Function,
        compiled: Mapping[str, object],
        run: Callable[..., tuple],
        callees: Sequence[CalleeCode] = (),
        handles: Mapping[str, KernelHandle] | None = None,
    ) -> None:
        self.module = module
        self.function = function
        self.compiled = dict(compiled)
        self._run = run
        self._callees = tuple(callees)
        self._handles = dict(handles or {})
        self._profiling: ProfilingBuild | None = None

    def __call__(self, *args: object) -> tuple:
        return self._run(*args)

    @classmethod
    def create(
        cls,
        module: IRModule,
        function: Function,
        compiled: Mapping[str, object],
        run: Callable[..., tuple],
        callees: Sequence[CalleeCode] = (),
        handles: Mapping[str, KernelHandle] | None = None,
    ) -> Executable:
        """An executable whose ``__call__`` *is* ``run``: calling it costs no extra frame."""
        fast = type(cls.__name__, (cls,), {"__slots__": (), "__call__": staticmethod(run)})
        fast.__qualname__ = cls.__qualname__
        fast.__module__ = cls.__module__
        return fast(module, function, compiled, run, callees, handles)

    def profile(self, *args: object) -> Profile:
        """Run once on the flat arguments, timing every kernel launch and library call:
        a per-kernel :class:`~relaxjax.runtime.profiling.Profile` (its ``outputs`` are the
        call's results). The profiling build is written on the first call."""
        if getattr(self._run, "always_raises", False):
            return self._run(*args)  # raises: no arguments can run this function
        if self._profiling is None:
            self._profiling = ProfilingBuild.write(self.function, self._handles, self._callees)
        return profile_call(self._profiling, self.function.name, args)

    @property
    def source(self) -> str:
        """The generated Python source of the call path: the functions of the graph
        functions it calls, then the entry's."""
        texts = [callee.run.__source__ for callee in self._callees]  # type: ignore[attr-defined]
        return "\n".join([*texts, self._run.__source__])  # type: ignore[attr-defined]

    @property
    def callees(self) -> tuple[CalleeCode, ...]:
        """The generated code of each graph function the entry calls, callees first."""
        return self._callees

    @property
    def run(self) -> Callable[..., tuple]:
        """The generated function itself (what ``__call__`` calls)."""
        return self._run

    def __repr__(self) -> str:
        params = ", ".join(p.name_hint for p in self.function.params)
        return f"<Executable {self.function.name}({params}): {len(self.compiled)} kernel(s)>"


def entry_function(mod: IRModule, entry: str | None = None) -> Function:
    """The graph function to run: ``entry``, else the only one, else the only one no other
    function calls, else ``main``."""
    functions = mod.graph_functions()
    if entry is not None:
        if entry not in functions:
            known = ", ".join(functions) or "none"
            raise LoweringError(f"no graph function named {entry!r} (the module has: {known})")
        return functions[entry]
    if len(functions) == 1:
        return next(iter(functions.values()))
    called = {name for f in functions.values() for name in called_functions(f)}
    roots = [name for name in functions if name not in called]
    if len(roots) == 1:
        return functions[roots[0]]
    if "main" in functions:
        return functions["main"]
    known = ", ".join(functions) or "none"
    raise LoweringError(f"which graph function is the entry? the module has: {known}")


def _needs_legalisation(mod: IRModule) -> bool:
    return any(
        is_op_call(binding.value)
        for function in mod.graph_functions().values()
        for block in function.body.blocks
        for binding in block.bindings
    )


def _interpreted(func: object, *args: object) -> None:
    """Run ``func`` in the reference interpreter: ``args`` are its buffers, then the values
    of ``func.symbols()`` (the scalar params among them are passed by name)."""
    count = len(func.params)  # type: ignore[attr-defined]
    scalars = {
        source.sym.name: value
        for source, value in zip(func.symbol_sources(), args[count:])  # type: ignore[attr-defined]
        if source.scalar is not None
    }
    interpreter.run(func, *args[:count], **scalars)


def _handles(
    kernels: Mapping[str, object], target: str, stored: llvm.KernelObject | None = None
) -> tuple[dict, dict]:
    """Kernel handles for the program, and the compiled kernels (kept alive); ``stored``:
    their machine code from a disk artifact (linked, not compiled)."""
    if target == "reference":
        handles = {
            name: KernelHandle(func, python=functools.partial(_interpreted, func))
            for name, func in kernels.items()
        }
        return handles, {}
    if stored is not None:
        compiled = llvm.link_kernels(kernels, stored, llvm.host_target())  # type: ignore[arg-type]
    else:
        compiled = _compile(kernels, target)
    handles = {
        name: KernelHandle(kernels[name], int(compiled[name].address))  # type: ignore[attr-defined]
        for name in kernels
    }
    return handles, compiled


def _compile(kernels: Mapping[str, object], target: str) -> dict[str, object]:
    if not kernels:
        return {}
    built = backends.build(dict(kernels), target=target)
    if not isinstance(built, Mapping):  # a single kernel comes back on its own
        built = {next(iter(kernels)): built}
    return dict(built)


def _raising(error: ShapeError) -> Callable[..., tuple]:
    """The call path of a function no arguments can run: it raises ``error``."""

    def run(*args: object) -> tuple:
        raise ShapeError(error.message)

    run.__source__ = f"# every call raises:\n# ShapeError: {error.message}\n"  # type: ignore[attr-defined]
    run.always_raises = True  # type: ignore[attr-defined]
    return run


def build_executable(
    mod: IRModule, target: str = "llvm", entry: str | None = None, library: bool = True
) -> Executable:
    """Compile ``mod``'s entry function for ``target`` (see the module doc).

    A module that still calls ops goes through ``passes.default_pipeline(target,
    library=library)``: with ``library`` (the default), float matmuls run in BLAS;
    without, they are generated kernels (factorisations, which exist only as LAPACK
    calls, stay library calls).

    Raises:
        LoweringError: the target is not supported, an op cannot be lowered, or the
            module is not something the runtime can run.
    """
    if target not in TARGETS:
        raise LoweringError(f"the runtime supports target(s) {', '.join(TARGETS)}, got {target!r}")
    declared = entry_function(mod, entry)
    problem = undetermined_symbols(declared.name, declared.params)
    if problem is not None:  # no call can bind some symbol: every call says so
        return Executable.create(mod, declared, {}, _raising(problem))
    key = None
    if target == "llvm" and artifact.enabled():
        key = artifact.executable_key(mod, target, entry, library)
        stored = artifact.load_artifact(key) if key is not None else None
        if stored is not None:
            try:
                with known_code(stored.code_objects()):
                    executable = _assemble(stored.module, stored.entry, target, stored.kernels)
            except Exception:  # noqa: BLE001 - an entry that does not load is a miss
                artifact.count_unusable()
            else:
                artifact.count_hit()
                return executable
    if _needs_legalisation(mod):
        native = target == "llvm"
        if native and not library:  # factorisations exist only as LAPACK calls: those stay
            mod = dispatch_library(mod, LIBRARY_OPS)
        mod = default_pipeline("llvm", library=library and native)(mod)
    executable = _assemble(mod, entry, target)
    if key is not None:
        kernels = llvm.kernel_object(executable.compiled) if executable.compiled else None
        code = {
            text_digest(run.__source__): marshal.dumps(run.__compiled__)  # type: ignore[attr-defined]
            for run in [*(callee.run for callee in executable.callees), executable.run]
        }
        stored = artifact.Artifact(executable.module, executable.function.name, kernels, code)
        artifact.store_artifact(key, stored)
    return executable


def _assemble(
    mod: IRModule, entry: str | None, target: str, stored: llvm.KernelObject | None = None
) -> Executable:
    """The executable of legalised ``mod``: its kernels compiled (or linked from
    ``stored``), the generated code of every graph function on the call path written."""
    function = entry_function(mod, entry)
    functions = reachable_functions(mod, function.name)
    names = dict.fromkeys(name for f in functions for name in called_kernels(f))
    handles, compiled = _handles({name: mod[name] for name in names}, target, stored)
    callees: dict[str, CalleeCode] = {}
    for callee in functions[:-1]:
        callees[callee.name] = write_callee(callee, handles, callees)
    run = write_program(function, handles, callees)
    return Executable.create(mod, function, compiled, run, tuple(callees.values()), handles)
