"""Plain-text and Markdown tables for human output (the CLI's non-JSON mode and report.md)."""

from __future__ import annotations

from collections.abc import Sequence


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def text_table(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """Columns aligned with spaces; ``columns`` defaults to the first row's keys."""
    if not rows:
        return "(no rows)"
    columns = list(columns or rows[0].keys())
    cells = [[_cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[j]) for row in cells)) for j, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def markdown_table(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    if not rows:
        return "_(no rows)_"
    columns = list(columns or rows[0].keys())
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def key_values(summary: dict) -> str:
    """``key: value`` lines for a flat summary."""
    width = max((len(k) for k in summary), default=0)
    return "\n".join(f"{k.ljust(width)}  {_cell(v)}" for k, v in summary.items())


def status_and_table(result, *after: str) -> str:
    """A result as the terminal shows it: its status line, the rows of its summary's ``table``, then the lines
    ``after`` (a blank line between the parts)."""
    return "\n".join([f"status: {result.status} — {result.message}", "", text_table(result.summary["table"]), "",
                      *after])


def summary_with(result, *keys: str) -> dict:
    """The JSON summary of a result: its status and message, the entries ``keys`` of its summary in that order,
    and its timings (``seconds``)."""
    return {"status": result.status, "message": result.message, **{k: result.summary[k] for k in keys},
            "seconds": result.timings}
