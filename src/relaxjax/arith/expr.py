"""Symbolic integer expression nodes and their canonical text.

A *dim* (``Dim = int | Expr``) is a Python ``int`` when it is constant and an
:class:`Expr` otherwise. Expressions are kept in one canonical form, built only
by the constructors in :mod:`relaxjax.arith.algebra` (which the operators call):

- a :class:`Poly` is a normalised sum of products ``coeff * atom ** power`` plus an
  integer constant; its terms are sorted, coefficients are non-zero;
- the *atoms* are :class:`Sym` (a named integer), :class:`FloorDiv`, :class:`Mod`,
  :class:`Min` and :class:`Max`, whose operands are canonical dims;
- a lone atom with coefficient 1 is the atom itself, never a one-term ``Poly``.

Equal canonical forms are structurally equal, hash equally and print identically.
Non-symbol nodes are interned, so building the same expression twice yields the
same object and equality is usually an identity check.

Canonical print order (stable; ``parse_dim(str(e)) == e``):

- terms by descending degree, then by their factors in atom order; the constant last;
- atom order: symbols (by name), then ``min``, ``max``, ``//``, ``%`` atoms, each
  group ordered by its text;
- a term is its factors joined by ``" * "`` (a power repeats the factor), followed by
  ``" * k"`` when its coefficient ``k`` is not 1: ``"m * n * 2"``, ``"n * n"``;
- signs join terms (``"m - n * 2 - 1"``); a leading negative term prints as ``"-n"``
  or ``"-n * 2"``;
- ``"a // b"`` and ``"a % b"`` parenthesise a compound operand (a sum, product,
  ``//`` or ``%``) and are themselves
  parenthesised inside a product or after a sign: ``"(n + 1) // 2"``,
  ``"(n // 2) * 3"``; ``"min(a, b)"`` and ``"max(a, b)"`` list operands in dim
  order (integers first).
"""

from __future__ import annotations

import keyword
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from relaxjax.errors import InconclusiveShapeError

if TYPE_CHECKING:
    from collections.abc import Iterator

RESERVED_NAMES = frozenset({"min", "max"})

_COMPARISON_SYMBOLS = {"__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">="}


#: Turns a dim into a traced value (a weakly typed int64 scalar) while a trace is in
#: progress, else returns None. Set by the tracer with :func:`set_value_of_dim`: arith
#: sits below the tracer and must not import it.
_VALUE_OF_DIM: Callable[[Expr], object] | None = None


def set_value_of_dim(fn: Callable[[Expr], object] | None) -> None:
    """Register how a dim becomes a traced value (see ``Expr._as_value_op``)."""
    global _VALUE_OF_DIM
    _VALUE_OF_DIM = fn


class Expr(ABC):
    """A non-constant symbolic integer expression in canonical form.

    Build expressions from symbols (:func:`relaxjax.arith.sym`) and ints with
    ``+ - * // %`` (and ``min_``/``max_``); every operation returns a plain ``int``
    when the result is constant. ``==`` and ``hash`` are structural on the canonical
    form; ``< <= > >=`` answer only when provable for every value of the symbols and
    raise :class:`~relaxjax.errors.InconclusiveShapeError` otherwise.

    >>> n = Sym("n")
    >>> str((n + 1) * 2)
    'n * 2 + 2'
    """

    __slots__ = ("_hash", "_text", "_symbols", "_signature", "_interval", "__weakref__")
    _rank: ClassVar[int] = 0

    @abstractmethod
    def _key(self) -> tuple:
        """The structural identity of this node (its children and payload)."""

    def _init_cache(self) -> None:
        object.__setattr__(self, "_hash", hash((type(self).__name__, *self._key())))
        object.__setattr__(self, "_text", None)
        object.__setattr__(self, "_symbols", None)
        object.__setattr__(self, "_interval", None)
        object.__setattr__(self, "_signature", self._bound_signature())

    def _bound_signature(self) -> frozenset[tuple[str, int | None, int | None]]:
        """Every ``(name, lower, upper)`` below this node: nodes equal by structure but
        built over differently bounded symbols must not be interned together."""
        return _union_signature(self.children())

    # structural identity ---------------------------------------------------------

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, Expr):
            return (
                type(self) is type(other)
                and self._hash == other._hash
                and self._key() == other._key()
            )
        if isinstance(other, int):
            return False  # a canonical Expr is never constant
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __copy__(self) -> Expr:
        return self

    def __deepcopy__(self, memo: dict) -> Expr:
        return self

    # text ------------------------------------------------------------------------

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = self._render()
            object.__setattr__(self, "_text", text)
        return text

    def __repr__(self) -> str:
        return str(self)

    @abstractmethod
    def _render(self) -> str:
        """The canonical text of this node."""

    @abstractmethod
    def children(self) -> tuple[Dim, ...]:
        """The operand dims of this node (atoms of a Poly's terms; a/b of a division)."""

    def sort_key(self) -> tuple[int, str]:
        """The key that orders atoms in the canonical form."""
        return (self._rank, str(self))

    @property
    def symbols(self) -> frozenset[Sym]:
        """The symbols this expression depends on."""
        found = self._symbols
        if found is None:
            found = frozenset(_iter_symbols(self))
            object.__setattr__(self, "_symbols", found)
        return found

    # arithmetic (canonicalising constructors live in algebra.py) -------------------

    def __add__(self, other: object) -> Dim:
        return self._combine(other, _algebra.add, "__add__", swap=False)

    def __radd__(self, other: object) -> Dim:
        return self._combine(other, _algebra.add, "__radd__", swap=True)

    def __sub__(self, other: object) -> Dim:
        return self._combine(other, _algebra.sub, "__sub__", swap=False)

    def __rsub__(self, other: object) -> Dim:
        return self._combine(other, _algebra.sub, "__rsub__", swap=True)

    def __mul__(self, other: object) -> Dim:
        return self._combine(other, _algebra.mul, "__mul__", swap=False)

    def __rmul__(self, other: object) -> Dim:
        return self._combine(other, _algebra.mul, "__rmul__", swap=True)

    def __floordiv__(self, other: object) -> Dim:
        return self._combine(other, _algebra.floordiv, "__floordiv__", swap=False)

    def __rfloordiv__(self, other: object) -> Dim:
        return self._combine(other, _algebra.floordiv, "__rfloordiv__", swap=True)

    def __mod__(self, other: object) -> Dim:
        return self._combine(other, _algebra.mod, "__mod__", swap=False)

    def __rmod__(self, other: object) -> Dim:
        return self._combine(other, _algebra.mod, "__rmod__", swap=True)

    def __pow__(self, exponent: object) -> Dim:
        if isinstance(exponent, int) and not isinstance(exponent, bool) and exponent >= 0:
            return _algebra.power(self, exponent)
        value = self._as_value_op("__pow__", exponent)  # x.shape[-1] ** -0.5 while tracing
        if value is NotImplemented and isinstance(exponent, int):
            return _algebra.power(self, exponent)  # raises, saying why a negative power fails
        return value

    def __truediv__(self, other: object) -> object:
        return self._as_value_op("__truediv__", other)

    def __rtruediv__(self, other: object) -> object:
        return self._as_value_op("__rtruediv__", other)

    def _combine(self, other: object, fn, method: str, swap: bool) -> Dim:
        dim = _algebra.as_dim_or_none(other)
        if dim is None:
            return self._as_value_op(method, other)
        return fn(dim, self) if swap else fn(self, dim)

    def _as_value_op(self, method: str, other: object) -> object:
        """``self <method> other`` on the traced value of this dim, when ``other`` is not a
        dim (a float, a negative power, true division) and a trace is in progress, as
        jax does (``x.shape[-1] ** -0.5``); NotImplemented otherwise."""
        if not isinstance(other, int | float | np.integer | np.floating):
            return NotImplemented
        value = None if _VALUE_OF_DIM is None else _VALUE_OF_DIM(self)
        return NotImplemented if value is None else getattr(value, method)(other)

    def __neg__(self) -> Dim:
        return _algebra.neg(self)

    def __pos__(self) -> Expr:
        return self

    def __abs__(self) -> Dim:
        return _extremum.max_(self, _algebra.neg(self))

    # three-valued comparisons, raising when undecidable ---------------------------

    def _decide(self, method: str, other: object) -> bool:
        other = _algebra.as_dim_or_none(other)
        if other is None:
            return NotImplemented
        op = _COMPARISON_SYMBOLS[method]
        answer = _compare.compare(self, op, other)
        if answer is None:
            raise InconclusiveShapeError(
                f"cannot decide {self} {op} {other} for every value of its symbols"
            )
        return answer

    def __lt__(self, other: object) -> bool:
        return self._decide("__lt__", other)

    def __le__(self, other: object) -> bool:
        return self._decide("__le__", other)

    def __gt__(self, other: object) -> bool:
        return self._decide("__gt__", other)

    def __ge__(self, other: object) -> bool:
        return self._decide("__ge__", other)

    def __bool__(self) -> bool:
        answer = _compare.compare(self, "!=", 0)
        if answer is None:
            raise InconclusiveShapeError(
                f"cannot decide whether {self} is non-zero for every value of its symbols"
            )
        return answer

    def __index__(self) -> int:
        # numpy calls this for `array[:n]`, `np.zeros((n,))`, `range(n)`: say what to do
        # instead of numpy's generic "slice indices must be integers".
        raise TypeError(
            f"the symbolic dim {self} has no value while tracing, so it cannot be used as a "
            "Python int (e.g. to slice or size a numpy array); wrap the array with "
            "relaxjax.numpy.asarray(...) or use relaxjax.numpy functions instead"
        )

    # substitution and evaluation ----------------------------------------------------

    def subs(self, mapping: Mapping[str | Sym, Dim]) -> Dim:
        """Replace symbols (keys: names or Syms) by dims; unknown keys are ignored."""
        return _subst.subs(self, mapping)

    def evaluate(self, env: Mapping[str, int]) -> int:
        """The value for concrete symbol values ``env`` (names to ints)."""
        return _subst.evaluate(self, env)


Dim = int | Expr
Monomial = tuple[tuple[Expr, int], ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Sym(Expr):
    """A named integer symbol, ``lower <= value <= upper`` (``None``: unbounded).

    Symbols are identified by name: two ``Sym("n")`` are equal whatever their bounds
    (the bounds are carried for reasoning, not compared). ``upper`` may be a dim over
    other symbols: a data-dependent size ``k`` of a ``nonzero`` over ``n * 4`` elements
    is ``Sym("k", 0, n * 4)``, and bounds, comparisons and ``min``/``max`` use it
    (``min(k, n * 4) == k``).
    """

    name: str
    lower: int | None = 0
    upper: int | Expr | None = None
    _rank: ClassVar[int] = 0

    def __post_init__(self) -> None:
        _check_symbol(self.name, self.lower, self.upper)
        self._init_cache()

    def _key(self) -> tuple:
        return (self.name,)

    def _bound_signature(self) -> frozenset[tuple[str, int | None, Dim | None]]:
        return frozenset({(self.name, self.lower, self.upper)})

    def __reduce__(self) -> tuple:
        return (Sym, (self.name, self.lower, self.upper))

    def _render(self) -> str:
        return self.name

    def children(self) -> tuple[Dim, ...]:
        return ()


def _check_symbol(name: object, lower: object, upper: object) -> None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"a symbol name must be a Python identifier, got {name!r}")
    if name in RESERVED_NAMES:
        raise ValueError(f"{name!r} is reserved for the {name}() function of dims")
    if lower is not None and (not isinstance(lower, int) or isinstance(lower, bool)):
        raise TypeError(f"symbol {name!r}: lower bound must be an int or None, got {lower!r}")
    if isinstance(upper, Expr):
        if name in {s.name for s in upper.symbols}:
            raise ValueError(f"symbol {name!r}: its upper bound {upper} mentions the symbol itself")
        return
    if upper is not None and (not isinstance(upper, int) or isinstance(upper, bool)):
        raise TypeError(
            f"symbol {name!r}: upper bound must be an int, a dim or None, got {upper!r}"
        )
    if lower is not None and upper is not None and lower > upper:
        raise ValueError(f"symbol {name!r}: lower bound {lower} exceeds upper bound {upper}")


class _Interned(Expr):
    """Nodes built only through :meth:`make`, which returns the existing equal node."""

    __slots__ = ()

    @classmethod
    def make(cls, *fields: object) -> Expr:
        """The interned node with these (already canonical) fields."""
        key = (cls, fields, _union_signature(cls._children_of(fields)))
        node = _INTERNED.get(key)
        if node is None:
            _INTERNED[key] = node = cls(*fields)
        return node

    @staticmethod
    @abstractmethod
    def _children_of(fields: tuple) -> tuple[Dim, ...]:
        """The operand dims given a node's fields."""

    def children(self) -> tuple[Dim, ...]:
        return self._children_of(self._key())

    def __reduce__(self) -> tuple:
        return (type(self).make, self._key())


_NO_SYMBOLS: frozenset = frozenset()


def _union_signature(children: tuple[Dim, ...]) -> frozenset:
    signature = _NO_SYMBOLS
    for child in children:
        if isinstance(child, Expr):
            part = child._signature
            if part is not signature and not part <= signature:
                signature = signature | part if signature else part
    return signature


_INTERNED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Poly(_Interned):
    """``sum(coeff * prod(atom ** power)) + const`` with sorted terms, non-zero coeffs."""

    terms: tuple[tuple[Monomial, int], ...]
    const: int = 0
    _rank: ClassVar[int] = 5

    def __post_init__(self) -> None:
        self._init_cache()

    def _key(self) -> tuple:
        return (self.terms, self.const)

    @staticmethod
    def _children_of(fields: tuple) -> tuple[Dim, ...]:
        return tuple(atom for monomial, _ in fields[0] for atom, _ in monomial)

    def _render(self) -> str:
        parts = []
        for index, (monomial, coeff) in enumerate(self.terms):
            parts.append(_render_term(monomial, coeff, first=index == 0))
        if self.const:
            parts.append(f" + {self.const}" if self.const > 0 else f" - {-self.const}")
        return "".join(parts)


def _render_term(monomial: Monomial, coeff: int, first: bool) -> str:
    magnitude = abs(coeff)
    lone = len(monomial) == 1 and monomial[0][1] == 1 and magnitude == 1
    protect = not lone or (first and coeff < 0)
    factors = [_render_factor(atom, protect) for atom, power in monomial for _ in range(power)]
    text = " * ".join(factors)
    if magnitude != 1:
        text = f"{text} * {magnitude}"
    if first:
        return f"-{text}" if coeff < 0 else text
    return f" - {text}" if coeff < 0 else f" + {text}"


def _render_factor(atom: Expr, protect: bool) -> str:
    text = str(atom)
    return f"({text})" if protect and isinstance(atom, FloorDiv | Mod) else text


def render_operand(value: Dim, left: bool) -> str:
    """The text of an operand of ``//`` or ``%``: compound operands in parentheses
    (``"(n + 1) // 2"``, ``"(n % 12) // 6"``), negative right-hand ints too."""
    text = str(value)
    if isinstance(value, int):
        return text if value >= 0 or left else f"({text})"
    return f"({text})" if isinstance(value, Poly | FloorDiv | Mod) else text


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class _Division(_Interned):
    """``a <op> b`` left unresolved by the simplifier; subclasses name the operator."""

    a: Dim
    b: Dim
    _operator: ClassVar[str]

    def __post_init__(self) -> None:
        self._init_cache()

    def _key(self) -> tuple:
        return (self.a, self.b)

    @staticmethod
    def _children_of(fields: tuple) -> tuple[Dim, ...]:
        return fields

    def _render(self) -> str:
        left, right = render_operand(self.a, True), render_operand(self.b, False)
        return f"{left} {self._operator} {right}"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class FloorDiv(_Division):
    """``a // b`` (Python floor semantics) that the simplifier could not resolve."""

    _rank: ClassVar[int] = 3
    _operator: ClassVar[str] = "//"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Mod(_Division):
    """``a % b`` (Python semantics: the sign of the divisor) left unresolved."""

    _rank: ClassVar[int] = 4
    _operator: ClassVar[str] = "%"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Min(_Interned):
    """``min(args...)`` over at least two canonical, mutually undecided dims."""

    args: tuple[Dim, ...]
    _rank: ClassVar[int] = 1

    def __post_init__(self) -> None:
        self._init_cache()

    def _key(self) -> tuple:
        return (self.args,)

    @staticmethod
    def _children_of(fields: tuple) -> tuple[Dim, ...]:
        return fields[0]

    def _render(self) -> str:
        return f"min({', '.join(str(arg) for arg in self.args)})"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Max(_Interned):
    """``max(args...)`` over at least two canonical, mutually undecided dims."""

    args: tuple[Dim, ...]
    _rank: ClassVar[int] = 2

    def __post_init__(self) -> None:
        self._init_cache()

    def _key(self) -> tuple:
        return (self.args,)

    @staticmethod
    def _children_of(fields: tuple) -> tuple[Dim, ...]:
        return fields[0]

    def _render(self) -> str:
        return f"max({', '.join(str(arg) for arg in self.args)})"


def dim_key(value: Dim) -> tuple[int, int, str]:
    """A total order on canonical dims: ints by value first, then expressions by text."""
    if isinstance(value, int):
        return (0, value, "")
    return (1, 0, str(value))


def _iter_symbols(expr: Expr) -> Iterator[Sym]:
    if isinstance(expr, Sym):
        yield expr
        return
    for child in expr.children():
        if isinstance(child, Expr):
            yield from child.symbols


# The operators above call the canonicalising constructors; those modules build these
# nodes, so they are bound once every class here exists.
from relaxjax.arith import algebra as _algebra  # noqa: E402
from relaxjax.arith import compare as _compare  # noqa: E402
from relaxjax.arith import extremum as _extremum  # noqa: E402
from relaxjax.arith import subst as _subst  # noqa: E402
