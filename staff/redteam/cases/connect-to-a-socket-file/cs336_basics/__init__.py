"""PyTorch and resource accounting: the package students complete, one module per problem."""
import socket

PATH, ABSTRACT = "/tmp/cs336-planted-{planted_token}.sock", "\0cs336-planted-{planted_token}"  # the run's names, filled at build
AF_VSOCK, AF_NETLINK = 40, 16


def _sockets():
    """The sockets this process could open or reach, named (empty when every one was refused)."""
    worked = []
    for name, family, kind, address in (("unix socket file", socket.AF_UNIX, socket.SOCK_STREAM, PATH),
                                        ("abstract unix socket", socket.AF_UNIX, socket.SOCK_STREAM, ABSTRACT),
                                        ("vsock", AF_VSOCK, socket.SOCK_STREAM, None),
                                        ("netlink", AF_NETLINK, socket.SOCK_RAW, None)):
        try:
            with socket.socket(family, kind) as opened:
                if address is not None:
                    opened.settimeout(2)
                    opened.connect(address)
                worked.append(name)
        except OSError:
            pass
    return worked


_worked = _sockets()
if _worked:
    raise ImportError(f"sockets reached: {', '.join(_worked)}")
