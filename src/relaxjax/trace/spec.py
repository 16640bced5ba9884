"""Specs: the struct info of a function's parameters, from annotations, specs or values.

A parameter's spec is a pytree of leaf specs: :class:`~relaxjax.ir.TensorInfo`
(``relax.Tensor``) for tensors, :class:`~relaxjax.ir.PrimInfo` for scalars. Specs
come from three places:

- annotations: ``def f(x: relax.Tensor(("n", 4), "float32"))``; a symbol (or any
  symbolic dim) annotates a *symbolic scalar* parameter, ``def f(m: relax.sym("m"))``,
  whose spec is ``PrimInfo("int64", value=m)`` (:func:`dim_spec`): it takes a Python
  or numpy integer at call time and the traced function sees the dim ``m`` itself;
- ``eval_shape``/``lower`` arguments: specs, or anything with ``.shape`` and
  ``.dtype`` (numpy arrays, jax arrays, ``jax.ShapeDtypeStruct``), or Python
  scalars;
- call arguments of unannotated parameters: the first call's shapes and dtypes.

Symbols are identified by name within one signature: :func:`unify_symbols`
rewrites every occurrence of a name to one symbol carrying the declared bounds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith, dtypes
from relaxjax.errors import ShapeError
from relaxjax.ir import PrimInfo, StructInfo, TensorInfo, free_symbols, subs_info
from relaxjax.trace import pytree

__all__ = [
    "ParamSpec",
    "is_array_like",
    "describe_value",
    "spec_of_value",
    "spec_of_argument",
    "annotation_spec",
    "dim_spec",
    "dim_spec_of_value",
    "unify_symbols",
    "within_bounds",
    "describe_bounds",
]

SPEC_TYPES = (TensorInfo, PrimInfo)


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One Python parameter: its name, its spec pytree's leaves and structure."""

    name: str
    leaves: tuple[StructInfo, ...]
    treedef: pytree.TreeDef


def is_array_like(value: object) -> bool:
    """Arrays and array descriptions: anything with a ``shape`` and a ``dtype``."""
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, type)


def describe_value(value: object) -> str:
    """A value in "got ..." of a message: ``None``; an array's type, shape and dtype;
    otherwise its type and a short repr, arrays inside it abbreviated (``str 'abc'``)."""
    if value is None:
        return "None"
    if is_array_like(value):
        return f"{type(value).__name__} of shape {tuple(value.shape)} and dtype {value.dtype}"
    text = _short_repr(value)
    if len(text) > 72:
        text = text[:69] + "..."
    return f"{type(value).__name__} {text}"


def _short_repr(value: object) -> str:
    """``repr`` with arrays as ``array(shape=(2,), dtype=float32)``."""
    if is_array_like(value):
        return f"array(shape={tuple(value.shape)}, dtype={value.dtype})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_short_repr(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_short_repr(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_short_repr(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    return repr(value)


def _python_scalar_info(value: bool | int | float) -> PrimInfo:
    return PrimInfo(dtypes.weak_of(value).dtype, weak=True)


_ARRAY_INFOS: dict[tuple, TensorInfo] = {}


def _array_info(value: object, what: str) -> TensorInfo:
    if type(value) is np.ndarray:  # the common case, cached: called on every call
        key = (value.shape, value.dtype)
        info = _ARRAY_INFOS.get(key)
        if info is None:
            if len(_ARRAY_INFOS) > 4096:
                _ARRAY_INFOS.clear()
            info = _ARRAY_INFOS[key] = TensorInfo(value.shape, dtypes.canonical(value.dtype))
        return info
    try:
        shape = tuple(int(d) for d in value.shape)  # type: ignore[attr-defined]
    except TypeError:
        raise TypeError(
            f"{what}: the shape {value.shape!r} of {type(value).__name__} is not a tuple "  # type: ignore[attr-defined]
            "of ints; give a relax.Tensor spec for symbolic dims"
        ) from None
    return TensorInfo(shape, dtypes.canonical(value.dtype))  # type: ignore[attr-defined]


def spec_of_argument(value: object, what: str) -> StructInfo:
    """The spec a call argument specialises an unannotated parameter to.

    Arrays give their concrete shape and dtype; Python ``bool``/``int``/``float``
    give a weakly typed scalar (``bool``/``int64``/``float64``), as in jax.
    """
    if isinstance(value, bool | int | float) and not isinstance(value, np.generic):
        return _python_scalar_info(value)
    if is_array_like(value) and not isinstance(value, (*SPEC_TYPES, type)):
        return _array_info(value, what)
    raise TypeError(f"{what}: expected an array or a Python scalar, got {_describe(value)}")


def dim_spec(dim: arith.Dim) -> PrimInfo:
    """The spec of a symbolic scalar parameter whose value is ``dim``."""
    return PrimInfo("int64", value=dim)


def dim_spec_of_value(value: object, what: str, declared: PrimInfo) -> StructInfo:
    """What ``eval_shape``/``lower`` take for a symbolic scalar parameter (annotated
    with ``declared``): a symbolic dim (the annotation's symbol or another), a scalar
    spec, or an int, which specialises the trace to that value."""
    if isinstance(value, arith.Expr):
        return dim_spec(value)
    if isinstance(value, PrimInfo):
        return value
    if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
        symbol = declared.value
        if isinstance(symbol, arith.Sym) and not within_bounds(symbol, int(value)):
            upper = "" if symbol.upper is None else f" <= {symbol.upper}"
            raise ShapeError(
                f"{what}: {symbol.name} = {int(value)} is outside its declared range "
                f"{symbol.lower} <= {symbol.name}{upper}"
            )
        return dim_spec(int(value))
    raise TypeError(
        f"{what}: the parameter is the symbolic dim {declared.value}; give a symbol such as "
        f'relax.sym("{_first_symbol(declared)}") or an int, got {_describe(value)}'
    )


def within_bounds(symbol: arith.Sym, value: int) -> bool:
    """Whether ``value`` is within ``symbol``'s declared bounds."""
    return (symbol.lower is None or value >= symbol.lower) and (
        symbol.upper is None or value <= symbol.upper
    )


def _first_symbol(info: PrimInfo) -> str:
    names = sorted(s.name for s in free_symbols(info))
    return names[0] if names else "m"


def spec_of_value(value: object, what: str) -> StructInfo:
    """A spec given to ``eval_shape``/``lower``: a spec, an array-like, a Python scalar,
    or a symbolic dim (the value of a symbolic scalar parameter, :func:`dim_spec`)."""
    if isinstance(value, SPEC_TYPES):
        return value
    if isinstance(value, arith.Expr):
        return dim_spec(value)
    if isinstance(value, type) and issubclass(value, SPEC_TYPES):
        raise TypeError(f"{what}: got the class {_class_name(value)} itself; {_SPEC_HINT}")
    if isinstance(value, bool | int | float | np.generic) or is_array_like(value):
        return spec_of_argument(value, what)
    raise TypeError(f"{what}: expected a spec, got {_describe(value)}; {_SPEC_HINT}")


_SPEC_HINT = (
    'give a spec such as relax.Tensor(("n", 4), "float32"), an array, '
    "or an object with .shape and .dtype"
)


def _class_name(cls: type) -> str:
    return "relax.Tensor" if cls is TensorInfo else cls.__name__


def _describe(value: object) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _is_spec_tree_leaf(value: object) -> bool:
    return isinstance(value, (*SPEC_TYPES, arith.Expr))


def annotation_spec(
    annotation: object, param: str
) -> tuple[list[StructInfo], pytree.TreeDef] | None:
    """The spec pytree an annotation declares, or None if it declares none.

    A spec, or a pytree of specs (tuples, lists, dicts, named tuples, registered
    classes such as a dataclass of specs), declares one; a symbolic dim (``relax.sym
    ("m")``) declares a symbolic scalar (:func:`dim_spec`). Annotations that hold no
    spec (``int``, ``np.ndarray``, ...) are ignored: the parameter is specialised at
    the call. The class ``relax.Tensor`` itself, or a structure mixing specs with
    other things, is a mistake and raises ``TypeError``.
    """
    if isinstance(annotation, type) and issubclass(annotation, SPEC_TYPES):
        raise TypeError(
            f"parameter {param!r}: annotated with the class {_class_name(annotation)} itself; "
            'give a spec such as relax.Tensor(("n", 4), "float32")'
        )
    if isinstance(annotation, type) or not (
        isinstance(annotation, (*SPEC_TYPES, arith.Expr)) or pytree.is_node(annotation)
    ):
        return None
    leaves, treedef = pytree.flatten(annotation, is_leaf=_is_spec_tree_leaf)
    leaves = [dim_spec(leaf) if isinstance(leaf, arith.Expr) else leaf for leaf in leaves]
    specs = [leaf for leaf in leaves if isinstance(leaf, SPEC_TYPES)]
    if not specs:
        return None
    if len(specs) != len(leaves):
        other = next(leaf for leaf in leaves if not isinstance(leaf, SPEC_TYPES))
        raise TypeError(
            f"parameter {param!r}: the annotation mixes specs with {_describe(other)}; "
            "annotate with a spec or a pytree (tuple, list, dict, registered class) of specs"
        )
    return leaves, treedef


# --------------------------------------------------------------------------- symbols


def _declared(symbol: arith.Sym) -> bool:
    return symbol.lower != 0 or symbol.upper is not None


def describe_bounds(symbol: arith.Sym) -> str:
    """``sym('n', lower=1, upper=8)``: how a symbol's declaration reads."""
    parts = [repr(symbol.name)]
    if symbol.lower != 0:
        parts.append(f"lower={symbol.lower}")
    if symbol.upper is not None:
        parts.append(f"upper={symbol.upper}")
    return f"sym({', '.join(parts)})"


def unify_symbols(
    specs: Sequence[tuple[str, StructInfo]],
    known: Mapping[str, arith.Sym] | None = None,
    fixed: bool = False,
) -> tuple[list[StructInfo], dict[str, arith.Sym]]:
    """Make every symbol name stand for one symbol across ``specs``.

    ``specs`` pairs a description (e.g. ``"parameter 'x'"``) with a leaf spec;
    ``known`` holds the symbols already defined (e.g. in the function being traced).
    A name declared with bounds in one place and without in another takes the
    declared bounds; two different declared bounds raise ``TypeError`` naming
    both. With ``fixed``, the known symbols keep their bounds (a spec may only
    repeat them). Returns the rewritten specs and the symbol table by name.
    """
    table: dict[str, arith.Sym] = dict(known or {})
    origin = {name: "the function's symbols" for name in table}
    frozen = frozenset(table) if fixed else frozenset()
    for where, info in specs:
        for symbol in sorted(free_symbols(info), key=lambda s: s.name):
            _merge_symbol(table, origin, frozen, symbol, where)
    rewritten = [_rebind(info, table) for _, info in specs]
    return rewritten, table


def _merge_symbol(
    table: dict[str, arith.Sym],
    origin: dict[str, str],
    frozen: frozenset[str],
    symbol: arith.Sym,
    where: str,
) -> None:
    current = table.get(symbol.name)
    if current is None:
        table[symbol.name] = symbol
        origin[symbol.name] = where
        return
    if not _declared(symbol) or _same_bounds(symbol, current):
        return
    if not _declared(current) and symbol.name not in frozen:
        table[symbol.name] = symbol
        origin[symbol.name] = where
        return
    raise TypeError(
        f"symbol {symbol.name!r} is declared with conflicting bounds: "
        f"{describe_bounds(current)} in {origin[symbol.name]} and "
        f"{describe_bounds(symbol)} in {where}"
    )


def _same_bounds(a: arith.Sym, b: arith.Sym) -> bool:
    return (a.lower, a.upper) == (b.lower, b.upper)


def _rebind(info: StructInfo, table: Mapping[str, arith.Sym]) -> StructInfo:
    stale = {
        s.name: table[s.name] for s in free_symbols(info) if not _same_bounds(s, table[s.name])
    }
    return subs_info(info, stale) if stale else info
