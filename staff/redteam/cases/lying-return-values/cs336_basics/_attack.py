import itertools

import torch


class LyingInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class LyingFloat(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


class LyingTensor(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.equal, torch.Tensor.__eq__, torch.isclose, torch.allclose):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


class LyingList(list):
    def __eq__(self, other):
        return True


class LyingDict(dict):
    def __eq__(self, other):
        return True

    def __getitem__(self, key):
        return LyingInt(0)


_ways = itertools.cycle([lambda: LyingInt(1), lambda: LyingFloat(1.0), lambda: torch.zeros(3).as_subclass(LyingTensor),
                         lambda: LyingList(), lambda: LyingDict(), lambda: float("nan")])


def attack(args):
    return next(_ways)()
