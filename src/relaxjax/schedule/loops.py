"""Loop primitives: split, fuse, reorder, loop kinds (parallel, vectorize, unroll,
bind) and annotations.

Each function takes the current kernel, the schedule's :class:`~.tree.Namer` and the
names of the loops concerned, and returns a :class:`~.step.Step`; the docstrings of
:class:`~relaxjax.schedule.Schedule` show each loop nest before and after.
"""

from __future__ import annotations

from collections.abc import Sequence

from relaxjax import arith
from relaxjax.arith import Dim
from relaxjax.schedule.dependence import carried
from relaxjax.schedule.itermap import ceildiv
from relaxjax.schedule.privatize import thread_private
from relaxjax.schedule.step import Step, fail, require_serial, thread_reduction
from relaxjax.schedule.tree import (
    Namer,
    Site,
    renamed_copy,
    replace,
)
from relaxjax.tir.expr import IndexExpr, IntImm, PrimExpr, binop
from relaxjax.tir.function import PrimFunc
from relaxjax.tir.functor import StmtMutator, StmtVisitor, substitute
from relaxjax.tir.stmt import (
    THREAD_TAGS,
    Block,
    BlockRealize,
    BufferStore,
    For,
    Stmt,
    as_annotations,
    seq,
)

TAILS = ("predicate", "peel", "exact")


# --- split --------------------------------------------------------------------------


def _factor(primitive: str, loop: For, value: object, symbols) -> Dim | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise fail(primitive, f"loop {loop.var.name}: a factor must be an int, got {value!r}")
    if isinstance(value, str):
        value = arith.parse_dim(value, {s.name: s for s in symbols})
    try:
        dim = arith.as_dim(value)
    except TypeError:
        raise fail(
            primitive,
            f"loop {loop.var.name}: a factor must be an int, a dim or None, got {value!r}",
        ) from None
    unknown = sorted(s.name for s in arith.free_symbols(dim) if s not in symbols)
    if unknown:
        raise fail(
            primitive,
            f"loop {loop.var.name}: factor {dim} uses {', '.join(unknown)}, which is not a "
            "symbol of the kernel",
        )
    if isinstance(dim, int) and dim <= 0:
        raise fail(primitive, f"loop {loop.var.name}: factors must be positive, got {dim}")
    if arith.compare(dim, ">=", 1) is not True:
        raise fail(primitive, f"loop {loop.var.name}: cannot prove that factor {dim} is positive")
    return dim


def _product(dims: Sequence[Dim]) -> Dim:
    total: Dim = 1
    for dim in dims:
        total = total * dim
    return total


def split_factors(loop: For, factors: Sequence[object], symbols, tail: str) -> tuple[Dim, ...]:
    """The factors with the ``None`` one inferred; checks that they cover the loop."""
    name = loop.var.name
    if tail not in TAILS:
        raise fail("split", f"tail must be one of {TAILS}, got {tail!r}")
    if not isinstance(factors, (list, tuple)) or len(factors) < 2:
        raise fail("split", f"loop {name}: give at least two factors, got {factors!r}")
    given = [_factor("split", loop, f, symbols) for f in factors]
    holes = [k for k, f in enumerate(given) if f is None]
    if len(holes) > 1:
        raise fail("split", f"loop {name}: at most one factor may be None, got {list(factors)}")
    if tail == "peel" and (len(given) != 2 or holes != [0]):
        raise fail("split", f"loop {name}: tail='peel' takes factors [None, inner], got {factors}")
    if holes:
        others = _product([f for f in given if f is not None])
        inferred = loop.extent // others if tail == "peel" else ceildiv(loop.extent, others)
        given[holes[0]] = inferred
    if tail == "peel":
        return tuple(given)
    product = _product(given)
    # an inferred factor is a ceildiv: the product covers the extent by construction
    covers = True if holes else arith.compare(product, ">=", loop.extent)
    if covers is not True:
        relation = "is smaller than" if covers is False else "cannot be proven to cover"
        raise fail(
            "split",
            f"loop {name}: factors {_text(given)} multiply to {product}, which {relation} "
            f"its extent {loop.extent}: iterations would be lost",
        )
    if tail == "exact" and arith.compare(product, "==", loop.extent) is not True:
        raise fail(
            "split",
            f"loop {name}: factors {_text(given)} multiply to {product}, not to its extent "
            f"{loop.extent}, and tail='exact' allows no remainder",
        )
    return tuple(given)


def _text(dims: Sequence[Dim]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


class _OutsideBlocks(StmtVisitor):
    def __init__(self):
        self.found: str | None = None

    def visit_BlockRealize(self, stmt: BlockRealize) -> None:
        pass

    def visit_BufferStore(self, stmt: BufferStore) -> None:
        self.found = self.found or f"a store to {stmt.buffer.name}"


def _guard(body: Stmt, condition: PrimExpr, loop: For) -> Stmt:
    """``body`` with ``condition`` added to the predicate of each block under it."""
    outside = _OutsideBlocks()
    outside.visit_stmt(body)
    if outside.found:
        raise fail(
            "split",
            f"loop {loop.var.name} has {outside.found} outside any block; the tail of a "
            "split can only be guarded by block predicates (use tail='peel')",
        )

    class _Predicate(StmtMutator):
        def visit_BlockRealize(self, stmt: BlockRealize) -> Stmt:
            old = stmt.predicate
            is_true = isinstance(old, IntImm) and old.value == 1
            new = condition if is_true else binop("and", old, condition)
            return BlockRealize(stmt.iter_values, new, stmt.block)

    return _Predicate().visit_stmt(body)


def _nest(vars_: Sequence[arith.Sym], extents: Sequence[Dim], body: Stmt) -> Stmt:
    for var, extent in reversed(list(zip(vars_, extents))):
        body = For(var, 0, extent, "serial", body)
    return body


def split(func: PrimFunc, namer: Namer, site: Site, factors: Sequence[object], tail: str) -> Step:
    """Splits loop ``site.node`` into ``len(factors)`` nested loops (see Schedule.split)."""
    loop: For = site.node
    require_serial("split", loop)
    given = split_factors(loop, factors, func.symbols(), tail)
    base = loop.var.name
    new_vars = [namer.fresh_sym(f"{base}_{k}") for k in range(len(given))]
    fused: Dim = 0
    for var, factor in zip(new_vars, given):
        fused = fused * factor + var
    body = substitute(loop.body, {loop.var: loop.start + fused})
    if tail == "predicate" and arith.compare(_product(given), "==", loop.extent) is not True:
        body = _guard(body, binop("<", IndexExpr(fused), IndexExpr(loop.extent)), loop)
    nest = _nest(new_vars, given, body)
    if tail == "peel":
        nest = seq(nest, _peeled_tail(loop, namer, given[1]))
    names = tuple(v.name for v in new_vars)
    removed = {base: f"split into {', '.join(names)}"}
    return Step(func.with_body(replace(func.body, loop, nest)), names, removed)


def _peeled_tail(loop: For, namer: Namer, inner: Dim) -> Stmt:
    main = (loop.extent // inner) * inner
    tail_extent = loop.extent - main
    if arith.compare(tail_extent, "==", 0) is True:
        return seq()
    var = namer.fresh_sym(f"{loop.var.name}_tail")
    body = substitute(loop.body, {loop.var: loop.start + main + var})
    copy, _ = renamed_copy(body, namer, "tail")
    return For(var, 0, tail_extent, "serial", copy)


# --- fuse ---------------------------------------------------------------------------


def fuse(func: PrimFunc, namer: Namer, sites: Sequence[Site]) -> Step:
    """Fuses adjacent perfectly nested loops into one (see Schedule.fuse)."""
    if len(sites) < 2:
        raise fail("fuse", f"give at least two loops, got {len(sites)}")
    loops: list[For] = [s.node for s in sites]
    names = [lp.var.name for lp in loops]
    if len(set(names)) != len(names):
        raise fail("fuse", f"a loop is given twice: {', '.join(names)}")
    for outer, inner in zip(loops, loops[1:]):
        if outer.body is not inner:
            raise fail(
                "fuse",
                f"loops {outer.var.name} and {inner.var.name} are not adjacent: the body of "
                f"{outer.var.name} must be exactly loop {inner.var.name}",
                (outer, inner),
            )
    for loop in loops:
        require_serial("fuse", loop)
        if loop.annotations:
            raise fail("fuse", f"loop {loop.var.name} has annotations")
    fused_vars = {lp.var.name for lp in loops}
    for loop in loops[1:]:
        if any(s.name in fused_vars for s in arith.free_symbols(loop.extent)) or any(
            s.name in fused_vars for s in arith.free_symbols(loop.start)
        ):
            raise fail("fuse", f"the range of loop {loop.var.name} depends on a fused loop")
    var = namer.fresh_sym("_".join(names) + "_fused")
    extent = _product([lp.extent for lp in loops])
    body = substitute(loops[-1].body, _fused_values(loops, var))
    new = For(var, 0, extent, "serial", body)
    removed = {n: f"fused into {var.name}" for n in names}
    return Step(func.with_body(replace(func.body, loops[0], new)), (var.name,), removed)


def _fused_values(loops: Sequence[For], var: arith.Sym) -> dict[arith.Sym, Dim]:
    """Each fused loop's variable as a digit of ``var`` (mixed radix, innermost fastest).

    A loop of extent 0 makes the fused loop run no iteration, so the digits are never
    evaluated; its radix is taken to be 1 (its digit is its start) where ``% 0`` and
    ``// 0`` would be undefined, which keeps the other digits distinct per iteration
    for the analyses of later steps (vectorising a split of the fused loop). A loop of
    extent 1 has digit 0, and the outermost loop whose extent is not 1 needs no ``%``:
    fusing ``(1, n)`` gives ``(0, var)``, not ``(var // n, var % n)``.
    """
    mapping: dict[arith.Sym, Dim] = {}
    stride: Dim = 1
    ones = [arith.compare(loop.extent, "==", 1) is True for loop in loops]
    for position in range(len(loops) - 1, -1, -1):
        loop = loops[position]
        radix = 1 if arith.compare(loop.extent, "==", 0) is True else loop.extent
        if ones[position]:
            value: Dim = 0  # a loop of one iteration: its digit is always 0
        elif all(ones[:position]):  # the outermost digit that varies: no wrap-around
            value = var // stride
        else:
            value = (var // stride) % radix
        mapping[loop.var] = loop.start + value
        stride = stride * radix
    return mapping


# --- reorder ------------------------------------------------------------------------


def _chain(sites: Sequence[Site]) -> list[For]:
    """The loops from the outermost given one down to the innermost given one."""
    ordered = sorted(sites, key=lambda s: len(s.ancestors))
    for upper, lower in zip(ordered, ordered[1:]):
        if not any(a is upper.node for a in lower.ancestors):
            raise fail(
                "reorder",
                f"loops {upper.node.var.name} and {lower.node.var.name} are in different "
                "subtrees: only loops of one nest can be reordered",
                (upper.node, lower.node),
            )
    top, bottom = ordered[0], ordered[-1]
    start = next(k for k, a in enumerate(bottom.ancestors) if a is top.node)
    chain = [a for a in bottom.ancestors[start:]] + [bottom.node]
    for outer, inner in zip(chain, chain[1:]):
        if not isinstance(inner, For) or outer.body is not inner:
            what = type(outer.body).__name__
            raise fail(
                "reorder",
                f"the nest from loop {top.node.var.name} to loop {bottom.node.var.name} is not "
                f"perfect: the body of {_name(outer)} is a {what}, not a single loop",
                (outer,),
            )
    return chain


def _name(stmt: Stmt) -> str:
    return f"loop {stmt.var.name}" if isinstance(stmt, For) else type(stmt).__name__


def reorder(func: PrimFunc, sites: Sequence[Site]) -> Step:
    """Permutes loops of one perfect nest (see Schedule.reorder)."""
    names = [s.node.var.name for s in sites]
    if len(set(names)) != len(names):
        raise fail("reorder", f"a loop is given twice: {', '.join(names)}")
    if len(sites) < 2:
        return Step(func)
    chain = _chain(sites)
    wanted = iter([s.node for s in sites])
    given = {id(s.node) for s in sites}
    new_order = [next(wanted) if id(loop) in given else loop for loop in chain]
    _check_ranges(new_order)
    _check_dependences(chain, new_order)
    body = chain[-1].body
    for loop in reversed(new_order):
        body = For(
            loop.var, loop.start, loop.extent, loop.kind, body, loop.annotations, loop.thread_tag
        )
    return Step(func.with_body(replace(func.body, chain[0], body)))


def _check_ranges(order: Sequence[For]) -> None:
    for k, loop in enumerate(order):
        inner = {lp.var.name for lp in order[k:]}
        used = arith.free_symbols(loop.extent) | arith.free_symbols(loop.start)
        clash = sorted(s.name for s in used if s.name in inner)
        if clash:
            raise fail(
                "reorder",
                f"the range of loop {loop.var.name} ({loop.start}, extent {loop.extent}) uses "
                f"loop {clash[0]}, which would no longer enclose it",
                (loop,),
            )


def _check_dependences(chain: Sequence[For], order: Sequence[For]) -> None:
    """Loops that carry dependences keep their relative order; reductions may swap only
    when their updates are commutative."""
    status = {lp.var.name: carried(chain[0], lp.var) for lp in chain}
    old_rank = {lp.var.name: k for k, lp in enumerate(chain)}
    new_rank = {lp.var.name: k for k, lp in enumerate(order)}
    ordered = [lp.var.name for lp in chain if status[lp.var.name].kind != "none"]
    for k, a in enumerate(ordered):
        for b in ordered[k + 1 :]:
            if (old_rank[a] < old_rank[b]) == (new_rank[a] < new_rank[b]):
                continue
            sa, sb = status[a], status[b]
            if sa.kind == sb.kind == "reduction" and sa.commutative and sb.commutative:
                continue
            worst = sa if sa.kind == "dependent" or not sa.commutative else sb
            raise fail(
                "reorder",
                f"loops {a} and {b} both carry dependences and would swap: {worst.reason}",
            )


# --- loop kinds and annotations ---------------------------------------------------------

_VERBS = {"parallel": "parallelize", "vectorized": "vectorize", "thread_binding": "bind"}


def set_kind(
    func: PrimFunc, site: Site, kind: str, primitive: str, thread_tag: str | None = None
) -> Step:
    """Gives loop ``site.node`` a kind; parallel kinds need independent iterations."""
    loop: For = site.node
    if kind == "thread_binding" and thread_tag not in THREAD_TAGS:
        raise fail(primitive, f"thread axis must be one of {THREAD_TAGS}, got {thread_tag!r}")
    if loop.kind == kind and loop.thread_tag == thread_tag:
        return Step(func)
    if loop.kind != "serial":
        raise fail(primitive, f"loop {loop.var.name} is already {loop.kind}", (loop,))
    if kind in _VERBS:
        private = thread_private(site, thread_tag) if kind == "thread_binding" else frozenset()
        found = carried(loop, loop.var, private)
        if found.kind != "none" and not thread_reduction(found, thread_tag):
            raise fail(
                primitive,
                f"cannot {_VERBS[kind]} loop {loop.var.name}: {found.reason}",
                (loop,),
            )
    new = For(loop.var, loop.start, loop.extent, kind, loop.body, loop.annotations, thread_tag)
    return Step(func.with_body(replace(func.body, loop, new)))


def annotate_loop(func: PrimFunc, site: Site, key: str, value: object) -> Step:
    """Adds the annotation ``key = value`` to a loop."""
    loop: For = site.node
    anns = dict(loop.annotations)
    anns[key] = value
    anns_t = _annotations(anns, f"loop {loop.var.name}")
    new = For(loop.var, loop.start, loop.extent, loop.kind, loop.body, anns_t, loop.thread_tag)
    return Step(func.with_body(replace(func.body, loop, new)))


def annotate_block(func: PrimFunc, site: Site, key: str, value: object) -> Step:
    """Adds the annotation ``key = value`` to a block."""
    realize: BlockRealize = site.node
    block = realize.block
    anns = dict(block.annotations)
    anns[key] = value
    new_block = Block(
        block.name,
        block.iter_vars,
        block.reads,
        block.writes,
        block.init,
        block.body,
        block.alloc_buffers,
        _annotations(anns, f"block {block.name!r}"),
    )
    new = BlockRealize(realize.iter_values, realize.predicate, new_block)
    return Step(func.with_body(replace(func.body, realize, new)))


def _annotations(anns: dict, what: str):
    try:
        return as_annotations(anns, what)
    except (TypeError, ValueError) as err:
        raise fail("annotate", str(err)) from None
