"""report.html: the course report of a batch, one self-contained page (no script, no network, no file
beside it): the score distribution of each problem, the suspect tests, the last diff (diff.json,
written when the batch last graded submissions again) and every test's failure rate and messages.

Every text that can come from a submission (test output, names) is escaped; the page opens in any
browser and prints.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

from adapters._text import shown_text
from staff.atomic import write_text_atomic
from staff.course.analytics import Tally, top_messages

BINS = 10
STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { padding: 2px 8px; text-align: left; vertical-align: top; }
tr:nth-child(even) { background: #f5f5f5; } .num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { display: inline-block; height: 0.8em; background: #cc6677; } .suspect { color: #a00; font-weight: bold; }
.warning { background: #fff3cd; padding: 0.5em 1em; border-left: 4px solid #e0a800; }
.problems { display: flex; flex-wrap: wrap; gap: 1em; } figure { margin: 0; } figcaption { font-weight: bold; }
small { color: #666; } .rate { white-space: nowrap; width: 9em; }
"""


@dataclass
class ProblemScores:
    number: int
    title: str
    possible: float  # the most points a grade of it could earn
    earned: list[float]  # one per submission that graded it


def _text(value: object) -> str:
    return html.escape(shown_text(str(value)))


def histogram(scores: ProblemScores, width: int = 220, height: int = 90) -> str:
    """An inline SVG histogram of a problem's points: BINS bins from 0 to its maximum."""
    top = scores.possible or max(scores.earned, default=0.0) or 1.0
    counts = [0] * BINS
    for value in scores.earned:
        counts[min(BINS - 1, max(0, int(value / top * BINS)))] += 1
    most = max(counts) or 1
    bar = width / BINS
    bars = "".join(
        f'<rect x="{i * bar + 1:.1f}" y="{height - 14 - c / most * (height - 20):.1f}" width="{bar - 2:.1f}" '
        f'height="{c / most * (height - 20):.1f}" fill="#4477aa"><title>{c} submission(s) with '
        f'{i * top / BINS:g} to {(i + 1) * top / BINS:g} points</title></rect>' for i, c in enumerate(counts))
    axis = (f'<text x="0" y="{height - 2}" font-size="10">0</text>'
            f'<text x="{width}" y="{height - 2}" font-size="10" text-anchor="end">{top:g}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="points of problem {scores.number}">{bars}{axis}</svg>')


def _problem_section(problems: list[ProblemScores]) -> str:
    figures = []
    for p in problems:
        mean = sum(p.earned) / len(p.earned) if p.earned else 0.0
        full = sum(e >= p.possible > 0 for e in p.earned)
        figures.append(f"<figure><figcaption>{p.number}. {_text(p.title)}</figcaption>{histogram(p)}"
                       f"<br><small>{len(p.earned)} graded, mean {mean:.1f} of {p.possible:g}, {full} full marks"
                       f"</small></figure>")
    return f'<h2 id="problems">Score distribution per problem</h2><div class="problems">{"".join(figures)}</div>'


def _tests_section(stats: list[Tally]) -> str:
    rows = []
    for s in stats:
        messages = "<br>".join(f"{count} &times; {_text(message) or '<i>no message</i>'}"
                               for message, count in top_messages(s, 3))
        rows.append(f'<tr><td class="num">{s.problem}</td><td>{_text(s.name)}</td>'
                    f'<td class="num">{s.failed} / {s.ran}</td>'
                    f'<td class="rate"><span class="bar" style="width:{s.failure_rate * 6:.2f}em"></span> '
                    f'{s.failure_rate:.0%}</td>'
                    f'<td>{"<span class=suspect>suspect</span> " if s.suspect else ""}{messages}</td></tr>')
    return ('<h2 id="tests">Every test: failure rate and failure messages</h2><table><tr><th>problem</th>'
            '<th>test</th><th>failed</th><th>rate</th><th>messages (submissions)</th></tr>'
            + "".join(rows) + "</table>")


def _suspect_section(stats: list[Tally]) -> str:
    suspects = [s for s in stats if s.suspect]
    if not suspects:
        return '<h2 id="suspects">Suspect tests</h2><p>None: no test fails in a way that points at the test.</p>'
    items = "".join(f'<li><span class="suspect">{_text(s.name)}</span> (problem {s.problem}): {_text(s.suspect)}</li>'
                    for s in suspects)
    return f'<h2 id="suspects">Suspect tests</h2><ul>{items}</ul>'


def _diff_section(changes: list[dict] | None) -> str:
    if changes is None:
        return '<h2 id="diff">The last diff</h2><p>None yet: no submission has been graded again in this folder.</p>'
    moved = [c for c in changes if c.get("moved") or c.get("note")]
    up = sum(1 for c in changes if (c.get("after") or 0) > (c.get("before") or 0) and c.get("before") is not None)
    down = sum(1 for c in changes if (c.get("after") or 0) < (c.get("before") or 0) and c.get("after") is not None)
    rows = []
    for c in moved:
        tests = "<br>".join(f"{_text(m['name'])}: {m['before']} &rarr; {m['after']} ({_text(m['cause'])})"
                            for m in c.get("moved", []))
        rows.append(f"<tr><td>{_text(c['student'])}</td><td>{_text(c.get('name', ''))}</td>"
                    f'<td class="num">{c.get("before")}</td><td class="num">{c.get("after")}</td>'
                    f"<td>{tests or _text(c.get('note', ''))}</td></tr>")
    table = ("<table><tr><th>student</th><th>name</th><th>before</th><th>after</th><th>what moved, and why</th></tr>"
             + "".join(rows) + "</table>") if rows else "<p>Nothing moved.</p>"
    return (f'<h2 id="diff">The last diff</h2><p>{len(changes)} submissions graded again: {up} up, {down} down.</p>'
            + table)


def render(title: str, facts: list[str], warnings: list[str], problems: list[ProblemScores],
           stats: list[Tally], changes: list[dict] | None) -> str:
    """The whole page: a heading, `facts` (lines) and `warnings`, then the four sections."""
    head = "".join(f"<li>{_text(fact)}</li>" for fact in facts)
    warned = "".join(f'<p class="warning">{_text(w)}</p>' for w in warnings)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_text(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{_text(title)}</h1><ul>{head}</ul>{warned}"
            + _problem_section(problems) + _suspect_section(stats) + _diff_section(changes) + _tests_section(stats)
            + "</body></html>\n")


def last_diff(out: Path) -> list[dict] | None:
    """The changes the batch last wrote to OUT/diff.json, or None where there are none to read."""
    try:
        changes = json.loads((out / "diff.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return changes if isinstance(changes, list) and all(isinstance(c, dict) for c in changes) else None


def write_report(out: Path, title: str, facts: list[str], warnings: list[str], problems: list[ProblemScores],
                 stats: list[Tally]) -> Path:
    """OUT/report.html, atomically; its path."""
    path = out / "report.html"
    write_text_atomic(path, render(title, facts, warnings, problems, stats, last_diff(out)))
    return path
