"""The fuzz suite's machinery: run ``dyntools`` in-process as a user would, judge the outcome, count cases.

A *case* is a command line (plus, for some, files it needs) that must be refused. It is *handled* when
``dyntools.cli.main(argv)``:

* returns exit status 2,
* prints exactly one line on stderr, naming the option or the file (any of the case's ``names``),
* with no traceback (nothing escapes ``main``),
* writes nothing: the case's working directory is empty afterwards and nothing new appears next to it
  (so no file was created outside the output directory either).

Cases are generated from the command line itself — the subcommands, the experiments the registry finds in
``simulations/`` and the fields of their parameter dataclasses — so a new experiment or a new option is
fuzzed without touching this file. To keep the suite fast and safe, a command that *accepts* its input is
stopped at the moment it would start computing (:class:`Ran`, raised where the run context is made):
a bad value that gets that far is a failure ("accepted"), and nothing long ever runs.

``tests/fuzz_report.py`` runs every generator and prints the counts (tried / handled per class).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: Counts per class of the cases run in this process: ``{"values": Counter(tried=…, handled=…)}``.
TALLY: dict[str, Counter] = {}


class Ran(BaseException):  # noqa: N818 - a signal, not an error: the command got as far as computing
    """Raised instead of computing: the command accepted its input."""


@dataclass
class Outcome:
    code: int | str            # the exit status, "ran" (input accepted) or "raised" (an exception escaped)
    stdout: str
    stderr: str
    error: str = ""            # the escaped exception's traceback


@dataclass
class Case:
    """One command line that must be refused with a line naming one of ``names``."""

    cls: str                                   # the class of the issue (values, files, results, …)
    argv: list[str]
    names: tuple[str, ...]
    setup: Callable[[Path], None] | None = None   # makes the files the case needs (in its workdir's parent)
    note: str = ""
    block_run: bool = True
    extra: dict = field(default_factory=dict)


def _raise_ran(*args, **kwargs):
    raise Ran()


@contextlib.contextmanager
def _blocked():
    """Every place where a command would start its work raises :class:`Ran` instead."""
    import importlib

    from dyntools import bench, report, spec
    from dyntools.symbolic import registry

    class _NoImport:
        def import_module(self, name, *a, **k):
            if name.startswith("dyntools.bench."):
                raise Ran()
            return importlib.import_module(name, *a, **k)

    saved = [(spec, "RunContext", spec.RunContext), (report, "ReportContext", report.ReportContext),
             (registry, "run", registry.run), (bench, "importlib", bench.importlib)]
    spec.RunContext = _raise_ran
    report.ReportContext = _raise_ran
    registry.run = _raise_ran
    bench.importlib = _NoImport()
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def _parser_once():
    from dyntools import cli

    if not hasattr(_parser_once, "parser"):
        _parser_once.parser = cli.build_parser()
    return _parser_once.parser


def invoke(argv: list[str], workdir: Path, *, block_run: bool = True) -> Outcome:
    """``dyntools.cli.main(argv)`` in ``workdir``, stdout/stderr captured, warnings printed to stderr as a
    user would see them; with ``block_run`` the command stops (:class:`Ran`) where it would compute."""
    from dyntools import cli

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    build = cli.build_parser
    os.chdir(workdir)
    cli.build_parser = _parser_once           # argparse objects are reusable: build them once
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.resetwarnings()
            warnings.simplefilter("default")
            warnings.showwarning = lambda m, c, f, n, file=None, line=None: sys.stderr.write(
                warnings.formatwarning(m, c, f, n, line))
            with _blocked() if block_run else contextlib.nullcontext():
                try:
                    code: int | str = cli.main([str(a) for a in argv])
                except Ran:
                    code = "ran"
                except SystemExit as exc:           # --help / --version
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException:             # noqa: BLE001 - a traceback the user would see
                    return Outcome("raised", out.getvalue(), err.getvalue(), traceback.format_exc())
    finally:
        cli.build_parser = build
        os.chdir(cwd)
    return Outcome(code, out.getvalue(), err.getvalue())


def judge(case: Case, outcome: Outcome, workdir: Path, before: set[str]) -> str:
    """'' when the case was handled, else what went wrong."""
    if outcome.code == "raised":
        return "traceback: " + outcome.error.strip().splitlines()[-1]
    if outcome.code == "ran":
        return "accepted (the command started computing)"
    lines = outcome.stderr.strip().splitlines()
    problems = []
    if outcome.code != 2:
        problems.append(f"exit {outcome.code}")
    if len(lines) != 1:
        problems.append(f"{len(lines)} stderr lines")
    elif not any(n in lines[0] for n in case.names):
        problems.append(f"line does not name {' / '.join(case.names)}")
    if "Traceback" in outcome.stderr:
        problems.append("traceback")
    left = sorted(p.name for p in workdir.iterdir()) if workdir.exists() else []
    if left:
        problems.append(f"left {left} in its working directory")
    new = sorted(set(os.listdir(workdir.parent)) - before)
    if new:
        problems.append(f"created {new} next to it")
    return "; ".join(problems) + (f" [stderr: {outcome.stderr.strip()[:300]!r}]" if problems else "")


def run_cases(cases: Iterable[Case], base: Path) -> list[tuple[Case, str]]:
    """Run every case in its own empty working directory below ``base``; returns the failures and adds
    to :data:`TALLY`."""
    failures = []
    root, workdir = base / "case", base / "case" / "cwd"
    for case in cases:
        if not workdir.is_dir():                     # a clean sandbox: reused while cases leave it clean
            workdir.mkdir(parents=True)
        if case.setup is not None:
            case.setup(root)
        before = set(os.listdir(root))
        outcome = invoke(case.argv, workdir, block_run=case.block_run)
        problem = judge(case, outcome, workdir, before)
        tally = TALLY.setdefault(case.cls, Counter())
        tally["tried"] += 1
        tally["handled"] += not problem
        if problem:
            failures.append((case, problem))
        if case.setup is not None or problem or set(os.listdir(root)) != {"cwd"}:
            _remove(root)
    _remove(root)
    return failures


def _remove(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        with contextlib.suppress(OSError):
            if not p.is_symlink():
                p.chmod(0o700)
    shutil.rmtree(path, ignore_errors=True)


def describe(failures: list[tuple[Case, str]]) -> str:
    return "\n".join(f"  dyntools {' '.join(map(str, c.argv))}{' (' + c.note + ')' if c.note else ''}: {p}"
                     for c, p in failures)


# ----------------------------------------------------------------------------------- the command line

@dataclass(frozen=True)
class Option:
    """One option of one experiment, as the spec declares it."""

    command: tuple[str, ...]           # ("simulate", "relu")
    flag: str
    field: str
    param: object                      # dyntools.spec.Param

    @property
    def names(self) -> tuple[str, ...]:
        p = self.param
        return tuple({self.flag, self.field, self.field.replace("_", "-"), self.field.replace("_", " "),
                      *([p.label] if p.label else [])})


def experiments() -> Iterator[tuple[str, object]]:
    """(verb, Experiment) for every experiment the registry finds."""
    from dyntools.commands import registry

    for verb in ("simulate", "sweep"):
        for exp in registry.experiments(verb).values():
            yield verb, exp


def options() -> Iterator[Option]:
    from dyntools import spec

    for verb, exp in experiments():
        for f, p in spec.params_of(exp.params):
            yield Option((verb, exp.name), spec.flag_of(f, p), f.name, p)


def subcommands() -> dict[str, object]:
    """The top-level subparsers by name (prove, simulate, sweep, plot, reproduce, bench, …)."""
    import argparse

    parser = _parser_once()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def writing_commands() -> Iterator[tuple[list[str], str]]:
    """Every command line that writes a directory, with its output option: each experiment's ``--out``,
    ``reproduce --out`` and ``plot --out``."""
    for verb, exp in experiments():
        yield [verb, exp.name], "--out"
    yield ["reproduce", "--quick"], "--out"


# ----------------------------------------------------------------------------------- bad values

def _above(p, kind: str) -> list[str]:
    if p.high is None:
        return []
    if kind == "int":
        return [str(int(p.high) + 1), f"{10 * max(p.high, 1):.0f}"]
    return [repr(float(p.high)) if p.high_open else repr(float(p.high) * 2 + 1)]


def _below(p, kind: str) -> list[str]:
    if p.low is None:
        return []
    if kind == "int":
        return [str(int(p.low) - 1)]
    return [repr(float(p.low)) if p.low_open else repr(float(p.low) - max(1.0, abs(p.low)))]


def bad_values(p) -> list[tuple[str, str]]:
    """(text, why) pairs that an option of this declaration must refuse."""
    kind = p.kind
    if kind == "int":
        return [(v, "bad int") for v in ("", "x", "1.5", "nan", "1e3x", "99999999999999999999999")] + \
            [(v, "out of range") for v in _below(p, "int") + _above(p, "int")]
    if kind == "float":
        return [(v, "bad float") for v in ("", "x", "nan", "inf", "-inf", "1e400", "0x1p3")] + \
            [(v, "out of range") for v in _below(p, "float") + _above(p, "float")]
    if kind == "str":
        return [(v, "not a choice") for v in ("", "bogus", p.choices[0].upper() + "x")] if p.choices else []
    if kind in ("ints", "floats", "strs"):
        entry = {"ints": "int", "floats": "float", "strs": "str"}[kind]
        bad = [("", "empty list"), (",", "only a comma"), ("1,,2", "empty entry"), (" , ", "blank entries")]
        if entry != "str":
            bad += [("x", "not a number"), ("1;2", "wrong separator"), ("nan", "non-finite entry")]
            bad += [(v, "entry out of range") for v in _below(p, entry) + _above(p, entry)]
        elif p.choices:
            bad += [("bogus", "not a choice"), (f"{p.choices[0]},bogus", "one entry not a choice")]
        if getattr(p, "max_len", None) is not None:
            one = {"ints": "1", "floats": "0.5", "strs": (p.choices or ("a",))[0]}[kind]
            bad.append((",".join([one] * (p.max_len + 1)), "too many entries"))
        return bad
    if kind == "grid":
        bad = [("", "empty"), ("1:2", "two parts"), ("a:b:3", "not numbers"), ("1:2:x", "N not an integer"),
               ("1:2:1.5", "N not an integer"), ("nan:1:3", "non-finite"), ("1:inf:3", "non-finite"),
               ("1:2:0", "N < 1"), ("1:2:-4", "N < 1"), ("1:2:1000000000000", "N too large"),
               ("1:2:3:4", "four parts")]
        return bad
    if kind == "file":
        return [("does-not-exist.npy", "missing file"), ("/", "a directory"), ("/dev/zero", "a device"),
                ("", "empty path")]
    return []


def value_cases() -> list[Case]:
    """Every bad value of every option of every experiment, plus the options every command shares."""
    cases = []
    for opt in options():
        for text, why in bad_values(opt.param):
            cases.append(Case("values", [*opt.command, f"{opt.flag}={text}", "--out", "out"], opt.names,
                              note=why))
        if opt.param.kind == "flag":
            cases.append(Case("values", [*opt.command, f"{opt.flag}=yes", "--out", "out"], (opt.flag,),
                              note="a flag takes no value"))
    for verb, exp in experiments():
        cmd = [verb, exp.name]
        cases += [Case("values", [*cmd, "--seed", s, "--out", "out"], ("seed",), note="bad seed")
                  for s in ("-1", "x", "1.5", "")]
        cases.append(Case("values", [*cmd, "--no-such-option", "1", "--out", "out"], ("--no-such-option",)))
        if exp.presets:
            cases += [Case("values", [*cmd, "--preset", v, "--out", "out"], ("preset",), note="bad preset")
                      for v in ("", "bogus")]
    cases += [Case("values", ["prove", "--timeout", v], ("--timeout",)) for v in ("0", "-1", "nan", "inf", "x")]
    cases += [Case("values", ["prove", "no-such-claim"], ("no-such-claim",))]
    cases += [Case("values", ["prove", "--file", f], ("--file", f)) for f in ("missing.py", "/", "/dev/zero")]
    cases += [Case("values", ["plot", ".", "--format", v], ("--format",)) for v in ("", "jpg", ",", "png,,gif")]
    cases += [Case("values", ["plot", d], ("DIR", d)) for d in ("missing", "/dev/null")]
    cases += [Case("values", ["reproduce", "--only", v, "--out", "out"], ("--only", "catalogue entry"))
              for v in ("", ",", " ", "bogus", "proofs,bogus")]
    cases += [Case("values", ["reproduce", "--seed", v, "--out", "out"], ("seed",)) for v in ("-1", "x")]
    cases += [Case("values", ["bench", v], ("benchmark",)) for v in ("bogus", "")]
    for name in subcommands():        # a positional (experiment name, DIR) first where one is needed
        first = [{"simulate": "stabilization", "sweep": "adamw-grid", "plot": "."}.get(name, "")]
        cases.append(Case("values", [name, *filter(None, first), "--no-such-option"], ("--no-such-option",)))
    return cases
