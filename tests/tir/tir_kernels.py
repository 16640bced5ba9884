"""Kernels shared by the tir tests: compute-builder classics and a hypothesis strategy
that generates random, well-defined kernels (every construct of the IR appears)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from relaxjax import arith, tir
from relaxjax.tir import te

N, M = arith.Sym("n"), arith.Sym("m")


def matmul(dtype: str = "float32") -> tir.PrimFunc:
    n, m, k_extent = arith.syms("n m K")
    a = te.placeholder((n, k_extent), dtype, "A")
    b = te.placeholder((k_extent, m), dtype, "B")
    k = te.reduce_axis(k_extent, "k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c], name="matmul")


def softmax(width=None) -> tir.PrimFunc:
    n = arith.sym("n")
    m = arith.sym("m") if width is None else width
    x = te.placeholder((n, m), "float32", "x")
    k1 = te.reduce_axis(m, "k")
    mx = te.compute((n,), lambda i: te.max(x[i, k1], axis=k1), name="mx")
    e = te.compute((n, m), lambda i, j: tir.exp(x[i, j] - mx[i]), name="e")
    k2 = te.reduce_axis(m, "k")
    s = te.compute((n,), lambda i: te.sum(e[i, k2], axis=k2), name="s")
    y = te.compute((n, m), lambda i, j: e[i, j] / s[i], name="y")
    return te.create_prim_func([x, y], name="softmax")


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# --- random kernels --------------------------------------------------------------------------

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int8", "int32", "int64", "uint8")
DTYPES = FLOATS + INTS + ("bool",)
FLOAT_INTRINSICS = ("exp", "tanh", "sigmoid", "floor", "ceil", "round", "sin", "erf", "rsqrt")


class _Names:
    def __init__(self):
        self.count = 0

    def __call__(self, base: str) -> str:
        self.count += 1
        return f"{base}{self.count}"


def _is_float(dtype: str) -> bool:
    return dtype in FLOATS


@st.composite
def expressions(draw, dtype: str, env: dict, depth: int = 3) -> tir.PrimExpr:
    """A random expression of ``dtype`` over the loads and values in ``env``.

    ``env["loads"]`` maps dtypes to loads; ``env["index"]`` lists index values;
    ``env["vars"]`` lists let-bound Vars. Only well-defined operations are generated.
    """
    leaves = list(env["loads"].get(dtype, ())) + [v for v in env["vars"] if v.dtype == dtype]
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        choice = draw(st.integers(0, 3))
        if choice == 0 and leaves:
            return draw(st.sampled_from(leaves))
        if choice == 1 and dtype != "bool":
            return tir.cast(draw(st.sampled_from(env["index"])), dtype)
        if choice == 2:
            other = draw(st.sampled_from(sorted(env["loads"])))
            source = draw(st.sampled_from(env["loads"][other]))
            if _is_float(other) and not _is_float(dtype) and dtype != "bool":
                # float -> int casts are only defined in range: clamp and floor first.
                source = tir.floor(tir.min(tir.max(source, 0.0), 3.0))
            return tir.cast(source, dtype)
        return _constant(draw, dtype)
    sub = expressions(dtype, env, depth - 1)
    kind = draw(st.integers(0, 5))
    if dtype == "bool":
        if kind <= 2:
            other = draw(st.sampled_from(("float32", "int32", "float16")))
            op = draw(st.sampled_from(("<", "<=", "==", "!=", ">", ">=")))
            a = draw(expressions(other, env, depth - 1))
            b = draw(expressions(other, env, depth - 1))
            return tir.binop(op, a, b)
        if kind == 3:
            return ~draw(sub)
        op = draw(st.sampled_from(("and", "or")))
        return tir.binop(op, draw(sub), draw(sub))
    if kind == 0:
        cond = draw(expressions("bool", env, depth - 1))
        pick = draw(st.sampled_from((tir.select, tir.if_then_else)))
        return pick(cond, draw(sub), draw(sub))
    if kind == 1 and _is_float(dtype):
        name = draw(st.sampled_from(FLOAT_INTRINSICS))
        arg = draw(sub)
        if name == "rsqrt":
            arg = tir.abs(arg) + 1.0
        return tir.call(name, arg)
    if kind == 2:
        return -draw(sub)
    ops = ["+", "-", "*", "min", "max"] + (["/"] if _is_float(dtype) else [])
    op = draw(st.sampled_from(ops))
    return tir.binop(op, draw(sub), draw(sub))


def _constant(draw, dtype: str) -> tir.PrimExpr:
    if dtype == "bool":
        return tir.const(draw(st.booleans()))
    if _is_float(dtype):
        value = draw(st.sampled_from((0.0, 0.5, -1.25, 3.0, 1e-3, float("inf"), 2.0**-3)))
        return tir.const(value, dtype)
    lo = 0 if dtype == "uint8" else -5
    return tir.const(draw(st.integers(lo, 7)), dtype)


@st.composite
def random_kernels(draw, features: bool = True) -> tir.PrimFunc:
    """A random kernel over ``n x m`` data: loops of every kind, blocks (with reductions),
    lets, conditionals, selects, casts, intrinsics, allocations; all in bounds."""
    names = _Names()
    in_types = draw(st.lists(st.sampled_from(DTYPES), min_size=1, max_size=3))
    shapes = [draw(st.sampled_from(((N, M), (N,), (M,)))) for _ in in_types]
    inputs = [
        tir.Buffer(f"X{k}", shape, dtype) for k, (shape, dtype) in enumerate(zip(shapes, in_types))
    ]
    out_type = draw(st.sampled_from(DTYPES))
    out = tir.Buffer("Y", (N, M), out_type)
    i, j = arith.Sym(names("i")), arith.Sym(names("j"))
    use_block = draw(st.booleans())
    vi, vj = (arith.Sym(names("vi")), arith.Sym(names("vj"))) if use_block else (i, j)
    env = {
        "loads": {},
        "index": [tir.IndexExpr(vi), tir.IndexExpr(vj), tir.IndexExpr(vi + vj)],
        "vars": [],
    }
    for buf in inputs:
        idx = {(N, M): (vi, vj), (N,): (vi,), (M,): (vj,)}[buf.shape]
        env["loads"].setdefault(buf.dtype, []).append(buf[idx])
    value = draw(expressions(out_type, env))
    body: tir.Stmt = tir.BufferStore(out, value, (vi, vj))
    if features and draw(st.booleans()):
        cond = draw(expressions("bool", env, 2))
        other = draw(expressions(out_type, env, 2))
        body = tir.IfThenElse(cond, body, tir.BufferStore(out, other, (vi, vj)))
    if features and draw(st.booleans()):
        var = tir.Var(names("t"), out_type)
        env2 = dict(env, vars=[var])
        bound = draw(expressions(out_type, env, 2))
        use = draw(expressions(out_type, env2, 2))
        body = tir.LetStmt(var, bound, tir.seq(body, tir.BufferStore(out, use, (vi, vj))))
    if features and draw(st.booleans()):
        tmp = tir.Buffer(names("T"), (2,), out_type, scope="local")
        first = draw(expressions(out_type, env, 1))
        body = tir.Allocate(
            tmp,
            tir.seq(
                tir.BufferStore(tmp, first, (1,)),
                body,
                tir.BufferStore(out, tmp[1], (vi, vj)) if draw(st.booleans()) else tir.seq(),
            ),
        )
    if use_block:
        block = tir.Block(
            names("blk"), (tir.IterVar(vi, N), tir.IterVar(vj, M)), (), (), None, body
        )
        reads, writes = tir.block_access_regions(block)
        block = tir.Block(block.name, block.iter_vars, reads, writes, None, body)
        body = tir.BlockRealize((i, j), True, block)
    kinds = draw(
        st.lists(
            st.sampled_from(("serial", "parallel", "vectorized", "unrolled")),
            min_size=2,
            max_size=2,
        )
    )
    body = tir.For(j, 0, M, kinds[1], body)
    body = tir.For(i, 0, N, kinds[0], body)
    params = inputs + [out]
    if features and draw(st.booleans()):
        body, extra = _with_reduction(draw, names, inputs, body)
        params.append(extra)
    return tir.PrimFunc(names("kernel"), tuple(params), body, len(params) - len(inputs))


def _with_reduction(draw, names, inputs, body):
    """Appends a row reduction ``Z[i] = op_j f(X[i, j])`` over the first input."""
    source = inputs[0]
    dtype = "float64" if _is_float(source.dtype) else "int64"
    z = tir.Buffer("Z", (N,), dtype)
    i, k = arith.Sym(names("r")), arith.Sym(names("k"))
    vi, vk = arith.Sym(names("vr")), arith.Sym(names("vk"))
    idx = {(N, M): (vi, vk), (N,): (vi,), (M,): (vk,)}[source.shape]
    value = tir.cast(source[idx], dtype)
    combine = draw(st.sampled_from(("sum", "max")))
    init = tir.const(0, dtype) if combine == "sum" else tir.min_value(dtype)
    update = z[vi] + value if combine == "sum" else tir.max(z[vi], value)
    block = tir.Block(
        names("red"),
        (tir.IterVar(vi, N), tir.IterVar(vk, M, "reduce")),
        (tir.BufferRegion.point(source, idx),),
        (tir.BufferRegion.point(z, (vi,)),),
        tir.BufferStore(z, init, (vi,)),
        tir.BufferStore(z, update, (vi,)),
    )
    nest = tir.For(
        i, 0, N, "serial", tir.For(k, 0, M, "serial", tir.BlockRealize((i, k), True, block))
    )
    return tir.seq(body, nest), z


def random_inputs(func: tir.PrimFunc, sizes: dict[str, int], seed: int = 0) -> list[np.ndarray]:
    """Random arrays for the inputs of ``func`` (floats around 0, small ints)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for param in func.inputs:
        shape = tuple(arith.evaluate(d, sizes) for d in param.shape)
        arrays.append(random_array(rng, shape, param.dtype))
    return arrays


def random_array(rng, shape, dtype: str) -> np.ndarray:
    from relaxjax import dtypes

    np_dtype = dtypes.to_numpy(dtype)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if _is_float(dtype):
        return (rng.standard_normal(shape) * 2).astype(np.float32).astype(np_dtype)
    low = 0 if dtype == "uint8" else -20
    return rng.integers(low, 20, size=shape).astype(np_dtype)
