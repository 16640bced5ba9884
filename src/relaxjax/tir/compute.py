"""The compute builder: define a kernel from index expressions (after TVM's TE).

>>> from relaxjax import arith
>>> n, m, K = arith.syms("n m K")
>>> A = placeholder((n, K), "float32", "A")
>>> B = placeholder((K, m), "float32", "B")
>>> k = reduce_axis(K, "k")
>>> C = compute((n, m), lambda i, j: sum(A[i, k] * B[k, j], axis=k), name="C")
>>> f = create_prim_func([A, B, C], name="matmul")
>>> [p.name for p in f.params], f.num_outputs
(['A', 'B', 'C'], 1)

Each :func:`compute` is one *stage*; :func:`create_prim_func` gives every stage one
block (in its own loop nest) under a root block, which allocates the stages that are
not parameters. Reductions (:data:`sum`, :data:`max`, :data:`min`, :data:`prod`,
:data:`argmax`, :data:`argmin`, or any :class:`CommReducer`) must be the whole body
of a stage; a reduction over several values (``argmax``) yields several tensors.
"""

from __future__ import annotations

import builtins
import contextvars
import inspect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.tir.analysis import block_access_regions, free_symbols
from relaxjax.tir.buffer import Buffer, as_dims, check_name
from relaxjax.tir.expr import (
    BufferLoad,
    IndexExpr,
    PrimExpr,
    Var,
    as_expr,
)
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import ExprVisitor, Substituter
from relaxjax.tir.reducer import (  # re-exported: te.sum, te.argmax, ...
    CommReducer,
    Reduce,
    ReduceAxis,
    argmax,
    argmin,
    axis_display_name,
    comm_reducer,
    fresh_sym,
    max,
    min,
    prod,
    reduce_axis,
    sum,
)
from relaxjax.tir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    IfThenElse,
    IterVar,
    LetStmt,
    Stmt,
    seq,
)

__all__ = [
    "CommReducer",
    "ComputeOp",
    "PlaceholderOp",
    "Reduce",
    "ReduceAxis",
    "Tensor",
    "argmax",
    "argmin",
    "comm_reducer",
    "compute",
    "create_prim_func",
    "max",
    "min",
    "placeholder",
    "prod",
    "reduce_axis",
    "sum",
]

_order = itertools.count()  # creation order: a topological order of the stages
_tracking: contextvars.ContextVar[list | None] = contextvars.ContextVar("tir_compute", default=None)


class Tensor:
    """A tensor of the builder: a placeholder (kernel input) or a stage's output.

    ``T[i, j]`` reads an element (a :class:`BufferLoad` of ``T.buffer``).
    """

    __slots__ = ("buffer", "op", "value_index")

    def __init__(self, buffer: Buffer, op: PlaceholderOp | ComputeOp, value_index: int = 0):
        self.buffer = buffer
        self.op = op
        self.value_index = value_index

    @property
    def name(self) -> str:
        return self.buffer.name

    @property
    def shape(self) -> tuple[Dim, ...]:
        return self.buffer.shape

    @property
    def dtype(self) -> str:
        return self.buffer.dtype

    @property
    def ndim(self) -> int:
        return self.buffer.ndim

    def __getitem__(self, indices: object) -> BufferLoad:
        tracked = _tracking.get()
        if tracked is not None:
            tracked.append(self)
        items = indices if isinstance(indices, tuple) else (indices,)
        return BufferLoad(self.buffer, items)

    def __repr__(self) -> str:
        return f"Tensor({self.name}, {self.shape}, {self.dtype!r})"


@dataclass(eq=False)
class PlaceholderOp:
    """The op of a placeholder tensor: an input of the kernel."""

    order: int


@dataclass(eq=False)
class ComputeOp:
    """A stage: ``outputs[j][axes] = bodies[j]`` or a reduction over ``reduce``."""

    name: str
    axes: tuple[arith.Sym, ...]
    axis_names: tuple[str, ...]
    shape: tuple[Dim, ...]
    bodies: tuple[PrimExpr, ...]
    reduce: Reduce | None
    inputs: tuple[Tensor, ...]
    order: int
    outputs: tuple[Tensor, ...] = ()


def placeholder(shape: Sequence[object], dtype: str = "float32", name: str = "A") -> Tensor:
    """An input tensor of ``shape`` (ints, syms, dim expressions or strings)."""
    buffer = Buffer(check_name(name, "placeholder"), as_dims(shape, f"placeholder {name}"), dtype)
    return Tensor(buffer, PlaceholderOp(next(_order)))


class _LoadFinder(ExprVisitor):
    def __init__(self):
        self.buffers: list[Buffer] = []

    def visit_BufferLoad(self, expr: BufferLoad) -> None:
        self.buffers.append(expr.buffer)
        super().visit_BufferLoad(expr)


def _axis_names(fcompute: Callable, ndim: int) -> tuple[str, ...]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) == ndim and len(params) == ndim:
        return tuple(positional)
    return tuple(f"i{axis}" for axis in range(ndim))


def compute(
    shape: Sequence[object], fcompute: Callable[..., object], name: str = "compute"
) -> Tensor | tuple[Tensor, ...]:
    """A stage of ``shape`` whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``.

    ``fcompute`` gets one int64 index value per axis and returns a PrimExpr, a tuple of
    PrimExprs (several outputs), or a reduction (a tuple of tensors for ``argmax``-like
    reducers). Output names are ``name`` or ``name_0, name_1, ...``.
    """
    check_name(name, "compute")
    dims = as_dims(shape, f"shape of {name}")
    names = _axis_names(fcompute, len(dims))
    axes = tuple(fresh_sym(axis) for axis in names)
    tracked: list[Tensor] = []
    token = _tracking.set(tracked)
    try:
        result = fcompute(*(IndexExpr(axis) for axis in axes))
    finally:
        _tracking.reset(token)
    reduce, bodies = _stage_bodies(name, result)
    _check_axes(name, bodies, reduce, axes)
    inputs = _stage_inputs(name, bodies, reduce, tracked)
    op = ComputeOp(name, axes, names, dims, bodies, reduce, inputs, next(_order))
    out_names = [name] if len(bodies) == 1 else [f"{name}_{j}" for j in range(len(bodies))]
    outputs = tuple(
        Tensor(Buffer(out, dims, body.dtype), op, j)
        for j, (out, body) in enumerate(zip(out_names, bodies))
    )
    op.outputs = outputs
    return outputs[0] if len(outputs) == 1 else outputs


def _check_axes(name, bodies, reduce, axes) -> None:
    """Every builder axis a stage uses is its own or one it reduces over."""
    own = set(axes) | ({a.var for a in reduce.axes} if reduce is not None else set())
    exprs = list(bodies) + (
        [reduce.where] if reduce is not None and reduce.where is not None else []
    )
    for expr in exprs:
        for symbol in free_symbols(expr):
            shown = axis_display_name(symbol)
            if shown is not None and symbol not in own:
                raise ValueError(
                    f"compute {name}: uses axis {shown} of another stage or a reduce axis it "
                    "does not reduce over"
                )


def _stage_bodies(name: str, result: object) -> tuple[Reduce | None, tuple[PrimExpr, ...]]:
    items = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if not items:
        raise ValueError(f"compute {name}: fcompute returned no value")
    reductions = [item for item in items if isinstance(item, Reduce)]
    if not reductions:
        return None, tuple(as_expr(item) for item in items)
    first = reductions[0]
    if len(reductions) != len(items) or not builtins.all(first.same_reduction(r) for r in items):
        raise ValueError(f"compute {name}: a reduction must be the whole body of its stage")
    if [r.value_index for r in items] != list(range(len(first.sources))):
        raise ValueError(
            f"compute {name}: return every value of the {first.reducer.name} reduction, in order"
        )
    return first, first.sources


def _stage_inputs(name, bodies, reduce, tracked) -> tuple[Tensor, ...]:
    finder = _LoadFinder()
    for body in bodies:
        finder.visit_expr(body)
    if reduce is not None and reduce.where is not None:
        finder.visit_expr(reduce.where)
    by_id = {id(t.buffer): t for t in tracked}
    inputs: dict[int, Tensor] = {}
    for buffer in finder.buffers:
        tensor = by_id.get(id(buffer))
        if tensor is None:
            raise ValueError(
                f"compute {name}: reads buffer {buffer.name}, which is not a tensor of the "
                "compute builder (index tensors inside fcompute)"
            )
        inputs.setdefault(id(buffer), tensor)
    return tuple(inputs.values())


# --- create_prim_func -----------------------------------------------------------------


def create_prim_func(
    tensors: Sequence[Tensor],
    name: str = "main",
    scalar_params: Sequence[arith.Sym] | None = None,
) -> PrimFunc:
    """A kernel computing ``tensors``: placeholders (inputs) first, then computed outputs.

    Stages reached from the outputs that are not in ``tensors`` become intermediate
    buffers allocated by the root block. Symbols that are not a whole dimension of a
    parameter become scalar params (after those given in ``scalar_params``).
    """
    args = list(tensors)
    for t in args:
        if not isinstance(t, Tensor):
            raise TypeError(f"create_prim_func: expected Tensors, got {t!r}")
    num_inputs = _count_inputs(args)
    stages = _collect_stages(args[num_inputs:], args[:num_inputs])
    namer = _Namer(args, stages)
    params = tuple(namer.buffer(t.buffer) for t in args)
    arg_ids = {id(t) for t in args}
    intermediates = tuple(
        namer.buffer(out.buffer) for op in stages for out in op.outputs if id(out) not in arg_ids
    )
    body = seq(*(_stage_stmt(op, namer) for op in stages))
    root = Block("root", (), (), (), None, body, intermediates)
    realize = BlockRealize((), True, root)
    scalars = _scalar_params(params, intermediates, realize, scalar_params)
    return PrimFunc(name, params, realize, len(args) - num_inputs, scalars)


def _count_inputs(args: list[Tensor]) -> int:
    kinds = [isinstance(t.op, PlaceholderOp) for t in args]
    num_inputs = kinds.index(False) if False in kinds else len(kinds)
    if any(kinds[num_inputs:]):
        late = next(t.name for t in args[num_inputs:] if isinstance(t.op, PlaceholderOp))
        raise ValueError(
            f"create_prim_func: placeholders come first, then computed outputs; "
            f"placeholder {late} follows a computed tensor"
        )
    ids = [id(t) for t in args]
    if len(set(ids)) != len(ids):
        raise ValueError("create_prim_func: a tensor is listed twice")
    return num_inputs


def _collect_stages(outputs: list[Tensor], inputs: list[Tensor]) -> list[ComputeOp]:
    input_ids = {id(t) for t in inputs}
    seen: dict[int, ComputeOp] = {}
    stack = list(outputs)
    while stack:
        tensor = stack.pop()
        if isinstance(tensor.op, PlaceholderOp):
            if id(tensor) not in input_ids:
                raise ValueError(
                    f"create_prim_func: placeholder {tensor.name} is read but is not among "
                    "the tensors given"
                )
            continue
        if id(tensor.op) not in seen:
            seen[id(tensor.op)] = tensor.op
            stack.extend(tensor.op.inputs)
    # Creation order is a topological order: a stage only reads older tensors.
    return sorted(seen.values(), key=lambda op: op.order)


class _Namer:
    """Final, kernel-unique names for buffers, loop variables and block iterators."""

    def __init__(self, args: list[Tensor], stages: list[ComputeOp]):
        self.used: set[str] = set()
        for tensor in args:
            for symbol in tensor.buffer.symbols():
                self.used.add(symbol.name)
        for op in stages:
            for out in op.outputs:
                for symbol in out.buffer.symbols():
                    self.used.add(symbol.name)
        self.buffers: dict[int, Buffer] = {}
        for tensor in args:
            self.buffer(tensor.buffer)
        for op in stages:
            for out in op.outputs:
                self.buffer(out.buffer)

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def buffer(self, buffer: Buffer) -> Buffer:
        renamed = self.buffers.get(id(buffer))
        if renamed is None:
            new_name = self.fresh(buffer.name)
            renamed = (
                buffer
                if new_name == buffer.name
                else Buffer(new_name, buffer.shape, buffer.dtype, buffer.strides, buffer.scope)
            )
            self.buffers[id(buffer)] = renamed
        return renamed


class _Rebind(Substituter):
    """Substitutes axis symbols and swaps builder buffers for their final versions."""

    def __init__(self, mapping, namer: _Namer):
        super().__init__(mapping)
        self.namer = namer

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.namer.buffer(buffer)


def _stage_stmt(op: ComputeOp, namer: _Namer) -> Stmt:
    spatial = [(ax, nm, ext) for ax, nm, ext in zip(op.axes, op.axis_names, op.shape)]
    reduce_axes = [] if op.reduce is None else [(a.var, a.name, a.extent) for a in op.reduce.axes]
    loops, iter_vars, mapping = [], [], {}
    for (sym, base, extent), kind in itertools.chain(
        ((s, "spatial") for s in spatial), ((r, "reduce") for r in reduce_axes)
    ):
        loop_var = arith.Sym(namer.fresh(base))
        block_var = arith.Sym(namer.fresh(f"v_{base}"))
        loops.append((loop_var, extent))
        iter_vars.append(IterVar(block_var, extent, kind))
        mapping[sym] = block_var
    rebind = _Rebind(mapping, namer)
    outs = [namer.buffer(t.buffer) for t in op.outputs]
    spatial_vars = tuple(iv.var for iv in iter_vars if iv.kind == "spatial")
    bodies = [rebind.visit_expr(b) for b in op.bodies]
    if op.reduce is None:
        init = None
        body = seq(*(BufferStore(out, b, spatial_vars) for out, b in zip(outs, bodies)))
    else:
        init, body = _reduction(op, outs, bodies, spatial_vars, rebind, namer)
    block = Block(op.name, tuple(iter_vars), (), (), init, body)
    reads, writes = block_access_regions(block)
    block = Block(op.name, tuple(iter_vars), reads, writes, init, body)
    stmt: Stmt = BlockRealize(tuple(v for v, _ in loops), True, block)
    for loop_var, extent in reversed(loops):
        stmt = For(loop_var, 0, extent, "serial", stmt)
    return stmt


def _reduction(op, outs, sources, spatial_vars, rebind, namer) -> tuple[Stmt, Stmt]:
    reducer = op.reduce.reducer
    types = tuple(s.dtype for s in sources)
    identity = reducer.identity(types)
    init = seq(*(BufferStore(out, value, spatial_vars) for out, value in zip(outs, identity)))
    accumulators = tuple(BufferLoad(out, spatial_vars) for out in outs)
    combined = reducer.combine(accumulators, tuple(sources))
    for out, value in zip(outs, combined):
        if value.dtype != out.dtype:
            raise TypeError(
                f"compute {op.name}: {reducer.name} combines into {value.dtype}, "
                f"expected {out.dtype}"
            )
    if len(outs) == 1:
        update: Stmt = BufferStore(outs[0], combined[0], spatial_vars)
    else:
        # Every new value is computed before any accumulator is overwritten.
        temps = [Var(namer.fresh(f"{out.name}_new"), out.dtype) for out in outs]
        update = seq(*(BufferStore(out, t, spatial_vars) for out, t in zip(outs, temps)))
        for temp, value in reversed(list(zip(temps, combined))):
            update = LetStmt(temp, value, update)
    if op.reduce.where is not None:
        update = IfThenElse(rebind.visit_expr(op.reduce.where), update)
    return init, update


def _scalar_params(params, intermediates, body, given) -> tuple[arith.Sym, ...]:
    from relaxjax.tir.analysis import free_symbols

    bare = {d.name for p in params for d in p.shape if isinstance(d, arith.Sym)}
    scalars: dict[str, arith.Sym] = {s.name: s for s in (given or ())}
    used = [s for b in params + intermediates for s in sorted(b.symbols(), key=lambda s: s.name)]
    used += sorted(free_symbols(body), key=lambda s: s.name)
    for symbol in used:
        if symbol.name not in bare:
            scalars.setdefault(symbol.name, symbol)
    return tuple(scalars.values())
