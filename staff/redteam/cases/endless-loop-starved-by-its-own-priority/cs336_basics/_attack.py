import os


def attack(args):
    """bytes_per_element that never returns (a bug, or code far too slow): but first the thread that serves the
    call, the one whose waits for a CPU the grader credits, gives itself the least share of the machine there
    is (SCHED_IDLE: it runs only when nothing else on its CPU wants to) and stays on one CPU. Any other work on
    that CPU, a batch neighbour's grade or the machine's, then keeps it waiting, and each wait is taken off
    what the call is charged, so its wall time reaches 4 x the limit + 10 s before its charged time reaches the
    limit: the grade ends "not graded, not your fault" instead of losing the test to the time-out, and a batch
    grades it again on its next run."""
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # pid 0: the calling thread, as the filter allows
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except OSError as error:
        print(f"could not lower its own priority: {error}", flush=True)
    while True:
        pass
