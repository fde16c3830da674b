import concurrent.futures
import time

WORK_S = 0.2  # CPU seconds of each call's work, done in a thread of its own
_pool = []  # one helper thread per process, made on first use


def _work():
    """Honest work (here: a loop that uses WORK_S of this thread's CPU, however long that takes)."""
    started = time.thread_time()
    while time.thread_time() - started < WORK_S:
        pass


def attack(args):
    """bytes_per_parameter and max_trainable_parameters (which calls it) first hand WORK_S of CPU work to a helper thread and waits for it, as code does
    whose work runs in torch's intra-op pool (a grader's --threads above 1), numpy's BLAS threads or a thread
    pool of its own; then the reference's body runs. The serving thread sleeps on the result meanwhile."""
    if not _pool:
        _pool.append(concurrent.futures.ThreadPoolExecutor(max_workers=1))
    _pool[0].submit(_work).result()
