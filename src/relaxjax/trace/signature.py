"""From a Python call (or a list of specs) to the parameter specs a trace is made for.

A :class:`Signature` wraps ``inspect.signature(fn)`` and the spec annotations of
``fn``. :meth:`Signature.plan_call` turns call arguments into a :class:`CallPlan`
(the specs, the flat array arguments, the static arguments);
:meth:`Signature.plan_specs` does the same for ``eval_shape``/``lower``, whose
arguments are specs. Two calls with equal ``CallPlan.key`` share a trace and an
executable: annotated parameters never add to the key (one executable for every
value of their symbols), unannotated ones add their shapes and dtypes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from relaxjax import arith
from relaxjax.ir import StructInfo, free_symbols, is_dim_value
from relaxjax.trace import pytree
from relaxjax.trace.spec import (
    SPEC_TYPES,
    ParamSpec,
    annotation_spec,
    describe_value,
    dim_spec_of_value,
    spec_of_argument,
    spec_of_value,
)

__all__ = ["Signature", "CallPlan", "FastPath", "check_structure", "plan_key", "static_value"]

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


@dataclass(frozen=True, slots=True)
class CallPlan:
    """How one call maps onto a trace.

    ``params``: the traced parameters (specs per leaf, in signature order);
    ``statics``: the static arguments by name (baked into the trace);
    ``flat_args``: the leaves of the traced arguments, in parameter order (call
    plans only); ``key``: equal keys share a trace.
    """

    params: tuple[ParamSpec, ...]
    statics: tuple[tuple[str, Hashable], ...]
    flat_args: tuple[object, ...]
    key: Hashable


class Signature:
    """The parameters of a function to trace, with their declared specs."""

    def __init__(
        self,
        fn: Callable,
        name: str,
        static_argnames: Sequence[str] = (),
        localns: Mapping[str, object] | None = None,
    ) -> None:
        self.name = name
        self._localns = dict(localns or {})
        self.signature = inspect.signature(fn)
        self.static_argnames = frozenset(static_argnames)
        unknown = sorted(self.static_argnames - set(self.signature.parameters))
        if unknown:
            raise TypeError(f"{name}() has no parameter {unknown[0]!r} (in static_argnames)")
        self._fn = fn
        self._annotations: dict[str, tuple[list[StructInfo], pytree.TreeDef] | None] | None = None

    # -- annotations ----------------------------------------------------------------------

    @property
    def annotations(self) -> dict[str, tuple[list[StructInfo], pytree.TreeDef] | None]:
        """Each parameter's declared spec (leaves and structure), or None; read on first use."""
        if self._annotations is None:
            self._annotations = {
                name: self._annotation_of(param)
                for name, param in self.signature.parameters.items()
            }
        return self._annotations

    def _annotation_of(self, param: inspect.Parameter):
        if param.name in self.static_argnames or param.kind in _VARIADIC:
            return None
        annotation = param.annotation
        if annotation is inspect.Parameter.empty:
            return None
        if isinstance(annotation, str):
            annotation = self._evaluate(param.name, annotation)
        return annotation_spec(annotation, param.name)

    def _evaluate(self, param: str, text: str) -> object:
        scope = dict(getattr(self._fn, "__globals__", {}))
        scope.update(self._localns)  # names local to where the function was decorated
        closure = inspect.getclosurevars(self._fn) if inspect.isfunction(self._fn) else None
        if closure is not None:
            scope.update(closure.nonlocals)
        try:
            return eval(text, scope)  # noqa: S307 - annotations are the user's own code
        except Exception as err:  # noqa: BLE001 - any failure means an unusable annotation
            raise TypeError(
                f"{self.name}(): cannot evaluate the annotation {text!r} of parameter "
                f"{param!r}: {type(err).__name__}: {err}"
            ) from None

    def is_annotated(self) -> bool:
        """True when every parameter without a default has a spec (``lower()`` needs none)."""
        return all(
            self.annotations[name] is not None
            or param.default is not inspect.Parameter.empty
            or param.kind in _VARIADIC
            for name, param in self.signature.parameters.items()
        )

    # -- binding ---------------------------------------------------------------------------

    def plan_call(self, args: Sequence[object], kwargs: Mapping[str, object]) -> CallPlan:
        """The plan for calling with concrete arguments (arrays and Python scalars)."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{self.name}() {err}") from None
        return self._plan(bound.arguments, call=True)

    def plan_specs(self, specs: Sequence[object], kwspecs: Mapping[str, object]) -> CallPlan:
        """The plan for ``eval_shape``/``lower``: arguments are specs; annotations fill gaps."""
        try:
            bound = self.signature.bind_partial(*specs, **kwspecs)
        except TypeError as err:
            raise TypeError(f"{self.name}() {err}") from None
        arguments = dict(bound.arguments)
        for name, param in self.signature.parameters.items():
            if name in arguments or param.kind in _VARIADIC:
                continue
            if self.annotations[name] is None and param.default is inspect.Parameter.empty:
                raise TypeError(
                    f"{self.name}(): parameter {name!r} has no spec: annotate it "
                    f'(e.g. {name}: relax.Tensor(("n", 4), "float32")) or pass a spec for it'
                )
        return self._plan(arguments, call=False)

    def check_inline_dims(self, args: Sequence[object], kwargs: Mapping[str, object]) -> None:
        """Inside another trace (inlined or called), a symbolic scalar
        parameter takes an int or a symbolic dim, never a traced tensor: its value must
        be a shape."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError:
            return  # the Python call reports it
        for name, value in bound.arguments.items():
            declared = self.annotations.get(name)
            if declared is None or declared[1] is not pytree.LEAF:
                continue
            if not is_dim_value(declared[0][0]) or _is_dim_argument(value):
                continue
            raise TypeError(
                f"{self.name}(): argument {name!r} is the symbolic dim "
                f"{declared[0][0].value}: inside a traced function pass an int or a symbolic "  # type: ignore[union-attr]
                f"dim (such as x.shape[0]), got {type(value).__name__}; a value computed at "
                "run time cannot be a shape"
            )

    def _plan(self, arguments: Mapping[str, object], call: bool) -> CallPlan:
        params: list[ParamSpec] = []
        statics: list[tuple[str, Hashable]] = []
        flat_args: list[object] = []
        for name, param in self.signature.parameters.items():
            if name in self.static_argnames:
                if name in arguments:
                    statics.append((name, static_value(self.name, name, arguments[name])))
            elif name in arguments:
                spec, leaves = self._param(name, arguments[name], call)
                params.append(spec)
                flat_args.extend(leaves)
            elif param.kind not in _VARIADIC and param.default is inspect.Parameter.empty:
                leaves, treedef = self.annotations[name]  # type: ignore[misc]
                params.append(ParamSpec(name, tuple(leaves), treedef))
            # else: the function's own default applies; it is fixed, nothing to trace
        key = plan_key(params, statics)
        return CallPlan(tuple(params), tuple(statics), tuple(flat_args), key)

    def _param(self, name: str, value: object, call: bool) -> tuple[ParamSpec, list[object]]:
        declared = self.annotations.get(name)
        if declared is not None and call:
            spec_leaves, treedef = declared
            leaves, value_tree = pytree.flatten(value)
            if not pytree.same_structure(value_tree, treedef):
                raise TypeError(self._structure_error(name, spec_leaves, treedef, value))
            # the value's structure: its static fields are the ones the function sees
            return ParamSpec(name, tuple(spec_leaves), value_tree), leaves
        leaves, treedef = pytree.flatten(value, is_leaf=_is_spec)
        paths = pytree.leaf_paths(treedef)
        convert = spec_of_argument if call else spec_of_value
        # eval_shape/lower: a symbolic scalar's annotation says how to read its value
        dims: Sequence[StructInfo | None] = [None] * len(leaves)
        if declared is not None and declared[1] == treedef:
            dims = [leaf if is_dim_value(leaf) else None for leaf in declared[0]]
        specs = tuple(
            convert(leaf, where) if dim is None else dim_spec_of_value(leaf, where, dim)  # type: ignore[arg-type]
            for leaf, dim, where in zip(
                leaves, dims, (f"{self.name}(): argument {name!r}{path}" for path in paths)
            )
        )
        return ParamSpec(name, specs, treedef), leaves

    def _structure_error(self, name: str, specs, treedef: pytree.TreeDef, value: object) -> str:
        """What differs between an argument and the structure of its annotation, e.g.
        ``f(): argument 'x': expected an array (annotated Tensor((n,), "float32")), got None``."""
        annotation = pytree.unflatten(treedef, specs)
        found = pytree.first_mismatch(annotation, value, _is_spec)
        if found is None or not _is_plain_node(found.expected):  # registered classes
            _, value_tree = pytree.flatten(value)
            return (
                f"{self.name}(): argument {name!r} must have the structure {treedef} of its "
                f"annotation, got {value_tree}"
            )
        where = f"{self.name}(): argument {name!r}{found.path}"
        expected, given = found.expected, describe_value(found.given)
        if _is_spec(expected):
            return f"{where}: expected an array (annotated {expected!r}), got {given}"
        if expected is None:
            return f"{where}: expected None (as annotated), got {given}"
        if isinstance(expected, dict):
            want = f"a dict with {_keys(tuple(expected))} (annotated {expected!r})"
            if found.missing:
                return f"{where}: expected {want}, got a dict without {_keys(found.missing)}"
            if found.extra:
                return f"{where}: expected {want}, got a dict with the extra {_keys(found.extra)}"
            return f"{where}: expected {want}, got {given}"
        kind = type(expected).__name__
        want = f"a {kind} of {len(expected)} (annotated {expected!r})"
        value = found.given
        if isinstance(value, tuple | list) and isinstance(value, type(expected)):
            return f"{where}: expected {want}, got a {kind} of {len(value)}"
        return f"{where}: expected {want}, got {given}"


def _is_plain_node(node: object) -> bool:
    """A spec, None, dict, tuple or list: the nodes ``pytree.first_mismatch`` compares."""
    return node is None or _is_spec(node) or isinstance(node, dict | tuple | list)


def _keys(keys: tuple) -> str:
    """``key 'b'`` or ``keys 'b', 'w'``."""
    return ("key " if len(keys) == 1 else "keys ") + ", ".join(
        repr(k) for k in sorted(keys, key=repr)
    )


def check_structure(
    func: str, name: str, value_tree: pytree.TreeDef, declared: pytree.TreeDef
) -> None:
    """An annotated argument must have its annotation's structure (static fields of
    registered nodes may differ: they belong to the argument)."""
    if not pytree.same_structure(value_tree, declared):
        raise TypeError(
            f"{func}(): argument {name!r} must have the structure {declared} of its "
            f"annotation, got {value_tree}"
        )


def plan_key(params: Sequence[ParamSpec], statics: Sequence[tuple[str, Hashable]]) -> Hashable:
    """The cache key of a trace for these parameter specs and static arguments."""
    return (tuple(params), tuple(statics), _symbol_bounds(params))


def _symbol_bounds(params: Sequence[ParamSpec]) -> tuple[tuple[str, int | None, int | None], ...]:
    """The bounds of every symbol in the specs: symbols compare by name, bounds must key too."""
    found = {
        (s.name, s.lower, s.upper) for p in params for leaf in p.leaves for s in free_symbols(leaf)
    }
    return tuple(sorted(found, key=lambda b: (b[0], str(b[1]), str(b[2]))))


def _is_dim_argument(value: object) -> bool:
    if isinstance(value, bool | np.bool_):
        return False
    return isinstance(value, int | np.integer | arith.Expr)


def _is_spec(value: object) -> bool:
    return isinstance(value, (*SPEC_TYPES, arith.Expr))


def static_value(func: str, name: str, value: object) -> Hashable:
    """A static argument's value, which must be hashable (it keys the cache)."""
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"{func}(): static argument {name!r} must be hashable, got {type(value).__name__}"
        ) from None
    return value  # type: ignore[return-value]


class FastPath:
    """A cheap cache key for the common call: positional arrays, one per parameter.

    When every parameter is positional, not static, and annotated with one spec or
    not at all, a call passing exactly one numpy (or cuda device) array (or Python scalar, for an
    unannotated parameter; any integer for a symbolic scalar) per parameter is
    identified by the shapes and dtypes of its unannotated arrays alone, and its
    arguments are already flat. :meth:`key` returns None for any other call, which
    then takes the general path. Annotations are read on the first call, not when the
    function is decorated.
    """

    __slots__ = ("_signature", "_kinds", "_arity")

    def __init__(self, signature: Signature) -> None:
        self._signature: Signature | None = signature
        self._kinds: tuple[int, ...] | None = None
        self._arity = -1

    def _prepare(self, signature: Signature) -> None:
        self._signature = None
        params = list(signature.signature.parameters.values())
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        if signature.static_argnames or any(p.kind not in positional for p in params):
            return
        declared = [signature.annotations[p.name] for p in params]
        if all(d is None or d[1] is pytree.LEAF for d in declared):
            self._kinds = tuple(_kind(d) for d in declared)
            self._arity = len(params)

    def key(self, args: Sequence[object]) -> Hashable | None:
        """The call's key, or None when the call needs the general path."""
        if self._signature is not None:
            self._prepare(self._signature)
        if len(args) != self._arity:
            return None
        key: list[object] = []
        for arg, kind in zip(args, self._kinds):  # type: ignore[arg-type]
            cls = type(arg)
            if cls is np.ndarray or getattr(cls, "__relaxjax_device__", False):  # device arrays too
                if kind == _UNANNOTATED:  # dtype.num: a cheap int naming the dtype
                    key.extend((arg.shape, arg.dtype.num))  # type: ignore[attr-defined]
            elif kind == _UNANNOTATED:
                if cls not in _SCALARS:
                    return None
                key.append(cls)
            elif kind == _TENSOR or not (cls is int or issubclass(cls, np.integer)):
                return None
        return tuple(key)


_UNANNOTATED, _TENSOR, _DIM = 0, 1, 2


def _kind(declared: tuple[list[StructInfo], pytree.TreeDef] | None) -> int:
    if declared is None:
        return _UNANNOTATED
    return _DIM if is_dim_value(declared[0][0]) else _TENSOR


_SCALARS = (bool, int, float)
