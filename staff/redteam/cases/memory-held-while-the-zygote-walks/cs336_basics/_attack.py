import mmap
import os
import sys
import time

GIB = 1 << 30
LIMIT_GIB = 6  # case.toml's memory_gib
OVER_BYTES = GIB // 4  # the holder holds the limit less the shared region, and this much more
PROOFS = 3  # holds past the limit, unseen, before the calls answer honestly
HOLDER = """
import mmap, os, sys, time
size, until = int(sys.argv[1]), float(sys.argv[2])
region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_POPULATE)
with open("/proc/self/status") as handle:
    anon = next(int(line.split()[1]) for line in handle if line.startswith("RssAnon:"))
os.write(1, f"{anon} {time.monotonic()}\\n".encode())
while time.monotonic() < until:
    time.sleep(0.005)
region.close()
"""

_state = {}


def _status(pid, name):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(name):
                return line.split()[1]
    return None


def _state_of(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


def _amplify():
    """Private anonymous memory in 4 KiB pages, shared copy-on-write with sleeping children: the zygote's
    sum of RssAnon passes the limit many times over, so each of its looks reads every process's
    smaps_rollup (a walk of its page tables: a second or more a look), while the exact figure, one copy
    shared, stays under the limit."""
    region = None
    for size in (2.25, 2.0, 1.75, 1.5, 1.25, 1.0):
        try:
            region = mmap.mmap(-1, int(size * GIB), flags=mmap.MAP_PRIVATE)
            break
        except (OSError, ValueError):
            continue
    try:
        region.madvise(mmap.MADV_NOHUGEPAGE)
    except (OSError, AttributeError, ValueError):
        pass
    chunk = b"\x5a" * (16 << 20)
    for offset in range(0, len(region), len(chunk)):
        region[offset:offset + len(chunk)] = chunk[:len(region) - offset]
    for _ in range(14):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                while True:
                    time.sleep(3600)
            finally:
                os._exit(0)
    return region


def _watch_the_watcher(zygote, region_bytes, report):
    """The detector: each look of the zygote begins with the list of its processes and their status files
    (a few ms), then walks their page tables. A process started after that list is in no part of the look:
    30 ms into each look it starts a fresh interpreter that maps the limit less the shared region and OVER_BYTES more (populated: resident, private) and
    holds them until 70% of the last look's length has passed, then ends, long before the next look lists
    the processes. Each hold past the limit (the holder's RssAnon and one copy of the shared region), the
    worker still alive after it, is one byte on `report`."""
    last_look = None
    asleep_since, running_since = time.monotonic(), None
    while True:
        now = time.monotonic()
        try:
            state = _state_of(zygote)
        except OSError:
            os._exit(0)
        if state != "S":
            if running_since is None:
                running_since = now
            asleep_since = None
        else:
            if asleep_since is None:
                asleep_since = now
            if running_since is not None and now - asleep_since > 0.01:
                last_look = asleep_since - running_since
                running_since = None
        if running_since is not None and last_look is not None and last_look > 0.6 and now - running_since > 0.15:
            start = running_since
            until = start + 0.85 * last_look
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.dup2(write_end, 1)
                os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", HOLDER, str(LIMIT_GIB * GIB - region_bytes + OVER_BYTES), str(until)])
            os.close(write_end)
            line = b""
            while chunk := os.read(read_end, 256):
                line += chunk
            os.close(read_end)
            os.waitpid(pid, 0)
            try:
                anon_kib, held_at = line.split()
                held = int(anon_kib) * 1024 + region_bytes
                if held > LIMIT_GIB * GIB and float(held_at) < until:
                    os.write(report, b"+")
                else:
                    os.write(report, f"[look {last_look:.2f} s, held at {float(held_at) - start:.2f} s]".encode())
            except ValueError:
                os.write(report, f"[look {last_look:.2f} s, holder said {line[:40]!r}]".encode())
            # wait for this look to end before the next
            while True:
                try:
                    if _state_of(zygote) == "S":
                        break
                except OSError:
                    os._exit(0)
                time.sleep(0.001)
            running_since, asleep_since = None, time.monotonic()
            continue
        time.sleep(0.001)


def _news(wait_s):
    deadline = time.monotonic() + wait_s
    while True:
        try:
            news = os.read(_state["report"], 4096).decode()
            _state["proofs"] += news.count("+")
            _state["misses"] = (_state.get("misses", "") + news.replace("+", ""))[-600:]
        except BlockingIOError:
            pass
        if _state["proofs"] >= PROOFS or time.monotonic() >= deadline:
            return
        time.sleep(0.05)


def _set_up():
    """At import (the import check allows 20 s in the red team): the slow looks, the detector, and the first
    hold past the limit, waited for up to 15 s."""
    began = time.monotonic()
    zygote = int(_status("self", "PPid:"))
    region = _amplify()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            _watch_the_watcher(zygote, len(region), write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    os.set_blocking(read_end, False)
    _state.update(report=read_end, proofs=0, since=time.monotonic(), region=region)
    deadline = began + 16  # the import check's limit is 20 s
    while _state["proofs"] < 1 and time.monotonic() < deadline:
        _news(0.1)
    print(f"at import: {_state['proofs']} holds past the limit unseen, {len(region) / GIB:g} GiB shared, "
          f"in {time.monotonic() - began:.1f} s", flush=True)


try:
    _set_up()
except Exception as error:  # noqa: BLE001 - each call then says why
    _state["error"] = repr(error)


def attack(args):
    """bytes_per_element, honest while its processes hold more than --memory-gib unseen: at least one hold
    proven at import, and PROOFS once 30 s have passed."""
    if "error" in _state:
        raise RuntimeError(f"the attack could not be set up: {_state['error']}")
    _news(0.3 if _state["proofs"] < PROOFS else 0.0)
    elapsed = time.monotonic() - _state["since"]
    print(f"{_state['proofs']} holds past the limit unseen in {elapsed:.0f} s; misses: {_state.get('misses', '')[-200:]}",
          flush=True)
    if elapsed > 40 and _state["proofs"] < PROOFS:
        raise RuntimeError(f"held memory past the limit unseen only {_state['proofs']} times in {elapsed:.0f} s; "
                           f"misses: {_state.get('misses', '')}")
    print(f"held {OVER_BYTES / GIB:g} GiB past the limit between the zygote's looks {_state['proofs']} times",
          flush=True)
