"""``relax.jit`` and ``relax.eval_shape``: trace once, compile once for every symbol value.

>>> import relaxjax as relax
>>> @relax.jit
... def scale(x: relax.Tensor(("n", 4), "float32")):
...     return x * 2.0
>>> relax.eval_shape(scale)
Tensor((n, 4), "float32")
>>> print(scale.trace())                                  # doctest: +SKIP
@function
def scale(x: Tensor((n, 4), "float32")) -> Tensor((n, 4), "float32"):
    ...

A parameter annotated with a spec is traced once, symbolically: every call, for
any value of its symbols, runs the same executable. An unannotated parameter is
specialised to the shape and dtype of the first call that passes it, as in
``jax.jit``; a new shape or dtype compiles a new executable.

A jitted function called while another function is traced becomes a graph
function of the caller's module, traced once and shared by every call site
(:mod:`relaxjax.trace.call`); ``relax.jit(fn, inline=True)`` traces its body into
the caller instead, so the caller's fusion sees across the call.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Hashable, Mapping, Sequence

import numpy as np

import relaxjax.runtime as runtime
import relaxjax.runtime.cuda as cuda_runtime
from relaxjax.backends.cuda import CudaTarget
from relaxjax.dlpack import exportable
from relaxjax.ir import IRModule, donated_params, with_donated
from relaxjax.passes import lower_pipeline
from relaxjax.schedule.replace import replace_kernel
from relaxjax.tir import PrimFunc
from relaxjax.trace import pytree
from relaxjax.trace.call import call_traced, tracing_once
from relaxjax.trace.context import TRACE_STACK
from relaxjax.trace.function import Traced, function_name, trace_function
from relaxjax.trace.signature import CallPlan, FastPath, Signature

__all__ = ["Jitted", "jit", "eval_shape"]

#: What :meth:`Jitted.lower` runs: one shape-generic kernel per op, stored once.
LOWER_PIPELINE = lower_pipeline()


class Jitted:
    """A function compiled for every value of its symbolic dims (made by :func:`jit`).

    Calling it runs the compiled program on arrays and returns the function's
    output structure; :meth:`trace` gives the traced graph program, :meth:`lower`
    the same with a loop-level kernel per op, and :meth:`eval_shape` the output
    specs, none of them running anything.
    """

    def __init__(
        self,
        fn: Callable[..., object],
        target: str = "llvm",
        static_argnames: Sequence[str] = (),
        localns: Mapping[str, object] | None = None,
        inline: bool = False,
        cuda_graphs: cuda_runtime.GraphPolicy | bool = True,
        library: bool = True,
        donate_argnames: Sequence[str] = (),
    ) -> None:
        """``localns``: names visible where ``fn`` was decorated, for string annotations;
        ``inline``: called inside another trace, trace the body into it (see :func:`jit`);
        ``cuda_graphs``: the CUDA graph policy of ``target="cuda"``; ``library``: matmuls
        in BLAS / cuBLAS; ``donate_argnames``: the parameters whose arrays a call may
        overwrite (see :func:`jit`)."""
        if not callable(fn):
            raise TypeError(f"relax.jit expects a function, got {type(fn).__name__}")
        if not isinstance(target, str):
            raise TypeError(f"target must be a str such as 'llvm' or 'cuda', got {target!r}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.target = target
        self.static_argnames = tuple(static_argnames)
        self.inline = bool(inline)
        self.cuda_graphs = cuda_graphs
        self.library = bool(library)
        self._name = function_name(fn)
        self._signature = Signature(fn, self._name, static_argnames, localns)
        self.donate_argnames = _donated_names(self._signature, self._name, donate_argnames)
        self._entries: dict[Hashable, Traced] = {}
        self._traces: dict[Hashable, Traced] = {}
        self._executables: dict[Hashable, Callable[..., object]] = {}
        self._fast_path = FastPath(self._signature)
        self._kernel_overrides: dict[str, PrimFunc] = {}
        self._fast: dict[Hashable, tuple[Callable[..., object], Traced]] = {}

    def __repr__(self) -> str:
        return f"<relax.jit {self._name} target={self.target!r}>"

    # -- tracing --------------------------------------------------------------------------

    def _trace(self, plan: CallPlan) -> Traced:
        traced = self._traces.get(plan.key)
        if traced is None:
            statics = dict(plan.statics)

            def invoke(values: dict[str, object]) -> object:
                arguments = {**values, **statics}
                bound = self._signature.signature.bind_partial()
                for name in self._signature.signature.parameters:
                    if name in arguments:
                        bound.arguments[name] = arguments[name]
                return self.fn(*bound.args, **bound.kwargs)

            with tracing_once(self, plan.key, self._name):
                traced = trace_function(self.fn, plan.params, invoke, self._name)
            self._traces[plan.key] = traced
        return traced

    def trace(self, *specs: object, **kwspecs: object) -> IRModule:
        """The traced graph program, one binding per op call, as an :class:`~relaxjax.ir.IRModule`.

        With no arguments every parameter needs a spec annotation; otherwise give
        specs (``relax.Tensor``, arrays, objects with ``.shape``/``.dtype``) as you
        would give arguments. The graph function is named after the Python function.
        """
        return self._entry(self._signature.plan_specs(specs, kwspecs)).module

    def _entry(self, plan: CallPlan) -> Traced:
        """The trace run by a call (not by a caller's trace): its graph function may
        overwrite the parameters the arguments of ``donate_argnames`` become."""
        if not self.donate_argnames:
            return self._trace(plan)
        entry = self._entries.get(plan.key)
        if entry is None:
            traced = self._trace(plan)
            positions, start = [], 0
            for param in plan.params:
                if param.name in self.donate_argnames:
                    positions += range(start, start + len(param.leaves))
                start += len(param.leaves)
            function = with_donated(traced.module[traced.name], positions)  # type: ignore[arg-type]
            module = traced.module.with_function(traced.name, function)
            entry = self._entries[plan.key] = dataclasses.replace(traced, module=module)
        return entry

    def lower(self, *specs: object, **kwspecs: object) -> IRModule:
        """The graph program with every op legalised to a loop-level kernel.

        Each binding becomes ``call_tir`` of a shape-generic kernel held in the same
        module (``mod.kernels()["matmul"]``), one kernel per op (no fusion, no library
        dispatch), ready to be scheduled and plugged back with :meth:`with_kernels`.
        Specs as for :meth:`trace`.
        """
        return LOWER_PIPELINE(self.trace(*specs, **kwspecs))

    def with_kernels(self, kernels: Mapping[str, PrimFunc]) -> Jitted:
        """This function, running the given kernels in place of :meth:`lower`'s ones.

        ``kernels`` maps a kernel name of ``lower()``'s module to a replacement with the
        same signature, e.g. a scheduled one (``sch.func``); a mismatch raises
        ``ScheduleError``. The replacements are checked when a call first compiles.
        """
        replaced = Jitted(
            self.fn,
            self.target,
            self.static_argnames,
            self._signature._localns,
            self.inline,
            self.cuda_graphs,
            self.library,
            self.donate_argnames,
        )
        replaced._kernel_overrides = {**self._kernel_overrides, **dict(kernels)}
        return replaced

    def _build(self, traced: Traced) -> Callable[..., object]:
        mod = traced.module
        if self._kernel_overrides:
            mod = LOWER_PIPELINE(mod)
            for name, func in self._kernel_overrides.items():
                mod = replace_kernel(mod, name, func)
        if self.target == "cuda":
            return cuda_runtime.build_cuda_executable(
                mod, traced.name, self.cuda_graphs, library=self.library
            )
        return runtime.build_executable(mod, self.target, entry=traced.name, library=self.library)

    def ptx(self, *specs: object, arch: str | None = None, **kwspecs: object) -> str:
        """The PTX of the program for ``target="cuda"``, as text: every GPU kernel the
        call path runs, for ``arch`` (``"sm_80"``, ``"sm_90"``; default: this machine's
        GPU, else sm_90). Specs as for :meth:`trace`. Needs no GPU (nor a cubin
        assembler). A parameter named ``arch`` must be given positionally."""
        traced = self._entry(self._signature.plan_specs(specs, kwspecs))
        mod = traced.module
        if self._kernel_overrides:
            mod = LOWER_PIPELINE(mod)
            for name, func in self._kernel_overrides.items():
                mod = replace_kernel(mod, name, func)
        if arch is None:
            arch = _device_arch()
        program = cuda_runtime.compile_program(
            mod, CudaTarget(arch), traced.name, assemble=False, library=self.library
        )
        return program.ptx

    def eval_shape(self, *specs: object, **kwspecs: object) -> object:
        """The output spec(s), in the function's output structure: no compilation, no data."""
        traced = self._trace(self._signature.plan_specs(specs, kwspecs))
        return pytree.unflatten(traced.out_tree, traced.out_infos)

    # -- running ----------------------------------------------------------------------------

    def __call__(self, *args: object, **kwargs: object) -> object:
        if TRACE_STACK:  # inside another trace: a call of this function's graph function
            self._signature.check_inline_dims(args, kwargs)
            if self.inline:
                return self.fn(*args, **kwargs)
            return call_traced(self._signature, self._trace, args, kwargs)
        fast_key = None if kwargs else self._fast_path.key(args)
        entry = self._fast.get(fast_key) if fast_key is not None else None
        if entry is None:
            plan = self._signature.plan_call(args, kwargs)
            entry = self._executable(plan)
            if fast_key is not None:
                self._fast[fast_key] = entry
            args = plan.flat_args
        executable, traced, bfloat16 = entry
        if self.donate_argnames:
            args = _writable_donations(args, traced)
        outputs = executable(*args)
        if bfloat16:  # numpy cannot export bfloat16 through DLPack: a view that can
            outputs = tuple(map(exportable, outputs))
        return _unflatten_outputs(traced, outputs)

    def _executable(self, plan: CallPlan) -> tuple[Callable[..., object], Traced, bool]:
        """The executable for a planned call (compiled on first use), its trace, and
        whether it returns bfloat16 (outputs then made exportable)."""
        traced = self._entry(plan)
        executable = self._executables.get(plan.key)
        if executable is None:
            executable = self._build(traced)
            self._executables[plan.key] = executable
        return executable, traced, _returns_bfloat16(traced)

    def profile(self, *args: object, **kwargs: object) -> runtime.Profile:
        """Run once on ``args`` (as for a call), timing every kernel and library call.

        Returns a :class:`~relaxjax.runtime.Profile`: per kernel or library function its
        launches, total ms, share of the call's wall time, bytes moved, GB/s and GFLOP/s,
        the schedule rule, and ``!`` with the reason where a kernel is not parallel or
        not vectorised; the ``(host)`` row holds the rest of the wall time. ``print`` it,
        or show it in a notebook; ``profile.result`` is the call's result. Compiling (on
        a first call) is not part of the timed run. See ``docs/profiling.md``.
        """
        if TRACE_STACK:
            raise TypeError(f"{self._name}.profile() runs the function: call it outside a trace")
        plan = self._signature.plan_call(args, kwargs)
        executable, traced, bfloat16 = self._executable(plan)
        flat_args = plan.flat_args
        if self.donate_argnames:
            flat_args = _writable_donations(flat_args, traced)
        profile = executable.profile(*flat_args)  # type: ignore[attr-defined]
        outputs = tuple(map(exportable, profile.outputs)) if bfloat16 else profile.outputs
        return profile.with_result(_unflatten_outputs(traced, outputs))

    def cache_size(self) -> int:
        """How many executables were compiled (one per distinct specialisation)."""
        return len(self._executables)


def _donated_names(signature: Signature, name: str, names: Sequence[str]) -> tuple[str, ...]:
    """``donate_argnames`` checked against the function's traced parameters."""
    names = (names,) if isinstance(names, str) else tuple(names)
    params = signature.signature.parameters
    for arg in names:
        if arg not in params or arg in signature.static_argnames:
            raise ValueError(
                f"relax.jit({name}): donate_argnames names {arg!r}, which is not a traced "
                f"parameter of {name} (its parameters: {', '.join(params) or 'none'})"
            )
    return names


def _writable_donations(args: Sequence[object], traced: Traced) -> Sequence[object]:
    """The flat arguments, each donated one that is not a writable numpy array copied (the
    program writes into donated arrays; another library's array is never overwritten)."""
    donated = donated_params(traced.module[traced.name])  # type: ignore[arg-type]
    copies = [i for i in donated if not _writable(args[i])]
    if not copies:
        return args
    args = list(args)
    for i in copies:
        args[i] = np.array(args[i])
    return args


def _writable(arg: object) -> bool:
    """Whether the program may write into ``arg`` (not an array: nothing to write)."""
    if type(arg) is np.ndarray:
        return arg.flags.writeable
    return not hasattr(arg, "shape") or hasattr(arg, "__cuda_array_interface__")


def _returns_bfloat16(traced: Traced) -> bool:
    """Whether some output of ``traced`` is a bfloat16 tensor."""
    leaves, _ = pytree.flatten(traced.out_infos)
    return any(getattr(leaf, "dtype", None) == "bfloat16" for leaf in leaves)


def _device_arch() -> str:
    """The architecture of this machine's GPU, or sm_90 without one."""
    if not cuda_runtime.probe().available:
        return "sm_90"
    return cuda_runtime.current_device().arch


def _unflatten_outputs(traced: Traced, outputs: object) -> object:
    """The executable's flat outputs, in the structure the function returned."""
    if traced.out_tree is pytree.LEAF:
        return outputs[0] if isinstance(outputs, tuple | list) else outputs
    return pytree.unflatten(traced.out_tree, list(outputs))  # type: ignore[call-overload]


def jit(
    fn: Callable[..., object] | None = None,
    *,
    target: str = "llvm",
    static_argnames: Sequence[str] = (),
    inline: bool = False,
    cuda_graphs: cuda_runtime.GraphPolicy | bool = True,
    library: bool = True,
    donate_argnames: Sequence[str] | str = (),
) -> Jitted | Callable[[Callable[..., object]], Jitted]:
    """Compile ``fn`` for every value of its parameters' symbolic dims.

    Use as ``@relax.jit``, ``@relax.jit(target="llvm")`` or ``relax.jit(fn,
    target="cuda")``. Parameters named in ``static_argnames`` are not traced:
    their (hashable) values are baked into the program, one executable per value.

    Called while another function is traced, ``fn`` is a function of its own in the
    caller's module, traced once and shared by every call site (the result spec at
    each comes from matching its signature); with ``inline=True`` its body is traced
    into the caller instead, where it fuses with the ops around the call.

    ``target="cuda"`` runs on an NVIDIA GPU (outputs are device arrays: ``np.asarray``,
    ``__dlpack__``, ``__cuda_array_interface__``); without a GPU a call raises
    ``relax.DeviceError``, while ``lower()`` and ``ptx(*specs)`` still work.
    ``cuda_graphs`` (``runtime.cuda.GraphPolicy``, or False) replays each bucket of
    symbol values through a CUDA graph (see ``docs/gpu.md``).

    ``library`` (default True): float matmuls run in a tuned library, BLAS on the CPU
    and cuBLAS on the GPU, each a ``call_extern`` in the compiled program; with
    ``library=False`` they are generated kernels like every other op.

    ``donate_argnames``, as in jax: the arrays passed for these parameters are given to
    the call, which may overwrite them, so that an update of one (``.at[].set``,
    ``lax.dynamic_update_slice``: a KV cache written at one position) happens in place
    and is returned without a copy. Read a donated array only through what the call
    returns. An argument that is not a writable numpy array (a jax array, a read-only
    view) is copied first and never overwritten. Inside another trace donation has no
    effect (the caller's program owns its values).
    """
    if fn is None:
        return functools.partial(
            jit,
            target=target,
            static_argnames=static_argnames,
            inline=inline,
            cuda_graphs=cuda_graphs,
            library=library,
            donate_argnames=donate_argnames,
        )
    return Jitted(
        fn,
        target,
        static_argnames,
        _caller_locals(),
        inline,
        cuda_graphs,
        library,
        donate_argnames,
    )


def _caller_locals() -> dict[str, object]:
    """A snapshot of the locals of the frame that called into this module's API, so that
    string annotations (``from __future__ import annotations``) may name local symbols."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in (__name__, "functools"):
        frame = frame.f_back
    return dict(frame.f_locals) if frame is not None else {}


def eval_shape(fn: Callable[..., object], *specs: object, **kwspecs: object) -> object:
    """The output spec(s) of ``fn`` for the given argument specs, without running it.

    ``fn`` is a jitted or plain function. Annotated parameters use their annotation
    unless a spec is given for them. Specs are ``relax.Tensor`` values, or anything
    with ``.shape`` and ``.dtype`` (arrays, ``jax.ShapeDtypeStruct``), or Python
    scalars, in tuples, lists and dicts matching the parameters' structure. The
    result has the structure of ``fn``'s output, with a ``relax.Tensor`` per tensor.
    """
    jitted = fn if isinstance(fn, Jitted) else Jitted(fn, localns=_caller_locals())
    return jitted.eval_shape(*specs, **kwspecs)
