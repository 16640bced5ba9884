"""``PrimFunc``: a loop-level kernel in destination-passing style.

Parameters are buffers, inputs first then ``num_outputs`` outputs, which the kernel
writes in place. The kernel's symbols (``n`` in ``A: (n, 4)``) take their values from
the parameters' shapes: a symbol is *bound* at the first parameter axis whose extent
is exactly that symbol. Symbols that occur only inside expressions (``n * 2``) must be
passed as ``scalar_params`` (int64 values). One kernel serves every value of its symbols.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from relaxjax import arith
from relaxjax.tir.buffer import Buffer, check_name
from relaxjax.tir.stmt import Annotations, Stmt, as_annotations
from relaxjax.tir.verify import verify_body


@dataclass(frozen=True, slots=True)
class SymbolSource:
    """Where a kernel reads a symbol: axis ``axis`` of parameter ``param``, or the
    scalar parameter at position ``scalar`` (exactly one of the two is set)."""

    sym: arith.Sym
    param: int | None = None
    axis: int | None = None
    scalar: int | None = None


@dataclass(frozen=True, slots=True, repr=False)
class PrimFunc:
    """A kernel: ``params`` (inputs then ``num_outputs`` outputs), ``body`` and
    ``scalar_params`` (symbols not bound by a shape). ``attrs`` are annotations.

    Construction verifies the kernel (:mod:`relaxjax.tir.verify`) and raises
    ``ValueError``/``TypeError`` for a malformed signature, ``VerifyError`` for a
    malformed body.
    """

    name: str
    params: tuple[Buffer, ...]
    body: Stmt
    num_outputs: int = 1
    scalar_params: tuple[arith.Sym, ...] = ()
    attrs: Annotations = ()

    def __post_init__(self) -> None:
        check_name(self.name, "kernel")
        params = tuple(self.params)
        for param in params:
            if not isinstance(param, Buffer):
                raise TypeError(f"kernel {self.name}: parameters must be Buffers, got {param!r}")
            if param.scope != "global":
                raise ValueError(
                    f"kernel {self.name}: parameter {param.name} must be in global scope, "
                    f"got {param.scope!r}"
                )
        object.__setattr__(self, "params", params)
        if not isinstance(self.num_outputs, int) or not 0 <= self.num_outputs <= len(params):
            raise ValueError(
                f"kernel {self.name}: num_outputs must be in [0, {len(params)}], "
                f"got {self.num_outputs!r}"
            )
        scalars = tuple(self.scalar_params)
        for scalar in scalars:
            if not isinstance(scalar, arith.Sym):
                raise TypeError(
                    f"kernel {self.name}: scalar params must be arith.Syms, got {scalar!r}"
                )
        object.__setattr__(self, "scalar_params", scalars)
        if not isinstance(self.body, Stmt):
            raise TypeError(f"kernel {self.name}: body must be a Stmt, got {self.body!r}")
        object.__setattr__(self, "attrs", as_annotations(self.attrs, f"kernel {self.name}"))
        self._check_bindings()
        verify_body(self.name, params, self.symbols(), self.body)

    def _check_bindings(self) -> None:
        bound = {source.sym.name for source in self._shape_sources()}
        names = [s.name for s in self.scalar_params]
        if len(set(names)) != len(names):
            raise ValueError(f"kernel {self.name}: scalar params repeat: {names}")
        for name in names:
            if name in bound:
                raise ValueError(
                    f"kernel {self.name}: scalar param {name} is already bound by a parameter shape"
                )
        known = bound | set(names)
        for param in self.params:
            for symbol in sorted(param.symbols(), key=lambda s: s.name):
                if symbol.name not in known:
                    raise ValueError(
                        f"kernel {self.name}: symbol {symbol.name} in the shape of {param.name} "
                        "is not bound: it must be a whole dimension of some parameter or a "
                        "scalar param"
                    )

    def _shape_sources(self) -> list[SymbolSource]:
        sources: dict[str, SymbolSource] = {}
        for index, param in enumerate(self.params):
            for axis, dim in enumerate(param.shape):
                if isinstance(dim, arith.Sym) and dim.name not in sources:
                    sources[dim.name] = SymbolSource(dim, param=index, axis=axis)
        return list(sources.values())

    # the signature ------------------------------------------------------------------

    @property
    def inputs(self) -> tuple[Buffer, ...]:
        """The input buffers (all but the trailing ``num_outputs``)."""
        return self.params[: len(self.params) - self.num_outputs]

    @property
    def outputs(self) -> tuple[Buffer, ...]:
        """The output buffers, written in place."""
        return self.params[len(self.params) - self.num_outputs :]

    def symbols(self) -> tuple[arith.Sym, ...]:
        """The kernel's free symbols: by first occurrence in the parameters' shapes (and
        strides, axis by axis, names sorted within one dim), then the scalar params."""
        seen: dict[str, arith.Sym] = {}
        for param in self.params:
            for dim in param.shape + (param.strides or ()):
                for symbol in sorted(arith.free_symbols(dim), key=lambda s: s.name):
                    seen.setdefault(symbol.name, symbol)
        for symbol in self.scalar_params:
            seen.setdefault(symbol.name, symbol)
        return tuple(seen.values())

    def symbol_sources(self) -> tuple[SymbolSource, ...]:
        """Where each of :meth:`symbols` is read, in that order."""
        shape = {source.sym.name: source for source in self._shape_sources()}
        scalar = {s.name: k for k, s in enumerate(self.scalar_params)}
        result = []
        for symbol in self.symbols():
            if symbol.name in shape:
                result.append(shape[symbol.name])
            else:
                result.append(SymbolSource(symbol, scalar=scalar[symbol.name]))
        return tuple(result)

    def buffer(self, name: str) -> Buffer:
        """The parameter called ``name`` (``KeyError`` naming the parameters)."""
        for param in self.params:
            if param.name == name:
                return param
        raise KeyError(
            f"kernel {self.name} has no parameter {name!r}; "
            f"parameters: {', '.join(p.name for p in self.params)}"
        )

    # rebuilding ---------------------------------------------------------------------

    def with_body(self, body: Stmt) -> PrimFunc:
        """The same kernel with another body (verified)."""
        return PrimFunc(
            self.name, self.params, body, self.num_outputs, self.scalar_params, self.attrs
        )

    def with_name(self, name: str) -> PrimFunc:
        """The same kernel under another name."""
        return PrimFunc(
            name, self.params, self.body, self.num_outputs, self.scalar_params, self.attrs
        )

    def with_attrs(self, attrs: Mapping[str, object]) -> PrimFunc:
        """The same kernel with ``attrs`` merged into its annotations."""
        merged = dict(self.attrs)
        merged.update(attrs)
        return PrimFunc(
            self.name, self.params, self.body, self.num_outputs, self.scalar_params, merged
        )

    def specialize(self, values: Mapping[arith.Sym | str, arith.Dim]) -> PrimFunc:
        """The kernel with symbols replaced by dims (``{n: 16}``). Symbols that remain
        free without being a whole dimension of a parameter become scalar params."""
        from relaxjax.tir.analysis import free_symbols
        from relaxjax.tir.functor import Substituter

        subst = Substituter(values)
        params = tuple(subst.visit_buffer(p) for p in self.params)
        body = subst.visit_stmt(self.body)
        bare = {d.name for p in params for d in p.shape if isinstance(d, arith.Sym)}
        scalars = {s.name: s for s in self.scalar_params if s.name not in subst.dims}
        used = [s for p in params for s in sorted(p.symbols(), key=lambda s: s.name)]
        used += sorted(free_symbols(body), key=lambda s: s.name)
        for symbol in used:
            if symbol.name not in bare:
                scalars.setdefault(symbol.name, symbol)
        return PrimFunc(
            self.name, params, body, self.num_outputs, tuple(scalars.values()), self.attrs
        )

    # text -----------------------------------------------------------------------------

    def script(self) -> str:
        """The kernel as text that :func:`relaxjax.tir.parse_prim_func` reads back."""
        from relaxjax.tir.printer import func_text

        return func_text(self)

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return self.script()

    def _repr_html_(self) -> str:
        from relaxjax.tir.printer import func_html

        return func_html(self)
