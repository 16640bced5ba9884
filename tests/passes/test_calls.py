"""Graph passes on modules whose functions call each other (traced with relax.jit)."""

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax import ops, tir
from relaxjax.ir import (
    Binding,
    Call,
    GlobalVar,
    module_to_text,
    parse_module,
    structural_equal,
    verify,
)
from relaxjax.passes import (
    default_pipeline,
    eliminate_dead_code,
    legalize,
    lower_pipeline,
)
from relaxjax.passes.fuse import fuse_ops
from relaxjax.passes.walk import called_functions, called_kernels, reachable_functions

T = relax.Tensor


@relax.jit
def norm(x):
    centred = x - x.mean(axis=-1, keepdims=True)
    return rnp.tanh(centred * 2.0 + 1.0)


@relax.jit
def branch(x):
    return rnp.tanh(x) * 3.0


def _bindings(function):
    return [b for block in function.body.blocks for b in block.bindings]


def _function_calls(function):
    return [
        b
        for b in _bindings(function)
        if isinstance(b.value, Call) and isinstance(b.value.op, GlobalVar)
    ]


def test_the_pipeline_lowers_every_function_and_shares_kernels_across_them():
    @relax.jit
    def main(x: T(("n", 8), "float32")):
        return norm(x) + rnp.tanh(x) + branch(x)

    mod = main.trace()
    lowered = default_pipeline(verify=True, library=True)(mod)  # verify after every pass
    assert sorted(lowered.graph_functions()) == ["branch", "main", "norm"]
    for function in lowered.graph_functions().values():
        for binding in _bindings(function):
            value = binding.value
            if isinstance(value, Call):
                assert isinstance(value.op, GlobalVar) or value.op.name in ("call_tir",)
    calls = [b.value.op.name for b in _function_calls(lowered["main"])]
    assert calls == ["norm", "branch"]
    meta: list = []
    text = module_to_text(lowered, meta=meta)
    parsed = parse_module(text, ops.registry(), meta=meta, parse_kernel=tir.parse_prim_func)
    assert structural_equal(parsed, lowered)  # calls, kernels and externs read back
    unfused = lower_pipeline(verify=True)(mod)
    tanh_kernels = [name for name in unfused.kernels() if name.startswith("tanh")]
    assert tanh_kernels == ["tanh"]  # main's tanh and the callees' are one kernel
    users = [name for name, f in unfused.graph_functions().items() if "tanh" in called_kernels(f)]
    assert sorted(users) == ["branch", "main", "norm"]


def test_fusion_runs_inside_each_function():
    @relax.jit
    def main(x: T(("n", 8), "float32")):
        return norm(x)

    lowered = fuse_ops(legalize(main.trace()))
    verify(lowered)
    kernels = list(called_kernels(lowered["norm"]))
    assert len(kernels) < len(_bindings(main.trace()["norm"])) - 1  # chains merged
    assert list(called_kernels(lowered["main"])) == []


def test_dead_calls_and_the_functions_only_they_called_are_dropped():
    @relax.jit
    def main(x: T(("n", 8), "float32")):
        branch(x)  # unused and unchecked: dead
        return norm(x)

    mod = main.trace()
    assert sorted(mod.graph_functions()) == ["branch", "main", "norm"]
    cleaned = eliminate_dead_code(mod)
    verify(cleaned)
    assert sorted(cleaned.graph_functions()) == ["main", "norm"]
    assert list(called_functions(cleaned["main"])) == ["norm"]
    assert eliminate_dead_code(cleaned)["norm"] is cleaned["norm"]  # entry and callee stay


def test_dead_calls_whose_checks_guard_the_call_are_kept():
    @relax.jit
    def pair(x: T(("k",), "float32"), y: T(("k",), "float32")):
        return x * y

    @relax.jit
    def main(x: T(("n",), "float32"), y: T(("m",), "float32")):
        pair(x, y)  # unused, but checks m == n: kept
        return x + 1

    cleaned = eliminate_dead_code(main.trace())
    (call,) = _function_calls(cleaned["main"])
    assert isinstance(call, Binding) and [c.relation() for c in call.value.checks] == ["m == n"]
    assert sorted(cleaned.graph_functions()) == ["main", "pair"]


def test_reachable_functions_are_ordered_callees_first():
    @relax.jit
    def middle(x):
        return norm(x) * branch(x)

    @relax.jit
    def main(x: T(("n", 8), "float32")):
        return middle(x) + norm(x)

    mod = main.trace()
    order = [f.name for f in reachable_functions(mod, "main")]
    assert order == ["norm", "branch", "middle", "main"]
    assert [f.name for f in reachable_functions(mod, "branch")] == ["branch"]
