"""docs/tutorial.md, section "Control flow: relaxjax.lax": its examples, as printed there."""

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.lax as lax
import relaxjax.numpy as rnp
from relaxjax.ir import CALL_TIR_INPLACE, module_to_text


@relax.jit
def decode(
    cache: relax.Tensor(("L", 8), "float32"),
    x: relax.Tensor(("n", 8), "float32"),
    pos: relax.Tensor((), "int64"),
):
    def write(i, c):
        return lax.dynamic_update_slice(c, x[i][None] * 2.0, (pos + i, 0))

    cache = lax.fori_loop(0, x.shape[0], write, cache)
    total, sums = lax.scan(
        lambda acc, row: (acc + row, acc.sum()), rnp.zeros((8,), "float32"), cache
    )
    return cache, sums, lax.cond(total.sum() > 0, lambda: total, lambda: -total)


def test_tutorial_control_flow_runs_once_compiled():
    seen = []
    for n in (0, 3, 5):
        start = np.zeros((16, 8), np.float32)
        cache, sums, total = decode(start, np.ones((n, 8), np.float32), np.int64(2))
        seen.append((cache.shape, sums.shape, float(cache.sum())))
        assert (start == 0).all()  # the parameter is never modified
    assert seen == [((16, 8), (16,), 0.0), ((16, 8), (16,), 48.0), ((16, 8), (16,), 80.0)]
    assert decode.cache_size() == 1


def test_tutorial_control_flow_ir():
    text = module_to_text(decode.trace(), locations=False)
    assert (
        '@function(attrs={"donated": (1,)})\ndef write(i: Tensor((), "int64", weak=True), carry: '
        'Tensor((L, 8), "float32"), c0: Tensor((n, 8), "float32"), c1: Tensor((), "int64")) '
        '-> Tuple(Tensor((L, 8), "float32")):' in text
    )
    for line in (
        'lv0: Tuple(Tensor((L, 8), "float32")) = fori_loop(prim(0, "int64"), prim(n, "int64"), '
        'mod.write, (cache,), (x, pos), out_info=Tuple(Tensor((L, 8), "float32")))',
        'lv3: Tuple(Tensor((8,), "float32"), Tensor((L,), "float32")) = scan(mod.scan_body, '
        "(lv2,), (lv1,), (), length=L, reverse=False, out_info=",
        'lv8: Tuple(Tensor((8,), "float32")) = switch(lv7, (mod.cond_false, mod.cond_true), '
        '(lv4,), out_info=Tuple(Tensor((8,), "float32")))',
    ):
        assert line in text
    lowered = decode.lower()
    inplace = [
        b
        for blk in lowered["write"].body.blocks
        for b in blk.bindings
        if getattr(b.value, "op", None) is CALL_TIR_INPLACE
    ]
    assert len(inplace) == 1


def test_tutorial_carry_error():
    with pytest.raises(
        TypeError,
        match=r"fori_loop: the body changes the carry: carry has type "
        r"float32\[4\] before the body but float32\[8\] after it, so the shapes do "
        r"not match",
    ):
        relax.eval_shape(
            lambda x: lax.fori_loop(0, 3, lambda i, c: rnp.concatenate([c, c]), x),
            relax.Tensor((4,), "float32"),
        )
