"""A course over a term: which recorded grades are stale, what moved between two grades and why,
how each test fares across a batch, and the course report that shows it all.

Reads results files and batch folders (staff.batch, staff.provenance); grades nothing itself.
"""
