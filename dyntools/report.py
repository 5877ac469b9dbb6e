"""``dyntools reproduce``: the catalogue of headline results → figures + ``report.md``.

Each catalogue entry (a :class:`dyntools.spec.Entry`, declared in ``simulations/`` or ``proofs/`` and
handed in by the command-line layer, which finds them) has a function
``reproduce(ctx: ReportContext) -> Section``. It runs its experiment at the size
``ctx.quick`` asks for, saves figures under ``ctx.figure_dir`` and returns the Markdown text
with the measured numbers. The report is assembled in a temporary directory and renamed into
place, so an interrupted run leaves no half report.

Budget: ``--quick`` runs the whole catalogue in under 3 minutes on 2 cores (numba compilation
included); each entry should stay within ~20 s at ``quick``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dyntools import store, validation


@dataclass
class ReportContext:
    out_dir: Path            # the report directory being written (temporary until done)
    quick: bool
    seed: int
    progress: bool = False

    @property
    def figure_dir(self) -> Path:
        path = self.out_dir / "figures"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def relative(self, path: Path) -> str:
        """Path of a written file relative to the report (for Markdown links)."""
        return Path(path).resolve().relative_to(self.out_dir.resolve()).as_posix()


@dataclass
class Section:
    """One catalogue entry's part of the report."""

    title: str
    markdown: str                      # body text with numbers and figure links
    numbers: dict[str, Any] = field(default_factory=dict)   # headline numbers (for --json)
    figures: list[str] = field(default_factory=list)        # paths relative to the report
    ok: bool = True                    # False when a headline check failed (reported, not hidden)
    seconds: float = 0.0               # wall time of the entry
    cpu_seconds: float = 0.0           # processor time of the entry: this process and its finished workers


def cpu_seconds() -> float:
    """User + system time of this process and of its children that have ended (the pools of sweeps and
    experiments are joined before an entry returns, so an entry's difference counts its workers)."""
    import resource

    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def select(catalogue: Mapping, only: str | None) -> list[str]:
    if only is None:
        return list(catalogue)
    names = [n.strip() for n in only.split(",") if n.strip()]
    if not names:
        raise ValueError(f"Invalid --only: {only!r} (name catalogue entries: {', '.join(catalogue)})")
    for n in names:
        validation.one_of("catalogue entry", n, tuple(catalogue))
    return names


def reproduce(out_dir: str | Path, catalogue: Mapping, *, quick: bool = False, seed: int = 0,
              only: str | None = None, progress: bool = False) -> list[Section]:
    """Run the selected entries of ``catalogue`` (name → object with ``reproduce(ctx) -> Section``, in
    report order) and write ``out_dir/report.md`` with ``figures/``."""
    names = select(catalogue, only)
    seed = validation.seed(seed)
    out_dir = store.check_writable(out_dir)
    sections: list[Section] = []
    with store.atomic_directory(out_dir) as tmp:
        ctx = ReportContext(out_dir=tmp, quick=quick, seed=seed, progress=progress)
        for name in names:
            start, cpu = time.perf_counter(), cpu_seconds()
            section = catalogue[name].reproduce(ctx)
            section.seconds = time.perf_counter() - start
            section.cpu_seconds = cpu_seconds() - cpu
            sections.append(section)
        (tmp / "report.md").write_text(render(sections, quick=quick, seed=seed), encoding="utf-8")
    return sections


def render(sections: list[Section], *, quick: bool, seed: int) -> str:
    from dyntools.engine.result import package_versions

    versions = ", ".join(f"{k} {v}" for k, v in package_versions().items())
    lines = ["# dyntools: reproduced results", "",
             f"Mode: {'quick (reduced sizes)' if quick else 'full'}; seed {seed}; {versions}.", "",
             "| entry | status | seconds | CPU seconds |", "|---|---|---|---|"]
    lines += [f"| {s.title} | {'ok' if s.ok else 'CHECK FAILED'} | {s.seconds:.1f} | {s.cpu_seconds:.1f} |"
              for s in sections]
    lines += [f"| total | {sum(s.ok for s in sections)} of {len(sections)} ok | {sum(s.seconds for s in sections):.1f} "
              f"| {sum(s.cpu_seconds for s in sections):.1f} |"]
    for s in sections:
        lines += ["", f"## {s.title}", "", s.markdown.strip()]
    return "\n".join(lines) + "\n"
