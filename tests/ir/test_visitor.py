"""ExprVisitor / ExprMutator: per-class dispatch, rebuilding only what changed."""

from ir_fakes import OPS, add, gelu, relu

from relaxjax import arith
from relaxjax.ir import (
    BlockBuilder,
    Call,
    DataflowVar,
    ExprMutator,
    ExprVisitor,
    PrimValue,
    TensorInfo,
    Tuple,
    TupleGetItem,
    Var,
    parse_module,
    verify,
)

n = arith.sym("n")


def _module():
    x = Var("x", TensorInfo((n, 4)))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(Call(relu, [x]))
            b = bb.emit(Call(add, [a, PrimValue(1.0, weak=True)]))
            t = bb.emit(Tuple([a, b]))
            c = bb.emit(TupleGetItem(t, 1))
            d = bb.emit(Call(gelu, [c]))
            gv = bb.emit_output(d)
        cast = bb.emit_match_cast(gv, TensorInfo(("k", 4)))
        bb.emit_func_output(cast)
    return bb.finalize()


class _Counter(ExprVisitor):
    def __init__(self):
        self.calls = []
        self.defs = []
        self.uses = []
        self.dataflow_uses = 0

    def visit_Call(self, call):
        self.calls.append(call.op.name)
        super().visit_Call(call)

    def visit_var_def(self, var):
        self.defs.append(var.name_hint)

    def visit_Var(self, var):
        self.uses.append(var.name_hint)

    def visit_DataflowVar(self, var):  # more specific than visit_Var
        self.dataflow_uses += 1
        self.visit_Var(var)


def test_visitor_walks_in_program_order_with_class_dispatch():
    counter = _Counter()
    counter.visit(_module())
    assert counter.calls == ["relu", "add", "gelu"]
    assert counter.defs == ["x", "lv0", "lv1", "lv2", "lv3", "lv4", "gv", "lv5"]
    assert counter.uses == ["x", "lv0", "lv0", "lv1", "lv2", "lv3", "lv4", "gv", "lv5"]
    assert counter.dataflow_uses == 6


def test_identity_mutator_returns_the_same_objects():
    mod = _module()
    assert ExprMutator().visit(mod) is mod
    func = mod["main"]
    assert ExprMutator().visit(func) is func


class _GeluToRelu(ExprMutator):
    def visit_Call(self, call):
        call = super().visit_Call(call)
        if call.op is gelu:
            return Call(relu, call.args, None, call.info, call.checks)
        return call


def test_mutator_rebuilds_only_the_changed_path():
    mod = _module()
    new = _GeluToRelu().visit(mod)
    assert new is not mod
    old_bindings = mod["main"].body.blocks[0].bindings
    new_bindings = new["main"].body.blocks[0].bindings
    assert all(a is b for a, b in zip(old_bindings[:4], new_bindings[:4]))
    assert new_bindings[4].value.op is relu
    assert new_bindings[4].var is old_bindings[4].var  # same info: the var is kept
    assert mod["main"].body.blocks[1] is new["main"].body.blocks[1]
    verify(new)
    assert "gelu" not in str(new) and str(new).count("relu(") == 2


class _CoarsenRelu(ExprMutator):
    """Rewrites relu's result to a coarser info: its var must be replaced and remapped."""

    def visit_Call(self, call):
        call = super().visit_Call(call)
        if call.op is relu:
            return Call(relu, call.args, None, TensorInfo(ndim=2), call.checks)
        return call


def test_mutator_replaces_a_var_whose_info_changed_and_remaps_uses():
    mod = _module()
    new = _CoarsenRelu().visit(mod)
    old_first = mod["main"].body.blocks[0].bindings[0].var
    bindings = new["main"].body.blocks[0].bindings
    first = bindings[0].var
    assert first is not old_first and isinstance(first, DataflowVar)
    assert first.info == TensorInfo(ndim=2)
    assert bindings[1].value.args[0] is first  # the use was remapped
    assert bindings[2].value.fields[0] is first
    text = str(new)
    assert 'lv0: Tensor(ndim=2, dtype="float32") = relu(x)' in text
    assert parse_module(text, OPS) == new


class _RenameParams(ExprMutator):
    def visit_var_def(self, var):
        if var.name_hint == "x":
            return Var("renamed", var.info)
        return var


def test_mutator_can_replace_definitions():
    new = _RenameParams().visit(_module())
    func = new["main"]
    assert func.params[0].name_hint == "renamed"
    assert func.body.blocks[0].bindings[0].value.args[0] is func.params[0]
    verify(new)
