"""Every graph module a trace test builds is checked after the test: well formed, and
``parse(print(mod)) == mod`` (with and without source locations)."""

import numpy as np
import pytest

import relaxjax.trace.function as trace_function_module
from relaxjax import ops
from relaxjax.ir import TupleInfo, structural_equal
from relaxjax.ir.parser import parse_module
from relaxjax.ir.printer import module_to_text
from relaxjax.ir.wellformed import verify


def check_roundtrip(mod) -> None:
    """The module verifies, and its printed text parses back to an equal module."""
    verify(mod)
    meta: list = []
    text = module_to_text(mod, meta=meta)
    parsed = parse_module(text, ops.registry(), meta=meta)
    assert structural_equal(parsed, mod), text
    assert module_to_text(parsed, meta=[], locations=False) == module_to_text(
        mod, meta=[], locations=False
    )


@pytest.fixture(autouse=True)
def roundtrip_every_trace(monkeypatch):
    """Record the module of every trace made during the test; check them all afterwards."""
    built = []
    original = trace_function_module.BlockBuilder.finalize

    def finalize(self):
        mod = original(self)
        built.append(mod)
        return mod

    monkeypatch.setattr(trace_function_module.BlockBuilder, "finalize", finalize)
    yield built
    for mod in built:
        check_roundtrip(mod)


# --------------------------------------------------------------------------- a reference runtime


def _bind_dims(info, value, symbols):
    from relaxjax import arith
    from relaxjax.ir import TensorInfo

    if isinstance(info, TensorInfo) and info.shape is not None:
        for dim, size in zip(info.shape, np.shape(value)):
            if isinstance(dim, arith.Sym):
                symbols.setdefault(dim.name, size)


def _concrete(value, symbols):
    """Attributes with every symbolic dim replaced by its value."""
    import dataclasses

    from relaxjax import arith

    if isinstance(value, arith.Expr):
        return arith.evaluate(value, symbols)
    if isinstance(value, tuple):
        return tuple(_concrete(v, symbols) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _concrete(getattr(value, f.name), symbols) for f in dataclasses.fields(value)
        }
        return dataclasses.replace(value, **changes)
    return value


def interpret(mod, target):
    """An executable made by evaluating the graph function with the ops' numpy references.

    It stands in for relaxjax.runtime.build_executable where a test is about tracing and
    calling conventions (argument order, outputs, caching), not about compiled code.
    """
    from relaxjax import arith
    from relaxjax.ir import Call, Constant, MatchCast, PrimValue, Tuple, TupleGetItem

    (func,) = mod.graph_functions().values()

    def evaluate(expr, env, symbols):
        if isinstance(expr, Constant):
            return expr.data
        if isinstance(expr, PrimValue):
            value = expr.value
            return arith.evaluate(value, symbols) if isinstance(value, arith.Expr) else value
        if isinstance(expr, Tuple):
            return tuple(evaluate(f, env, symbols) for f in expr.fields)
        if isinstance(expr, TupleGetItem):
            return evaluate(expr.tuple_value, env, symbols)[expr.index]
        if isinstance(expr, Call):
            args = [evaluate(a, env, symbols) for a in expr.args]
            return expr.op.reference(*args, attrs=_concrete(expr.attrs, symbols))
        return env[expr]

    def run(*args):
        env, symbols = {}, {}
        for param, arg in zip(func.params, args, strict=True):
            env[param] = arg
            _bind_dims(param.info, arg, symbols)
        for block in func.body.blocks:
            for binding in block.bindings:
                value = evaluate(binding.value, env, symbols)
                if isinstance(binding, MatchCast):
                    _bind_dims(binding.info, value, symbols)
                env[binding.var] = value
        result = evaluate(func.body.body, env, symbols)
        return list(result) if isinstance(func.body.body.info, TupleInfo) else [result]

    run.target = target
    return run


@pytest.fixture
def reference_runtime(monkeypatch):
    """Replace relaxjax.runtime.build_executable by the reference interpreter above."""
    import importlib

    jit_module = importlib.import_module("relaxjax.jit")  # relaxjax.jit is the function
    built = []

    def build_executable(mod, target, entry=None, library=True):
        built.append(mod)
        return interpret(mod, target)

    monkeypatch.setattr(jit_module.runtime, "build_executable", build_executable, raising=False)
    return built
