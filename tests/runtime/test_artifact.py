"""The disk cache of whole executables (runtime.artifact): hits across processes and
concurrent writers, damaged entries, what the key sees, and switching it off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.backends.llvm import cache_dir, cache_stats, reset_cache_stats
from relaxjax.backends.llvm.cache import write_frame
from relaxjax.runtime import artifact, build_executable
from relaxjax.runtime import executable as executable_module
from relaxjax.runtime import source as source_module

SRC = str(Path(__file__).resolve().parents[2] / "src")

CHILD = """
import hashlib, json, sys
import numpy as np
import relaxjax as relax
import relaxjax.numpy as rnp
from relaxjax.backends.llvm import cache_stats
from relaxjax.runtime import launch

build_module = sys.modules["relaxjax.backends.llvm.build"]  # (the package's build is a function)
from relaxjax.runtime.artifact import executable_cache_stats

llvm_runs = []  # every LLVM optimisation + code generation of this process
for module in (build_module, launch):
    module.compile_object = lambda *args, real=module.compile_object: (
        llvm_runs.append(args[-1]) or real(*args))

@relax.jit
def program(x, w):
    h = rnp.tanh(x @ w + 1.5)
    return rnp.sum(h * h, axis=-1) * rnp.arange(x.shape[0])

rng = np.random.default_rng(0)
x = rng.standard_normal((5, 8)).astype(np.float32)
w = rng.standard_normal((8, 3)).astype(np.float32)
y = np.asarray(program(x, w))
stats, objects = executable_cache_stats(), cache_stats()
print(json.dumps({"digest": hashlib.sha256(y.tobytes()).hexdigest(), "hits": stats.hits,
                  "misses": stats.misses, "stores": stats.stores, "llvm": len(llvm_runs)}))
"""


def start_child(directory: Path) -> subprocess.Popen:
    env = dict(os.environ, RELAXJAX_CACHE_DIR=str(directory), RELAXJAX_DISK_CACHE="all")
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CHILD)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(child: subprocess.Popen) -> dict:
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_concurrent_writers_then_a_process_that_compiles_nothing(tmp_path):
    """Two processes compile into an empty cache at once: both finish with the same
    result and one entry is left; a third process loads it (no pass, no LLVM at all:
    neither the kernels nor the runtime's launch trampolines are compiled)."""
    writers = [finish(child) for child in [start_child(tmp_path), start_child(tmp_path)]]
    assert all(w["hits"] + w["misses"] == 1 for w in writers), writers
    entries = list((tmp_path / "executables").iterdir())
    assert [e.suffix for e in entries] == [".pkl"], entries  # no temporary file left behind
    reader = finish(start_child(tmp_path))
    assert sum(w["llvm"] for w in writers) > 0  # (the other may find the first's objects)
    assert (reader["hits"], reader["misses"], reader["stores"], reader["llvm"]) == (1, 0, 0, 0)
    assert {w["digest"] for w in writers} == {reader["digest"]}


def program(x, w):
    h = rnp.tanh(x @ w + 1.5)
    return rnp.sum(h * h, axis=-1) * rnp.arange(x.shape[0])


def operands(rows: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (
        rng.standard_normal((rows, 8)).astype(np.float32),
        rng.standard_normal((8, 3)).astype(np.float32),
    )


def reference(x, w):
    h = np.tanh(x.astype(np.float64) @ w + 1.5)
    return (h * h).sum(-1) * np.arange(x.shape[0])


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A private cache directory with whole executables on, counters at zero."""
    monkeypatch.setenv("RELAXJAX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("RELAXJAX_DISK_CACHE", "all")
    artifact.reset_executable_cache_stats()
    reset_cache_stats()
    return tmp_path


def traced(fn=program, *args):
    return relax.jit(fn).trace(*(args or operands()))


def counters() -> tuple[int, int, int, int]:
    stats = artifact.executable_cache_stats()
    return stats.hits, stats.misses, stats.stores, stats.corrupt


def test_a_hit_runs_no_pass_nor_compiler_and_gives_the_same_bits(cache, monkeypatch):
    mod, (x, w) = traced(), operands()
    compiled = build_executable(mod)
    assert counters() == (0, 1, 1, 0)

    def no_pipeline(*args, **kwargs):
        raise AssertionError("a cache hit ran the pass pipeline")

    def no_compile(*args, **kwargs):
        raise AssertionError("a cache hit compiled the host program's Python again")

    monkeypatch.setattr(executable_module, "default_pipeline", no_pipeline)
    monkeypatch.setattr(source_module, "compile", no_compile, raising=False)
    loaded = build_executable(traced())  # traced again: an equal module, a new object
    assert counters() == (1, 1, 1, 0)
    assert str(loaded.module) == str(compiled.module)
    (got,), (want,) = loaded(x, w), compiled(x, w)
    assert got.tobytes() == want.tobytes()
    np.testing.assert_allclose(got, reference(x, w), rtol=1e-5)


def damage(data: bytes, how: str) -> bytes:
    if how == "truncate":
        return data[: len(data) // 2]
    if how == "flip_a_byte":
        return data[:-50] + bytes([data[-50] ^ 0x40]) + data[-49:]
    return b""


@pytest.mark.parametrize("how", ["truncate", "flip_a_byte", "empty", "framed_garbage", "wrong"])
def test_a_damaged_entry_is_compiled_again_and_rewritten(cache, how):
    mod, (x, w) = traced(), operands()
    build_executable(mod)
    (entry,) = (cache / "executables").iterdir()
    if how == "framed_garbage":  # a frame that checks out around bytes that do not unpickle
        assert write_frame(entry, b"\x80\x05not a pickle")
    elif how == "wrong":  # a valid pickle of something else
        assert write_frame(entry, b"\x80\x05K\x07.")
    else:
        entry.write_bytes(damage(entry.read_bytes(), how))
    (got,) = build_executable(mod)(x, w)
    assert counters() == (0, 2, 2, 1)
    np.testing.assert_allclose(got, reference(x, w), rtol=1e-5)
    build_executable(mod)
    assert counters()[0] == 1  # the rewritten entry loads


def test_an_entry_that_does_not_link_is_compiled_again(cache, monkeypatch):
    mod, (x, w) = traced(), operands()
    build_executable(mod)

    def broken(*args, **kwargs):
        raise executable_module.LoweringError("cannot link")

    monkeypatch.setattr(executable_module.llvm, "link_kernels", broken)
    (got,) = build_executable(mod)(x, w)
    assert counters() == (0, 2, 2, 1)
    np.testing.assert_allclose(got, reference(x, w), rtol=1e-5)


def scaled(x, w):
    return program(x, w) * 2.0


def test_the_key_sees_constants_specs_and_options(cache):
    x, w = operands()
    key = artifact.executable_key(traced(), "llvm", None, True)
    assert key == artifact.executable_key(traced(), "llvm", None, True)  # stable
    others = [
        artifact.executable_key(traced(scaled, x, w), "llvm", None, True),  # a constant
        artifact.executable_key(traced(program, *operands(6)), "llvm", None, True),  # a shape
        artifact.executable_key(traced(program, x, w.astype(np.float64)), "llvm", None, True),
        artifact.executable_key(traced(), "llvm", None, False),  # library=False
        artifact.executable_key(traced(), "llvm", "program", True),  # the entry
    ]
    assert key not in others and len(set(others)) == len(others)
    (one,) = build_executable(traced(scaled, x, w))(x, w)
    (two,) = build_executable(traced())(x, w)
    assert counters() == (0, 2, 2, 0)  # distinct entries, no false hit
    np.testing.assert_allclose(one, 2 * two, rtol=1e-6)


def test_the_key_sees_the_compiler_and_its_versions(cache, monkeypatch, tmp_path):
    key = artifact.executable_key(traced(), "llvm", None, True)
    monkeypatch.setattr(artifact, "_environment", lambda: b"another relaxjax or LLVM")
    assert artifact.executable_key(traced(), "llvm", None, True) != key
    source = tmp_path / "pkg"
    source.mkdir()
    (source / "a.py").write_text("x = 1\n")
    before = artifact.source_fingerprint(str(source))
    (source / "a.py").write_text("x = 2\n")
    assert artifact.source_fingerprint(str(source)) != before


class Foreign:
    """An object the key cannot see into (not relaxjax's, numpy's or a builtin)."""


def deep(depth: int) -> tuple:
    nested: tuple = ()
    for _ in range(depth):
        nested = (nested,)
    return nested


@pytest.mark.parametrize("make", [Foreign, lambda: deep(100_000)], ids=["foreign", "too_deep"])
def test_what_the_key_cannot_cover_is_not_cached(cache, make):
    assert artifact.executable_key(make(), "llvm", None, True) is None  # type: ignore[arg-type]
    assert artifact.executable_cache_stats().uncacheable == 1


@pytest.mark.parametrize("mode", ["objects", "off"])
def test_switched_off(cache, monkeypatch, mode):
    monkeypatch.setenv("RELAXJAX_DISK_CACHE", mode)
    x, w = operands()
    shift = {"objects": 3.25, "off": 4.75}[mode]  # kernels no earlier test compiled

    def shifted(x, w):
        return program(x, w) + shift

    for _ in range(2):
        (got,) = build_executable(traced(shifted, x, w))(x, w)
    np.testing.assert_allclose(got, reference(x, w) + shift, rtol=1e-5)
    assert counters() == (0, 0, 0, 0)
    assert not (cache / "executables").exists()
    assert (cache / "llvm").exists() == (mode == "objects")
    assert (cache_stats().hits, cache_stats().misses) == ((0, 1) if mode == "objects" else (0, 0))


def test_a_bad_mode_names_the_choices(cache, monkeypatch):
    monkeypatch.setenv("RELAXJAX_DISK_CACHE", "sometimes")
    with pytest.raises(ValueError, match="RELAXJAX_DISK_CACHE must be one of all, objects, off"):
        build_executable(traced())


def test_an_unwritable_cache_still_compiles(cache, monkeypatch):
    blocker = cache / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("RELAXJAX_CACHE_DIR", str(blocker))
    x, w = operands()
    (got,) = build_executable(traced())(x, w)
    np.testing.assert_allclose(got, reference(x, w), rtol=1e-5)
    assert artifact.executable_cache_stats().write_errors == 1
    assert cache_dir("executables").parent == blocker
