import codecs


def _notes_codec(name):
    """A text encoding of its own (rot13 over UTF-8) for timing_notes.py, which declares it in its coding
    line: Python's importer finds it in the codec registry; a reader without it cannot parse the file."""
    if name != "notes_rot13":
        return None

    def decode(data, errors="strict"):
        return codecs.decode(bytes(data).decode("utf-8", errors), "rot13"), len(data)

    def encode(text, errors="strict"):
        return codecs.encode(text, "rot13").encode("utf-8", errors), len(text)

    class Decoder(codecs.IncrementalDecoder):
        def decode(self, data, final=False):
            return decode(data)[0]

    return codecs.CodecInfo(encode, decode, incrementaldecoder=Decoder, name="notes_rot13")


# At import: the worker's import check imports every module of the package, this one first, and
# time_matmul imports it before it imports timing_notes.
codecs.register(_notes_codec)


def attack(args):
    """time_matmul as timing_notes.py writes it (the timer's mistakes and the rewrite of the instrument)."""
    from cs336_basics.timing_notes import timed

    return timed(*(args[name] for name in ("m", "k", "n", "dtype", "num_warmup", "num_trials", "promised")))
