"""The table of relaxjax.numpy's elementwise math, logic and bit functions (issue 10),
driving tests/ops/test_surface_math.py.

An entry is a jax.numpy name with ``fn(module, *operands)`` (called with ``rnp`` and with
``jnp``), its arity and the operand kinds its value groups run it on. Every name runs
through one jitted program per group (symbolic ``n``), through ``eval_shape`` for every
dtype and Python scalars against jax, and eagerly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Operand kinds of the value groups.
FLOAT, INT, BOOL = "float", "int", "bool"


@dataclass(frozen=True)
class Fn:
    """A jax.numpy function: ``fn(module, *operands)``, its arity and the value groups
    (operand kinds) it runs in."""

    name: str
    fn: Callable
    arity: int = 1
    kinds: tuple[str, ...] = (FLOAT,)
    #: Relative tolerance against jax for float32 (scaled for the other float dtypes):
    #: jax's float32 functions are a few ulp off in places (``exp2(-100)``).
    rtol: float = 1e-5
    #: Whether zeros must have jax's sign (floor division gives numpy's ``-0.0`` where
    #: jax gives ``0.0``).
    zero_sign: bool = True
    #: Whether ints and bools only convert to floats first (their groups compile it
    #: with ``-m slow`` only; eval_shape and eager runs check the conversion by default).
    converts: bool = False
    #: Whether the dtype sweep runs it (False for the value-only variants).
    sweep: bool = True

    @property
    def id(self) -> str:
        return self.name


def _call(name: str, arity: int = 1) -> Callable:
    if arity == 1:
        return lambda m, x: getattr(m, name)(x)
    return lambda m, x, y: getattr(m, name)(x, y)


def unary(name: str, kinds=(FLOAT,), rtol: float = 1e-5, converts: bool = False) -> Fn:
    return Fn(name, _call(name), 1, kinds, rtol, converts=converts)


def binary(name: str, kinds=(FLOAT,), rtol: float = 1e-5, converts: bool = False) -> Fn:
    return Fn(name, _call(name, 2), 2, kinds, rtol, converts=converts)


ALL = (FLOAT, INT, BOOL)
NUMBERS = (FLOAT, INT)
INTEGERS = (INT, BOOL)

TRANSCENDENTAL = (
    ("arccos", "arcsin", "arctan", "acos", "asin", "atan", "arccosh", "arcsinh", "arctanh")
    + ("acosh", "asinh", "atanh", "cosh", "sinh", "tan", "exp2", "expm1", "log1p", "cbrt")
    + ("log2", "log10", "fabs", "reciprocal", "sinc", "deg2rad", "radians", "rad2deg")
    + ("degrees", "i0", "spacing", "frexp", "modf", "angle")
)

UNARY = [
    *(unary(n, ALL, converts=True) for n in TRANSCENDENTAL),
    *(unary(n, ALL) for n in ("floor", "ceil", "trunc", "rint", "square", "positive")),
    *(unary(n, NUMBERS) for n in ("round", "around", "sign")),
    *(unary(n, ALL) for n in ("isfinite", "isinf", "isnan", "isneginf", "isposinf", "signbit")),
    unary("nan_to_num", ALL),
    *(unary(n, ALL) for n in ("real", "imag", "conj", "conjugate", "iscomplex", "isreal")),
    *(unary(n, INTEGERS) for n in ("bitwise_not", "bitwise_invert", "invert", "bitwise_count")),
]

BINARY = [
    *(binary(n, ALL, converts=True) for n in ("arctan2", "atan2", "copysign", "hypot")),
    *(binary(n, ALL, converts=True) for n in ("logaddexp", "logaddexp2", "nextafter")),
    *(binary(n, ALL, converts=True) for n in ("heaviside", "float_power")),
    binary("logical_xor", ALL),
    binary("pow", (FLOAT,), rtol=1e-5),
    # Integer powers that overflow, and integer division by 0, are undefined (jax's
    # results are XLA's: wrapped with the exponent's low 6 bits, and x // 0 == -1).
    Fn(
        "pow(int, small)",
        lambda m, x, y: m.pow(m.mod(x, 7), m.mod(y, 5)),
        2,
        (INT,),
        sweep=False,
    ),
    binary("fmod", NUMBERS),
    Fn("divmod", _call("divmod", 2), 2, (FLOAT,), zero_sign=False),
    Fn(
        "divmod(int, y != 0)",
        lambda m, x, y: m.divmod(x, m.where(y == 0, 3, y)),
        2,
        (INT,),
        sweep=False,
    ),
    *(binary(n, ALL) for n in ("fmax", "fmin", "isclose")),
    *(binary(n, (INT,)) for n in ("gcd", "lcm")),
    *(binary(n, INTEGERS) for n in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    *(binary(n, (INT,)) for n in ("left_shift", "right_shift")),
    *(binary(n, (INT,)) for n in ("bitwise_left_shift", "bitwise_right_shift")),
    Fn("ldexp", lambda m, x, e: m.ldexp(x, e), 2, (FLOAT,)),
]

#: Extra forms: keywords and arguments beyond the operands (one jitted group).
KEYWORDS = [
    Fn("round(decimals=2)", lambda m, x: m.round(x, decimals=2), 1, (FLOAT,)),
    Fn("around(decimals=-1)", lambda m, x: m.around(x, -1), 1, (FLOAT,)),
    Fn("round(int, decimals=1)", lambda m, x: m.round(x, 1), 1, (INT,)),
    Fn(
        "nan_to_num(nan=, posinf=, neginf=)",
        lambda m, x: m.nan_to_num(x, nan=-1.0, posinf=7.0, neginf=-7.0),
        1,
        (FLOAT,),
    ),
    Fn("angle(deg=True)", lambda m, x: m.angle(x, deg=True), 1, (FLOAT,)),
    Fn(
        "isclose(rtol=, atol=, equal_nan=)",
        lambda m, x, y: m.isclose(x, y, rtol=0.5, atol=0.25, equal_nan=True),
        2,
        (FLOAT,),
    ),
]

FUNCTIONS = UNARY + BINARY

#: The jax.numpy names of this family that the table covers (keyword forms aside).
NAMES = sorted({f.name for f in FUNCTIONS if "(" not in f.name}) + [
    "allclose",
    "array_equal",
    "array_equiv",
    "iscomplexobj",
    "isrealobj",
    "unwrap",
    "packbits",
    "unpackbits",
    "array_repr",
    "array_str",
    "printoptions",
    "get_printoptions",
    "set_printoptions",
]


# --------------------------------------------------------------------------- data

_FLOAT_EDGES = [
    -np.inf, -1e30, -100.0, -3.5, -2.5, -1.0, -0.75, -0.5, -1e-30, -0.0, 0.0, 1e-30,
    0.5, 0.75, 1.0, 1.5, 2.5, 3.5, 20.0, 100.0, 1e30, np.inf, np.nan, -np.nan,
]  # fmt: skip


def float_data(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, shift: int = 0):
    """Edge values (infinities, NaN, signed zeros, tiny and huge values, halves) first,
    then uniform values in [-5, 5)."""
    count = int(np.prod(shape))
    edges = np.roll(np.array(_FLOAT_EDGES), shift)
    values = np.concatenate([edges, rng.uniform(-5, 5, max(count - len(edges), 0))])
    import ml_dtypes  # noqa: PLC0415 - bfloat16 names

    kind = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    return values[:count].astype(np.float64).astype(kind).reshape(shape)


def int_data(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, shift: int = 0):
    """Extremes, zero, small values of both signs, then random values in [-40, 40).

    The lowest value of a signed dtype is left out: its ``abs`` is itself, and jax's
    ``gcd`` never terminates on it.
    """
    info = np.iinfo(dtype)
    lowest = info.min + 1 if info.min else 0
    edges = np.roll(
        np.array([lowest, info.max, 0, 1, -1, 2, -2, 7, 12, -18, 31, 32, 33, -64, 6, 9]),
        shift,
    )
    count = int(np.prod(shape))
    low = max(info.min, -40)
    values = np.concatenate([edges, rng.integers(low, 40, max(count - len(edges), 0))])
    return values[:count].astype(dtype).reshape(shape)


def bool_data(rng: np.random.Generator, shape: tuple[int, ...], shift: int = 0):
    count = int(np.prod(shape))
    pattern = np.roll(np.array([True, False, False, True]), shift)
    values = np.concatenate([np.resize(pattern, min(count, 4)), rng.random(count) < 0.5])
    return values[:count].reshape(shape)
