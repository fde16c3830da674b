import itertools
import os

_count = itertools.count()


def attack(args):
    block = b"\0" * (1 << 20)
    folder = os.path.join(os.getcwd(), f"filler-{os.getpid()}-{next(_count)}")
    os.makedirs(folder, exist_ok=True)
    for i in range(16):
        with open(os.path.join(folder, f"{i}.bin"), "wb") as handle:
            for _ in range(32):
                handle.write(block)
