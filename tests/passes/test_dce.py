"""eliminate_dead_code: unused pure bindings go; effects (match_cast, checks) stay."""

from pass_fakes import ADD, SCALE, ScaleAttrs, module, var

from relaxjax import arith
from relaxjax.ir import Tuple, TupleGetItem, verify
from relaxjax.passes import eliminate_dead_code, legalize

n, m = arith.syms("n m")


def names(mod, fname="main"):
    return [b.var.name_hint for block in mod[fname].body.blocks for b in block.bindings]


def test_unused_bindings_are_removed():
    x = var("x", (n,))

    def body(bb, x):
        bb.call(SCALE, [x], ScaleAttrs(2.0))  # lv0: unused
        used = bb.call(SCALE, [x], ScaleAttrs(3.0))
        pair = bb.emit(Tuple([used, x]))
        bb.emit(TupleGetItem(pair, 1))  # unused, and so is the tuple after it
        return used

    mod = module([x], body)
    assert names(mod) == ["lv0", "lv1", "lv2", "lv3", "gv"]
    cleaned = eliminate_dead_code(mod)
    verify(cleaned)
    assert names(cleaned) == ["lv1", "gv"]


def test_effects_are_kept():
    x, y = var("x", (n,)), var("y", (m,))

    def body(bb, x, y):
        bb.emit_match_cast(y, var("z", (n,)).info)  # asserts m == n: kept though unused
        bb.call(ADD, [x, y])  # unused, but carries a run-time broadcast check: kept
        return x

    mod = module([x, y], body)
    cleaned = eliminate_dead_code(mod)
    verify(cleaned)
    assert names(cleaned) == names(mod)


def test_nothing_to_remove_returns_the_same_function():
    x = var("x", (n,))
    mod = module([x], lambda bb, x: bb.call(SCALE, [x], ScaleAttrs(2.0)))
    assert eliminate_dead_code(mod)["main"] is mod["main"]


def test_orphaned_kernels_are_removed_but_uncalled_ones_stay():
    x = var("x", (n,))

    def body(bb, x):
        bb.call(ADD, [x, x])  # unused and check-free: its kernel becomes an orphan
        return bb.call(SCALE, [x], ScaleAttrs(2.0))

    legal = legalize(module([x], body))
    assert sorted(legal.kernels()) == ["fake_add", "fake_scale"]
    cleaned = eliminate_dead_code(legal)
    verify(cleaned)
    assert list(cleaned.kernels()) == ["fake_scale"]
    spare = legal["fake_add"].with_name("spare")
    kept = eliminate_dead_code(cleaned.with_function("spare", spare))
    assert sorted(kept.kernels()) == ["fake_scale", "spare"]
