"""Issue 37, item 5: weight decay goes from the command line to the kernel through ≤ 6 files under ≤ 4 names,
checked once.

The measurement: ``sys.settrace`` over an in-process ``dyntools sweep adamw-grid --wd-grid 0.0123:0.0456:2``
(one worker, a 1 × 2 grid, two steps a cell), from the option's parse until the grid assembles its cells (what
follows reads results). At every traced event of a frame in a file of the repository, :class:`DecayTrace` records
how the frame holds a decay value of the grid — a local (the float, or a short tuple/list/array holding it), a
dict entry (under its key) or an attribute of an object (under the attribute's name) — and how it holds a value
of the run's other parameters (:data:`MARKERS`: the learning rate, the spiral noise, AdamW's β₁, β₂, ε). The path
is its *hops*: places whose code handles the decay by a name of its own (a local that holds no other parameter;
a key or attribute the function spells). Generic code that holds every parameter in one variable (the option
parser's ``value``, ``check_range``'s ``lo``/``hi``, the compiled step's ``values``/``hps``) or forwards a dict
or object without naming the decay in it (the command's ``given``, the sweep's ``config``, the store's JSON walk)
is a *carrier*: seen, reported, not counted. The validation functions (``dyntools/validation.py``) are where a
value is checked: each call on a decay value from outside that module is a check, named by its caller (the check
site). Frames compiled by numba are not seen; their Python callers are.

The counting before this rule (stop 47) counted every variable that held the decay: 10 files, 14 names on main
at 59ec6f5, most of them the generic layers'; it saw no attribute (a typed object carried the decay unseen).
Measured with this rule: main at 368d2f6 — 4 files, 6 names (``wd_grid``, ``wd_range``, ``wd``,
``weight_decay`` and GridConfig's ``lo``/``hi``), 3 check sites (the option's parse, GridConfig's range check,
the factory's ``_wd``); this code — 4 files (heatmap_grid, classifier_cell, optimizers, transforms), 3 names
(``weight_decay``, ``wd_range``, ``wd``), 1 check site (``optimizers.check_weight_decay``).
"""

from __future__ import annotations

import sys
import types
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from dyntools import validation

ROOT = Path(__file__).resolve().parents[1]
LOW, HIGH = 0.0123, 0.0456
#: values of the run's other parameters (its learning rate and spiral noise, AdamW's β₁, β₂, ε): a variable that
#: holds one of them as well as a decay carries parameters generically
LR, NOISE = 0.0234, 0.0567
MARKERS = (LR, NOISE, 0.9, 0.999, 1e-8)
#: the kernel side: the factories and their chains, the fused step, the loops, the models; every other file of the
#: repository is the CLI side (the option, its parse, the grid, the sweep, the cell)
KERNEL_SIDE = ("dyntools/optim/", "dyntools/dynamics/", "dyntools/lowlevel/", "dyntools/models/")


def _holds(value, among=(LOW, HIGH)) -> bool:
    """``value`` is one of ``among`` (a float), or a short tuple/list/array holding one."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (float, np.floating)):
        return float(value) in among
    if isinstance(value, (tuple, list)) and 0 < len(value) <= 8:
        return any(_holds(v, among) for v in value if not isinstance(v, (tuple, list, dict)))
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and 0 < value.size <= 64:
        return bool(np.isin(value.ravel(), among).any())
    return False


def _spelled(code) -> set[str]:
    """Every identifier and string a code object spells: its names, locals, attribute names and string constants
    (keyword-argument names included, e.g. ``dict(weight_decay=…)``)."""
    out = set(code.co_names) | set(code.co_varnames)
    stack = list(code.co_consts)
    while stack:
        c = stack.pop()
        if isinstance(c, str):
            out.add(c)
        elif isinstance(c, tuple):
            stack.extend(c)
    return out


def _attributes(value) -> dict:
    """The attributes of an instance (a dataclass, a class with ``__dict__`` or ``__slots__``, a named tuple);
    ``{}`` for numbers, arrays, containers, modules, functions and classes."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType,
                          np.ndarray, np.generic, str, bytes, int, float, complex, dict, list, set, frozenset)):
        return {}
    if isinstance(value, tuple):
        return dict(zip(value._fields, value)) if hasattr(value, "_fields") else {}
    try:
        found = dict(vars(value))
    except TypeError:
        found = {}
    for slot in getattr(type(value), "__slots__", ()):
        if isinstance(slot, str) and hasattr(value, slot):
            found[slot] = getattr(value, slot)
    return found if len(found) <= 64 else {}


class DecayTrace:
    """``sys.settrace`` tracer: where the decay travels, and under which names.

    At each event of a frame in a file of the repository it records every way the frame holds a decay value — a
    local, a dict entry (under its key) or an attribute of an object (under the attribute's name) — and every way
    it holds a value of another parameter of the run (:data:`MARKERS`). A *hop* of the path is a place where the
    code handles the decay by a name of its own: a local that never holds another parameter's value, or a key or
    attribute the function's code spells (``cell["wd"]``, ``self.wd_range``) and that holds no other parameter's
    value there. The rest are *carriers*: generic code that holds every parameter in the same variable
    (validation's ``value``, the option parser's ``a``/``b``, the compiled step's vector ``hps`` of every
    transform's numbers) or forwards a whole dict or object without naming the decay in it (the sweep's
    ``config``, the store's JSON walk). The path's files and names are those of its hops. Calls of the
    validation functions (``dyntools/validation.py``) that receive a decay value from outside that module are the
    checks, each named by its caller (the check site)."""

    def __init__(self, extra_files=()):
        self.seen: dict[tuple, set[str]] = defaultdict(set)      # (file, code, kind, name) → {"decay", "other"}
        self.checks: list[str] = []
        self.extra = {Path(f).resolve() for f in extra_files}    # files traced besides the repository's (tests)
        self.done = False           # the cells are trained: what follows reads results (best_wd, tables)

    def _file(self, frame) -> str | None:
        path = Path(frame.f_code.co_filename).resolve()
        if path in self.extra:
            return path.name
        try:
            rel = path.relative_to(ROOT).as_posix()
        except ValueError:
            return None
        return rel if rel.startswith(("dyntools/", "simulations/")) else None

    def _note(self, where, kind, name, value) -> None:
        if _holds(value):
            self.seen[(*where, kind, name)].add("decay")
        if _holds(value, MARKERS):
            self.seen[(*where, kind, name)].add("other")

    def _look(self, frame, event) -> None:
        rel = self._file(frame)
        if rel is None:
            return
        where = (rel, frame.f_code)
        if rel != "dyntools/validation.py":          # the checks' generic ``value``: counted as checks below
            for name, value in list(frame.f_locals.items()):
                self._note(where, "local", name, value)
                if isinstance(value, dict) and len(value) <= 64:
                    for key, v in list(value.items()):
                        if isinstance(key, str):
                            self._note(where, "key", key, v)
                for attr, v in _attributes(value).items():
                    self._note(where, "attribute", attr, v)
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

    def hops(self) -> dict[str, set[str]]:
        """file → the names under which its code handles the decay (see the class docstring)."""
        out: dict[str, set[str]] = defaultdict(set)
        for (rel, code, kind, name), what in self.seen.items():
            if what == {"decay"} and (kind == "local" or name in _spelled(code)):
                out[rel].add(name)
        return out

    def carriers(self) -> dict[str, set[str]]:
        """file → the generic variables, keys and attributes that held the decay (not hops)."""
        hops = self.hops()
        out: dict[str, set[str]] = defaultdict(set)
        for (rel, code, kind, name), what in self.seen.items():
            if "decay" in what and name not in hops.get(rel, ()):
                out[rel].add(f"{code.co_name}: {name}" if kind == "local" else f"{code.co_name}: [{name!r}]"
                             if kind == "key" else f"{code.co_name}: .{name}")
        return out

    def files(self, side=None) -> list[str]:
        def kernel(f):
            return f.startswith(KERNEL_SIDE)
        return sorted(f for f in self.hops() if side is None or kernel(f) == (side == "kernel"))

    def all_names(self, side=None) -> set[str]:
        hops = self.hops()
        return {n for f in self.files(side) for n in hops[f]}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    from dyntools.cli import main

    out = tmp_path_factory.mktemp("wd-path") / "grid"
    args = ["sweep", "adamw-grid", "--optimizers", "adamw", "--lr-grid", f"{LR}:{LR}:1", "--wd-grid",
            f"{LOW}:{HIGH}:2", "--noise", str(NOISE), "--n", "20", "--n-val", "20", "--epochs", "1", "--batch-size",
            "10", "--hidden", "3", "--curve-points", "0", "--workers", "1", "--seed", "1", "--json", "--out", str(out)]
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
    hops, carriers = tracer.hops(), tracer.carriers()
    return ("hops:\n" + "\n".join(f"  {f}: {sorted(hops[f])}" for f in tracer.files())
            + "\ncarriers:\n" + "\n".join(f"  {f}: {sorted(carriers[f])}" for f in sorted(carriers))
            + f"\nchecks: {tracer.checks}")


def test_the_decay_is_seen_from_the_option_to_the_optimizer(trace):
    """The measurement sees the path at all (else the budgets below would pass on nothing): the grid, the cell,
    the factory and its transform are hops; the generic layers (the option's parse, the command, the sweep, the
    store) are seen holding the decay and classed as carriers, not missed."""
    for f in ("dyntools/heatmap_grid.py", "dyntools/classifier_cell.py", "dyntools/optim/optimizers.py",
              "dyntools/optim/transforms.py"):
        assert f in trace.files(), _report(trace)
    for f in ("dyntools/params.py", "dyntools/commands/experiment.py", "dyntools/sweep.py", "dyntools/store.py",
              "dyntools/optim/compiled.py"):
        assert f in trace.carriers(), _report(trace)
    assert {"wd_range", "wd", "weight_decay"} <= trace.all_names(), _report(trace)


def test_one_check_site_run_where_values_enter(trace):
    """The decay's one check, :func:`dyntools.optim.optimizers.check_weight_decay`: the option's declared check
    (``check_decay_axis``) runs it on both ends, GridConfig again on both ends each time it is built (the
    command's ``check`` and ``run``), the factory on each cell's λ: 2 + 2 × 2 + 2, all from one function."""
    assert trace.checks == ["finite from dyntools/optim/optimizers.py:check_weight_decay"] * 8, _report(trace)


def test_cli_side_no_wider_than_measured(trace):
    """A guard tighter than the target below: the CLI → factory side as measured — 2 files (the grid, the cell),
    3 names (the option's ``weight_decay``, GridConfig's ``wd_range``, the cell's ``wd``). A planted hop fails it."""
    assert len(trace.files("cli")) <= 2 and len(trace.all_names("cli")) <= 3, _report(trace)


def test_kernel_side_no_wider_than_measured(trace):
    """The factory and its ``add_decay`` transform, under one name, ``weight_decay``: 2 files, 1 name. The compiled
    step's ``values``/``hps`` are carriers (the numbers of every transform of the chain, β₁, β₂, ε beside λ; numba
    frames are not seen)."""
    assert len(trace.files("kernel")) <= 2 and trace.all_names("kernel") == {"weight_decay"}, _report(trace)


def test_the_decay_is_checked_once(trace):
    assert len({c.split(" from ")[1] for c in trace.checks}) == 1, _report(trace)


def test_the_whole_path_within_six_files_and_four_names(trace):
    assert len(trace.files()) <= 6 and len(trace.all_names()) <= 4, _report(trace)


# ----------------------------------------------------------------------------------- the counting itself

def _carry(value):
    """A generic helper: every parameter passes through its ``value``."""
    return value


def _planted_hop(cell):
    lam = _carry(cell["wd"])                  # a new name for the decay and a key this code spells
    validation.positive("lam", lam)           # a second check site
    return lam * cell["scale"]


def test_the_counting_finds_a_planted_hop_and_check_and_spares_a_generic_helper():
    """The rule of :class:`DecayTrace` on code of this file: ``_planted_hop``'s local ``lam`` and its spelled key
    ``"wd"`` are hops and its validation call a check site; ``_carry``'s ``value``, which also carries the learning
    rate, is a carrier; the dict key ``"scale"``, spelled but never holding a decay, is nothing."""
    tracer = DecayTrace(extra_files=[__file__])
    sys.settrace(tracer)
    try:
        _carry(LR)
        _planted_hop({"wd": LOW, "scale": 2.0})
    finally:
        sys.settrace(None)
    here = Path(__file__).name
    assert tracer.hops()[here] == {"lam", "wd"}, _report(tracer)
    assert "_carry: value" in tracer.carriers()[here], _report(tracer)
    assert tracer.checks == [f"positive from {here}:_planted_hop"], _report(tracer)
