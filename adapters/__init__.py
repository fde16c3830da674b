"""The one door every test suite uses to reach student code.

One module per problem; one `run_*` function per gradable behaviour. Arguments and results are
plain data (numbers, strings, tensors, arrays, paths, and lists/tuples/dicts of them); dtypes and
devices travel as strings such as "bfloat16" and "cuda:0". Each function imports `cs336_basics`
when called, never at module import, so collecting tests never runs student code.
"""
