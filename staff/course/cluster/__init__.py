"""Grading a batch on a cluster: shards of a batch (`shards.py`), the Slurm array job that runs them
(`script.py` writes its script, `watch.py` follows its tasks, `slurm.py` submits and waits) and the
gradebook rebuilt from a shared output folder (`gradebook.py`)."""
