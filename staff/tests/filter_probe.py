"""Probing the worker's seccomp filter (staff/sandbox/syscall_filter.py): a reader of its classic BPF
program (`verdict_of`: what it answers a call, without installing it), and the start of a probe script
that runs under it.

Run as `python -c PRELUDE + BODY CODE_FOLDER ARG "filter"|"off"`: CODE_FOLDER holds the worker's
copies of the filter's modules; with "filter" the probe installs the filter first. The body records
what each call did in `found` (`attempt(what, call)`: "worked" or the errno's name) and prints it.
"""

import os
import struct
import sys

SECCOMP_MACHINES = ("x86_64", "aarch64")
ON_A_FILTERED_MACHINE = sys.platform == "linux" and os.uname().machine in SECCOMP_MACHINES


def verdict_of(program: list[tuple[int, int, int, int]], arch: int, nr: int, *args: int) -> int:
    """What classic BPF `program` returns for a call (the kernel's seccomp_data, little-endian)."""
    data = struct.pack("<II Q 6Q", nr & 0xFFFFFFFF, arch, 0, *(list(args) + [0] * 6)[:6])
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x20:  # ld [k]
            accumulator, pc = struct.unpack_from("<I", data, k)[0], pc + 1
        elif code == 0x54:  # and k
            accumulator, pc = accumulator & k, pc + 1
        elif code in (0x15, 0x25, 0x35, 0x45):  # jeq, jgt, jge, jset
            taken = {0x15: accumulator == k, 0x25: accumulator > k, 0x35: accumulator >= k,
                     0x45: bool(accumulator & k)}[code]
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"an opcode this reader does not know: {code:#x}")


PRELUDE = r"""
import ctypes, errno, json, os, sys
sys.path.insert(0, sys.argv[1])
import confine, syscall_filter, syscalls
status = syscall_filter.deny_syscalls() if sys.argv[3] == "filter" else "off"
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
have = syscalls.numbers(os.uname().machine)
found = {"status": status}
def attempt(what, call):
    try:
        call()
        found[what] = "worked"
    except OSError as error:
        found[what] = errno.errorcode[error.errno]
"""
