"""The generated function of a graph function that others call (``mod.layer(x, w)``).

A callee runs on arguments its caller has already checked: the caller matched the
callee's signature when tracing (``relaxjax.ir.calls.match_call``) and checks at run
time what it could not prove, before any kernel runs. So the callee's function skips
phase 1 (no coercion, no argument checks) and takes its symbols' values ready-made.
It is called with destination passing, like a kernel::

    def run_layer(a0, a1, o0, s0):      # inputs, result arrays, then symbol values
        # a0: Tensor((n, 64), "float32") ...   n is s0
        ...                               # its own checks, its temporaries in its own
        if o0 is None:                    # arena, its kernels; each result is written
            o0 = empty((s0, 64), float32) # into the caller's array, no copy
        r3 = o0
        status = k_matmul(a0, a1, r3, s0)
        return (o0, )

A caller that cannot know a result's shape before the call ran (it is coarse in the
caller's symbols, e.g. data-dependent) passes ``None`` for it: the callee allocates it
and returns it. A result that is not computed into its destination (a parameter or a
constant returned as is, a view, or one value returned twice) is copied into it, except a
*donated* parameter (a loop body's carry, which the loop owns: see
``ir.control.donated_params``) returned for a ``None`` destination: it is handed back
as it is, updated in place or not, so a carry that a body keeps costs no copy. The callee's
temporaries live in arenas of its own (one per segment), taken from the buffer pool for
the duration of the call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from relaxjax import dtypes
from relaxjax.errors import LoweringError
from relaxjax.ir import (
    Expr,
    Function,
    PrimInfo,
    TensorInfo,
    TupleInfo,
    donated_params,
    signature_symbols,
)
from relaxjax.runtime.program import CalleeCode, KernelHandle, ProgramWriter
from relaxjax.runtime.recorder import Recorder
from relaxjax.runtime.values import Storage, Value

__all__ = ["CalleeWriter", "write_callee"]


class CalleeWriter(ProgramWriter):
    """Writes ``run_<name>(*inputs, *outputs, *symbol_values)`` (see the module doc)."""

    def __init__(
        self,
        function: Function,
        kernels: Mapping[str, KernelHandle],
        callees: Mapping[str, CalleeCode] | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        super().__init__(function, kernels, callees, recorder)
        self._destinations: dict[Storage, str] = {}
        self._copies: list[tuple[str, Value]] = []

    def _emit_params(self) -> list[str]:
        where = f"function {self.function.name}"
        symbol_params = []
        for symbol in signature_symbols(self.function):
            symbol_params.append(self.symbols.bind(symbol, self._origin(symbol)))
        inputs = [f"a{i}" for i in range(len(self.function.params))]
        for index, (param, local) in enumerate(zip(self.function.params, inputs)):
            self.values[param] = self._param_value(index, param.info, local, where)
        outputs = [f"o{i}" for i in range(self._output_count(where))]
        return inputs + outputs + symbol_params

    def _origin(self, symbol: object) -> str:
        """Where a symbol's value comes from, as messages name it."""
        for param in self.function.params:
            info = param.info
            if isinstance(info, PrimInfo) and info.value == symbol:
                return f"argument '{param.name_hint}' of {self.function.name}()"
            if isinstance(info, TensorInfo) and info.shape is not None and symbol in info.shape:
                axis = info.shape.index(symbol)  # type: ignore[arg-type]
                return f"argument '{param.name_hint}' axis {axis} of {self.function.name}()"
        return f"the arguments of {self.function.name}()"

    def _param_value(self, index: int, info: object, local: str, where: str) -> Value:
        storage = Storage("param", index)
        if isinstance(info, PrimInfo):
            return Value(TensorInfo((), info.dtype), (), local, True, storage)
        if not isinstance(info, TensorInfo) or info.ndim is None:
            raise LoweringError(
                f"{where}: a called function's parameters must be tensors of known rank or "
                f"scalars, got {info!r}"
            )
        if info.shape is not None:
            shape = tuple(self.symbols.code(d, where) for d in info.shape)
            return Value(info, shape, local, True, storage)
        dims = [f"d{index}_{axis}" for axis in range(info.ndim)]
        self.writer.line(f"{''.join(d + ', ' for d in dims)}= {local}.shape")
        return Value(info, tuple(dims), local, True, storage)

    def _output_count(self, where: str) -> int:
        info = self.function.ret_info
        count = _leaf_count(info)
        if count is None:
            raise LoweringError(
                f"{where}: a called function returns tensors, scalars or tuples of them, "
                f"not {info!r}"
            )
        return count

    def _outputs(self, body: Expr) -> list[Value]:
        """The results; each one a call of this function computes goes straight into the
        array its caller passed (``o0, o1, ...``), any other is copied there at the end."""
        outputs = super()._outputs(body)
        for index, value in enumerate(outputs):
            storage = value.storage
            own = storage in self.storage_values and storage not in self._destinations
            if own and value.view is None:
                self._destinations[storage] = f"o{index}"
            else:
                self._copies.append((f"o{index}", value))
        return outputs

    def _place(self, value: Value) -> None:
        destination = self._destinations.get(value.storage)
        if destination is None:
            super()._place(value)  # an array of the callee's own (one its code reads)
            return
        # the caller's array, or one of our own when the caller cannot know the shape
        dtype = self.writer.constant(dtypes.to_numpy(value.info.dtype), value.info.dtype)
        self.writer.line(f"if {destination} is None:")
        self.writer.line(f"{destination} = {self._empty}({value.shape_code}, {dtype})", 2)
        self.writer.line(f"{value.ref} = {destination}")

    def _copyto(self) -> str:
        """The generated code's name of ``copyto(destination, source)`` (numpy's here)."""
        return self.writer.constant(np.copyto, "copyto")

    def _emit_return(self, outputs: Sequence[Value]) -> None:
        copyto = self._copyto()
        donated = donated_params(self.function)
        handed: set[Storage] = set()  # donated parameters already returned once
        for destination, value in self._copies:
            array = self._array_code(value)  # a view: of memory of ours or an argument's
            storage = value.storage
            own = storage.kind == "param" and storage.index in donated and storage not in handed
            if own and value.view is None:  # a carry the loop gave us: hand it back
                handed.add(storage)
                self.writer.line(f"if {destination} is None:")
                self.writer.line(f"{destination} = {array}", 2)
                self.writer.line(f"elif {destination} is not {array}:")
                self.writer.line(f"{copyto}({destination}, {array})", 2)
                continue
            self.writer.line(f"if {destination} is None:")
            self.writer.line(f"{destination} = {array}.copy()", 2)
            self.writer.line("else:")
            self.writer.line(f"{copyto}({destination}, {array})", 2)
        results = "".join(f"o{i}, " for i in range(len(outputs)))
        self.writer.line(f"return ({results})")


def _leaf_count(info: object) -> int | None:
    if isinstance(info, (TensorInfo, PrimInfo)):
        return 1
    if isinstance(info, TupleInfo):
        counts = [_leaf_count(f) for f in info.fields]
        return None if any(c is None for c in counts) else sum(counts)  # type: ignore[misc]
    return None


def write_callee(
    function: Function,
    kernels: Mapping[str, KernelHandle],
    callees: Mapping[str, CalleeCode] | None = None,
    recorder: Recorder | None = None,
) -> CalleeCode:
    """The generated function of ``function`` for its callers (see the module doc); with
    a ``recorder``, its launches are timed into it (a profiling build)."""
    return CalleeCode(function, CalleeWriter(function, kernels, callees, recorder).write())
