"""Views in the IR: ``Layout`` arithmetic, which layout ops ``make_views`` turns into
``call_view``, the strided kernel variants, and the well-formedness rules that keep a
view from being read wrongly or overwritten while it is live."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.lax as rlax
import relaxjax.numpy as rnp
from relaxjax import arith, ir, ops
from relaxjax.errors import VerifyError
from relaxjax.ir import (
    CALL_TIR,
    Binding,
    Call,
    GlobalVar,
    Layout,
    call_view,
    is_view_call,
    module_to_text,
    structural_equal,
)
from relaxjax.ir.infer import InferContext
from relaxjax.ir.parser import parse_module
from relaxjax.passes import lower_pipeline, make_views
from relaxjax.passes.walk import rebuild_function
from relaxjax.tir.parser import parse_prim_func

LOWER = lower_pipeline(verify=True)


# -- Layout: the views of a view, checked against numpy on concrete shapes -----------------


def _read(base: np.ndarray, layout: Layout) -> np.ndarray:
    """The elements ``layout`` selects from ``base``'s row-major memory."""
    shape = tuple(int(d) for d in layout.shape)
    strides = tuple(int(s) for s in layout.strides)
    flat = base.reshape(-1)
    index = np.full(shape, int(layout.offset), dtype=np.int64)
    for axis, stride in enumerate(strides):
        along = np.arange(shape[axis]).reshape([-1 if a == axis else 1 for a in range(len(shape))])
        index = index + along * stride
    return flat[index] if index.size else np.empty(shape, base.dtype)


@st.composite
def _steps(draw):
    """A shape and a sequence of layout ops (name, argument) valid on it."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=4)))
    steps, current = [], shape
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["transpose", "slice", "expand", "squeeze", "reshape"]))
        if kind == "transpose":
            perm = tuple(draw(st.permutations(range(len(current)))))
            steps.append((kind, perm))
            current = tuple(current[p] for p in perm)
        elif kind == "slice" and current:
            axis = draw(st.integers(0, len(current) - 1))
            start = draw(st.integers(0, current[axis]))
            step = draw(st.integers(1, 3))
            length = len(range(start, current[axis], step))
            steps.append((kind, (axis, start, length, step)))
            current = current[:axis] + (length,) + current[axis + 1 :]
        elif kind == "expand":
            axis = draw(st.integers(0, len(current)))
            steps.append((kind, axis))
            current = current[:axis] + (1,) + current[axis:]
        elif kind == "squeeze":
            ones = [a for a, d in enumerate(current) if d == 1]
            if ones:
                steps.append((kind, ones[0]))
                current = current[: ones[0]] + current[ones[0] + 1 :]
        elif kind == "reshape":
            size = int(np.prod(current))
            divisors = [d for d in range(1, size + 1) if size % d == 0] if size else [0]
            first = draw(st.sampled_from(divisors))
            new = (first, size // first) if first else (0, draw(st.integers(0, 3)))
            steps.append((kind, new))
            current = new
    return shape, steps


@given(_steps())
def test_layout_ops_select_what_numpy_selects(case):
    shape, steps = case
    base = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    array, layout = base, Layout.contiguous(shape)
    for kind, arg in steps:
        if kind == "transpose":
            array, layout = array.transpose(arg), layout.transpose(arg)
        elif kind == "slice":
            axis, start, length, step = arg
            index = [slice(None)] * array.ndim
            index[axis] = slice(start, None, step)
            array, layout = array[tuple(index)], layout.slice(axis, start, length, step)
        elif kind == "expand":
            array, layout = (
                np.expand_dims(array, arg),
                layout.expand(array.shape[:arg] + (1,) + array.shape[arg:], (arg,)),
            )
        elif kind == "squeeze":
            array, layout = np.squeeze(array, arg), layout.squeeze((arg,))
        else:
            reshaped = layout.reshape(arg)
            if reshaped is None:  # the reshape needs a copy: start over from a fresh base
                array = array.reshape(arg)
                base, layout = array.copy(), Layout.contiguous(arg)
                continue
            array, layout = array.reshape(arg), reshaped
        np.testing.assert_array_equal(_read(base, layout), array)


def test_reshape_of_symbolic_dims_is_decided_for_every_value():
    n, m = arith.sym("n"), arith.sym("m")
    rows = Layout.contiguous((n, m * 4))
    assert rows.reshape((n, m, 4)) == Layout((n, m, 4), (m * 4, 4, 1))
    assert rows.reshape((n * m * 4,)).is_contiguous()
    column_block = rows.slice(1, 4, m * 2, 1)  # x[:, 4 : 4 + 2m]: rows stay apart
    assert column_block.reshape((n, m, 2)) == Layout((n, m, 2), (m * 4, 2, 1), 4)
    assert column_block.reshape((n * m * 2,)) is None  # a flat view would need a copy
    transposed = rows.transpose((1, 0))
    assert not transposed.is_contiguous()
    assert transposed.reshape((m * 4 * n,)) is None


# -- make_views: which ops become views ----------------------------------------------------


def _bindings(mod, name=None):
    function = mod[name] if name else next(iter(mod.graph_functions().values()))
    return [b for block in function.body.blocks for b in block.bindings]


def _ops(mod) -> list[str]:
    return [b.value.op_name for b in _bindings(mod) if isinstance(b.value, Call)]


@relax.jit
def layouts(x: relax.Tensor(("n", 12), "float32")):
    y = rnp.exp(x)
    a = y.reshape(x.shape[0], 3, 4).transpose(2, 0, 1)[1:, :, ::2]
    return rnp.sin(a), rnp.expand_dims(y, 0)[:, 1:] * 2.0


def test_layout_chains_compose_into_one_view_of_the_computed_tensor():
    mod = make_views(layouts.trace())
    ir.verify(mod)
    views = [b for b in _bindings(mod) if is_view_call(b.value)]
    bases = {b.value.args[0].name_hint for b in views}
    assert len(bases) == 1 and all(not is_view_call(b.value.args[0]) for b in views)
    n = arith.sym("n")
    chain = [b for b in views if b.var.info.ndim == 3 and b.var.info.shape[0] == 3]
    layout = chain[-1].value.attrs.layout
    assert layout.strides == (1, 12, 8) and layout.offset == 1
    assert layout.shape == (3, n, 2)


def test_lowered_module_prints_views_and_strided_kernels_and_parses_back():
    mod = LOWER(layouts.trace())
    text = module_to_text(mod)
    assert "call_view(" in text and "strides=(1, 12, 8), offset=1" in text
    assert 'Buffer((3, d0, 2), "float32", strides=(1, 12, 8))' in text
    assert not any(op in ("reshape", "transpose", "strided_slice") for op in _ops(mod))
    parsed = parse_module(text, ops.registry(), parse_kernel=parse_prim_func)
    assert structural_equal(parsed, mod)


@relax.jit
def refused(x: relax.Tensor(("n", 4), "float32")):
    y = x * 2.0
    return y.T, x.reshape(-1), y.reshape(-1)


def test_returned_views_must_be_contiguous_runs_of_computed_memory():
    mod = make_views(refused.trace())
    ops_of = {b.var.name_hint: b.value.op_name for b in _bindings(mod) if isinstance(b.value, Call)}
    assert sorted(ops_of.values()).count("call_view") == 1  # only y.reshape(-1)
    assert "transpose" in ops_of.values()  # a returned transpose is a copy
    assert "reshape" in ops_of.values()  # a returned reshape of the argument is a copy


@relax.jit
def callee(x: relax.Tensor(("k", "m"), "float32")):
    return x + 1.0


@relax.jit
def caller(x: relax.Tensor(("n", 4), "float32")):
    y = x * 2.0
    return callee(y.T), callee(y.reshape(2, -1))


def test_a_graph_function_gets_contiguous_views_only():
    mod = make_views(caller.trace())
    ir.verify(mod)
    names = [b.value.op_name for b in _bindings(mod, "caller") if isinstance(b.value, Call)]
    assert "transpose" in names  # y.T is copied for the call
    assert names.count("call_view") == 1  # the contiguous reshape is passed as a view


# -- the rules verify enforces ---------------------------------------------------------------


def _replace(mod, function_name, var_name, value):
    function = mod[function_name]
    blocks = [
        [
            Binding(b.var, value, b.location) if b.var.name_hint == var_name else b
            for b in block.bindings
        ]
        for block in function.body.blocks
    ]
    return mod.with_function(function_name, rebuild_function(function, blocks))


@relax.jit
def small(x: relax.Tensor(("n", 4), "float32")):
    return rnp.exp((x * 2.0).T) + 1.0


def test_verify_rejects_a_kernel_reading_a_view_as_row_major():
    mod = LOWER(small.trace())
    strided = next(b for b in _bindings(mod, "small") if "strided" in str(b.value.args[0]))
    call = strided.value
    kernel = mod[call.args[0].name]
    text = str(kernel).replace(", strides=(1, 4)", "").replace("exp_strided", "exp_plain")
    assert "strides" not in text
    mod = mod.with_function("exp_plain", parse_prim_func(text))
    wrong = Call(CALL_TIR, (GlobalVar("exp_plain"), *call.args[1:]), call.attrs, call.info)
    with pytest.raises(VerifyError, match="view-layout: .*cannot read .*stride"):
        ir.verify(_replace(mod, "small", strided.var.name_hint, wrong))


def test_verify_rejects_a_view_of_a_view():
    mod = LOWER(small.trace())
    view = next(b for b in _bindings(mod, "small") if is_view_call(b.value))
    again = call_view(view.var, (4,), (1,), 0, info=ir.TensorInfo((4,), "float32"))
    function = mod["small"]
    extra = ir.DataflowVar("again", again.info)
    blocks = [list(block.bindings) for block in function.body.blocks]
    position = next(i for i, b in enumerate(blocks[0]) if b is view) + 1
    blocks[0].insert(position, Binding(extra, again))
    bad = mod.with_function("small", rebuild_function(function, blocks))
    with pytest.raises(VerifyError, match="view-layout: .*is a view itself"):
        ir.verify(bad)


def test_call_view_refuses_a_view_outside_its_base():
    x = ir.Var("x", ir.TensorInfo((2, 3), "float32"))
    attrs = ir.ViewAttrs((2, 3), (3, 1), 1)
    with pytest.raises(relax.ShapeError, match="reaching element 6 of a base of 6 elements"):
        ir.CALL_VIEW.infer([x.info], attrs, InferContext("call_view"))
    empty = ir.ViewAttrs((0, 3), (3, 1), 6)  # an empty view may start at the end
    assert ir.CALL_VIEW.infer([x.info], empty, InferContext("call_view")).shape == (0, 3)


@relax.jit
def updated_while_viewed(x: relax.Tensor(("n", 4), "float32"), u: relax.Tensor((1, 4), "float32")):
    t = x + 1.0
    flat = t.reshape(-1)
    t2 = rlax.dynamic_update_slice(t, u, (0, 0))
    return t2 * 1.0, flat * 2.0


def test_inplace_pass_and_verify_keep_a_live_views_base_unwritten():
    mod = LOWER(updated_while_viewed.trace())
    assert "call_tir_inplace" not in _ops(mod)
    assert "call_view" in _ops(mod)


@relax.jit
def updated_after_view(x: relax.Tensor(("n", 4), "float32"), u: relax.Tensor((1, 4), "float32")):
    t = x + 1.0
    s = (t.reshape(-1) * 2.0).sum()
    return rlax.dynamic_update_slice(t, u, (0, 0)) * 1.0, s


def test_verify_rejects_an_update_of_memory_a_view_reads_later():
    mod = LOWER(updated_after_view.trace())
    assert "call_tir_inplace" in _ops(mod)  # the view's last use is before the update
    function = mod["updated_after_view"]
    view = next(b.var for b in _bindings(mod) if is_view_call(b.value))
    blocks = [list(b.bindings) for b in function.body.blocks]
    update = next(
        (k, i)
        for k, block in enumerate(blocks)
        for i, b in enumerate(block)
        if isinstance(b.value, Call) and b.value.op_name == "call_tir_inplace"
    )
    # the view read right after the update: its base was not dead when updated
    late = ir.DataflowVar("late", view.info)
    blocks[update[0]].insert(update[1] + 1, Binding(late, view))
    broken = mod.with_function("updated_after_view", rebuild_function(function, blocks))
    with pytest.raises(VerifyError, match="inplace-owned: .*cannot update"):
        ir.verify(broken)
