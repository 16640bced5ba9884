"""A matrix product scheduled by hand, step by step, with the loop nest and GFLOP/s
after every step.

The kernel is the one ``relax.jit`` lowers ``a @ b`` to (all dims symbolic, so every
step also handles tails); each step applies schedule primitives
(``relaxjax.schedule.Schedule``), and the last ones the rules' finishing steps
(``relaxjax.schedule.rules``: blocks to loops, guards to bounds, staging through a
packed panel and a register tile) -- what the default ``matmul`` rule does. Run::

    python bench/schedule_demo.py [--size 512] [--repeats 3]
"""

import argparse
import time

import numpy as np

import relaxjax as relax
from relaxjax import schedule
from relaxjax.schedule.rules import lower_blocks, stage, tighten_loops


@relax.jit
def product(a: relax.Tensor(("m", "k"), "float32"), b: relax.Tensor(("k", "n"), "float32")):
    return a @ b


def gflops(kernel, a: np.ndarray, b: np.ndarray, repeats: int) -> float:
    """Best-of-``repeats`` GFLOP/s of a compiled kernel (checked against numpy first)."""
    compiled = relax.build(kernel)
    out = compiled(a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-3, atol=1e-2)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        compiled(a, b)
        best = min(best, time.perf_counter() - start)
    return 2.0 * a.shape[0] * a.shape[1] * b.shape[1] / best / 1e9


def show(title: str, kernel, a, b, repeats: int, lines: int = 40) -> None:
    text = str(kernel).splitlines()
    print(f"\n=== {title}")
    print("\n".join(text[:lines]) + ("\n    ..." if len(text) > lines else ""))
    print(f"--> {gflops(kernel, a, b, repeats):.2f} GFLOP/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    size = args.size
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    func = product.lower().kernels()["matmul"]
    sch = schedule.Schedule(func)
    show("0. as lowered: i, j, k with k innermost (B read down a column)", sch.func, a, b, 1, 30)

    block = sch.get_block("acc")
    i, j, k = sch.get_loops(block)
    sch.reorder(i, k, j)
    sch.vectorize(j)
    show("1. reorder(i, k, j), vectorize(j): unit-stride inner loop", sch.func, a, b, args.repeats)

    sch.parallel(i)
    epilogue = sch.get_loops(sch.get_block("matmul"))
    sch.parallel(epilogue[0])
    sch.vectorize(epilogue[1])
    show("2. parallel(i): rows on every core", sch.func, a, b, args.repeats)

    sch = schedule.Schedule(func)
    block = sch.get_block("acc")
    i, j, k = sch.get_loops(block)
    sch.reorder(j, i, k)
    j_0, j_1 = sch.split(j, factors=[None, 32], tail="peel")
    sch.reorder(j_0, i, j_1, k)
    i_0, i_1 = sch.split(i, factors=[None, 6], tail="peel")
    sch.reorder(i_0, k, i_1, j_1)
    init = sch.decompose_reduction(block, k)
    sch.unroll(i_1)
    sch.vectorize(j_1)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.parallel(j_0)
    epilogue = sch.get_loops(sch.get_block("matmul"))
    sch.parallel(epilogue[0])
    sch.vectorize(epilogue[1])
    print("\ntrace of step 3:\n" + str(sch.trace))
    show(
        "3. 6 x 32 tiles: split/reorder/unroll/vectorize, parallel panels",
        sch.func,
        a,
        b,
        args.repeats,
    )

    lowered = tighten_loops(lower_blocks(sch.func))
    packed = stage(lowered, j_0.name, "b")
    show("4. + packed panel of b per 32 columns (stage at j_0)", packed, a, b, args.repeats)

    tiled = stage(packed, i_0.name, "acc")
    show(
        "5. + 6 x 32 register tile of the accumulator (stage at i_0)", tiled, a, b, args.repeats, 60
    )

    from relaxjax.schedule.rules import default_schedule

    show("6. the default rule (no hand work)", default_schedule(func), a, b, args.repeats, 12)


if __name__ == "__main__":
    main()
