"""Dims as Python source, and fast compiled evaluators for the runtime's hot path."""

from __future__ import annotations

import functools
import keyword
from collections.abc import Callable, Mapping, Sequence

from relaxjax.arith.algebra import as_dim
from relaxjax.arith.expr import RESERVED_NAMES, Dim, Sym
from relaxjax.arith.subst import free_symbols, subs


def to_python(value: Dim, rename: Mapping[str, str] | None = None) -> str:
    """Python source computing ``value`` from variables named like its symbols.

    ``rename`` maps symbol names to other variable names. The canonical text already
    is Python (``//``, ``%``, ``min``, ``max`` with Python semantics), so the source
    of an un-renamed dim is ``str(value)``.

    >>> n = Sym("n")
    >>> to_python(n // 2 + 1, {"n": "s0"})
    's0 // 2 + 1'
    """
    value = as_dim(value)
    if rename:
        value = subs(value, {name: Sym(new) for name, new in rename.items()})
    return str(value)


def compile_dims(dims: Sequence[Dim], names: Sequence[str]) -> Callable[..., tuple[int, ...]]:
    """A function of positional symbol values (in the order of ``names``) returning the
    tuple of ``dims``. Generated Python source, cached per ``(dims, names)``.

    >>> n, m = Sym("n"), Sym("m")
    >>> compile_dims([n * 2, m + 1, 3], ["n", "m"])(5, 7)
    (10, 8, 3)
    """
    return _compile(tuple(as_dim(d) for d in dims), tuple(names))


@functools.lru_cache(maxsize=4096)
def _compile(dims: tuple[Dim, ...], names: tuple[str, ...]) -> Callable[..., tuple[int, ...]]:
    _check_names(names)
    used = {symbol.name for dim in dims for symbol in free_symbols(dim)}
    missing = sorted(used - set(names))
    if missing:
        raise ValueError(
            f"compile_dims: the dims use symbol(s) {', '.join(missing)} "
            f"that are not among the parameters ({', '.join(names) or 'none'})"
        )
    body = "".join(f"{to_python(dim)}, " for dim in dims)
    source = f"def compiled_dims({', '.join(names)}):\n    return ({body})\n"
    namespace: dict = {}
    code = compile(source, "<relaxjax.arith.compile_dims>", "exec")
    exec(code, {"__builtins__": {"min": min, "max": max}}, namespace)
    function = namespace["compiled_dims"]
    function.source = source
    return function


def _check_names(names: tuple[str, ...]) -> None:
    for name in names:
        if (
            not isinstance(name, str)
            or not name.isidentifier()
            or keyword.iskeyword(name)
            or name in RESERVED_NAMES
        ):
            raise ValueError(f"compile_dims: {name!r} cannot be a parameter name")
    if len(set(names)) != len(names):
        raise ValueError(f"compile_dims: parameter names repeat: {', '.join(names)}")
