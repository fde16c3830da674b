"""A call's time limit is charged for the time its code could run (staff/sandbox/call_clock.py): waits for
CPUs that other programs held are not charged, waits the worker caused itself are, and a machine too busy
to judge ends the grade as the grader's failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from staff import samples
from staff.grading.grade import REPO_ROOT
from staff.grading.suite_run import child_env
from staff.sandbox.call_clock import ChargedTime, Usage, serving_pid, thread_times, total_cpu_s, wall_limit_s
from staff.sandbox.layout import build
from staff.sandbox.process_tree import children, descendants
from staff.sandbox.settings import Settings


class Scripted:
    """A wall clock and what the worker used, both moved by the test."""

    def __init__(self) -> None:
        self.time, self.waited, self.others, self.serving, self.grader = 100.0, 0.0, 0.0, 1, 0.0
        self.pool: dict[int, tuple[float, float]] = {}  # the serving child's other threads: tid -> (waited, ran)

    def now(self) -> float:
        return self.time

    def grader_waited(self) -> float:
        return self.grader

    def clock(self, budget_s: float = 2.0, usage=None) -> ChargedTime:
        return ChargedTime(budget_s, usage or self.usage, self.now, self.grader_waited)

    def usage(self) -> Usage:
        return Usage(self.serving, {self.serving: (self.waited, 0.0), **self.pool}, self.others)

    def run(self, seconds: float, waited: float = 0.0, others: float = 0.0, grader: float = 0.0) -> None:
        self.time, self.waited, self.others = self.time + seconds, self.waited + waited, self.others + others
        self.grader += grader


def test_a_wait_for_cpus_other_programs_held_is_not_charged():
    # Mistake caught: the wall clock alone (an honest call beside a busy neighbour loses its test).
    scripted = Scripted()
    clock = scripted.clock()
    call = clock.call()
    assert call.left() == pytest.approx(2.0)
    scripted.run(2.0, waited=1.5)
    assert call.left() == pytest.approx(1.5), "1.5 s of the 2 were a wait for a CPU: 1.5 s more to run"
    scripted.run(1.5, waited=1.0)
    assert call.left() == pytest.approx(1.0)
    scripted.run(0.5)
    call.end()
    assert clock.charged_s() == pytest.approx(1.5) and not clock.busy


def test_the_waits_of_many_short_calls_add_up_to_the_tests_credit():
    # Mistake caught: each call judged alone, its wait credited only when it reached a deadline (a test of
    # a hundred short calls, each slowed by a busy machine, lost its test: Problem 2 beside a spinner).
    scripted = Scripted()
    clock = scripted.clock()
    for _ in range(100):
        call = clock.call()
        scripted.run(0.03, waited=0.025)
        assert call.left() > 0, "a short call of a test charged 0.5 s in all ended as a time-out"
        call.end()


def test_a_wait_the_workers_own_processes_caused_is_charged():
    # Mistake caught: crediting every wait, so that a submission extends its own limit by running
    # processes of its own beside the thread that serves the call.
    scripted = Scripted()
    clock = scripted.clock()
    call = clock.call()
    scripted.run(2.0, waited=1.5, others=4.5)
    assert call.left() == 0.0 and not clock.busy


def test_a_pool_threads_wait_is_not_charged_while_the_serving_thread_sleeps_on_it():
    # Mistake caught: the serving thread's wait alone credited: code whose work runs in torch's intra-op
    # pool, BLAS threads or a pool of its own sleeps on the result there, its pool's thread waits for a
    # CPU, and an honest grade beside a busy neighbour lost its tests (the red team's thread-pool-work-
    # beside-a-spinning-neighbour).
    scripted = Scripted()
    clock = scripted.clock()
    call = clock.call()
    scripted.pool = {7: (1.5, 0.5)}
    scripted.run(2.0, others=0.5)  # the pool's 0.5 s of CPU is in the worker's total
    assert call.left() == pytest.approx(1.5), "the pool's thread waited 1.5 s of the 2 for others' CPUs"


def test_waits_among_the_workers_own_threads_are_charged():
    # Mistakes caught: the waits of every thread summed, or the largest credited whole, so that a
    # submission extends its limit by running more threads than the CPUs it may use: four threads on one
    # CPU each wait 1.5 s of 2 while the other three run.
    scripted = Scripted()
    clock = scripted.clock()
    call = clock.call()
    scripted.pool = {1: (1.5, 0.5), 7: (1.5, 0.5), 8: (1.5, 0.5), 9: (1.5, 0.5)}  # the serving thread's (1) too
    scripted.run(2.0, others=2.0)
    assert call.left() == 0.0 and not clock.busy


def test_a_fresh_child_keeps_the_credit_earned_before_it():
    # Mistakes caught: the new child's counts (from 0) read against the old child's; the credit earned
    # before counted again with the new child's (the grader's waits twice).
    scripted = Scripted()
    clock = scripted.clock()
    call = clock.call()
    scripted.run(2.0, waited=1.0, grader=0.5)
    assert call.left() == pytest.approx(1.5)
    call.end()
    scripted.serving, scripted.waited, scripted.others = 2, 0.0, 0.0
    call = clock.call()
    scripted.run(1.5, waited=1.0)
    assert call.left() == pytest.approx(1.0), "1.5 s earned before, and the new child's 1.0 s of waiting"
    scripted.run(1.0, waited=0.5)
    assert call.left() == pytest.approx(0.5), "the second look: 0.5 s more charged, none counted twice"


def test_the_graders_own_wait_within_a_call_is_not_charged():
    # Mistake caught: the serving thread's wait alone credited: on a busy machine the grader's thread also
    # waits to write each request and to wake for each reply (the reference lost a Problem 2 test of many
    # short calls beside a spinner, its worker's waits credited).
    scripted = Scripted()
    clock = scripted.clock()
    call = clock.call()
    scripted.run(2.0, waited=0.5, grader=1.0)
    assert call.left() == pytest.approx(1.5)


def test_a_machine_too_busy_ends_the_call_as_its_own_failure():
    # Mistakes caught: no wall limit (a call starved for ever never ends), and a starved call ended as a
    # time-out of the student's code.
    scripted = Scripted()
    clock = scripted.clock()
    call = clock.call()
    while call.left() > 0:
        scripted.run(call.left(), waited=0.97 * call.left())
    assert clock.busy and scripted.time - 100.0 == pytest.approx(wall_limit_s(2.0))


def test_unreadable_usage_is_the_wall_clock():
    scripted = Scripted()
    clock = scripted.clock(usage=lambda: None)
    call = clock.call()
    scripted.run(2.0)
    assert call.left() == 0.0 and not clock.busy


# A zygote of its own (the test process has other children, and reaped many): it forks a serving child that
# reaps a child of 0.4 s of CPU, then spends 0.4 s of its own and 0.2 s in a thread of its own, then sleeps;
# the zygote itself spends 0.3 s (as its watch of the worker's processes does).
ZYGOTE = """
import os, threading, time
def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
if os.fork() == 0:
    if os.fork() == 0:
        spin(0.4)
        os._exit(0)
    os.wait()
    spin(0.4)
    threading.Thread(target=lambda: (spin(0.2), time.sleep(60))).start()
    time.sleep(60)
    os._exit(0)
spin(0.3)
time.sleep(60)
"""


def test_the_serving_childs_threads_and_the_workers_cpu_are_read_reaped_processes_too():
    # Mistakes caught: a serving child looked up by a pid of another namespace; the other processes' CPU
    # lost once they end and are reaped (a submission's spinners that exit before the look); the zygote's
    # own CPU left out (its watch, which the worker's processes can make walk gigabytes of page tables,
    # was credited as a busy machine's: the red team's loop-credited-while-the-zygote-walks-shared-pages);
    # a thread of the serving child missed, or its time read in the wrong field.
    zygote = subprocess.Popen([sys.executable, "-c", ZYGOTE])
    try:
        deadline = time.monotonic() + 30
        while not children(zygote.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        serving = children(zygote.pid)[0]
        assert serving_pid(zygote.pid, serving) == serving
        assert serving_pid(zygote.pid, serving + 10**6) is None
        while (total_cpu_s(zygote.pid) < 1.25 or len(thread_times(serving)) < 2) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        assert 1.25 <= total_cpu_s(zygote.pid) < 1.7, \
            "the reaped child's 0.4 s, the child's 0.4 s, its thread's 0.2 and the zygote's own 0.3"
        ran = sorted(ran for _, ran in thread_times(serving).values())
        assert len(ran) == 2 and 0.15 <= ran[0] < 0.35 and 0.35 <= ran[1] < 0.6, ran
        assert thread_times(serving + 10**6) == {} and total_cpu_s(zygote.pid + 10**6) is None
    finally:
        for pid in descendants(zygote.pid):
            os.kill(pid, 9)
        zygote.kill()
        zygote.wait()


# A test process's calls into a worker pinned to one CPU: first beside three spinning processes of someone
# else's, then with three of the worker's own. It prints what each call did as JSON.
CALLS = """
import json, os, subprocess, sys, time
from pathlib import Path
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # the worker, forked below, inherits it
from adapters import _route, dtype_memory
from staff.sandbox import plugin_settings
from staff.sandbox.plugin import Sandbox
from staff.sandbox.failures import SandboxFailure

sandbox = Sandbox(plugin_settings.read(Path(sys.argv[1])))
_route.set_route(sandbox.route)
seen = {}

def timed(name, cpu_ms, own, pooled=0):
    sandbox.route.begin_test(name, 0)
    started = time.monotonic()
    try:
        dtype_memory.run_tensor_bytes([cpu_ms, own, pooled], "float32")
        seen[name] = ["returned", time.monotonic() - started, sandbox.route.clock.charged_s()]
    except SandboxFailure as failure:
        seen[name] = [type(failure).__name__, time.monotonic() - started, str(failure)[:300]]

try:
    timed("start", 10, 0)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
                for _ in range(3)]
    try:
        time.sleep(0.5)
        timed("beside", 1000, 0)
        timed("pool beside", 1000, 0, 1)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    timed("own", 1000, 3)
finally:
    sandbox.worker.close()
print(json.dumps(seen))
"""

# tensor_bytes as a submission may write it: (shape[0]) ms of a thread's CPU time, after starting shape[1]
# spinning processes of its own, each a session of its own; the serving thread's, or where shape[2] is 1 a
# thread's of a pool while the serving thread waits for it (as torch's intra-op pool or BLAS threads do).
SPIN = """

def tensor_bytes(shape, dtype):
    import os
    import threading
    import time

    for _ in range(shape[1]):
        if os.fork() == 0:
            os.setsid()
            while True:
                pass

    def spin():
        end = time.thread_time() + shape[0] / 1000
        while time.thread_time() < end:
            pass

    if shape[2]:
        pool = threading.Thread(target=spin)
        pool.start()
        pool.join()
    else:
        spin()
    return 0
"""


@pytest.mark.slow
def test_a_call_beside_busy_programs_keeps_its_time_and_one_busy_with_its_own_does_not(tmp_path):
    # Mistakes caught: the wall clock alone ("beside" times out: its thread had a quarter of a CPU), the
    # serving thread's wait alone credited ("pool beside" times out: that thread sleeps on the pool's), and
    # every wait credited ("own" returns after 4 s: its spinners are its own). Tried: each.
    package = samples.reference(tmp_path / "submission")
    with (package / "dtype_memory.py").open("a") as handle:
        handle.write(SPIN)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    settings = build(scratch, REPO_ROOT, package, ("adapters",), False, Settings(threads=1, test_timeout_s=2.0))
    done = subprocess.run([sys.executable, "-c", CALLS, str(settings.settings)], capture_output=True, text=True,
                          env={**child_env(REPO_ROOT), "STAFF_GRADER_PID": str(os.getpid())}, cwd=REPO_ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    what, wall, charged = seen["beside"]
    assert what == "returned", f"1 s of CPU beside three spinning programs, limit 2 s: {seen['beside']}"
    assert wall > 2.0, f"the spinners took no CPU from the call (so nothing was tried): {seen['beside']}"
    assert charged < 2.0
    what, wall, charged = seen["pool beside"]
    assert what == "returned", f"1 s of a pool's CPU beside three spinning programs, limit 2 s: {seen['pool beside']}"
    assert wall > 2.0 and charged < 2.0, seen["pool beside"]
    what, wall, said = seen["own"]
    assert what == "CallTimedOut", f"1 s of CPU beside three spinners of its own, limit 2 s: {seen['own']}"
    assert wall < 4.0, seen["own"]
