"""Compile NVVM IR to PTX with libnvvm, in a process of its own.

libnvvm aborts the whole process on some inputs (e.g. ``llvm.exp.f32`` for
compute_80/90), so the backend never calls it in the user's process: it runs this
file as a script (``python nvvm_worker.py``), which imports only ``cuda.bindings`` and
``cuda.pathfinder`` (not relaxjax, to start fast). Protocol: a JSON request on stdin
``{"ir": text, "options": [...], "libdevice": path or null}``; on success the PTX on
stdout and exit status 0; on a compile error libnvvm's log on stdout and exit status 2.
Any other status (a signal) means libnvvm crashed.
"""

from __future__ import annotations

import json
import sys


def compile_ptx(ir_text: str, options: list[str], libdevice: str | None) -> tuple[bool, str]:
    """``(True, ptx)`` or ``(False, libnvvm's log)``."""
    from cuda.bindings import nvvm

    program = nvvm.create_program()
    try:
        data = ir_text.encode()
        nvvm.add_module_to_program(program, data, len(data), "relaxjax")
        if libdevice is not None:
            with open(libdevice, "rb") as file:
                library = file.read()
            nvvm.lazy_add_module_to_program(program, library, len(library), "libdevice")
        encoded = [option.encode() for option in options]
        try:
            nvvm.compile_program(program, len(encoded), encoded)
        except nvvm.nvvmError:
            size = nvvm.get_program_log_size(program)
            log = bytearray(size)
            nvvm.get_program_log(program, log)
            return False, bytes(log).rstrip(b"\0").decode(errors="replace")
        size = nvvm.get_compiled_result_size(program)
        result = bytearray(size)
        nvvm.get_compiled_result(program, result)
        return True, bytes(result).rstrip(b"\0").decode()
    finally:
        nvvm.destroy_program(program)


def main() -> int:
    request = json.loads(sys.stdin.read())
    ok, text = compile_ptx(request["ir"], request["options"], request.get("libdevice"))
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
