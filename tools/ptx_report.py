"""Registers, spills and shared memory of the GPU kernels, as ptxas reports them (no GPU).

    python tools/ptx_report.py                  # GPT-2 style block (d=768) for sm_80 and sm_90
    python tools/ptx_report.py --ops            # also one program per op of tests/op_cases.py
    python tools/ptx_report.py --arch sm_90 --d 256

Every kernel is compiled as ``relax.jit(target="cuda")`` would (the default GPU rules when
installed, else the test binding of tests/backends/cuda/binding.py) and assembled by
ptxas (relaxjax[cuda]). One line per launch entry: the kernel, the rule that scheduled
it, registers per thread, spill stores/loads and stack bytes, static shared memory.
Kernels a GPU rule cannot take run on the host and are listed as such. Exits 1 when an
entry of the injective/reduction/attention rules (or the test binding) spills.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "backends" / "cuda"), str(ROOT / "tests")]

from relaxjax.backends.cuda import CudaTarget  # noqa: E402
from relaxjax.runtime.cuda import compile_program, gpu_schedule, set_gpu_schedule  # noqa: E402

#: Rules whose kernels must not spill (issue 12); the others are reported.
NO_SPILLS = {"test_binding", "injective", "reduction", "attention"}


def programs(d: int, with_ops: bool) -> list[tuple[str, object]]:
    """(name, traced module) of the GPT block and, with ``with_ops``, every op case."""
    from models import gpt_block

    found = [(f"gpt_block(d={d})", gpt_block(d, max(d // 64, 1), 4 * d).trace())]
    if with_ops:
        from op_cases import jitted, op_cases

        for case in op_cases(width=16, matmul_cols=8, einsum_cols=8, head_dim=8):
            found.append((case.op, jitted(case, "cuda").trace()))
    return found


def report(name: str, module: object, arch: str) -> bool:
    """Print the entries of one program; whether a no-spill rule spilled."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = compile_program(module, CudaTarget(arch), assemble=True)
    bad = False
    for host in program.host_kernels:
        print(f"{arch:6} {name:24} {host:36} {'(host)':14}")
    if program.cuda is None:
        return bad
    for kernel_name, kernel in program.cuda.kernels.items():
        rule = dict(kernel.func.attrs).get("schedule_rule", "-")
        for entry, used in kernel.resources().items():
            spills = f"{used.spill_stores}/{used.spill_loads}"
            flag = ""
            if used.spills and rule in NO_SPILLS:
                flag, bad = "  SPILLS", True
            print(
                f"{arch:6} {name:24} {kernel_name:36} {rule:14} {used.registers:5} "
                f"{spills:>11} {used.stack_bytes:6} {used.shared_bytes:7}  {entry}{flag}"
            )
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="+", default=["sm_80", "sm_90"])
    parser.add_argument("--d", type=int, default=768, help="width of the GPT block")
    parser.add_argument("--ops", action="store_true", help="also every op of tests/op_cases.py")
    args = parser.parse_args()
    if gpu_schedule() is None:
        from binding import bind_kernel

        set_gpu_schedule(bind_kernel)
        print("(no relaxjax.schedule.rules.gpu: kernels bound by tests/backends/cuda/binding.py)")
    print(
        f"{'arch':6} {'program':24} {'kernel':36} {'rule':14} {'regs':>5} "
        f"{'spill st/ld':>11} {'stack':>6} {'smem':>7}  entry"
    )
    bad = False
    for name, module in programs(args.d, args.ops):
        for arch in args.arch:
            bad |= report(name, module, arch)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
