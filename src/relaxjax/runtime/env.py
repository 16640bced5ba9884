"""The symbols of a graph function as local variables of the generated code.

Each symbol gets one local variable (``s0``, ``s1``, ...) when it is bound, from an
argument's shape, a scalar argument or a ``match_cast``. The table remembers where
each was bound, so error messages can say "n = 3 (bound by argument 'x' axis 0)",
and turns dims into Python source over those locals (through ``arith.to_python``).
"""

from __future__ import annotations

from dataclasses import dataclass

from relaxjax import arith
from relaxjax.arith import Dim, Sym
from relaxjax.errors import LoweringError

__all__ = ["BindingSite", "SymbolTable"]


@dataclass(frozen=True, slots=True)
class BindingSite:
    """Where a symbol took its value, as users read it: ``argument 'x' axis 0``."""

    symbol: Sym
    local: str
    where: str


class SymbolTable:
    """Symbol name -> local variable of the generated function, in binding order."""

    def __init__(self) -> None:
        self._sites: dict[str, BindingSite] = {}

    def __contains__(self, symbol: Sym) -> bool:
        return symbol.name in self._sites

    def bind(self, symbol: Sym, where: str) -> str:
        """Give ``symbol`` a local variable; ``where`` says what binds it."""
        if symbol.name in self._sites:
            raise ValueError(f"symbol {symbol.name} is bound twice")
        local = f"s{len(self._sites)}"
        self._sites[symbol.name] = BindingSite(symbol, local, where)
        return local

    def local(self, symbol: Sym) -> str:
        """The local variable holding ``symbol``'s value."""
        return self._sites[symbol.name].local

    def site(self, name: str) -> BindingSite:
        """Where the symbol called ``name`` is bound."""
        return self._sites[name]

    @property
    def sites(self) -> tuple[BindingSite, ...]:
        """Every bound symbol, in binding order."""
        return tuple(self._sites.values())

    def bound(self, dim: Dim) -> bool:
        """Whether every symbol of ``dim`` has a value already."""
        return all(s.name in self._sites for s in arith.free_symbols(dim))

    def code(self, dim: Dim, what: str = "a dim") -> str:
        """Python source computing ``dim`` from the locals."""
        missing = sorted(s.name for s in arith.free_symbols(dim) if s.name not in self._sites)
        if missing:
            raise LoweringError(
                f"{what} uses symbol(s) {', '.join(missing)} that no argument or "
                f"match_cast defines: {dim}"
            )
        rename = {name: site.local for name, site in self._sites.items()}
        return arith.to_python(dim, rename)

    def env_code(self) -> str:
        """A tuple expression of every bound symbol's value, in binding order."""
        locals_ = [site.local for site in self._sites.values()]
        return "(" + "".join(f"{name}, " for name in locals_) + ")"

    def names(self) -> tuple[str, ...]:
        """The bound symbols' names, in binding order (matches :meth:`env_code`)."""
        return tuple(self._sites)
