"""Substitution, evaluation and free symbols of dims."""

from __future__ import annotations

import operator
from collections.abc import Mapping

from relaxjax.arith import algebra, extremum
from relaxjax.arith.expr import Dim, Expr, FloorDiv, Max, Min, Mod, Poly, Sym
from relaxjax.arith.terms import add_into, to_terms


def free_symbols(value: Dim) -> frozenset[Sym]:
    """The symbols ``value`` depends on (empty for an int)."""
    return frozenset() if isinstance(value, int) else value.symbols


def subs(value: Dim, mapping: Mapping[str | Sym, Dim]) -> Dim:
    """``value`` with symbols replaced by dims, re-canonicalised.

    Keys are symbol names or Syms; keys that do not occur are ignored. The result is a
    plain ``int`` once every symbol is bound.

    >>> n = Sym("n")
    >>> subs((n + 1) * 2, {"n": 3})
    8
    """
    if isinstance(value, int):
        return value
    table = _by_name(mapping)
    if not any(symbol.name in table for symbol in value.symbols):
        return value
    return _substitute(value, table, {})


def _by_name(mapping: Mapping[str | Sym, Dim]) -> dict[str, Dim]:
    table: dict[str, Dim] = {}
    for key, replacement in mapping.items():
        if isinstance(key, Sym):
            name = key.name
        elif isinstance(key, str):
            name = key
        else:
            raise TypeError(f"subs: a key must be a symbol name or a Sym, got {key!r}")
        dim = algebra.as_dim_or_none(replacement)
        if dim is None:
            raise TypeError(
                f"subs: the value for {name!r} must be an int or a symbolic dim, "
                f"got {replacement!r}"
            )
        table[name] = dim
    return table


def _substitute(value: Dim, table: dict[str, Dim], memo: dict[Expr, Dim]) -> Dim:
    if isinstance(value, int):
        return value
    if isinstance(value, Sym):
        return table.get(value.name, value)
    if not any(symbol.name in table for symbol in value.symbols):
        return value
    done = memo.get(value)
    if done is None:
        done = _rebuild(value, lambda child: _substitute(child, table, memo))
        memo[value] = done
    return done


def _rebuild(value: Expr, child) -> Dim:
    """``value`` rebuilt through the canonicalising constructors from mapped children."""
    if isinstance(value, Poly):
        total = to_terms(value.const)
        for monomial, coeff in value.terms:
            product: Dim = coeff
            for atom, power in monomial:
                product = algebra.mul(product, algebra.power(child(atom), power))
            add_into(total, to_terms(product))
        return algebra.close(total)
    if isinstance(value, FloorDiv):
        return algebra.floordiv(child(value.a), child(value.b))
    if isinstance(value, Mod):
        return algebra.mod(child(value.a), child(value.b))
    if isinstance(value, Min):
        return extremum.min_(*(child(arg) for arg in value.args))
    if isinstance(value, Max):
        return extremum.max_(*(child(arg) for arg in value.args))
    raise TypeError(f"not a dim: {value!r}")


def evaluate(value: Dim, env: Mapping[str, int]) -> int:
    """The int value of ``value`` for concrete symbol values (keys: names or Syms).

    Python floor-division and modulo semantics; ``KeyError`` names a symbol without a
    value; ``ZeroDivisionError`` if a divisor evaluates to zero.
    """
    if isinstance(value, int):
        return value
    if any(not isinstance(key, str) for key in env):
        env = {key.name if isinstance(key, Sym) else key: v for key, v in env.items()}
    return _evaluate(value, env, value)


def _evaluate(value: Dim, env: Mapping[str, int], whole: Expr) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, Sym):
        try:
            return operator.index(env[value.name])
        except KeyError:
            raise KeyError(f"no value for symbol {value.name!r} in {whole}") from None
    if isinstance(value, Poly):
        total = value.const
        for monomial, coeff in value.terms:
            product = coeff
            for atom, power in monomial:
                product *= _evaluate(atom, env, whole) ** power
            total += product
        return total
    if isinstance(value, FloorDiv):
        return _evaluate(value.a, env, whole) // _evaluate(value.b, env, whole)
    if isinstance(value, Mod):
        return _evaluate(value.a, env, whole) % _evaluate(value.b, env, whole)
    if isinstance(value, Min):
        return min(_evaluate(arg, env, whole) for arg in value.args)
    if isinstance(value, Max):
        return max(_evaluate(arg, env, whole) for arg in value.args)
    raise TypeError(f"not a dim: {value!r}")
