import os
import sys


def attack(args):
    """A failure whose message names the worker's working folder (inside the grade's scratch folder) and the
    Python environment, each glued to a word character before it and after it: the grader's scrub replaces
    a machine path only where no path character stands before it (so that /root is not replaced inside
    /autograder/root/x), so a letter before the path keeps it whole in results.json."""
    folder = os.getcwd()
    raise ValueError(f"bytes_per_element looked for its table in w{folder}x, in v{sys.prefix}y and in "
                     f"u{os.path.dirname(folder)}z, and found none")
