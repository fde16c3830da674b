import os

OUTPUT_CHARS = 4000  # what the test process keeps of a failed test's output (tests/failure_output.py)
NOTE = "\n[... output cut here: 4000 more characters ...]"  # about its note (the count varies by a few digits)
KEEP = len("/tmp/staff-grade-") + 4  # of the folder's name: the cut falls inside its random part, whatever its prefix


def attack(args):
    """Fail with a message that puts the grade's scratch folder (the parent of the worker's working folder)
    where the test process cuts the failed test's output: the output is cut to 4,000 characters in the test
    process, and the grader removes its machine's paths only afterwards, looking for whole paths, so the
    part of the folder's name before the cut is left in results.json. The output before the message is the
    test's frame (its file under the scratch folder) and the exception's type, as the grade shows them."""
    scratch = os.path.dirname(os.path.realpath(os.getcwd()))
    before = (f'FAILED\n  File "{scratch}/grader/tests/test_01_dtype_memory.py", line 40, in test_bytes_per_element\n'
              "    check_equal(A.run_bytes_per_element(name), element_size(name),\n"
              "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\nValueError: ")
    kept = OUTPUT_CHARS - len(NOTE) - len(before)  # characters of the message the output keeps
    pad = "." * max(kept - min(KEEP, len(scratch) - 1), 0)
    raise ValueError(pad + scratch + "/code" + "." * OUTPUT_CHARS)  # long enough that the output is cut at 8,000 first
