"""Running many seeds: what the tests call, and a command line for fuzzing by hand.

    python tests/fuzz/fuzz_run.py 0:500              # seeds 0..499, failures as repros
    python tests/fuzz/fuzz_run.py 0:500 --workers 2  # over two processes
    python tests/fuzz/fuzz_run.py 1234 --no-shrink   # one seed, as generated

Each failing seed is shrunk (:mod:`fuzz_shrink`) and printed as a standalone script
(:mod:`fuzz_repro`). With workers, seeds run in child processes; a program that kills
its process (a crash in native code) is reported with the seed it was running, and the
remaining seeds go on in a new process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
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
    """A failing seed: its first failure and the repro script (of the shrunk program)."""

    seed: int
    failure: Failure
    script: str
    program: Program | None = None

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
        return Report(seed, Failure("generator", None, str(err)), "")
    failures = fuzz_check.check(program)
    if not failures:
        return None
    small, failure = program, failures[0]
    if shrink:
        small, failure = fuzz_shrink.shrink(program, failure)
    return Report(seed, failures[0], fuzz_repro.repro(small, failure), program)


def run_seeds(seeds: Iterable[int], shrink: bool = True) -> list[Report]:
    """The reports of the failing seeds, in order."""
    return [r for r in (run_seed(s, shrink) for s in seeds) if r is not None]


# --------------------------------------------------------------------------- child processes


def run_parallel(seeds: Sequence[int], workers: int) -> list[Report]:
    """:func:`run_seeds` over ``workers`` child processes (a program compiles on one core,
    so two cores run two at once); the reports in seed order. A child that dies is
    reported at the seed it was running, and its remaining seeds go to a new child."""
    if workers <= 1:
        return run_seeds(seeds)
    queues = [list(seeds[i::workers]) for i in range(workers)]
    running = [_start(q) for q in queues if q]
    reports: list[Report] = []
    while running:
        child, queue, (out_file, err_file) = running.pop(0)
        child.wait()
        out, err = (_read(f) for f in (out_file, err_file))
        done, found = _parse(out)
        reports.extend(found)
        if child.returncode == 0:
            continue
        started = [s for s in queue if s not in done]
        if not started:
            continue
        reports.append(_died(started[0], child.returncode, err))
        if started[1:]:
            running.append(_start(started[1:]))
    return sorted(reports, key=lambda r: r.seed)


def _start(seeds: list[int]) -> tuple[subprocess.Popen, list[int], tuple]:
    """A child running ``seeds``; its output goes to files (a full pipe would block it
    while the parent waits for another child)."""
    command = [sys.executable, "-X", "faulthandler", __file__, "--child", json.dumps(seeds)]
    files = (tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+"))  # noqa: SIM115
    child = subprocess.Popen(command, stdout=files[0], stderr=files[1], text=True)
    return child, seeds, files


def _read(file) -> str:
    file.seek(0)
    text = file.read()
    file.close()
    return text


def _parse(out: str) -> tuple[set[int], list[Report]]:
    """The seeds a child finished, and its reports."""
    done, reports = set(), []
    for line in out.splitlines():
        if line.startswith("DONE "):
            done.add(int(line.split()[1]))
        elif line.startswith("REPORT "):
            item = json.loads(line[len("REPORT ") :])
            failure = Failure(item["kind"], item["env"], item["message"], item["key"])
            reports.append(Report(item["seed"], failure, item["script"]))
    return done, reports


def _died(seed: int, returncode: int, stderr: str) -> Report:
    """The report of a seed whose process died: the program, called at every environment."""
    tail = " | ".join(line for line in stderr.strip().splitlines()[-6:])
    failure = Failure("died", None, f"the process exited with {returncode}: {tail}"[:600])
    program = fuzz_gen.generate(seed)
    return Report(seed, failure, fuzz_repro.repro(program, failure), program)


def _child(seeds: list[int]) -> None:
    for seed in seeds:
        report = run_seed(seed)
        if report is not None:
            f = report.failure
            item = {
                "seed": seed,
                "kind": f.kind,
                "env": f.env,
                "message": f.message,
                "key": f.key,
                "script": report.script,
            }
            print("REPORT " + json.dumps(item), flush=True)
        print(f"DONE {seed}", flush=True)


# --------------------------------------------------------------------------- command line


def _seeds(text: str) -> range:
    if ":" in text:
        start, stop = text.split(":")
        return range(int(start), int(stop))
    return range(int(text), int(text) + 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="?", type=_seeds, help="a seed, or start:stop")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="one line per failure")
    parser.add_argument(
        "--workers", type=int, default=1, help=f"processes ({os.cpu_count()} cores)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a JSON list of seeds
    args = parser.parse_args(argv)
    if args.child is not None:
        _child(json.loads(args.child))
        return 0
    start = time.perf_counter()
    if args.workers > 1:
        reports: Iterable[Report | None] = run_parallel(list(args.seeds), args.workers)
    else:
        reports = (run_seed(seed, shrink=not args.no_shrink) for seed in args.seeds)
    failed = 0
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
