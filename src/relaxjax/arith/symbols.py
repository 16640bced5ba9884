"""Declaring symbols: ``sym("n", lower=1, upper=4096)`` and ``syms("b s")``."""

from __future__ import annotations

from relaxjax.arith.expr import Expr, Sym


def sym(name: str, lower: int | None = 0, upper: int | Expr | None = None) -> Sym:
    """One symbolic integer dimension, ``lower <= value <= upper`` (``None``: unbounded).

    The upper bound may be a dim over other symbols (``sym("k", upper=n * 4)``).

    >>> n = sym("n", lower=1, upper=4096)
    >>> (n.name, n.lower, n.upper)
    ('n', 1, 4096)
    """
    return Sym(name, lower, upper)


def syms(names: str, lower: int | None = 0, upper: int | None = None) -> tuple[Sym, ...]:
    """Several symbols with the same bounds, named in one string (spaces or commas).

    >>> b, s = syms("b s")
    >>> (b.name, s.name)
    ('b', 's')
    """
    if not isinstance(names, str):
        raise TypeError(f"syms expects a string of names such as 'b s', got {names!r}")
    split = names.replace(",", " ").split()
    if not split:
        raise ValueError(f"syms expects at least one name, got {names!r}")
    return tuple(Sym(name, lower, upper) for name in split)
