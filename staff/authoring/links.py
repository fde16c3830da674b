"""Links and paths in the pages people read: the README, `docs/`, the handout, the student README and
the CHANGELOG.

Every relative link must name a file or folder of the repository, and a link into a Markdown page
with an anchor (`page.md#a-heading`, or `#a-heading` on the page itself) one of that page's
headings, spelled as GitHub spells them. Nothing may point outside the repository: no absolute or
`file:` link, no relative link that climbs above the root, and no relative path written anywhere in
a page (a code span or block included) that climbs (`../`) to name a file outside the root or one
the repository lacks, since a reader of another clone, or of the student release, has no such
file. A student-facing page (the handout, the student README, the CHANGELOG) links only to what the
release ships. Web links (`https:` and the like) are not fetched.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

STAFF_PAGES = ("README.md", "docs/*.md")
STUDENT_PAGES = ("handout/*.md", "STUDENT_README.md", "CHANGELOG.md")

_FENCE = re.compile(r"^(```|~~~)")
_INLINE_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'][^\"']*[\"'])?\s*\)")
_REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+[\"'(].*)?$")
_CODE_SPAN = re.compile(r"(`+).+?\1")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# A relative path that climbs (`../`) and ends in a file name with an extension: `../shared/FACTS.md`, not `../before`.
_CLIMBING_PATH = re.compile(r"(?<![\w./-])((?:\.\./)+(?:[\w.-]+/)*[\w-]+\.[A-Za-z]\w*)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def pages(repo: Path) -> tuple[list[Path], set[Path]]:
    """Every page to read, and which of them are student-facing."""
    student = {path for pattern in STUDENT_PAGES for path in repo.glob(pattern) if path.is_file()}
    staff = {path for pattern in STAFF_PAGES for path in repo.glob(pattern) if path.is_file()}
    return sorted(staff | student), student


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each line outside fenced code blocks, with its code spans blanked out."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)))
    return lines


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link and image outside code."""
    found = []
    for number, line in _prose_lines(text):
        found += [(number, m.group(1)) for m in _INLINE_LINK.finditer(line)]
        if (reference := _REFERENCE_LINK.match(line)) is not None:
            found.append((number, reference.group(1)))
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text (a link's text, not its target) in lower case, with
    punctuation but `-` and `_` dropped and each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a page's headings make (a repeated heading's second is `slug-1`, and so on); code
    spans in a heading are part of its text."""
    made: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced and (heading := _HEADING.match(line)) is not None:
            base = anchor = slug(heading.group(1))
            count = 0
            while anchor in made:
                count += 1
                anchor = f"{base}-{count}"
            made.add(anchor)
    return made


def _inside(repo: Path, page: Path, target: str) -> str | None:
    """`target` (relative to `page`) as a POSIX path relative to the repository, or None where it
    climbs above the root."""
    joined = posixpath.normpath(posixpath.join(page.parent.relative_to(repo).as_posix(), target))
    return None if joined == ".." or joined.startswith("../") else joined


def link_problems(repo: Path, page: Path, *, student: bool, shipped: frozenset[str]) -> list[str]:
    """What is wrong with the links and paths of one page, one message each."""
    text = page.read_text(encoding="utf-8")
    found = []
    for number, target in links(text):
        if not target or _SCHEME.match(target) and not target.lower().startswith("file:"):
            continue  # a web or mail link: not fetched
        path, _, anchor = target.partition("#")
        if target.lower().startswith("file:") or path.startswith("/"):
            found.append(f"line {number}: the link {target!r} points at a machine's files, outside the repository; "
                         "link relative to this page")
            continue
        relative = _inside(repo, page, path) if path else page.relative_to(repo).as_posix()
        if relative is None:
            found.append(f"line {number}: the link {target!r} points outside the repository")
            continue
        resolved = repo / relative
        if not resolved.exists():
            found.append(f"line {number}: the link {target!r} names {relative}, which is not in the repository")
        elif student and relative.split("/", 1)[0] not in shipped:
            found.append(f"line {number}: the link {target!r} names {relative}, which the student release does not "
                         "ship")
        elif anchor and resolved.suffix == ".md" and resolved.is_file() and anchor not in anchors(resolved):
            found.append(f"line {number}: the link {target!r}: {relative} has no heading whose anchor is #{anchor}")
    for number, line in enumerate(text.splitlines(), 1):
        line = _INLINE_LINK.sub(" ", line)  # a link's target was judged above, as a link
        for climbing in _CLIMBING_PATH.findall(line):
            relative = _inside(repo, page, climbing)
            if relative is None:
                found.append(f"line {number}: the path {climbing!r} points outside the repository")
            elif not (repo / relative).exists():
                found.append(f"line {number}: the path {climbing!r} names {relative}, which is not in the repository")
    return found


def check_pages(repo: Path) -> list[tuple[str, str]]:
    """(page relative to the repository, message) for every link or path to fix on every page read."""
    from staff.release.contents import SHIPPED_FILES, SHIPPED_FOLDERS

    shipped = frozenset(SHIPPED_FOLDERS) | frozenset(SHIPPED_FILES.values())
    every, student = pages(repo)
    return [(page.relative_to(repo).as_posix(), message) for page in every
            for message in link_problems(repo, page, student=page in student, shipped=shipped)]
