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
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import HANG_GUARD

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
    may_succeed: bool = False                  # exit 0 is fine too (a harmless damage), if nothing escapes
    all_names: tuple[str, ...] = ()            # … and the line must name every one of these (file and field)


def _raise_ran(*args, **kwargs):
    raise Ran()


@contextlib.contextmanager
def _blocked():
    """Every place where a command would start its work raises :class:`Ran` instead."""
    import dataclasses

    from dyntools import bench, report, spec
    from dyntools.symbolic import registry

    declared = bench.benchmarks()            # every benchmark, found as `dyntools bench` finds them, none of them run

    saved = [(spec, "RunContext", spec.RunContext), (report, "ReportContext", report.ReportContext),
             (registry, "run", registry.run), (bench, "benchmarks", bench.benchmarks)]
    spec.RunContext = _raise_ran
    report.ReportContext = _raise_ran
    registry.run = _raise_ran
    bench.benchmarks = lambda: {name: dataclasses.replace(b, run=_raise_ran) for name, b in declared.items()}
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def _parser_once():
    if not hasattr(_parser_once, "parser"):
        from dyntools import cli

        _parser_once.parser = cli.build_parser()     # called before invoke() patches build_parser
    return _parser_once.parser


def invoke(argv: list[str], workdir: Path, *, block_run: bool = True) -> Outcome:
    """``dyntools.cli.main(argv)`` in ``workdir``, stdout/stderr captured, warnings printed to stderr as a
    user would see them; with ``block_run`` the command stops (:class:`Ran`) where it would compute."""
    from dyntools import cli

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    build = cli.build_parser
    os.chdir(workdir)
    _parser_once()
    cli.build_parser = _parser_once           # argparse objects are reusable: build them once
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.resetwarnings()              # Python's default filters, as a user's `dyntools` runs with
            warnings.simplefilter("default")
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
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
    if case.may_succeed and outcome.code == 0:
        escaped = [str(p) for p in workdir.parent.parent.rglob("*ESCAPE*")]
        left = sorted(p.name for p in workdir.iterdir())
        new = sorted(set(os.listdir(workdir.parent)) - before)
        return "; ".join([f"wrote {escaped}"] * bool(escaped) + [f"left {left}"] * bool(left)
                         + [f"created {new}"] * bool(new) + [f"stderr {outcome.stderr!r}"] * bool(outcome.stderr))
    if outcome.code != 2:
        problems.append(f"exit {outcome.code}")
    if len(lines) != 1:
        problems.append(f"{len(lines)} stderr lines")
    elif not any(n in lines[0] for n in case.names):
        problems.append(f"line does not name {' / '.join(case.names)}")
    elif not all(n in lines[0] for n in case.all_names):
        problems.append(f"line does not name all of {' + '.join(case.all_names)}")
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
    from dyntools import plugins

    for verb in ("simulate", "sweep"):
        for exp in plugins.experiments(verb).values():
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
    cases += [Case("values", ["grade", f], ("FILE", f)) for f in ("missing.py", "/", "/dev/zero")]
    cases += [Case("values", ["grade", "x.py", "--steps", v], ("steps",)) for v in ("0", "-1", "x", "10001")]
    cases += [Case("values", ["grade", "x.py", "--problem", v], ("--problem",)) for v in ("", ",", "bogus")]
    for name in subcommands():        # a positional (experiment name, DIR) first where one is needed
        first = [{"simulate": "stabilization", "sweep": "adamw-grid", "plot": ".", "grade": "x.py"}.get(name, "")]
        cases.append(Case("values", [name, *filter(None, first), "--no-such-option"], ("--no-such-option",)))
    return cases


# ----------------------------------------------------------------------------------- array files

def _npy(name: str, arr) -> Callable[[Path], None]:
    def make(root: Path):
        import numpy as np

        with open(root / name, "wb") as fh:         # np.save(path) would append ".npy"
            np.save(fh, arr, allow_pickle=True)
    return make


def _raw(name: str, data: bytes) -> Callable[[Path], None]:
    def make(root: Path):
        (root / name).write_bytes(data)
    return make


def _claims(name: str, shape) -> Callable[[Path], None]:
    """An .npy whose header claims ``shape`` (float64) followed by 16 bytes."""
    def make(root: Path):
        import numpy as np

        with open(root / name, "wb") as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False, "shape": shape})
            fh.write(b"\0" * 16)
    return make


def _truncated(name: str) -> Callable[[Path], None]:
    def make(root: Path):
        import numpy as np

        with open(root / name, "wb") as fh:
            np.save(fh, np.arange(1000.0))
        data = (root / name).read_bytes()
        (root / name).write_bytes(data[: len(data) // 2])
    return make


def _special(name: str, kind: str) -> Callable[[Path], None]:
    def make(root: Path):
        if kind == "dir":
            (root / name).mkdir()
        elif kind == "fifo":
            os.mkfifo(root / name)
        elif kind == "loop":
            (root / name).symlink_to(root / name)
        elif kind == "dangling":
            (root / name).symlink_to(root / "nowhere")
    return make


def array_file_damages(suffix: str) -> list[tuple[str, Callable[[Path], None]]]:
    """(why, make) for files no array option may accept, named ``bad<suffix>``."""
    import numpy as np

    name = "bad" + suffix
    out = [("strings", _npy(name, np.array(["1", "2", "3"]))),
           ("bytes", _npy(name, np.array([b"1", b"2"]))),
           ("structured", _npy(name, np.zeros(3, dtype=[("a", "f8"), ("b", "i4")]))),
           ("datetime", _npy(name, np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"))),
           ("timedelta", _npy(name, np.array([1, 2], dtype="timedelta64[s]"))),
           ("bool", _npy(name, np.array([True, False, True]))),
           ("complex", _npy(name, np.array([1 + 2j, 3 + 0j]))),
           ("object (pickle)", _npy(name, np.array([1, "a", None], dtype=object))),
           ("3-d", _npy(name, np.ones((2, 2, 2)))),
           ("0-d", _npy(name, np.float64(1.0))),
           ("empty", _npy(name, np.zeros(0))),
           ("NaN", _npy(name, np.array([1.0, np.nan, 2.0]))),
           ("inf", _npy(name, np.array([1.0, np.inf]))),
           ("header claims 1e12 entries", _claims(name, (10**6, 10**6))),
           ("truncated", _truncated(name)),
           ("garbage", _raw(name, b"\x93NUMPY\x07\x00garbage" + bytes(range(256)))),
           ("empty file", _raw(name, b"")),
           ("a zip that is no npz", _raw(name, b"PK\x05\x06" + b"\0" * 18)),
           ("a directory", _special(name, "dir")),
           ("a fifo", _special(name, "fifo")),
           ("a symlink loop", _special(name, "loop")),
           ("a dangling symlink", _special(name, "dangling"))]
    if suffix != ".npy":
        out += [("text of words", _raw(name, b"one two three\n")), ("text with nan", _raw(name, b"1 nan 2\n")),
                ("ragged text", _raw(name, b"1 2 3\n4 5\n")), ("binary", _raw(name, bytes(range(256)) * 4)),
                ("blank lines only", _raw(name, b"\n\n  \n"))]
    return out


def _npz(name: str, members: dict) -> Callable[[Path], None]:
    def make(root: Path):
        import numpy as np

        with open(root / name, "wb") as fh:
            np.savez(fh, **members)
    return make


def npz_members(opt: Option) -> tuple[str, ...]:
    """The members an ``.npz`` option requires, as its own error message names them (``lacks A, B``): found
    by asking the command, so a new option is covered without a table here."""
    import tempfile

    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "probe.npz", junk=np.ones(2))
        (Path(tmp) / "cwd").mkdir()
        outcome = invoke([*opt.command, opt.flag, "../probe.npz", "--out", "out"], Path(tmp) / "cwd")
    line = outcome.stderr.strip()
    if "lacks " not in line:
        return ()
    return tuple(m.strip() for m in line.split("lacks ", 1)[1].split(","))


def file_cases() -> list[Case]:
    """Every kind of damaged or wrong-kind file for every file option of every experiment (``--samples``,
    ``--indices``, ``--data``, ``--init-file`` … as the specs declare them) and for ``prove --file``."""
    import numpy as np

    cases = []
    for opt in options():
        if opt.param.kind != "file":
            continue
        npz = ".npz" in (opt.param.metavar or "")
        suffixes = (".npz",) if npz else (".npy", ".txt", "")
        for suffix in suffixes:
            for why, make in array_file_damages(suffix):
                cases.append(Case("files", [*opt.command, opt.flag, f"../bad{suffix}", "--out", "out"],
                                  (*opt.names, f"bad{suffix}"), setup=make, note=why))
        if npz:
            cases.append(Case("files", [*opt.command, opt.flag, "../bad.npy", "--out", "out"],
                              (*opt.names, "bad.npy"), setup=_npy("bad.npy", np.ones(4)), note=".npy for .npz"))
            members = npz_members(opt)
            assert members, f"{opt.flag}: cannot tell which members its .npz needs"
            good = {m: np.ones((4, 4)) if m.isupper() or m.startswith("X") else np.ones(4) for m in members}
            for m in members:
                for why, value in (("strings", np.array(["a", "b"])), ("complex", np.ones(4) * 1j),
                                   ("bool", np.ones(4, bool)), ("datetime", np.arange(4).astype("datetime64[D]")),
                                   ("NaN", np.full(4, np.nan)), ("3-d", np.ones((2, 2, 2))), ("empty", np.zeros(0)),
                                   ("object", np.array([None, 1], dtype=object))):
                    cases.append(Case("files", [*opt.command, opt.flag, "../bad.npz", "--out", "out"],
                                      (*opt.names, "bad.npz"), setup=_npz("bad.npz", {**good, m: value}),
                                      note=f"member {m}: {why}"))
                rest = {k: v for k, v in good.items() if k != m}
                cases.append(Case("files", [*opt.command, opt.flag, "../bad.npz", "--out", "out"],
                                  (*opt.names, "bad.npz"), setup=_npz("bad.npz", rest), note=f"no member {m}"))
        else:
            cases.append(Case("files", [*opt.command, opt.flag, "../bad.npz", "--out", "out"],
                              (*opt.names, "bad.npz"), setup=_npz("bad.npz", {"x": np.ones(4)}), note=".npz for .npy"))
    py = {"empty file": b"", "syntax error": b"def (:\n", "binary": bytes(range(256)),
          "raises": b"raise RuntimeError('boom')\n", "no claims": b"x = 1\n", "CLAIMS not a list": b"CLAIMS = 3\n",
          "exits": b"import sys\nsys.exit(0)\n"}
    for why, data in py.items():
        cases.append(Case("files", ["prove", "--file", "../claims.py"], ("--file", "claims.py"),
                          setup=_raw("claims.py", data), note=why))
    return cases


# ----------------------------------------------------------------------------------- output paths

def odd_outputs() -> list[tuple[str, str, Callable[[Path], None] | None, tuple[str, ...]]]:
    """(why, path as given from the working directory, setup in the sandbox root, extra names) — places
    no command may write a directory to."""
    def file(root):
        (root / "afile").write_text("keep")

    def foreign(root):
        (root / "foreign").mkdir()
        (root / "foreign" / "mine.txt").write_text("keep")

    def link(kind):
        return _special("link", kind)

    return [("empty path", "", None, ()), ("the current directory", ".", None, ()),
            ("the root", "/", None, ()), ("a file", "../afile", file, ("afile",)),
            ("below a file", "../afile/sub", file, ("afile",)), ("a device", "/dev/null", None, ("/dev/null",)),
            ("a 300-byte name", "x" * 300, None, ()), ("a dangling symlink", "../link", link("dangling"), ("link",)),
            ("a symlink loop", "../link/run", link("loop"), ("link",)),
            ("a foreign non-empty directory", "../foreign", foreign, ("foreign",)),
            ("/proc", "/proc/dyntools-run", None, ())]


def output_cases() -> list[Case]:
    """Every odd output location for every command that writes: each experiment's ``--out``,
    ``reproduce --out``, ``plot --out`` and ``prove --md/--latex``."""
    cases = []
    for argv, flag in writing_commands():
        for why, path, setup, names in odd_outputs():
            cases.append(Case("outputs", [*argv, flag, path], (flag, "--out", *names), setup=setup, note=why))
    result = _sde_result

    for why, path, setup, names in odd_outputs():
        def both(root, setup=setup):
            result(root)
            if setup is not None:
                setup(root)
        if path not in (".", "x" * 300, "../foreign"):    # plot --out DIR may be an existing directory
            cases.append(Case("outputs", ["plot", "../res", "--out", path], ("--out", *names), setup=both, note=why))
    for flag in ("--md", "--latex"):
        for why, path, setup, names in odd_outputs():
            if path in ("x" * 300, "../afile"):          # a long name is fine for a file; a file is replaced
                continue
            cases.append(Case("outputs", ["prove", "sgd-weight-decay", flag, path], (flag, *names), setup=setup,
                              note=why))
    return cases


# ----------------------------------------------------------------------------------- a full file system

def full_disk_cases(mnt: Path) -> list[Case]:
    """Small real runs of commands that write, into a file system with no space left (``mnt``): the
    write fails after the computation; one line, exit 2, nothing left in ``mnt`` or the working directory."""
    out = str(mnt / "run")
    cases = [Case("full disk", ["simulate", "stabilization", "--steps", "300", "--paths", "64", "--out", out],
                  ("No space left", "--out", out), block_run=False),
             Case("full disk", ["simulate", "sde", "--model", "gbm", "--paths", "64", "--records", "51", "--out", out],
                  ("No space left", "--out", out), block_run=False),
             Case("full disk", ["prove", "sgd-weight-decay", "--md", str(mnt / "p.md")], ("No space left", "--md"),
                  block_run=False),
             Case("full disk", ["sweep", "adamw-grid", "--optimizers", "adam", "--lr-grid", "1e-3:1e-2:2",
                                "--wd-grid", "1e-6:1e-5:1", "--n", "40", "--n-val", "20", "--hidden", "4",
                                "--batch-size", "20", "--epochs", "1", "--workers", "1", "--out", out],
                  ("No space left", "--out", out), block_run=False),
             Case("full disk", ["plot", "../res", "--out", str(mnt / "figures")], ("No space left",),
                  setup=plottable_result, block_run=False, note="issue 39 D6")]
    return cases


def _sde_result(root: Path) -> None:
    """A small finished ``sde`` result at ``root/res`` (something to plot)."""
    import numpy as np

    from dyntools.engine.result import RunResult
    from dyntools.store import save

    arrays = {"t": np.linspace(0, 1, 5), "x": np.ones((2, 5, 1))}
    save(RunResult("sde", {"model": "gbm", "h": 0.1, "scheme": "em", "args": [0.0]}, arrays, "completed", ""),
         root / "res")


def plottable_result(root: Path) -> None:
    """A real small ``sde`` result at ``root/res`` (made by the command itself)."""
    done = invoke(["simulate", "sde", "--model", "gbm", "--paths", "4", "--records", "11", "--out", root / "res"],
                  root, block_run=False)
    assert done.code == 0, done


def issue39_cases() -> list[Case]:
    """The inputs of issue 39 that are refused before any work (D7: a 300-byte path component; D11: values
    that used to be accepted as nonsense): one line naming the option, exit 2."""
    long = "x" * 300
    grid = ["sweep", "adamw-grid", "--optimizers", "adam", "--lr-grid", "1e-3:1e-2:2", "--wd-grid", "1e-6:1e-5:1",
            "--n", "40", "--n-val", "20", "--hidden", "4", "--batch-size", "20", "--workers", "1"]
    return [Case("issue 39", ["plot", long], ("Invalid DIR",), note="D7: a 300-byte DIR"),
            Case("issue 39", ["plot", f"{long}/sub"], ("Invalid DIR",), note="D7: below a 300-byte name"),
            Case("issue 39", ["prove", "--file", f"{long}.py"], ("--file",), note="D7: a 300-byte --file"),
            Case("issue 39", [*grid, "--epochs", "1e-300"], ("--epochs",), note="D11: fewer than one step"),
            Case("issue 39", [*grid[:5], "1e300:1e308:2", *grid[6:]], ("--lr-grid",),
                 note="D11: learning rates that overflow"),
            Case("issue 39", [*grid, "--optimizer-file", "/dev/zero"], ("--optimizer-file", "not a file"),
                 all_names=("not a file",), note="D11: a device as --optimizer-file")]


def tmpfs(mnt: Path, size: str):
    """Context manager: a tmpfs of ``size`` mounted at ``mnt`` (made) for the block; it yields ``False`` (nothing
    mounted) where mounting is not allowed (not root, a container without the capability)."""
    import subprocess

    @contextlib.contextmanager
    def mounted():
        mnt.mkdir(parents=True, exist_ok=True)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                          capture_output=True).returncode:
            yield False
            return
        try:
            yield True
        finally:
            subprocess.run(["umount", str(mnt)], capture_output=True)
    return mounted()


def fill(mnt: Path, name: str = "filler") -> Path:
    """Write zeros into ``mnt/name`` until the file system has no space left (ENOSPC)."""
    fd = os.open(mnt / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:                          # ENOSPC: full
        pass
    finally:
        os.close(fd)
    return mnt / name


#: A small real sweep (6 cells, one worker, in this process) for the full-disk-in-the-middle cases.
MID_SWEEP = ["sweep", "adamw-grid", "--optimizers", "adam", "--lr-grid", "1e-3:1e-2:3", "--wd-grid", "1e-6:1e-5:2",
             "--n", "40", "--n-val", "20", "--hidden", "4", "--batch-size", "20", "--epochs", "1", "--workers", "1",
             "--json"]
MID_SWEEP_CELLS = 6


def full_disk_mid_sweep(base: Path, mnt: Path) -> list[tuple[Case, str]]:
    """The disk fills in the middle of a sweep, after ``sweep.json`` and some cells are written: the moment cell
    ``k`` is about to be written (k = 2), or after the last cell, while the result is assembled (k = 6). The run
    must stop with one line naming the output location, exit 2, no traceback, no temporary file, only complete
    cells; once the space is freed, the same command resumes (the k finished cells reused) and ends with
    arrays bitwise identical to an uninterrupted sweep's. ``mnt`` is an empty file system (a tmpfs)."""
    import json

    import numpy as np

    from dyntools import sweep

    (base / "w").mkdir(parents=True, exist_ok=True)
    reference = invoke([*MID_SWEEP, "--out", base / "reference"], base / "w", block_run=False)
    assert reference.code == 0, reference
    want = dict(np.load(base / "reference" / "arrays.npz"))
    failures = []
    tally = TALLY.setdefault("full disk", Counter())
    for k in (2, MID_SWEEP_CELLS):
        out = mnt / "run"
        case = Case("full disk", [*MID_SWEEP, "--out", str(out)], (str(out),), block_run=False,
                    note=f"disk full before cell {k}" if k < MID_SWEEP_CELLS else "disk full after the last cell")
        real = sweep.write_cell

        def filling(out_, index, result, sweep_id=None, k=k, real=real):
            if index == k:
                fill(mnt)
            written = real(out_, index, result, sweep_id)
            if index == k - 1 == MID_SWEEP_CELLS - 1:
                fill(mnt)
            return written

        sweep.write_cell = filling
        try:
            first = invoke(case.argv, base / "w", block_run=False)
        finally:
            sweep.write_cell = real
        problems = []
        lines = first.stderr.strip().splitlines()
        if first.code != 2 or len(lines) != 1 or str(out) not in lines[0] or "Traceback" in first.stderr:
            problems.append(f"exit {first.code}, stderr {first.stderr.strip()[:300]!r}")
        hidden = [str(p.relative_to(mnt)) for p in mnt.rglob(".*")]
        if hidden:
            problems.append(f"temporaries left: {hidden}")
        cells = sorted(p.name for p in (out / sweep.CELLS_DIR).iterdir()) if (out / sweep.CELLS_DIR).is_dir() else []
        if cells != [sweep.cell_path(out, i).name for i in range(k)] or not (out / sweep.SPEC_FILE).is_file():
            problems.append(f"cells on disk {cells} (expected the {k} finished ones and sweep.json)")
        for i in range(len(cells)):
            try:
                sweep.read_cell(out, i, ())
            except sweep.CellError as exc:
                problems.append(f"half-written cell: {exc}")
        (mnt / "filler").unlink(missing_ok=True)                 # space freed: the same command resumes
        again = invoke(case.argv, base / "w", block_run=False)
        if again.code != 0:
            problems.append(f"re-run: exit {again.code}, {again.stderr.strip()[:300]!r}")
        else:
            summary = json.loads(again.stdout)
            if (summary["reused"], summary["computed"]) != (k, MID_SWEEP_CELLS - k):
                problems.append(f"re-run reused {summary['reused']} and computed {summary['computed']} cells")
            got = dict(np.load(out / "arrays.npz"))
            if got.keys() != want.keys() or not all(np.array_equal(got[a], want[a], equal_nan=True) and
                                                    got[a].dtype == want[a].dtype for a in want):
                problems.append("resumed arrays differ from the uninterrupted sweep's")
        _remove(out)
        tally["tried"] += 1
        tally["handled"] += not problems
        if problems:
            failures.append((case, "; ".join(problems)))
    return failures


# ----------------------------------------------------------------------------------- foreign servers

def fake_server(mode: str):
    """A TCP server on 127.0.0.1 that is no Dask scheduler: ``silent`` accepts and never speaks, ``http``
    answers like a web server, ``garbage`` sends an SSH banner and random bytes, ``binary`` only bytes.
    Returns (port, stop)."""
    import socket
    import threading

    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()
    held = []

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)
            try:
                if mode == "http":
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nbad request")
                elif mode == "garbage":
                    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n" + bytes(range(256)) * 8)
                elif mode == "binary":
                    conn.sendall(b"\x00\xff" * 512)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    def close():
        stop.set()
        thread.join(2)
        for c in held:
            c.close()
        server.close()
    return server.getsockname()[1], close


def server_experiments() -> list[tuple[str, str]]:
    """(verb, name) of every experiment with a ``scheduler`` parameter."""
    from dyntools import spec

    return [(verb, exp.name) for verb, exp in experiments()
            if any(f.name == "scheduler" for f, _ in spec.params_of(exp.params))]


def server_cases(port: int, mode: str, timeout: float = 1.0) -> list[Case]:
    return [Case("servers", [verb, name, "--scheduler", f"tcp://127.0.0.1:{port}", "--connect-timeout", str(timeout),
                             "--out", "out"], ("--scheduler",), block_run=False, note=mode)
            for verb, name in server_experiments()]


# ----------------------------------------------------------------------------------- damaged results

def result_damages() -> list[tuple[str, Callable[[Path], None]]]:
    """(why, damage) for a result directory: each damage edits ``dir`` in place."""
    import json

    import numpy as np

    def meta_edit(fn):
        def damage(d: Path):
            meta = json.loads((d / "result.json").read_text())
            fn(meta)
            (d / "result.json").write_text(json.dumps(meta))
        return damage

    def text(data: bytes):
        return lambda d: (d / "result.json").write_bytes(data)

    def arrays(fn):
        def damage(d: Path):
            with np.load(d / "arrays.npz") as z:
                a = {k: z[k] for k in z.files}
            fn(a)
            np.savez(d / "arrays.npz", **a)
        return damage

    def replace(name: str, fn):
        return lambda d: fn(d / name)

    def as_dir(path: Path):
        path.unlink()
        path.mkdir()

    def pickled(path: Path):
        with open(path, "wb") as fh:
            np.save(fh, np.array([None]), allow_pickle=True)

    out = [("empty result.json", text(b"")),
           ("truncated result.json", replace("result.json", lambda p: p.write_bytes(p.read_bytes()[:40]))),
           ("binary result.json", text(bytes(range(256)))), ("null", text(b"null")), ("a list", text(b"[]")),
           ("nested 200000 deep", text(b"[" * 200_000 + b"]" * 200_000)), ("NaN literal", text(b'{"schema": NaN}')),
           ("result.json is a directory", replace("result.json", as_dir)),
           ("arrays.npz missing", replace("arrays.npz", Path.unlink)),
           ("arrays.npz empty", replace("arrays.npz", lambda p: p.write_bytes(b""))),
           ("arrays.npz truncated", replace("arrays.npz", lambda p: p.write_bytes(p.read_bytes()[:100]))),
           ("an array dropped", arrays(lambda a: a.pop(sorted(a)[0]))),
           ("an array reshaped", arrays(lambda a: a.update({sorted(a)[0]: np.zeros(7)}))),
           ("an array of strings", arrays(lambda a: a.update({sorted(a)[0]: np.array(["x"])}))),
           ("arrays.npz holds a pickle", replace("arrays.npz", pickled))]
    for key in ("schema", "kind", "status", "message", "seed", "config", "summary", "timings", "versions", "arrays"):
        out.append((f"no {key}", meta_edit(lambda m, key=key: m.pop(key, None))))
        for value in (None, "x", [], {}, -1, 1e308, True):
            out.append((f"{key} = {value!r}", meta_edit(lambda m, key=key, value=value: m.update({key: value}))))
    out += [("kind with a path", meta_edit(lambda m: m.update(kind="../../../../tmp/ESCAPE"))),
            ("status unknown", meta_edit(lambda m: m.update(status="splendid"))),
            ("array spec {}", meta_edit(lambda m: m["arrays"].update({next(iter(m["arrays"])): {}}))),
            ("array spec negative shape", meta_edit(lambda m: m["arrays"][next(iter(m["arrays"]))].update(shape=[-1]))),
            ("timings a string", meta_edit(lambda m: m.update(timings={"simulate": "fast"})))]
    return out


def config_damages(config: dict) -> list[tuple[str, Callable[[Path], None]]]:
    """Every key of a real result's ``config`` removed or given a value of the wrong type (alternately: each
    harmless damage costs a drawing)."""
    import json

    def edit(fn):
        def damage(d: Path):
            meta = json.loads((d / "result.json").read_text())
            fn(meta["config"])
            (d / "result.json").write_text(json.dumps(meta))
        return damage

    out = []
    values = (None, "x/../../ESCAPE", [], {}, -1e308)
    for i, key in enumerate(config):                # each key removed or given a wrong value (in turn)
        value = values[i % len(values)]
        if i % 2:
            out.append((f"config without {key}", edit(lambda c, key=key: c.pop(key))))
            continue
        out.append((f"config {key} = {value!r}", edit(lambda c, key=key, value=value: c.update({key: value}))))
    return out


def result_cases(source: Path, damages) -> list[Case]:
    """``plot`` of a copy of the result ``source`` with one damage each; handled when refused with one line
    naming the result (or drawn, exit 0, with every figure inside the figures directory — see
    :func:`judge_plot`)."""
    cases = []
    for why, damage in damages:
        def setup(root, damage=damage):
            shutil.copytree(source, root / "res")
            damage(root / "res")
        cases.append(Case("results", ["plot", "../res", "--format", "png"], ("res", "result"), setup=setup, note=why,
                          may_succeed=True))
    return cases


def run_subprocess(case: Case, base: Path) -> str:
    """``case`` run as a real ``python -m dyntools`` process (nothing blocked: the command line is refused
    before any work, or it is a failure); returns '' when handled, else the problem."""
    import subprocess

    root = base / "proc"
    workdir = root / "cwd"
    workdir.mkdir(parents=True)
    if case.setup is not None:
        case.setup(root)
    before = set(os.listdir(root))
    proc = subprocess.run([sys.executable, "-m", "dyntools", *map(str, case.argv)], cwd=workdir, capture_output=True,
                          text=True, timeout=HANG_GUARD, env={**os.environ, "MPLBACKEND": "Agg"})
    outcome = Outcome(proc.returncode, proc.stdout, proc.stderr)
    problem = judge(case, outcome, workdir, before)
    tally = TALLY.setdefault("subprocess", Counter())
    tally["tried"] += 1
    tally["handled"] += not problem
    _remove(root)
    return problem


# ----------------------------------------------------------------------------------- results against their schema

SAMPLES = Path(__file__).resolve().parent / "goldens" / "result_samples.json"

#: the result kinds the library writes itself (no experiment declares their sample runs): their samples are golden
LIBRARY_KINDS = ("train",)


def committed_samples() -> dict[str, dict]:
    """kind → {"argv", "config", "summary"} as tests/goldens/make_result_samples.py wrote them from the sample runs
    the experiments declare (:func:`dyntools.plugins.sample_runs`) and the library's own kinds."""
    import json

    return json.loads(SAMPLES.read_text(encoding="utf-8"))


def run_sample(kind: str, argv: Iterable[str], directory: Path) -> dict:
    """{"argv", "config", "summary"} of the result that ``dyntools *argv`` writes into ``directory/kind``, run
    in-process; ``RuntimeError`` when the run fails or writes a result of another kind."""
    import json

    from dyntools import store

    argv = list(argv)
    out = Path(directory) / kind
    out.parent.mkdir(parents=True, exist_ok=True)
    ran = invoke([*argv, "--out", out, "--json"], out.parent, block_run=False)
    if ran.code != 0:
        raise RuntimeError(f"{kind}: the sample run `dyntools {' '.join(argv)}` exited {ran.code}: {ran.stderr}")
    meta = json.loads((out / store.META_FILE).read_text(encoding="utf-8"))
    if meta["kind"] != kind:
        raise RuntimeError(f"{kind}: the sample run `dyntools {' '.join(argv)}` wrote kind {meta['kind']!r}")
    return {"argv": argv, "config": meta["config"], "summary": meta.get("summary", {})}


def result_samples() -> dict[str, dict]:
    """kind → {"argv", "config", "summary"} of one small real result per kind: the committed goldens of the kinds
    still declared, and, for a declared kind without one (a user's plugin, a new experiment), the result of its
    declared sample run, run here once per process."""
    import tempfile

    from dyntools import plugins

    if not hasattr(result_samples, "found"):
        declared = plugins.sample_runs()
        found = {kind: sample for kind, sample in committed_samples().items()
                 if kind in declared or kind in LIBRARY_KINDS}
        with tempfile.TemporaryDirectory() as tmp:
            for kind in sorted(set(declared) - set(found)):
                found[kind] = run_sample(kind, declared[kind], Path(tmp))
        result_samples.found = found
    return dict(result_samples.found)


def _bad_param_values(p, value) -> list[tuple[str, object]]:
    """(why, value) that the declaration ``p`` (a dyntools.spec.Param) must refuse in a result's config (its size
    caps do not apply to a stored result: :func:`dyntools.result_schema.as_stored`)."""
    from dyntools.result_schema import as_stored

    p = as_stored(p)
    nan, inf = float("nan"), float("inf")
    kind = p.kind
    out: list[tuple[str, object]] = []
    if kind in ("int", "float"):
        out += [("a string", "x"), ("a list", [1]), ("true", True), ("NaN", nan), ("infinity", inf)]
        if kind == "int":
            out.append(("not an integer", 1.5))
        if p.low is not None:
            out.append(("below the range", (p.low - max(1, abs(p.low))) if not p.low_open else p.low))
        if p.high is not None:
            out.append(("above the range", (p.high + max(1, abs(p.high))) if not p.high_open else p.high))
    elif kind in ("str", "file"):
        out += [("a number", 3), ("a list", ["x"])]
        if kind == "str" and p.choices:
            out += [("an unknown name", "bogus"), ("a path", "../../../../tmp/ESCAPE")]
    elif kind == "flag":
        out += [("a string", "yes"), ("a number", 1)]
    elif kind in ("ints", "floats", "strs"):
        out += [("a string where a list is", "x"), ("an object", {}), ("a nested list", [[1]])]
        if kind != "strs":
            out += [("a string entry", ["x"]), ("a NaN entry", [nan])]
            if p.low is not None:
                out.append(("an entry below the range", [(p.low - 1) if not p.low_open else p.low]))
            if p.high is not None:
                out.append(("an entry above the range", [(p.high + 1) if not p.high_open else p.high]))
        elif p.choices:
            out.append(("an unknown name", ["bogus"]))
        if p.max_len is not None and isinstance(value, list) and value:
            out.append(("too many entries", [value[0]] * (p.max_len + 1)))
    elif kind == "grid":
        out += [("a string where a list is", "1:2:3"), ("two entries", [1.0, 2.0]),
                ("N not an integer", [1.0, 2.0, 1.5]), ("a NaN bound", [nan, 1.0, 2]), ("N < 1", [1.0, 2.0, 0])]
        if p.max_len is not None:
            out.append(("N too large", [1.0, 2.0, p.max_len + 1]))
    return out


_SUMMARY_BAD = {"number": ("a string", "x"), "int": ("not an integer", 1.5), "str": ("a number", 3),
                "flag": ("a string", "yes"), "list": ("a string where a list is", "x"), "mapping": ("a list", [])}


def schema_damages(kind: str, sample: dict) -> list[tuple[str, str, Callable[[dict], None]]]:
    """(why, field named in the refusal, edit of result.json's parsed contents) for every field the kind's schema
    declares: each config key of the wrong type, out of range, an unknown name, NaN/∞ for a number, a string
    where a list is, null where not allowed, missing; the summary not a mapping, each declared summary value of
    the wrong kind, a NaN in it."""
    from dyntools import result_schema

    schema = result_schema.REGISTRY[kind]
    out: list[tuple[str, str, Callable[[dict], None]]] = []

    def on_config(schema, path):
        def at(meta):
            c = meta["config"]
            for k in path:
                c = c[k]
            return c
        for key, (p, nullable) in schema.config.items():
            value = at({"config": sample["config"]}).get(key)
            for why, bad in _bad_param_values(p, value):
                out.append((f"config {'.'.join((*path, key))}: {why}", key,
                            lambda m, key=key, bad=bad, at=at: at(m).__setitem__(key, bad)))
            if not nullable:
                out.append((f"config {'.'.join((*path, key))}: null", key,
                            lambda m, key=key, at=at: at(m).__setitem__(key, None)))
            if key not in schema.optional:
                out.append((f"config {'.'.join((*path, key))}: missing", key,
                            lambda m, key=key, at=at: at(m).pop(key)))
        for key, sub in schema.nested.items():
            out.append((f"config {key}: a string where an object is", key,
                        lambda m, key=key, at=at: at(m).__setitem__(key, "x")))
            on_config(sub, (*path, key))

    on_config(schema, ())
    for why, bad in (("a string", "x"), ("a list", []), ("a number", 3)):
        out.append((f"summary: {why}", "summary", lambda m, bad=bad: m.__setitem__("summary", bad)))
    for key, want in schema.summary.items():
        why, bad = _SUMMARY_BAD[want]
        out.append((f"summary {key}: {why}", key, lambda m, key=key, bad=bad: m["summary"].__setitem__(key, bad)))
    out.append(("summary: a NaN inside", "summary", lambda m: m["summary"].__setitem__("injected", [float("nan")])))
    out.append(("config: an infinity inside", "config",
                lambda m: m["config"].__setitem__("injected", {"a": float("inf")})))
    return out


def _sample_result(root: Path, kind: str, sample: dict, edit: Callable[[dict], None] | None) -> None:
    """A result directory ``root/res`` of ``kind`` holding the sample's config and summary (one small array),
    its result.json edited by ``edit``."""
    import copy
    import json

    import numpy as np

    (root / "res").mkdir()
    np.savez(root / "res" / "arrays.npz", x=np.zeros(3))
    meta = {"schema": "dyntools.result/1", "kind": kind, "status": "completed", "message": "", "seed": 0,
            "config": copy.deepcopy(sample["config"]), "summary": copy.deepcopy(sample["summary"]), "timings": {},
            "versions": {}, "arrays": {"x": {"shape": [3], "dtype": "float64"}}}
    if edit is not None:
        edit(meta)
    (root / "res" / "result.json").write_text(json.dumps(meta), encoding="utf-8")


def schema_cases(kinds: Iterable[str] | None = None, every: int = 1) -> list[Case]:
    """``dyntools plot`` of a result of each kind (all, or ``kinds``) damaged in one declared field each (every
    ``every``-th damage of a kind): refused before drawing with one line naming result.json and the field."""
    _parser_once()                                   # the command line imports every experiment: all kinds known
    samples = result_samples()
    cases = []
    for kind in (kinds or sorted(samples)):
        for why, key, edit in schema_damages(kind, samples[kind])[::every]:
            cases.append(Case("result schema", ["plot", "../res", "--format", "png"], ("result.json",),
                              setup=lambda root, kind=kind, edit=edit: _sample_result(root, kind, samples[kind], edit),
                              note=f"{kind}: {why}", all_names=("result.json", key)))
    return cases
