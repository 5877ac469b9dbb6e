"""Issue 37, item 5: weight decay goes from the command line to the kernel through ≤ 6 files under ≤ 4 names,
checked once.

The measurement: ``sys.settrace`` over an in-process ``dyntools sweep adamw-grid --wd-grid 0.0123:0.0456:2``
(one worker, a 1 × 2 grid, two steps a cell). At every traced event of a frame in a file of the repository, each
local that holds a decay value of the grid — the float itself, a short tuple/list/array holding it, or a dict
entry holding it (counted under its key) — is recorded with the frame's file, from the option's parse until the
grid assembles its cells (what follows reads results). The validation functions (``dyntools/validation.py``) are
where a value is checked: each call on a decay value from outside that module is a check, named by its caller
(their generic ``value`` is not counted as a name). Frames compiled by numba are not seen (the kernels' ``dk``,
``lam``); their Python callers are.

Measured on this branch: 10 files, 14 names, 8 checks at 3 sites (the option's parse, GridConfig, the factory);
on main at f544024: 10 files, 14 names, 12 checks at the same 3 sites. The targets are expected failures
(strict): the whole path until issue 37's compiled representation lands (w47a: the kernel side, ``hp``, ``hps``)
and the CLI side is also narrowed; one check site until the option layers trust GridConfig's check.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
LOW, HIGH = 0.0123, 0.0456
#: the kernel side: the factories and their chains, the fused step, the loops, the models; every other file of the
#: repository is the CLI side (the option, its parse, the grid, the sweep, the cell)
KERNEL_SIDE = ("dyntools/optim/", "dyntools/dynamics/", "dyntools/lowlevel/", "dyntools/models/")


def _holds(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (float, np.floating)):
        return float(value) in (LOW, HIGH)
    if isinstance(value, (tuple, list)) and 0 < len(value) <= 8:
        return any(_holds(v) for v in value if not isinstance(v, (tuple, list, dict)))
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and 0 < value.size <= 64:
        return bool(np.isin(value.ravel(), (LOW, HIGH)).any())
    return False


class DecayTrace:
    """``sys.settrace`` tracer: per repository file, the local names bound to a decay value, and the calls of
    the validation module that received one."""

    def __init__(self):
        self.names: dict[str, set[str]] = defaultdict(set)
        self.checks: list[str] = []
        self.done = False           # the cells are trained: what follows reads results (best_wd, tables)

    def _file(self, frame) -> str | None:
        path = Path(frame.f_code.co_filename)
        try:
            rel = path.resolve().relative_to(ROOT).as_posix()
        except ValueError:
            return None
        return rel if rel.startswith(("dyntools/", "simulations/")) else None

    def _look(self, frame, event) -> None:
        rel = self._file(frame)
        if rel is None:
            return
        if rel == "dyntools/validation.py":         # the checks' generic ``value``: counted as checks below
            names = {}
        else:
            names = frame.f_locals
        for name, value in list(names.items()):
            if _holds(value):
                self.names[rel].add(name)
            elif isinstance(value, dict) and len(value) <= 64:
                for key, v in list(value.items()):
                    if isinstance(key, str) and _holds(v):
                        self.names[rel].add(f"{name}[{key!r}]")
        if event == "call" and rel == "dyntools/validation.py" and self._file(frame.f_back) != rel:
            args = [frame.f_locals.get(a) for a in frame.f_code.co_varnames[:frame.f_code.co_argcount]]
            if any(_holds(a) for a in args):
                caller = frame.f_back
                self.checks.append(f"{frame.f_code.co_name} from {self._file(caller) or '?'}:"
                                   f"{caller.f_code.co_name}")

    def __call__(self, frame, event, arg):
        rel = self._file(frame)
        if rel is None or self.done:
            return None                   # no line events in numpy, numba, the standard library
        if rel == "dyntools/heatmap_grid.py" and frame.f_code.co_name == "assemble":
            self.done = True
            return None
        self._look(frame, event)

        def local(frame, event, arg):
            if event in ("line", "return"):
                self._look(frame, event)
            return local

        return local

    def files(self, side=None) -> list[str]:
        def kernel(f):
            return f.startswith(KERNEL_SIDE)
        return sorted(f for f in self.names if side is None or kernel(f) == (side == "kernel"))

    def all_names(self, side=None) -> set[str]:
        return {self._bare(n) for f in self.files(side) for n in self.names[f]}

    @staticmethod
    def _bare(name: str) -> str:
        """``cell['wd']`` → ``wd``: a dict entry counts under its key."""
        return name.split("[", 1)[1].strip("'\"]") if "[" in name else name


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    from dyntools.cli import main

    out = tmp_path_factory.mktemp("wd-path") / "grid"
    args = ["sweep", "adamw-grid", "--optimizers", "adamw", "--lr-grid", "1e-2:1e-2:1", "--wd-grid",
            f"{LOW}:{HIGH}:2", "--n", "20", "--n-val", "20", "--epochs", "1", "--batch-size", "10", "--hidden", "3",
            "--curve-points", "0", "--workers", "1", "--seed", "1", "--json", "--out", str(out)]
    main(["sweep", "adamw-grid", *args[2:-1], str(tmp_path_factory.mktemp("warm") / "grid")])  # compile first
    tracer = DecayTrace()
    sys.settrace(tracer)
    try:
        rc = main(args)
    finally:
        sys.settrace(None)
    assert rc == 0
    return tracer


def _report(tracer) -> str:
    return "\n".join(f"{f}: {sorted(tracer.names[f])}" for f in tracer.files()) + f"\nchecks: {tracer.checks}"


def test_the_decay_is_seen_from_the_option_to_the_optimizer(trace):
    """The measurement sees the path at all (else the budgets below would pass on nothing): the option's parse,
    the grid, the cell, the factory."""
    for f in ("dyntools/params.py", "dyntools/heatmap_grid.py", "dyntools/classifier_cell.py",
              "dyntools/optim/optimizers.py"):
        assert f in trace.files(), _report(trace)
    assert {"wd_grid", "wd_range", "wd", "weight_decay"} <= trace.all_names(), _report(trace)


def test_the_grid_checks_its_decay_axis_once_per_config(trace):
    """The grid's range check runs once per decay value and GridConfig built (``grid_config`` no longer checks
    the axis before GridConfig checks it again); the command builds its GridConfig twice (``check`` and
    ``run`` of the experiment), so twice per value; the parse once and the factory once per cell."""
    grid = [c for c in trace.checks if c.endswith("heatmap_grid.py:check_range")]
    assert len(grid) == 2 * 2, _report(trace)          # 2 values × 2 GridConfigs
    assert sum(c.endswith("params.py:<genexpr>") for c in trace.checks) == 2, _report(trace)
    assert sum(c.endswith("optimizers.py:_wd") for c in trace.checks) == 2, _report(trace)     # 2 cells


def test_cli_side_no_wider_than_measured(trace):
    """A guard while the budget below is not met: the CLI → factory side as measured on this branch (7 files,
    11 names: wd_grid, wd_range, wd and the generic helpers' a, b, v, value, lo, hi, rng, grid)."""
    assert len(trace.files("cli")) <= 7 and len(trace.all_names("cli")) <= 11, _report(trace)


def test_kernel_side_no_wider_than_measured(trace):
    """Since issue 37's one representation (no hp slots): the factory's ``weight_decay``, the compiled step's
    ``values``/``v`` and the run set's ``hps`` — 3 files, 4 names (numba frames are not seen)."""
    assert len(trace.files("kernel")) <= 3 and len(trace.all_names("kernel")) <= 4, _report(trace)


@pytest.mark.xfail(strict=True, reason="the CLI side carries the decay through the generic option layers (params, "
                                       "spec, commands, sweep, store) and checks it at the parse, in GridConfig and "
                                       "in the factory: not yet one check")
def test_the_decay_is_checked_once(trace):
    assert len({c.split(" from ")[1] for c in trace.checks}) == 1, _report(trace)


@pytest.mark.xfail(strict=True, reason="the kernel side is 3 files and 4 names since issue 37's compiled "
                                       "representation (weight_decay → values → v → hps in optimizers, compiled, "
                                       "run_plan), but the CLI side alone is over (10 files, 14 names in all; "
                                       "test_cli_side_no_wider_than_measured)")
def test_the_whole_path_within_six_files_and_four_names(trace):
    assert len(trace.files()) <= 6 and len(trace.all_names()) <= 4, _report(trace)
