"""Weakly typed results, as jax's ``weak_type`` (issue 9, part 6).

``x_i32 + 2.0`` is a weak float64 in jax, which then does not promote float32:
``(x_i32 + 2.0) * y_f32`` is float32. Every op's result dtype and weak flag are compared
with ``jax.eval_shape`` over a table of operands: a tensor of every dtype, the weak int64
and float64 tensors ops make (``jax.ShapeDtypeStruct(..., weak_type=True)`` for jax), and
the Python scalars ``True``, ``2`` and ``2.0``. Chained expressions then run end to end
through ``relax.eval_shape`` and compiled programs against jax.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import relaxjax as relax
import relaxjax.nn as rnn
import relaxjax.numpy as rnp
from relaxjax import dtypes
from relaxjax.errors import ShapeError
from relaxjax.ir import PrimInfo, StructInfo, TensorInfo, TupleInfo
from relaxjax.ops import get
from relaxjax.ops.creation import FullAttrs, LikeAttrs
from relaxjax.ops.elementwise import AstypeAttrs, ClipAttrs
from relaxjax.ops.index import StridedSliceAttrs, TakeAttrs
from relaxjax.ops.join import AxisAttrs, SplitAttrs
from relaxjax.ops.linalg import EinsumAttrs
from relaxjax.ops.manipulate import BroadcastToAttrs, ExpandDimsAttrs, ReshapeAttrs
from relaxjax.ops.pad import PadAttrs
from relaxjax.ops.reduction import AccumulateAttrs, ReduceAttrs

SHAPE = (3,)


@dataclass(frozen=True)
class Operand:
    """A tensor of ``dtype`` (weakly typed when ``weak``) or a Python scalar."""

    dtype: str | None = None
    weak: bool = False
    scalar: bool | int | float | None = None

    @property
    def label(self) -> str:
        if self.scalar is not None:
            return repr(self.scalar)
        return f"{'w' if self.weak else ''}{self.dtype}"

    def info(self) -> StructInfo:
        if self.scalar is None:
            return TensorInfo(SHAPE, self.dtype, weak=self.weak)
        if isinstance(self.scalar, bool):
            return PrimInfo("bool", weak=True)
        if isinstance(self.scalar, int):
            return PrimInfo("int64", self.scalar, weak=True)
        return PrimInfo("float64", weak=True)

    def jax_spec(self) -> object:
        return jax.ShapeDtypeStruct(SHAPE, dtypes.to_numpy(self.dtype), weak_type=self.weak)


TENSORS = [Operand(d) for d in dtypes.DTYPES] + [Operand("int64", True), Operand("float64", True)]
SCALARS = [Operand(scalar=v) for v in (True, 2, 2.0)]
OPERANDS = TENSORS + SCALARS


def _jax(fn, operands) -> tuple[str, bool] | Exception:
    """jax's result dtype and weak flag of ``fn`` on the operands (scalars inlined)."""
    tensors = [o for o in operands if o.scalar is None]

    def call(*arrays):
        values, it = [], iter(arrays)
        for o in operands:
            values.append(o.scalar if o.scalar is not None else next(it))
        return fn(*values)

    try:
        out = jax.eval_shape(call, *(o.jax_spec() for o in tensors))
    except Exception as error:  # noqa: BLE001 - jax refusing is an outcome
        return error
    leaves = jax.tree_util.tree_leaves(out)
    try:
        return [(dtypes.canonical(leaf.dtype), bool(leaf.weak_type)) for leaf in leaves]
    except TypeError as error:  # a dtype we do not have (uint64 sums): we must refuse it
        return error


def _ours(op_name, operands, attrs=None) -> list[tuple[str, bool]] | Exception:
    try:
        info, _ = get(op_name).deduce([o.info() for o in operands], attrs)
    except (TypeError, ShapeError) as error:
        return error
    leaves = list(info.fields) if isinstance(info, TupleInfo) else [info]
    return [(leaf.dtype, leaf.weak) for leaf in leaves]


def _compare(op_name, operands, attrs, jax_fn) -> None:
    ours, theirs = _ours(op_name, operands, attrs), _jax(jax_fn, operands)
    where = f"{op_name}({', '.join(o.label for o in operands)})"
    if isinstance(theirs, Exception):
        if "preferred_element_type" in str(theirs):
            return  # jax's dot of a narrow int and a weak int fails inside jax itself
        assert isinstance(ours, Exception), f"{where}: we give {ours}, jax raises {theirs!r}"
        return
    assert not isinstance(ours, Exception), f"{where}: we raise {ours!r}, jax gives {theirs}"
    # a weak bool promotes as a bool: we never make one
    theirs = [(d, w and d != "bool") for d, w in theirs]
    assert ours == theirs, f"{where}: ours {ours} vs jax {theirs}"


# --------------------------------------------------------------------------- binary


BINARY = {
    "add": jnp.add,
    "subtract": jnp.subtract,
    "multiply": jnp.multiply,
    "divide": jnp.divide,
    "floor_divide": jnp.floor_divide,
    "mod": jnp.mod,
    "power": jnp.power,
    "maximum": jnp.maximum,
    "minimum": jnp.minimum,
    "equal": jnp.equal,
    "less": jnp.less,
    "logical_and": jnp.logical_and,
}
PAIRS = [
    (a, b) for a, b in itertools.product(OPERANDS, OPERANDS) if a.scalar is None or b.scalar is None
]


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_results_are_weak_where_jax_s_are(name):
    for a, b in PAIRS:
        _compare(name, [a, b], None, BINARY[name])


CHAINS = [
    pytest.param("add", "multiply", id="add-multiply"),
    pytest.param("divide", "subtract", id="divide-subtract", marks=pytest.mark.slow),
    pytest.param("power", "maximum", id="power-maximum", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("first", "second"), CHAINS)
def test_two_chained_ops_match_jax(first, second):
    """``second(first(a, b), c)`` for every a, b, c: our deduction of ``first`` feeds
    ``second``, against jax running the same chain."""
    op1, op2 = get(first), get(second)
    for a, b in PAIRS:
        try:
            middle, _ = op1.deduce([a.info(), b.info()])
        except (TypeError, ShapeError):
            continue  # refused where jax refuses: test_binary_results... covers it
        for c in OPERANDS:
            where = f"{second}({first}({a.label}, {b.label}), {c.label})"
            theirs = _jax(lambda x, y, z: BINARY[second](BINARY[first](x, y), z), [a, b, c])
            try:
                info, _ = op2.deduce([middle, c.info()])
                ours = [(info.dtype, info.weak)]
            except (TypeError, ShapeError) as error:
                ours = error
            if isinstance(theirs, Exception):
                assert isinstance(ours, Exception), f"{where}: ours {ours}, jax {theirs!r}"
                continue
            theirs = [(d, w and d != "bool") for d, w in theirs]
            assert ours == theirs, f"{where}: ours {ours} vs jax {theirs}"


def test_where_and_clip():
    for x, y in PAIRS:
        cond = Operand("bool")
        _compare("where", [cond, x, y], None, jnp.where)
    for x in TENSORS:
        for low, high in [(-1, 1), (-1.0, 1.0), (Operand("float32"), 2)]:
            bounds = [b if isinstance(b, Operand) else Operand(scalar=b) for b in (low, high)]
            _compare("clip", [x, *bounds], ClipAttrs(True, True), jnp.clip)


# --------------------------------------------------------------------------- unary


UNARY = {
    "negative": (jnp.negative, None),
    "abs": (jnp.abs, None),
    "exp": (jnp.exp, None),
    "sqrt": (jnp.sqrt, None),
    "tanh": (jnp.tanh, None),
    "logical_not": (jnp.logical_not, None),
    "rsqrt": (jax.lax.rsqrt, None),
    "relu": (jax.nn.relu, None),
    "sigmoid": (jax.nn.sigmoid, None),
    "silu": (jax.nn.silu, None),
    "gelu": (jax.nn.gelu, None),
    "astype": (lambda x: x.astype(jnp.float32), AstypeAttrs("float32")),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_results_are_weak_where_jax_s_are(name):
    fn, attrs = UNARY[name]
    for x in TENSORS:
        _compare(name, [x], attrs, fn)


# --------------------------------------------------------------------------- the rest


def _others():
    """(op, operands, attrs, jax function) for every other op family."""
    cases = []
    for x in TENSORS:
        cases += [
            ("sum", [x], AccumulateAttrs(), jnp.sum),
            ("mean", [x], AccumulateAttrs(), jnp.mean),
            ("max", [x], ReduceAttrs(), jnp.max),
            ("argmax", [x], None, jnp.argmax),
            ("cumsum", [x], None, jnp.cumsum),
            ("reshape", [x], ReshapeAttrs((3, 1)), lambda a: a.reshape(3, 1)),
            ("expand_dims", [x], ExpandDimsAttrs((0,)), lambda a: jnp.expand_dims(a, 0)),
            ("broadcast_to", [x], BroadcastToAttrs((2, 3)), lambda a: jnp.broadcast_to(a, (2, 3))),
            ("pad", [x], PadAttrs(((1, 1),)), lambda a: jnp.pad(a, 1)),
            (
                "strided_slice",
                [x],
                StridedSliceAttrs((0,), (1,), (None,), (1,)),
                lambda a: a[1:],
            ),
            ("take", [x, Operand("int32")], TakeAttrs(), jnp.take),
            ("split", [x], SplitAttrs(indices=(1,)), lambda a: jnp.split(a, [1])),
            ("zeros_like", [x], LikeAttrs(), jnp.zeros_like),
            ("ones_like", [x], LikeAttrs(), jnp.ones_like),
            ("zeros_like", [x], LikeAttrs("float32"), lambda a: jnp.zeros_like(a, "float32")),
            ("full_like", [x, Operand(scalar=3)], LikeAttrs(), jnp.full_like),
            ("full", [x], FullAttrs((2, 3)), lambda a: jnp.full((2, 3), a)),
            ("softmax", [x], None, jax.nn.softmax),
        ]
        for y in TENSORS:
            cases += [
                ("concatenate", [x, y], AxisAttrs(), lambda a, b: jnp.concatenate([a, b])),
                ("stack", [x, y], AxisAttrs(), lambda a, b: jnp.stack([a, b])),
                ("dot", [x, y], None, jnp.dot),
                ("einsum", [x, y], EinsumAttrs("i,i->"), lambda a, b: jnp.einsum("i,i->", a, b)),
            ]
    for value in (True, 2, 2.0):
        scalar = Operand(scalar=value)
        cases.append(("full", [scalar], FullAttrs((2,)), lambda v: jnp.full((2,), v)))
        cases.append(
            ("full", [scalar], FullAttrs((2,), "int32"), lambda v: jnp.full((2,), v, "int32"))
        )
    return cases


def test_every_other_op_family_keeps_jax_s_weak_types():
    for name, operands, attrs, fn in _others():
        _compare(name, operands, attrs, fn)


# --------------------------------------------------------------------------- end to end

EXPRESSIONS = {
    "the issue": lambda m, x, y: (x + 2.0) * y,
    "int then float": lambda m, x, y: (x + 2) * 0.5 + y,
    "bool plus int": lambda m, x, y: (x > 0) + 2,
    "weak float times float16": lambda m, x, y: (x + 2.0) * y.astype(m.float16),
    "exp of weak": lambda m, x, y: m.exp(x + 2.0) * y,
    "sum is strong": lambda m, x, y: m.sum(x + 2.0) * y,
    "full of int": lambda m, x, y: m.full(y.shape, 1) + x,
    "full of int and float32": lambda m, x, y: m.full(y.shape, 1) * y,
    "zeros_like weak": lambda m, x, y: m.zeros_like(x * 2.5) + y,
    "concatenate weak": lambda m, x, y: m.concatenate([x + 2.0, x * 0.5]) * m.concatenate([y, y]),
    "reshape weak": lambda m, x, y: (x + 2.0).reshape(-1, 1) * y[:, None],
    "where weak": lambda m, x, y: m.where(x > 0, x + 2.0, 1.0) * y,
    "astype is strong": lambda m, x, y: (x + 2.0).astype(m.float64) * y,
    "dim scale": lambda m, x, y: y * y.shape[0] ** -0.5,
    "matmul weak": lambda m, x, y: ((x + 2.0) @ (x + 1.0)) * y,
    "relu of bool": lambda m, x, y: (
        (m.maximum(x > 0, 0) if m is jnp else rnn.relu(x > 0)) * 1.5 + y
    ),
}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_chained_expressions_match_jax(name):
    expression = EXPRESSIONS[name]
    x = np.arange(-2, 2, dtype=np.int32)
    y = np.linspace(-1, 1, 4).astype(np.float32)
    want = jax.eval_shape(lambda a, b: expression(jnp, a, b), x, y)
    spec = relax.eval_shape(
        lambda a, b: expression(rnp, a, b),
        relax.Tensor(x.shape, "int32"),
        relax.Tensor(y.shape, "float32"),
    )
    assert spec.dtype == dtypes.canonical(want.dtype)
    assert spec.weak == (bool(want.weak_type) and spec.dtype != "bool")
    got = relax.jit(lambda a, b: expression(rnp, a, b))(x, y)
    expected = np.asarray(expression(jnp, jnp.asarray(x), jnp.asarray(y)))
    assert np.asarray(got).dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(got, np.float64), expected.astype(np.float64), rtol=1e-3)


def test_the_issue_example_is_float32():
    @relax.jit
    def f(x: relax.Tensor(("n",), "int32"), y: relax.Tensor(("n",), "float32")):
        return (x + 2.0) * y

    out = f(np.arange(3, dtype=np.int32), np.ones(3, np.float32))
    assert np.asarray(out).dtype == np.float32
    text = str(f.trace())
    assert 'Tensor((n,), "float64", weak=True) = add(x, 2.0)' in text


def test_weak_flags_print_parse_and_compare():
    from relaxjax.ir.parser import parse_info
    from relaxjax.ir.struct_info import erase, is_base_of, lca

    weak = TensorInfo(("n", 4), "float64", weak=True)
    strong = TensorInfo(("n", 4), "float64")
    assert repr(weak) == 'Tensor((n, 4), "float64", weak=True)'
    assert parse_info(repr(weak)) == weak
    assert weak != strong and is_base_of(strong, weak) is True and is_base_of(weak, strong) is True
    assert lca(weak, strong) == strong and lca(weak, weak) == weak
    assert erase(weak) == TensorInfo(dtype="float64", ndim=2, weak=True)
    assert TensorInfo((2,), "bool", weak=True).weak is False  # a weak bool promotes as bool
