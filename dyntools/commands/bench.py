"""``dyntools bench [NAME …]``: run benchmarks, print measured ratios against their goals."""

from __future__ import annotations

from dyntools import bench
from dyntools.commands import CommandOutput
from dyntools.engine.result import lowlevel_kernels
from dyntools.tables import text_table


def run(args, progress: bool) -> CommandOutput:
    isas = tuple(i.strip() for i in args.isa.split(",") if i.strip())
    reports = bench.run(args.names, quick=args.quick, isas=isas)
    rows = [{"benchmark": r.name, "target": t.name, "measured": f"{t.value:.4g} {t.unit}",
             "goal": f"{'>=' if t.higher_is_better else '<='} {t.goal:.4g} {t.unit}",
             "met": "yes" if t.met else "NO"} for r in reports for t in r.targets]
    extra = [f"{r.name}: {k} = {v:.4g}" for r in reports for k, v in r.measurements.items()]
    notes = [f"{r.name}: {n}" for r in reports for n in r.notes]
    notes += [f"{r.name}: ran on {', '.join(f'{k} = {v}' for k, v in r.as_dict()['target'].items())}"
              for r in reports]
    kernels = lowlevel_kernels()
    table = "\n".join([f"low-level kernels: {kernels}", text_table(rows), "", *extra, *notes])
    summary = {"quick": args.quick, "lowlevel": kernels, "benchmarks": [r.as_dict() for r in reports]}
    return CommandOutput(summary, table)
