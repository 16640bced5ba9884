"""Running many seeds: what the tests call, and a command line for fuzzing by hand.

    python tests/fuzz/fuzz_run.py 0:500              # seeds 0..499, failures as repros
    python tests/fuzz/fuzz_run.py 1234 --no-shrink   # one seed, as generated

Each failing seed is shrunk (:mod:`fuzz_shrink`) and printed as a standalone script
(:mod:`fuzz_repro`).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))

import fuzz_check
import fuzz_gen
import fuzz_repro
import fuzz_shrink
from fuzz_check import Failure
from fuzz_model import Program


@dataclass(frozen=True)
class Report:
    """A failing seed: the program as generated, its first failure, and the repro of
    the shrunk program."""

    seed: int
    program: Program
    failure: Failure
    script: str

    def __str__(self) -> str:
        return f"seed {self.seed}: {self.failure}\n{'-' * 78}\n{self.script}{'-' * 78}"


def run_seed(
    seed: int,
    shrink: bool = True,
    features: fuzz_gen.Features = fuzz_gen.FEATURES,
) -> Report | None:
    """None when the program of ``seed`` passes every check; else its report."""
    try:
        program = fuzz_gen.generate(seed, features)
    except fuzz_gen.GeneratorError as err:
        return Report(seed, None, Failure("generator", None, str(err)), "")  # type: ignore[arg-type]
    failures = fuzz_check.check(program)
    if not failures:
        return None
    failure = failures[0]
    small, small_failure = program, failure
    if shrink:
        small, small_failure = fuzz_shrink.shrink(program, failure)
    return Report(seed, program, failure, fuzz_repro.repro(small, small_failure))


def run_seeds(seeds: Iterable[int], shrink: bool = True) -> list[Report]:
    """The reports of the failing seeds, in order."""
    return [r for r in (run_seed(s, shrink) for s in seeds) if r is not None]


def run_parallel(seeds: Sequence[int], workers: int, chunk: int = 8) -> list[Report]:
    """:func:`run_seeds` over ``workers`` processes (each program compiles on one core,
    so a 2-core machine runs two at once); the reports in seed order."""
    if workers <= 1:
        return run_seeds(seeds)
    chunks = [list(seeds[i : i + chunk]) for i in range(0, len(seeds), chunk)]
    context = multiprocessing.get_context("spawn")  # jax and LLVM hold threads: no fork
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_path) as pool:
        results = pool.map(run_seeds, chunks)
        return [report for reports in results for report in reports]


def _worker_path() -> None:
    """A spawned worker imports these modules by name, as the tests do."""
    sys.path.insert(0, str(Path(__file__).parent))


def _seeds(text: str) -> range:
    if ":" in text:
        start, stop = text.split(":")
        return range(int(start), int(stop))
    return range(int(text), int(text) + 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", type=_seeds, help="a seed, or start:stop")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="one line per failure")
    parser.add_argument(
        "--workers", type=int, default=1, help=f"processes (cores: {os.cpu_count()})"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    failed = 0
    if args.workers > 1:
        reports = run_parallel(list(args.seeds), args.workers)
    else:
        reports = (run_seed(seed, shrink=not args.no_shrink) for seed in args.seeds)
    for report in reports:
        if report is None:
            continue
        failed += 1
        print(f"seed {report.seed}: {report.failure}" if args.quiet else report, flush=True)
    elapsed = time.perf_counter() - start
    print(f"{len(args.seeds)} programs, {failed} failing, {elapsed:.1f} s", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
