"""Views at run time: layout ops cost no copy, and the memory they alias stays right.

Each program runs for symbol values including 0 and 1 on both targets and is compared
with numpy (and with the same program compiled without views, ``make_views`` dropped
from the pipeline). The aliasing tests are built so that a view reading memory that a
later kernel overwrites, or a slot reused while a view still reads it, gives a wrong
answer.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relaxjax as relax
import relaxjax.lax as rlax
import relaxjax.numpy as rnp
from relaxjax.ir import CALL_TIR, CALL_TIR_INPLACE, Call, is_view_call
from relaxjax.passes import default_pipeline
from relaxjax.runtime import build_executable

SIZES = (0, 1, 2, 7)
TARGETS = ("llvm", "reference")
RNG = np.random.default_rng(11)


def _bindings(mod):
    function = next(iter(mod.graph_functions().values()))
    return [b for block in function.body.blocks for b in block.bindings]


def _kernels_called(mod) -> list[str]:
    return [
        b.value.args[0].name
        for b in _bindings(mod)
        if isinstance(b.value, Call) and b.value.op in (CALL_TIR, CALL_TIR_INPLACE)
    ]


def _views(mod) -> int:
    return sum(is_view_call(b.value) for b in _bindings(mod))


def _compiled(fn, target: str):
    """The executable of ``fn`` built by the default pipeline (verified after each pass)."""
    mod = default_pipeline("llvm", verify=True, library=target == "llvm")(fn.trace())
    return build_executable(mod, target=target)


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _check(outputs, expected) -> None:
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.shape == want.shape
        assert got.flags.c_contiguous
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


# -- a transformer's head split, transposes and slices ---------------------------------------

H, D = 3, 4


@relax.jit
def heads(
    x: relax.Tensor(("n", 3 * H * D), "float32"), w: relax.Tensor((3 * H * D, 3 * H * D), "float32")
):
    qkv = x @ w + 1.0
    q, k, v = rnp.split(qkv, 3, axis=-1)
    n = x.shape[0]
    q = q.reshape(n, H, D).transpose(1, 0, 2)
    k = k.reshape(n, H, D).transpose(1, 2, 0)
    v = v.reshape(n, H, D).transpose(1, 0, 2)
    s = rnp.exp(q * 0.5)
    return s, (k * 2.0).sum(axis=-1), rnp.tanh(v[:, 1:]), qkv[1:].reshape(-1)


def _heads_numpy(x, w):
    qkv = x @ w + 1.0
    q, k, v = np.split(qkv, 3, axis=-1)
    n = x.shape[0]
    q = q.reshape(n, H, D).transpose(1, 0, 2)
    k = k.reshape(n, H, D).transpose(1, 2, 0)
    v = v.reshape(n, H, D).transpose(1, 0, 2)
    return np.exp(q * 0.5), (k * 2.0).sum(axis=-1), np.tanh(v[:, 1:]), qkv[1:].reshape(-1)


@pytest.mark.parametrize("target", TARGETS)
def test_head_split_reads_views_and_matches_numpy(target):
    executable = _compiled(heads, target)
    assert _views(executable.module) == 4  # split + reshape + transpose (+ slice) composed
    assert not any("reshape" in k or "transpose" in k for k in _kernels_called(executable.module))
    w = _rand(3 * H * D, 3 * H * D)
    for n in SIZES:
        x = _rand(n, 3 * H * D)
        _check(executable(x, w), _heads_numpy(x, w))


@relax.jit
def outer_ops(x: relax.Tensor(("b", "n", 6), "float32")):
    y = rnp.sin(x)
    e = rnp.expand_dims(y, 1)  # (b, 1, n, 6)
    s = rnp.squeeze(e, 1)
    t = y.reshape(x.shape[0], x.shape[1] * 6)[:, 2:]
    return rnp.cos(e) + 1.0, s * 2.0, rnp.exp(t), rnp.swapaxes(y, 0, 2) * 3.0


def _outer_ops_numpy(x):
    y = np.sin(x)
    e = np.expand_dims(y, 1)
    s = np.squeeze(e, 1)
    t = y.reshape(x.shape[0], x.shape[1] * 6)[:, 2:]
    return np.cos(e) + 1.0, s * 2.0, np.exp(t), np.swapaxes(y, 0, 2) * 3.0


@pytest.mark.parametrize("target", TARGETS)
def test_expand_squeeze_swap_and_slices_match_numpy(target):
    executable = _compiled(outer_ops, target)
    assert _views(executable.module) >= 4
    for b, n in [(0, 3), (1, 0), (1, 1), (2, 1), (3, 5)]:
        x = _rand(b, n, 6)
        _check(executable(x), _outer_ops_numpy(x))


# -- which views are refused --------------------------------------------------------------------


@relax.jit
def returns_layouts(x: relax.Tensor(("n", 4), "float32")):
    y = x * 2.0
    return y.T, x.reshape(-1), y.reshape(-1), y


@pytest.mark.parametrize("target", TARGETS)
def test_returned_views_are_fresh_contiguous_arrays(target):
    executable = _compiled(returns_layouts, target)
    for n in SIZES:
        x = _rand(n, 4)
        t, flat_x, flat_y, y = executable(x)
        _check((t, flat_x, flat_y, y), ((x * 2).T, x.reshape(-1), (x * 2).reshape(-1), x * 2))
        if n:
            flat_x[0] = 99.0  # the caller's input is not aliased
            assert x[0, 0] != 99.0
            flat_y[0] = 99.0  # nor is another result
            assert y[0, 0] != 99.0


def test_non_contiguous_returned_view_stays_a_copy_kernel():
    mod = default_pipeline("llvm", verify=True)(returns_layouts.trace())
    assert any("transpose" in k for k in _kernels_called(mod))


@relax.jit
def transposed_weight(h: relax.Tensor(("m", 8), "float32"), wte: relax.Tensor(("v", 8), "float32")):
    return h @ wte.T


def test_matmul_reads_a_transposed_weight_without_a_copy():
    executable = _compiled(transposed_weight, "llvm")
    assert _kernels_called(executable.module) == []  # no transpose kernel: BLAS reads it
    for m, v in [(1, 5), (0, 3), (3, 0), (4, 9)]:
        h, wte = _rand(m, 8), _rand(v, 8)
        _check(executable(h, wte), (h @ wte.T,))


# -- aliasing --------------------------------------------------------------------------------


@relax.jit
def update_while_viewed(x: relax.Tensor(("n", 4), "float32"), u: relax.Tensor((1, 4), "float32")):
    t = x + 1.0
    flat = t.reshape(-1)  # a view of t ...
    t2 = rlax.dynamic_update_slice(t, u, (0, 0))  # ... t is updated while it is live
    return t2 * 1.0, flat * 2.0


@relax.jit
def update_after_view(x: relax.Tensor(("n", 4), "float32"), u: relax.Tensor((1, 4), "float32")):
    t = x + 1.0
    s = (t.reshape(-1) * 2.0).sum()  # the view's last use is before the update
    t2 = rlax.dynamic_update_slice(t, u, (0, 0))
    return t2 * 1.0, s


@pytest.mark.parametrize("target", TARGETS)
def test_an_update_never_writes_memory_a_live_view_reads(target):
    live = _compiled(update_while_viewed, target)
    assert not any(
        b.value.op is CALL_TIR_INPLACE for b in _bindings(live.module) if isinstance(b.value, Call)
    )
    dead = _compiled(update_after_view, target)  # the control: in place when safe
    assert any(
        b.value.op is CALL_TIR_INPLACE for b in _bindings(dead.module) if isinstance(b.value, Call)
    )
    u = _rand(1, 4)
    for n in (1, 2, 7):
        x = _rand(n, 4)
        t = x + 1.0
        t2 = t.copy()
        t2[:1] = u
        _check(live(x, u), (t2, t.reshape(-1) * 2.0))
        _check(dead(x, u), (t2, np.asarray((t.reshape(-1) * 2.0).sum())))


@relax.jit
def slot_reuse(x: relax.Tensor(("n", 8), "float32"), w: relax.Tensor((8, 8), "float32")):
    t = x @ w  # a temporary that only a view reads after this
    v = t.reshape(x.shape[0], 2, 4).transpose(1, 0, 2)
    a = rnp.exp(x) @ w  # temporaries that could take t's slot if t were dead
    b = rnp.sin(a) @ w
    c = rnp.cos(b) @ w
    return v.transpose(1, 0, 2).reshape(x.shape[0], 8) + c


@pytest.mark.parametrize("target", TARGETS)
def test_memory_plan_keeps_a_viewed_temporary_alive(target):
    executable = _compiled(slot_reuse, target)
    assert _views(executable.module) >= 1
    w = _rand(8, 8) * 0.3
    for n in SIZES:
        x = _rand(n, 8)
        c = np.cos(np.sin(np.exp(x) @ w) @ w) @ w
        _check(executable(x, w), (x @ w + c,))


@relax.jit
def view_of_parameter(x: relax.Tensor(("n", 6), "float32")):
    return rnp.exp(x.T[1:]) + x.reshape(-1, 3)[:, :1].sum()


@pytest.mark.parametrize("target", TARGETS)
def test_views_of_parameters_read_the_callers_array(target):
    executable = _compiled(view_of_parameter, target)
    assert _views(executable.module) >= 2
    for n in SIZES:
        x = _rand(n, 6)
        before = x.copy()
        _check(executable(x), (np.exp(x.T[1:]) + x.reshape(-1, 3)[:, :1].sum(),))
        np.testing.assert_array_equal(x, before)


def test_jitted_function_uses_views_by_default():
    @relax.jit
    def f(x: relax.Tensor(("n", 4), "float32")):
        return rnp.exp(x * 2.0).T * 3.0

    for n in SIZES:
        x = _rand(n, 4)
        np.testing.assert_allclose(f(x), (np.exp(x * 2) * 3).T, rtol=2e-6)


# -- views across calls and control flow ----------------------------------------------------


@relax.jit
def inner(x: relax.Tensor(("k", "m"), "float32")):
    y = rnp.exp(x.T)  # a view of the callee's parameter
    return (y * 2.0).reshape(-1), y[:, :1] + x.sum()  # a returned view of its own memory


@relax.jit
def outer(x: relax.Tensor(("n", 4), "float32")):
    y = x * 3.0
    a, b = inner(y.reshape(2, -1))  # a contiguous view passed to a graph function
    c, d = inner(y.T)  # a transposed one is copied first
    return a + 1.0, b, c, d


def _inner_numpy(x):
    y = np.exp(x.T)
    return (y * 2.0).reshape(-1), y[:, :1] + x.sum()


@pytest.mark.parametrize("target", TARGETS)
def test_views_across_graph_function_calls(target):
    executable = _compiled(outer, target)
    for n in (2, 4, 6):
        x = _rand(n, 4)
        y = x * 3.0
        a, b = _inner_numpy(y.reshape(2, -1))
        c, d = _inner_numpy(y.T)
        _check(executable(x), (a + 1.0, b, c, d))


@relax.jit
def looped(x: relax.Tensor(("n", 4), "float32")):
    def body(i, carry):
        return carry + rnp.flip(carry.T, 0).T[:, ::-1] * 0.5 + carry.reshape(-1)[:4]

    y = rlax.fori_loop(0, 3, body, x * 1.0)
    total, ys = rlax.scan(lambda c, row: (c + row[1:], row.reshape(2, 2).T), y[0, 1:], y)
    return y, total, ys


def _looped_numpy(x):
    y = x * 1.0
    for _ in range(3):
        y = y + y * 0.5 + y.reshape(-1)[:4]
    total, ys = y[0, 1:].copy(), []
    for row in y:
        total = total + row[1:]
        ys.append(row.reshape(2, 2).T)
    return y, total, np.stack(ys) if ys else np.zeros((0, 2, 2), np.float32)


@pytest.mark.parametrize("target", TARGETS)
def test_views_inside_loop_bodies(target):
    executable = _compiled(looped, target)
    for n in (1, 2, 5):
        x = _rand(n, 4)
        _check(executable(x), _looped_numpy(x))


# -- random chains of layout ops ---------------------------------------------------------------

_LAYOUT_STEPS = ("transpose", "reshape", "slice", "expand", "squeeze", "swap")


def _apply(xp, y, step: str):
    """One layout op on ``y`` (a (a, b, 4) tensor or a view of one), then elementwise math
    so that a kernel reads it; valid for every size of the first two axes."""
    if step == "transpose":
        y = xp.transpose(y, (1, 0, 2))
    elif step == "reshape":
        y = y.reshape(y.shape[0], y.shape[1] * 2, 2).reshape(y.shape[0], y.shape[1], 4)
    elif step == "slice":
        z = y[1:, :, ::2]
        y = xp.concatenate([z, z[:, :, ::-1]], axis=2)
    elif step == "expand":
        y = xp.expand_dims(y, 0)[0]
    elif step == "squeeze":
        y = xp.squeeze(y[:, :, None, :], 2)
    else:
        y = xp.swapaxes(y, 0, 1)
    return y


@settings(max_examples=6)
@given(st.lists(st.sampled_from(_LAYOUT_STEPS), min_size=1, max_size=4))
def test_random_layout_chains_match_numpy(steps):
    def program(x: relax.Tensor(("a", "b", 4), "float32")):
        y = x * 1.5
        for step in steps:
            y = _apply(rnp, y, step)
        return rnp.exp(y * 0.5), y

    jitted = relax.jit(program)  # one executable for every a and b
    for a, b in [(0, 2), (1, 0), (1, 1), (3, 2), (2, 5)]:
        x = _rand(a, b, 4)
        want = x * 1.5
        for step in steps:
            want = _apply(np, want, step)
        got = jitted(x)
        _check(got, (np.exp(want * 0.5), want))
