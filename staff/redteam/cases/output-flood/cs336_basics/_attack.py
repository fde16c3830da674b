import sys

LINE = "x" * (10 << 20) + "\n"


def attack(args):
    while True:
        sys.stdout.write(LINE)
        sys.stderr.write(LINE)
