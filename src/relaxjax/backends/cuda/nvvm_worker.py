"""Compile NVVM IR to PTX with libnvvm, in a process of its own.

libnvvm aborts the whole process on some inputs (e.g. ``llvm.exp.f32`` for
compute_80/90), so the backend never calls it in the user's process: it starts this
file as a script (``python nvvm_worker.py``) once, and sends it one request per module
over its stdin; the script imports only ``cuda.bindings`` (not relaxjax), so it starts
fast, and it stays alive between requests, so only the first module pays for the start.

Protocol (binary, on stdin/stdout): a request is an 8-byte little-endian length and a
JSON object ``{"ir": text, "options": [...], "libdevice": path or null}``; the reply
is one status byte (0: PTX follows, 2: libnvvm's error log follows), an 8-byte length
and the UTF-8 text. End of stdin ends the process. A reply that never comes (the
process died) means libnvvm crashed.
"""

from __future__ import annotations

import json
import struct
import sys

_LENGTH = struct.Struct("<Q")


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


def _read_exactly(stream, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = stream.read(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main() -> int:
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        header = _read_exactly(source, _LENGTH.size)
        if header is None:
            return 0
        body = _read_exactly(source, _LENGTH.unpack(header)[0])
        if body is None:
            return 0
        request = json.loads(body)
        ok, text = compile_ptx(request["ir"], request["options"], request.get("libdevice"))
        payload = text.encode()
        sink.write(bytes([0 if ok else 2]) + _LENGTH.pack(len(payload)) + payload)
        sink.flush()


if __name__ == "__main__":
    sys.exit(main())
