"""Index arithmetic that vanishes: loops fuse only where accesses stay affine, unit
loops leave no division behind, and indices are simplified under the loops' ranges.

The end-to-end check walks every kernel the default pipeline schedules for layout-heavy
programs (views read through strides, reshape copies, batch-1 tensors) and asserts
that no ``//`` or ``%`` of an innermost loop's variable is left in an access; the
programs' numerics are compared with numpy for symbol values including 0 and 1.
"""

from __future__ import annotations

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import arith
from relaxjax.passes import default_pipeline
from relaxjax.passes.strides import with_strides
from relaxjax.runtime import build_executable
from relaxjax.schedule import Schedule
from relaxjax.schedule.rules.affine import fuse_keeps_affine
from relaxjax.schedule.rules.injective import injective_rule
from relaxjax.tir import collect_accesses, interpreter, te
from relaxjax.tir.expr import PrimExpr
from relaxjax.tir.parser import parse_prim_func
from relaxjax.tir.simplify import simplify_indices
from relaxjax.tir.stmt import For

RNG = np.random.default_rng(5)


def _innermost_loops(stmt) -> list[For]:
    found: list[For] = []

    def walk(node) -> bool:
        """Whether ``node`` holds a loop; records loops holding none."""
        if isinstance(node, For):
            if not walk(node.body):
                found.append(node)
            return True
        held = False
        for child in _children(node):
            held = walk(child) or held
        return held

    walk(stmt)
    return found


def _children(node) -> list:
    children = []
    for name in ("body", "then_case", "else_case", "stmts", "block"):
        value = getattr(node, name, None)
        if isinstance(value, tuple):
            children.extend(value)
        elif value is not None and not isinstance(value, (int, str, PrimExpr)):
            children.append(value)
    return children


def _divisions_of(dim, var: arith.Sym) -> list:
    """The ``//`` and ``%`` atoms of ``dim`` whose dividend uses ``var``."""
    found = []
    if isinstance(dim, (arith.FloorDiv, arith.Mod)) and var in arith.free_symbols(dim.a):
        found.append(dim)
    if isinstance(dim, arith.Expr):
        for child in dim.children():
            found += _divisions_of(child, var)
    return found


def _inner_divisions(kernel) -> list[str]:
    """Divisions of an innermost loop's variable in the element offsets (what the
    backend computes from the indices and strides) of the accesses inside it."""
    problems = []
    for loop in _innermost_loops(kernel.body):
        for access in collect_accesses(loop.body):
            if any(isinstance(index, PrimExpr) for index in access.indices):
                continue
            offset = access.buffer.offset_of(access.indices)
            for atom in _divisions_of(offset, loop.var):
                problems.append(f"{kernel.name}: {access.buffer.name} at {offset} ({atom})")
    return problems


@relax.jit
def layouts(x: relax.Tensor(("b", "n", 96), "float32")):
    b, n = x.shape[0], x.shape[1]
    y = x * 2.0
    heads = y.reshape(b, n, 24, 4).transpose(0, 2, 1, 3)  # a view with a short inner run
    keys = y.reshape(b, n, 3, 32).transpose(0, 2, 3, 1)
    flat = y.transpose(1, 0, 2).reshape(-1, 3, 32)  # a reshape that must copy
    narrow = y.reshape(b, n, 24, 4)[:, :, 1:]  # short inner axis of a strided view
    return rnp.exp(heads), keys.sum(-1), flat + 1.0, rnp.sin(narrow), y[0] * 3.0


def _layouts_numpy(x):
    b, n = x.shape[:2]
    y = x * 2.0
    heads = y.reshape(b, n, 24, 4).transpose(0, 2, 1, 3)
    keys = y.reshape(b, n, 3, 32).transpose(0, 2, 3, 1)
    flat = y.transpose(1, 0, 2).reshape(-1, 3, 32)
    narrow = y.reshape(b, n, 24, 4)[:, :, 1:]
    return np.exp(heads), keys.sum(-1), flat + 1.0, np.sin(narrow), y[0] * 3.0


def test_no_division_of_an_innermost_loop_variable_in_layout_kernels():
    mod = default_pipeline("llvm", verify=True, library=True)(layouts.trace())
    problems = [p for kernel in mod.kernels().values() for p in _inner_divisions(kernel)]
    assert problems == []


def test_layout_kernels_match_numpy_for_small_and_empty_symbols():
    mod = default_pipeline("llvm", verify=True, library=True)(layouts.trace())
    executable = build_executable(mod)
    for b, n in [(1, 0), (1, 1), (2, 3), (1, 5), (3, 2)]:
        x = RNG.standard_normal((b, n, 96)).astype(np.float32)
        for got, want in zip(executable(x), _layouts_numpy(x)):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5)


def test_simplify_indices_uses_loop_ranges():
    kernel = parse_prim_func(
        """
@prim_func(outputs=1)
def copy(x: Buffer((d0, 768), "float32"), y: Buffer((d0, 12, 64), "float32")):
    for f in parallel(d0 * 12):
        for i in vectorized(64):
            y[f // 12, f % 12, i] = x[(i + (f % 12) * 64) // 768 + f // 12, \
                (i + (f % 12) * 64) % 768]
"""
    )
    simplified = simplify_indices(kernel)
    text = str(simplified)
    assert "x[f // 12, i + (f % 12) * 64]" in text
    assert simplified.params == kernel.params
    x = RNG.standard_normal((3, 768)).astype(np.float32)
    want = interpreter.run(kernel, x)
    got = interpreter.run(simplified, x)
    np.testing.assert_array_equal(got, want)
    for loop in _innermost_loops(simplified.body):  # loop variables are plain again
        assert loop.var.upper is None


def test_simplify_indices_leaves_empty_and_unknown_ranges_alone():
    kernel = parse_prim_func(
        """
@prim_func(outputs=1)
def k(x: Buffer((8,), "float32"), y: Buffer((8,), "float32")):
    for i in range(0):
        y[i % 8] = x[i // 8]
"""
    )
    assert simplify_indices(kernel) is kernel


@pytest.mark.parametrize(
    ("strides", "fusable"),
    [(None, True), ((4, 1), True), ((1, "n"), False), ((5, 1), False), (("m", 1), False)],
)
def test_fusing_two_loops_is_allowed_only_for_one_contiguous_run(strides, fusable):
    n = arith.sym("n")
    a = te.placeholder((n, 4), "float32", "a")
    out = te.compute((n, 4), lambda i, j: a[i, j] * 2.0, name="out")
    kernel = te.create_prim_func([a, out], name="scale")
    if strides is not None:
        declared = tuple(arith.sym(s) if isinstance(s, str) else s for s in strides)
        kernel = with_strides(kernel, {0: declared}, [arith.sym("m")] if "m" in strides else [])
    sch = Schedule(kernel)
    block = sch.get_block("out")
    i, j = sch.get_loops(block)
    assert fuse_keeps_affine(sch, block, i, j) is fusable


def test_fusing_unit_loops_leaves_no_division():
    n = arith.sym("n")
    a = te.placeholder((1, n, 8), "float32", "a")
    out = te.compute((1, n, 8), lambda b, i, j: a[b, i, j] + 1.0, name="out")
    sch = Schedule(te.create_prim_func([a, out], name="inc"))
    b, i, _ = sch.get_loops(sch.get_block("out"))
    sch.fuse(b, i)
    text = str(sch.func)
    assert "//" not in text and "%" not in text


def test_a_loop_an_access_divides_is_split_by_the_divisor():
    n = arith.sym("n")
    a = te.placeholder((n, 12, 64), "float32", "a")
    out = te.compute((n, 768), lambda i, j: a[i, j // 64, j % 64] + 1.0, name="out")
    kernel = with_strides(te.create_prim_func([a, out], name="merge"), {0: (768, 1, 12)})
    assert "v_j // 64" in str(kernel)  # the unscheduled kernel divides per element
    scheduled = injective_rule(kernel)
    assert _inner_divisions(scheduled) == []
    assert "vectorized(64)" in str(scheduled)
    for rows in (0, 1, 3):
        x = RNG.standard_normal((rows, 12, 64)).astype(np.float32)
        np.testing.assert_array_equal(interpreter.run(scheduled, x), interpreter.run(kernel, x))
