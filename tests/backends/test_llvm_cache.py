"""The on-disk compile cache: reuse across processes, corruption, atomic writes, counters."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from relaxjax import arith
from relaxjax.backends import build
from relaxjax.backends.llvm import cache, cache_dir, cache_stats, host_target, reset_cache_stats
from relaxjax.backends.llvm.codegen import emit_module
from relaxjax.tir import Buffer, BufferStore, For, PrimFunc

CHILD = """
import json
import numpy as np
from relaxjax import arith
from relaxjax.backends import build
from relaxjax.backends.llvm import cache_stats
from relaxjax.tir import Buffer, BufferStore, For, PrimFunc
n, i = arith.syms("n i")
a, c = Buffer("A", (n,), "float64"), Buffer("C", (n,), "float64")
kernel = build(PrimFunc("cached", (a, c), For(i, 0, n, "vectorized",
                        BufferStore(c, a[i] * a[i] + 1.0, (i,)))))
result = kernel(np.arange(5.0))
assert np.array_equal(result, np.arange(5.0) ** 2 + 1), result
stats = cache_stats()
print(json.dumps({name: getattr(stats, name) for name in stats.__slots__}))
"""


def child_stats(isolated, directory: Path) -> dict[str, int]:
    output = isolated(CHILD, env={"RELAXJAX_CACHE_DIR": str(directory)})
    return json.loads(output.strip().splitlines()[-1])


def entries(directory: Path) -> list[Path]:
    return sorted((directory / "llvm").iterdir())


def test_a_second_process_reuses_the_cache(isolated, tmp_path):
    first = child_stats(isolated, tmp_path)
    assert first["compiles"] == 1 and first["misses"] == 1 and first["hits"] == 0
    (entry,) = entries(tmp_path)
    assert entry.suffix == ".o" and len(entry.stem) == 64  # sha256 hex
    second = child_stats(isolated, tmp_path)
    assert second["compiles"] == 0 and second["hits"] == 1 and second["misses"] == 0


def damage(data: bytes, how: str) -> bytes:
    if how == "flip_a_byte":
        return data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:]
    if how == "truncate":
        return data[: len(data) // 2]
    if how == "empty":
        return b""
    return b"\x7fELF" + bytes(200)  # a foreign file without our frame


def test_a_truncated_entry_is_detected_and_rebuilt_by_the_next_process(isolated, tmp_path):
    child_stats(isolated, tmp_path)
    (entry,) = entries(tmp_path)
    entry.write_bytes(damage(entry.read_bytes(), "truncate"))
    rebuilt = child_stats(isolated, tmp_path)
    assert rebuilt["corrupt"] == 1 and rebuilt["compiles"] == 1 and rebuilt["hits"] == 0
    assert child_stats(isolated, tmp_path)["hits"] == 1  # the rewritten entry is good


@pytest.mark.parametrize("how", ["flip_a_byte", "truncate", "empty", "foreign"])
def test_the_frame_rejects_damaged_entries(tmp_path, monkeypatch, how):
    monkeypatch.setenv("RELAXJAX_CACHE_DIR", str(tmp_path))
    key = "cd" * 32
    cache.write_entry(key, bytes(range(256)) * 4)
    assert cache.read_entry(key) == bytes(range(256)) * 4
    path = cache.entry_path(key)
    path.write_bytes(damage(path.read_bytes(), how))
    reset_cache_stats()
    assert cache.read_entry(key) is None
    assert cache_stats().corrupt == 1 and cache_stats().misses == 1


N, I = arith.syms("n i")


def square_func(name: str) -> PrimFunc:
    a, c = Buffer("A", (N,), "int32"), Buffer("C", (N,), "int32")
    return PrimFunc(name, (a, c), For(I, 0, N, "serial", BufferStore(c, a[I] * a[I], (I,))))


def test_same_kernels_in_one_process_link_once(private_cache):
    reset_cache_stats()
    first = build(square_func("square_memo"))
    again = build(square_func("square_memo"))
    stats = cache_stats()
    assert stats.memory_hits == 1 and stats.compiles + stats.hits == 1
    assert first.address == again.address


def test_counters_are_a_snapshot_and_reset(private_cache):
    reset_cache_stats()
    cache.count(misses=2, compiles=1)
    snapshot = cache_stats()
    cache.count(hits=1)
    assert (snapshot.misses, snapshot.compiles, snapshot.hits) == (2, 1, 0)
    assert cache_stats().hits == 1
    with pytest.raises(KeyError, match="unknown cache counters"):
        cache.count(bogus=1)


def test_writes_are_atomic_and_leave_no_temporaries(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAXJAX_CACHE_DIR", str(tmp_path))
    cache.write_entry("ab" * 32, b"payload")
    cache.write_entry("ab" * 32, b"payload, rewritten")
    assert [p.name for p in entries(tmp_path)] == ["ab" * 32 + ".o"]
    assert cache.read_entry("ab" * 32) == b"payload, rewritten"


def test_an_unwritable_cache_does_not_stop_compilation(tmp_path, monkeypatch):
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("x")
    monkeypatch.setenv("RELAXJAX_CACHE_DIR", str(blocker))
    reset_cache_stats()
    kernel = build(square_func("square_unwritable"))
    np.testing.assert_array_equal(kernel(np.array([3, -4], np.int32)), [9, 16])
    assert cache_stats().write_errors == 1 and cache_stats().compiles == 1


def test_cache_directory_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAXJAX_CACHE_DIR", str(tmp_path / "here"))
    assert cache_dir() == tmp_path / "here" / "llvm"
    monkeypatch.delenv("RELAXJAX_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "relaxjax" / "llvm"


def test_key_depends_on_ir_target_and_fast_math():
    target = host_target()
    text = emit_module({"k": square_func("k")}, target, False).ir_text
    fast = emit_module({"k": square_func("k")}, target, True).ir_text
    portable = replace(target, cpu="x86-64-v3", features="")
    keys = {
        cache.cache_key(text, target.cache_identity()),
        cache.cache_key(text, portable.cache_identity()),
        cache.cache_key(text, replace(target, opt_level=2).cache_identity()),
        cache.cache_key(
            emit_module({"other": square_func("other")}, target, False).ir_text,
            target.cache_identity(),
        ),
    }
    assert len(keys) == 4
    float_func = PrimFunc(
        "f",
        (Buffer("A", (N,), "float32"), Buffer("C", (N,), "float32")),
        For(
            I,
            0,
            N,
            "serial",
            BufferStore(Buffer("C", (N,), "float32"), Buffer("A", (N,), "float32")[I] * 2.0, (I,)),
        ),
    )
    assert (
        emit_module({"f": float_func}, target, True).ir_text
        != emit_module({"f": float_func}, target, False).ir_text
    )
    assert text == fast  # integer-only code: fast-math changes nothing, shares the entry
