import sys

TEXT = ("control-characters-were-here \x9b2J\x9d0;owned\x07 \u202eexe.fdp\u202c \u2066x\u2069 \u200f\u061c "
        "\x1b[31mred\x1b[0m \x1b]8;;http://x\x1b\\link\r\x00")
Trick = type("Error\u202e\x9b", (Exception,), {})


def attack(args):
    print(TEXT)
    print(TEXT, file=sys.stderr)
    raise Trick(TEXT)
