"""``dyntools reproduce``: run the catalogue (see :mod:`dyntools.report`) that :mod:`dyntools.plugins` finds."""

from __future__ import annotations

from dyntools import plugins, report
from dyntools.commands import CommandOutput
from dyntools.tables import text_table


def run(args, progress: bool) -> CommandOutput:
    sections = report.reproduce(args.out, plugins.catalogue(), quick=args.quick, seed=args.seed, only=args.only,
                                progress=progress, self_contained=args.self_contained)
    rows = [{"entry": s.title, "status": s.status, "seconds": round(s.seconds, 1),
             "CPU seconds": round(s.cpu_seconds, 1)} for s in sections]
    total, total_cpu = sections.seconds, sum(s.cpu_seconds for s in sections)    # wall time of both lanes
    rows.append({"entry": "total", "status": f"{sum(s.ok for s in sections)} of {len(sections)} ok",
                 "seconds": round(total, 1), "CPU seconds": round(total_cpu, 1)})
    summary = {"out": str(args.out), "report": str(args.out / "report.md"), "quick": args.quick,
               "seconds": total, "cpu_seconds": total_cpu,
               "entries": {s.title: {"ok": s.ok, "status": s.status, "seconds": s.seconds, "cpu_seconds": s.cpu_seconds,
                                     "numbers": s.numbers, "figures": s.figures} for s in sections}}
    table = text_table(rows) + f"\n\nwrote {args.out / 'report.md'}"
    return CommandOutput(summary, table, exit_code=0 if all(s.ok for s in sections) else 1)
