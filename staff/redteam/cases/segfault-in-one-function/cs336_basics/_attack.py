import ctypes


def attack(args):
    ctypes.string_at(0)
