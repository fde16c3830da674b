"""What of the grading user's session this process can reach, named (empty when nothing)."""
import ctypes
import glob
import os
import socket

NAMES = ("DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR", "GNOME_KEYRING_CONTROL", "GPG_AGENT_INFO")


def _environments():
    """This process's environment and every other process's it can read."""
    found = [dict(os.environ)]
    for path in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(path, "rb") as handle:
                pairs = [item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item]
        except OSError:
            continue
        found.append({k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs})
    return found


def _addresses(environments):
    sockets, folders = set(), set(glob.glob("/run/user/*")) | {f"/run/user/{os.getuid()}"}  # a guess needs no listing
    for env in environments:
        for name in NAMES:
            value = env.get(name)
            if not value:
                continue
            if name == "XDG_RUNTIME_DIR" or name == "GNOME_KEYRING_CONTROL":
                folders.add(value)
                continue
            for part in value.split(";"):
                for field in part.replace("unix:", "").split(","):
                    if field.startswith("path="):
                        sockets.add(field[5:])
                    elif field.startswith("abstract="):
                        sockets.add("\0" + field[9:])
                    elif field.startswith("/"):
                        sockets.add(field.split(":")[0])
    for folder in folders:
        sockets |= {os.path.join(folder, "bus"), os.path.join(folder, "keyring", "ssh")}
        sockets |= set(glob.glob(os.path.join(folder, "*", "*")))
    return sockets, folders


def reached():
    environments = _environments()
    leaked = sorted({name for env in environments[1:] for name in NAMES if name in env})
    what = [f"another process's environment ({', '.join(leaked)})"] if leaked else []
    what += [f"its own environment names {name}" for name in NAMES if name in os.environ]
    sockets, folders = _addresses(environments)
    for address in sorted(sockets):
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as opened:
                opened.settimeout(2)
                opened.connect(address)
                opened.sendall(b"\0AUTH EXTERNAL\r\n")
            what.append(f"the socket {address!r}")
        except OSError:
            pass
    for folder in sorted(folders):
        try:
            what.append(f"the runtime folder {folder} ({len(os.listdir(folder))} entries)")
        except OSError:
            pass
    try:  # KEYCTL_READ (11) of the user keyring (-4): x86_64's keyctl is 250, aarch64's 219
        number = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        buffer = ctypes.create_string_buffer(4096)
        if number is not None and libc.syscall(number, 11, -4, buffer, 4096) > 0:  # a keyring with keys in it
            what.append("the user keyring")
    except Exception:
        pass
    return what
