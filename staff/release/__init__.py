"""`staff release`: build the student release from this tree, check it, and write it out (see build.py)."""
