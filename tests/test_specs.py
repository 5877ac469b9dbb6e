"""Experiments are declared once: each CLI flag comes from one field of the experiment's parameter dataclass.

Also the pieces: :mod:`dyntools.spec` (declarations, coercion, validation, presets) and the registry
that finds the experiments and the catalogue in ``simulations/``.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from dyntools import plugins, spec
from dyntools.cli import build_parser
from dyntools.commands import experiment as generic

ROOT = Path(__file__).resolve().parents[1]
COMMON = {"-h", "--help", "--seed", "--out", "--json"}
EXPERIMENTS = [(verb, name, exp) for verb in ("simulate", "sweep") for name, exp in plugins.experiments(verb).items()]
IDS = [f"{verb}-{name}" for verb, name, _ in EXPERIMENTS]


def _subparser(verb: str, name: str):
    parser = build_parser()
    verb_parser = parser._subparsers._group_actions[0].choices[verb]
    return verb_parser._subparsers._group_actions[0].choices[name]


def _declaring_modules(folder: str, names: tuple[str, ...]) -> set[str]:
    """The modules of ``folder`` that assign one of ``names`` at module level, read from their source."""
    found = set()
    for path in sorted((ROOT / folder).glob("*.py")):
        if path.name.startswith("_"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                   for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                   if isinstance(t, ast.Name)}
        if targets & set(names):
            found.add(f"dyntools.{folder}.{path.stem}")
    return found


def test_the_registry_finds_every_experiment_and_entry():
    """What the discovery finds is what the modules declare: every module of simulations/ and proofs/ that
    assigns EXPERIMENT(S) or REPORT(S) is found, each name once, and every experiment is a subcommand."""
    declaring = {m.__name__ for m in plugins.modules() if m.__name__.startswith("dyntools.")
                 and any(plugins.declared(m, one, many) for one, many in (("EXPERIMENT", "EXPERIMENTS"),
                                                                         ("REPORT", "REPORTS")))}
    on_disk = (_declaring_modules("simulations", ("EXPERIMENT", "EXPERIMENTS", "REPORT", "REPORTS"))
               | _declaring_modules("proofs", ("EXPERIMENT", "EXPERIMENTS", "REPORT", "REPORTS")))
    assert declaring == on_disk
    for verb in ("simulate", "sweep"):
        for name, exp in plugins.experiments(verb).items():
            assert exp.name == name and exp.verb == verb
            assert _subparser(verb, name).prog.endswith(f"{verb} {name}")
    entries = [e for m in plugins.modules() for e in plugins.declared(m, "REPORT", "REPORTS")]
    assert sorted(e.name for e in entries) == sorted(plugins.catalogue())
    assert list(plugins.catalogue())[0] == "proofs"
    orders = [e.order for e in plugins.catalogue().values()]
    assert orders == sorted(orders)


def test_every_kind_an_experiment_writes_has_its_figure():
    """``dyntools plot`` draws every result an experiment writes: each declared result kind has a plotter,
    and a plotter is declared only for a kind the experiment writes."""
    figures = plugins.figures()
    for verb in ("simulate", "sweep"):
        for exp in plugins.experiments(verb).values():
            kinds = {schema.kind for schema in exp.results}
            assert kinds <= set(figures), (exp.name, kinds - set(figures))
            assert set(exp.figures) <= kinds
            assert all(figures[k] is exp.figures[k] for k in exp.figures)
    assert figures["train"].__module__ == "dyntools.plots.train"
    with pytest.raises(ValueError, match="has no figures"):
        plugins.plotter("no-such-kind")


def test_a_figure_for_a_kind_the_experiment_does_not_write_is_refused():
    from dyntools.result_schema import derive

    @dataclasses.dataclass
    class P:
        n: int = spec.param(3, help="n", low=1, high=9)

    common = dict(name="x", verb="simulate", help="h", example="e", params=P, run=print, table=print, summary=print)
    spec.Experiment(**common, results=(derive("spec-test-kind", P, "n"),), figures={"spec-test-kind": print})
    with pytest.raises(TypeError, match="a figure of kind 'other'"):
        spec.Experiment(**common, results=(derive("spec-test-kind", P, "n"),), figures={"other": print})
    with pytest.raises(TypeError, match="not a function"):
        spec.Experiment(**common, results=(derive("spec-test-kind", P, "n"),), figures={"spec-test-kind": "a:b"})


@pytest.mark.parametrize("verb, name, exp", EXPERIMENTS, ids=IDS)
def test_every_flag_is_one_field(verb, name, exp):
    """The options of the subcommand are exactly the fields of the parameter dataclass (+ the common ones)."""
    options = {s for a in _subparser(verb, name)._actions for s in a.option_strings}
    fields = [spec.flag_of(f, p) for f, p in spec.params_of(exp.params)]
    assert len(fields) == len(set(fields))
    assert options == set(fields) | COMMON | ({"--preset"} if exp.presets else set())
    assert {f.name for f in dataclasses.fields(exp.params)} == {f.name for f, _ in spec.params_of(exp.params)}


@pytest.mark.parametrize("verb, name, exp", EXPERIMENTS, ids=IDS)
def test_help_is_generated_from_the_declarations(verb, name, exp):
    sub = _subparser(verb, name)
    helps = {s: a.help for a in sub._actions for s in a.option_strings}
    for f, p in spec.params_of(exp.params):
        text = helps[spec.flag_of(f, p)]
        assert text.startswith(p.help)
        if f.default is not None and p.kind != "flag":
            assert f"default {generic._show(f.default, p.kind)}" in text
            assert "default" not in p.help, f"{name} --{f.name}: the help restates the default"
        for preset, values in exp.presets.items():
            if f.name in values:
                assert f"{preset}: {generic._show(values[f.name], p.kind)}" in text
    assert "example:" in sub.format_help() and f"dyntools {verb} {name}" in sub.format_help()


@pytest.mark.parametrize("verb, name, exp", EXPERIMENTS, ids=IDS)
def test_defaults_and_presets_are_valid(verb, name, exp):
    for preset in [None, *exp.presets]:
        exp.make(preset)


def test_presets_name_only_fields():
    @dataclasses.dataclass(frozen=True)
    class P:
        steps: int = spec.param(10, low=1, help="steps")

    kw = dict(name="x", verb="simulate", help="h", example="e", params=P, run=None, table=None, summary=None)
    spec.Experiment(**kw, presets={"ok": {"steps": 3}})
    with pytest.raises(TypeError, match="unknown parameters stpes"):
        spec.Experiment(**kw, presets={"typo": {"stpes": 3}})
    with pytest.raises(TypeError, match="unknown parameters"):
        spec.with_preset(P, {}, None, stpes=3)
    with pytest.raises(ValueError, match="Invalid preset: 'nope'"):
        spec.with_preset(P, {"ok": {}}, "nope")


def test_building_the_command_line_stays_light():
    """``dyntools --help`` imports every spec module: none may pull in numba, matplotlib, scipy or sympy."""
    import subprocess
    import sys

    code = ("import sys; from dyntools.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('numba', 'matplotlib', 'scipy', 'sympy', 'dask') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_simulations_declare_no_options_of_their_own():
    """No argparse in simulations/ outside ``if __name__ == "__main__":`` blocks: flags come from the specs."""
    for path in sorted((ROOT / "simulations").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        main_blocks = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        inside = {id(x) for b in main_blocks for x in ast.walk(b)}
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and id(n) not in inside
                 and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"]
        assert not calls, f"{path.name} declares command-line options by hand"


# ----------------------------------------------------------------------------------- dyntools.spec

@dataclasses.dataclass(frozen=True)
class Demo:
    eta: float = spec.param(0.1, low=0.0, low_open=True, help="step")
    mom: float = spec.param(0.0, low=0.0, high=1.0, high_open=True, help="momentum")
    steps: int = spec.param(100, low=1, help="steps")
    mode: str = spec.param("a", choices=("a", "b"), help="mode")
    widths: tuple = spec.param((4, 4), kind="ints", low=1, help="widths")
    grid: tuple | None = spec.param(None, kind="grid", metavar="A:B:N", help="grid")
    file: Path | None = spec.param(None, kind="file", help="a file")
    on: bool = spec.param(False, help="switch")
    tau: float | None = spec.param(None, kind="float", label="time horizon", help="tau")


@pytest.mark.parametrize("changes, message", [
    ({"eta": 0.0}, "Invalid eta: 0.0 (must be > 0)"),
    ({"eta": float("nan")}, "Invalid eta: nan (must be finite)"),
    ({"mom": 1.0}, "Invalid mom: 1.0 (must be in [0.0, 1.0))"),
    ({"steps": 0}, "Invalid steps: 0 (must be >= 1)"),
    ({"mode": "c"}, "Invalid mode: 'c' (must be one of 'a', 'b')"),
    ({"widths": (4, 0)}, "Invalid widths: 0 (must be >= 1)"),
    ({"tau": float("inf")}, "Invalid time horizon: inf (must be finite)"),
])
def test_validate_names_the_parameter_and_the_range(changes, message):
    with pytest.raises(ValueError) as err:
        spec.validate(dataclasses.replace(Demo(), **changes))
    assert str(err.value) == message


def test_validate_normalizes_and_accepts_the_defaults():
    p = spec.validate(dataclasses.replace(Demo(), steps=3.0, eta=1))
    assert p.steps == 3 and isinstance(p.steps, int) and isinstance(p.eta, float)
    assert spec.validate(Demo()) == Demo()
    with pytest.raises(TypeError):
        spec.validate(dataclasses.replace(Demo(), steps=2.5))


def test_coerce_reads_command_line_strings(tmp_path):
    fields = {f.name: p for f, p in spec.params_of(Demo)}
    assert spec.coerce("widths", fields["widths"], "8, 16,") == (8, 16)
    assert spec.coerce("grid", fields["grid"], "0.5:1.5:41") == (0.5, 1.5, 41)
    (tmp_path / "x.txt").write_text("1")
    assert spec.coerce("file", fields["file"], str(tmp_path / "x.txt")) == tmp_path / "x.txt"
    for name, text, needle in [("widths", "8,x", "Invalid --widths: '8,x'"), ("widths", ",", "Invalid --widths"),
                               ("widths", "8,0", "Invalid --widths: 0 (must be >= 1)"),
                               ("grid", "1:2", "Invalid --grid: '1:2' (expected A:B:N"),
                               ("grid", "1:2:x", "Invalid --grid"),
                               ("file", str(tmp_path / "missing.npy"), "is not a readable file")]:
        with pytest.raises(ValueError, match=re.escape(needle)):
            spec.coerce(name, fields[name], text, "--" + name)


def test_param_needs_a_kind_it_cannot_infer():
    with pytest.raises(TypeError, match="give kind="):
        spec.param(None, help="x")
    with pytest.raises(ValueError, match="Invalid kind"):
        spec.param(1, kind="complex", help="x")


def test_the_python_api_checks_like_the_command_line():
    from dyntools.simulations import diag_nets

    with pytest.raises(ValueError, match="Invalid steps: 0"):
        diag_nets.run_experiment("paper-sgd", steps=0)
    with pytest.raises(ValueError, match="Invalid r: 300"):
        diag_nets.run_experiment("paper-gd", r=300)
    assert diag_nets.EXPERIMENT.make("paper-gd").n == 40


def test_a_grid_declares_its_own_check_which_replaces_the_generic_one():
    """``param(kind="grid", check=…)``: validation runs the declared check (its message, its normalization) in
    place of "A, B finite" — one check of the value, not two; N's upper bound stays the declaration's; only a
    grid declares one."""
    seen = []

    def ordered(name, value):
        seen.append((name, tuple(value)))
        a, b, n = value
        if not a < b:
            raise ValueError(f"Invalid {name}: {a} is not below {b}")
        return float(a), float(b), int(n)

    @dataclasses.dataclass(frozen=True)
    class Axis:
        axis: tuple = spec.param((1, 2, 3), kind="grid", flag="--ax", check=ordered, max_len=10, help="an axis")

    assert spec.validate(Axis()).axis == (1.0, 2.0, 3) and seen == [("--ax", (1, 2, 3))]
    with pytest.raises(ValueError, match=re.escape("Invalid --ax: 2 is not below 1")):
        spec.validate(Axis(axis=(2, 1, 3)))
    assert spec.validate(Axis(axis=(float("-inf"), 1, 3))).axis[0] == float("-inf")     # its check, not finite()
    with pytest.raises(ValueError, match=re.escape("Invalid --ax: N = 11 points (at most 10)")):
        spec.validate(Axis(axis=(1, 2, 11)))
    with pytest.raises(ValueError, match="only a grid parameter declares its own check"):
        spec.param(1.0, check=ordered, help="x")


def test_the_weight_decay_axis_is_the_optimizers_check_of_a_decay():
    """adamw-grid's ``--wd-grid`` is checked by ``check_decay_axis``, whose ends are the factories' own
    ``check_weight_decay`` (> 0 on the log axis): the same refusal from the option, from GridConfig and — for
    λ < 0 — from the factory."""
    from dyntools import heatmap_grid as H
    from dyntools.optim import optimizers as O

    assert dict((f.name, p) for f, p in spec.params_of(H.AdamWGridParams))["weight_decay"].check is H.check_decay_axis
    message = "Invalid --wd-grid low: -1.0 (must be > 0: the axis is log-spaced)"
    with pytest.raises(ValueError, match=re.escape(message)):
        spec.validate(H.AdamWGridParams(weight_decay=(-1.0, 1.0, 3)))
    with pytest.raises(ValueError, match=re.escape(message)):
        H.GridConfig(wd_range=(-1.0, 1.0), n_wd=3)
    with pytest.raises(ValueError, match=re.escape("Invalid weight_decay value: -1.0 (must be >= 0)")):
        O.adamw(1e-3, weight_decay=-1.0)
    assert O.adamw(1e-3, weight_decay=0.0).options["weight_decay"] == 0.0      # 0 is a decay, not an axis end
