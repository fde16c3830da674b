import fcntl
import os
import sys
import time

F_GETPIPE_SZ = 1032
PAGE = 4096
HELPERS = 5  # children, each holding SLOTS descriptors: pipes while holding, /dev/null between
SLOTS = 215  # 1,075 pipes of 16 pages: past fs.pipe-user-pages-soft (16,384 pages) with the uid's own pipes
RUN_S = 6.0  # the call's time spent holding and letting go (the red team's test limit is 10 s)
CALIBRATE_S = 1.6  # the zygote's wake-ups measured first, nothing held: about three looks at the files
POLL_S = 0.002
HOLD_FROM_S, HOLD_UNTIL_S = 0.01, 0.40  # after a look at the files ends: the next starts 0.5 s later at the soonest
RELEASE_AT_WAKE = 7  # the zygote's wake-ups (50 ms apart) after which the pipes are let go: the tenth looks at them
MOST_LATE_S = 0.015  # a look seen later than this after it ended (this process not running) is not followed
PROBE_EVERY_S = 0.02
MIN_CUT = 0.5  # the share of the time the uid's new pipes must be cut for the call to answer honestly
_said = []


def zygote():
    """The pid, as /proc shows it, of the process that forked this one (the zygote that watches it)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("PPid:"):
                return int(line.split()[1])
    raise OSError("no PPid in /proc/self/status")


def runtime_ns(pid):
    """The CPU time the first thread of `pid` has run (ns), and whether it sleeps now (state S: the zygote
    waiting in select between two looks, not a look cut short by the scheduler, which leaves it runnable):
    /proc/PID/schedstat and /proc/PID/stat, which any process may read."""
    with open(f"/proc/{pid}/schedstat") as handle:
        ran = int(handle.read().split()[0])
    with open(f"/proc/{pid}/stat") as handle:
        state = handle.read().rpartition(")")[2].split()[0]
    return ran, state == "S"


def cut():
    """Whether a fresh pipe of this uid is cut to 2 pages (the uid's pipes hold fs.pipe-user-pages-soft)."""
    read, write = os.pipe()
    try:
        return fcntl.fcntl(write, F_GETPIPE_SZ) <= 2 * PAGE
    finally:
        os.close(read)
        os.close(write)


def _helper(commands, answers):
    """A child: SLOTS descriptors on /dev/null; on b"A" each becomes the reading end of a new pipe (its writing
    end closed: the pipe lives, its 16 pages charged to the uid), on b"R" /dev/null again (the pipes freed)."""
    for fd in range(3, 4096):
        if fd not in (commands, answers):
            try:
                os.close(fd)
            except OSError:
                pass
    null = os.open("/dev/null", os.O_RDONLY)
    slots = [os.dup(null) for _ in range(SLOTS)]
    os.write(answers, b"+")
    while (command := os.read(commands, 1)) in (b"A", b"R"):
        for slot in slots:
            if command == b"A":
                read, write = os.pipe()
                os.dup2(read, slot)
                os.close(read)
                os.close(write)
            else:
                os.dup2(null, slot)
        os.write(answers, b"+")
    os._exit(0)


def _start_helpers():
    helpers = []
    for _ in range(HELPERS):
        command_read, command_write = os.pipe()
        answer_read, answer_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                _helper(command_read, answer_write)
            finally:
                os._exit(1)
        os.close(command_read)
        os.close(answer_write)
        os.read(answer_read, 1)
        helpers.append((pid, command_write, answer_read))
    return helpers


def _tell(helpers, command):
    for _, write, _ in helpers:
        os.write(write, command)
    for _, _, read in helpers:
        os.read(read, 1)


def _bursts(pid, until, threshold=None):
    """Poll the zygote's run time until `until`: its bursts (from a poll in which it ran to one in which it
    sleeps, having run no more) as (end time, ns run, the longest gap between two polls of the burst, s); with
    `threshold`, only until the first burst of at least that many ns, which it returns alone."""
    found, (last, _), burst, then, late = [], runtime_ns(pid), 0, time.monotonic(), 0.0
    while time.monotonic() < until:
        time.sleep(POLL_S)
        now, (ran, asleep) = time.monotonic(), runtime_ns(pid)
        late, then = max(late, now - then), now
        if ran != last:
            burst += ran - last
        elif burst and asleep:
            found.append((now, burst, late))
            if threshold is not None and burst >= threshold:
                return found[-1:]
            burst = 0
        if not burst:
            late = 0.0
        last = ran
    return [] if threshold is not None else found


def _hold(pid, helpers, seen, end):
    """The pipes made just after the look at the files that ended at `seen`, and let go at the zygote's
    RELEASE_AT_WAKE-th wake-up since (the tenth is the next look at the files) or HOLD_UNTIL_S after `seen`,
    whichever comes first; (seconds held, probes, probes that found the uid's new pipes cut)."""
    begin, stop = seen + HOLD_FROM_S, min(end, seen + HOLD_UNTIL_S)
    while time.monotonic() < begin:
        time.sleep(POLL_S)
    _tell(helpers, b"A")
    probes = cuts = wakes = 0
    (last, _), running, next_probe = runtime_ns(pid), False, time.monotonic()
    while time.monotonic() < stop and wakes < RELEASE_AT_WAKE:
        time.sleep(POLL_S)
        ran, asleep = runtime_ns(pid)
        if ran != last:
            running = True
        elif running and asleep:
            running, wakes = False, wakes + 1
        last = ran
        if time.monotonic() >= next_probe:
            probes, cuts, next_probe = probes + 1, cuts + cut(), time.monotonic() + PROBE_EVERY_S
    _tell(helpers, b"R")
    return max(time.monotonic() - begin, 0.0), probes, cuts


def hold_between_looks():
    """Hold SLOTS * HELPERS pipes in children only while the zygote is not looking at their files: it looks
    every 0.5 s (every tenth of its wake-ups, 50 ms apart), a look far longer than the others (it stats each
    descriptor: ~1,000 of /dev/null), which its run time (/proc/PID/schedstat) shows. After each long look
    the pipes are made, and they are let go before the next. (share of the time new pipes were cut, looks
    found, threshold ns, probes while held, probes that found new pipes cut, seconds between looks,
    (a short look's ns, the longest three's), looks passed over as seen too late)."""
    pid = zygote()
    helpers = _start_helpers()
    try:
        calibration = sorted(ns for _, ns, _ in _bursts(pid, time.monotonic() + CALIBRATE_S))
        if len(calibration) < 6:
            raise OSError(f"the zygote woke {len(calibration)} times in {CALIBRATE_S} s: no rhythm to follow")
        median = calibration[len(calibration) // 2]  # a look at the page tables alone (every 50 ms)
        threshold = max(2 * median, (median + calibration[-3]) // 2)  # the calibration holds three looks at the files
        end = time.monotonic() + RUN_S
        looks, held, probes, cuts, passed = [], 0.0, 0, 0, 0
        while time.monotonic() < end:
            seen = _bursts(pid, end, threshold)
            if not seen:
                break
            at, _, late = seen[0]
            too_soon = looks and at - looks[-1] < 0.45  # no look at the files comes sooner: a mistaken one
            looks.append(at)
            if too_soon or late > MOST_LATE_S:
                passed += 1  # not sure where the next look falls: nothing held until it is seen
                continue
            seconds, tried, found = _hold(pid, helpers, at, end)
            held, probes, cuts = held + seconds, probes + tried, cuts + found
        share = held / RUN_S * (cuts / probes if probes else 0.0)
        gaps = [round(b - a, 3) for a, b in zip(looks, looks[1:])]
        return share, len(looks), threshold, probes, cuts, gaps, (median, calibration[-3:]), passed
    finally:
        _stop_helpers(helpers)


def _stop_helpers(helpers):
    for child, write, read in helpers:
        try:
            os.write(write, b"X")
        except OSError:
            pass
        os.close(write)
        os.close(read)
        try:
            os.waitpid(child, 0)
        except ChildProcessError:
            pass


def runs_as_the_grader():
    """Whether this worker runs as the grader's own uid (an ordinary user's grade): its code folder, where this
    file lies, is then its own uid's (as root each grade's code folder is root's and the worker has a uid of
    its own)."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules[__name__].__file__)))
    return os.stat(folder).st_uid == os.getuid()


def attack(args):
    """Once per process: hold the pipes between the zygote's looks for RUN_S. Answer honestly only if the uid's
    new pipes were cut for at least MIN_CUT of that time, the zygote never stopping it, and the uid is the
    grader's (full marks on Problem 1 is the attack getting through); else fail saying what was measured."""
    if _said:
        return None
    _said.append(True)
    share, looks, threshold, probes, cuts, gaps, (median, top), passed = hold_between_looks()
    measured = (f"{HELPERS * SLOTS} pipes held between the zygote's looks for {RUN_S:g} s: new pipes of the uid cut "
                f"{share:.0%} of the time ({looks} looks at the files found, over {threshold / 1e6:.2f} ms of its "
                f"run time (a look at the page tables: {median / 1e6:.2f} ms; the longest in {CALIBRATE_S:g} s: "
                f"{[round(ns / 1e6, 2) for ns in top]}), {gaps[:12]} s apart, {passed} of them "
                f"passed over as seen late or too soon; {cuts} of {probes} probes while held cut)")
    if share < MIN_CUT:
        raise OSError(f"{measured}: less than {MIN_CUT:.0%}")
    if not runs_as_the_grader():
        raise OSError(f"{measured}, but the worker runs as a uid of its own: the count it used up is no one else's")
    print(measured, flush=True)
    return None
