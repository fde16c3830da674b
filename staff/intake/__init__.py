"""Taking in an upload: its files read whatever the wrapping (a folder, a zip, Gradescope's layout:
upload.py), and the `cs336_basics` package found in them and laid out to grade (submission.py). Every
trick of an upload (links, zip bombs, zip-slip) is refused here, before anything runs.

Imports only staff.errors and staff.sandbox; the grader and the course import it."""
