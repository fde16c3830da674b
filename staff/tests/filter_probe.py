"""The start of a probe script that runs under the worker's seccomp filter (staff/sandbox/syscall_filter.py).

Run as `python -c PRELUDE + BODY CODE_FOLDER ARG "filter"|"off"`: CODE_FOLDER holds the worker's
copies of the filter's modules; with "filter" the probe installs the filter first. The body records
what each call did in `found` (`attempt(what, call)`: "worked" or the errno's name) and prints it.
"""

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
