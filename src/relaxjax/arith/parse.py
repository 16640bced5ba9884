"""Parsing dims from text: ``"n*2+1"``, ``"min(n, 4)"``, ``"n // 2"``, ``"(n+1)%3"``.

The grammar is Python's for integer expressions over names::

    sum     := product (("+" | "-") product)*
    product := unary (("*" | "//" | "%") unary)*
    unary   := ("-" | "+") unary | power
    power   := primary ("**" unary)?          exponent: a non-negative constant
    primary := INT | NAME | ("min" | "max") "(" sum ("," sum)* ")" | "(" sum ")"

so every canonical text (``str(dim)``) parses back to the same dim.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from relaxjax.arith import algebra, extremum
from relaxjax.arith.expr import Dim, Expr, Sym
from relaxjax.errors import ShapeError

_TOKEN = re.compile(r"\s*(?:(?P<int>\d+)|(?P<name>[A-Za-z_]\w*)|(?P<op>//|\*\*|[-+*%(),]))")

_BINARY = {
    "+": algebra.add,
    "-": algebra.sub,
    "*": algebra.mul,
    "//": algebra.floordiv,
    "%": algebra.mod,
}

_FUNCTIONS = {"min": extremum.min_, "max": extremum.max_}


def parse_dim(text: str | Dim, symbols: Mapping[str, Sym] | None = None) -> Dim:
    """The dim written in ``text``; names not in ``symbols`` become ``Sym(name)``.

    Ints and Exprs are returned unchanged. Malformed text raises
    :class:`~relaxjax.errors.ShapeError` naming the position.

    >>> str(parse_dim("(n + 1) * 2"))
    'n * 2 + 2'
    """
    if isinstance(text, Expr) or type(text) is int:
        return text
    if not isinstance(text, str):
        raise TypeError(f"parse_dim expects a str, an int or a dim, got {text!r}")
    return _Parser(text, dict(symbols or {})).parse()


class _Parser:
    """A recursive-descent parser over the token list of one dim."""

    def __init__(self, text: str, symbols: dict[str, Sym]) -> None:
        self.text = text
        self.symbols = symbols
        self.tokens = self._tokenize(text)
        self.index = 0

    def _tokenize(self, text: str) -> list[tuple[str, str, int]]:
        tokens = []
        position = 0
        stripped_end = len(text.rstrip())
        while position < stripped_end:
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                bad = text[position:].lstrip()[:1]
                self._fail(
                    f"unexpected character {bad!r}", len(text) - len(text[position:].lstrip())
                )
            kind = match.lastgroup
            start = match.start(kind)
            tokens.append((kind, match.group(kind), start))
            position = match.end()
        tokens.append(("end", "", len(text)))
        return tokens

    def _fail(self, problem: str, position: int) -> None:
        raise ShapeError(f"cannot parse dim {self.text!r}: {problem} at position {position}")

    def _peek(self) -> tuple[str, str, int]:
        return self.tokens[self.index]

    def _advance(self) -> tuple[str, str, int]:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def _expect(self, op: str) -> None:
        kind, value, position = self._advance()
        if kind != "op" or value != op:
            self._fail(f"expected {op!r}, got {_describe(kind, value)}", position)

    def _at(self, *ops: str) -> bool:
        kind, value, _ = self._peek()
        return kind == "op" and value in ops

    def parse(self) -> Dim:
        if not self.text.strip():
            self._fail("empty text", 0)
        value = self._sum()
        kind, token, position = self._peek()
        if kind != "end":
            self._fail(f"unexpected {_describe(kind, token)}", position)
        return value

    def _sum(self) -> Dim:
        value = self._product()
        while self._at("+", "-"):
            op = self._advance()[1]
            value = _BINARY[op](value, self._product())
        return value

    def _product(self) -> Dim:
        value = self._unary()
        while self._at("*", "//", "%"):
            op = self._advance()[1]
            value = _BINARY[op](value, self._unary())
        return value

    def _unary(self) -> Dim:
        if self._at("-"):
            self._advance()
            return algebra.neg(self._unary())
        if self._at("+"):
            self._advance()
            return self._unary()
        return self._power()

    def _power(self) -> Dim:
        base = self._primary()
        if not self._at("**"):
            return base
        position = self._advance()[2]
        exponent = self._unary()
        if not isinstance(exponent, int) or exponent < 0:
            self._fail(f"the exponent must be a non-negative constant, got {exponent}", position)
        return algebra.power(base, exponent)

    def _primary(self) -> Dim:
        kind, value, position = self._advance()
        if kind == "int":
            return int(value)
        if kind == "name":
            return self._name(value, position)
        if kind == "op" and value == "(":
            inner = self._sum()
            self._expect(")")
            return inner
        self._fail(f"expected a number, a name or '(', got {_describe(kind, value)}", position)
        raise AssertionError("unreachable")

    def _name(self, name: str, position: int) -> Dim:
        if self._at("("):
            if name not in _FUNCTIONS:
                self._fail(f"unknown function {name!r} (only min and max)", position)
            return self._call(name, position)
        if name in _FUNCTIONS:
            self._fail(f"{name!r} must be called, as in {name}(a, b)", position)
        symbol = self.symbols.get(name)
        if symbol is None:
            try:
                symbol = self.symbols[name] = Sym(name)
            except ValueError as error:
                self._fail(str(error), position)
        return symbol

    def _call(self, name: str, position: int) -> Dim:
        self._expect("(")
        args = [self._sum()]
        while self._at(","):
            self._advance()
            args.append(self._sum())
        self._expect(")")
        if len(args) < 2:
            self._fail(f"{name}() needs at least two arguments, got {len(args)}", position)
        return _FUNCTIONS[name](*args)


def _describe(kind: str, value: str) -> str:
    return "end of text" if kind == "end" else repr(value)
