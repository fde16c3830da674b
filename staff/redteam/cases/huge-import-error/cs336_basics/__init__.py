import os
import sys

_paths = f"{sys.prefix} {os.getcwd()} {os.path.dirname(__file__)}\n"
raise ValueError(("expected: \ud800 \x00\x1b[2J " + _paths) * 20_000 + "\ud83d" * 500_000)
