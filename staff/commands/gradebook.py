"""`staff gradebook`: its parser and handler live with the cluster code (staff/course/cluster/gradebook.py)."""

from __future__ import annotations


def register(commands) -> None:
    from staff.course.cluster.gradebook import add_gradebook

    add_gradebook(commands)
