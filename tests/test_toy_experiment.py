"""A new experiment is one module (+ its test): a toy experiment added the documented way is everywhere.

The toy module below is written into a temporary folder and made discoverable as a user's package would make it:
the ``dyntools.plugins`` entry-point group of a distribution (a ``.dist-info`` beside it on ``sys.path``). Nothing
else is edited — no list in ``dyntools/``, no plot registry, no stream table, no docs page, no sample list in
``tests/`` — and the toy shows up in ``dyntools simulate --help``, runs, is drawn by ``dyntools plot`` from its own
figure declaration, is an entry of ``dyntools reproduce --quick --only toy`` (listed on the report page) and of the
docs' catalogue page, and the fuzz suite damages every field its result schema declares.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the whole experiment: parameters, run, summary/table, result schema, figure, stream purpose, report entry
TOY = '''
"""A toy experiment: a seeded random walk, its figure and its report entry."""

from dataclasses import dataclass

import numpy as np

from dyntools.engine.result import RunResult
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, param

#: this experiment's own stream purposes (key words unique among the library's and every plugin's)
STREAMS = {"toy-walk.steps": 0x70E1}


@dataclass(frozen=True)
class WalkParams:
    steps: int = param(50, help="number of steps of the walk", low=1, high=10_000)
    scale: float = param(1.0, help="size of one step", low=0.0, low_open=True, high=100.0)


def run(p, ctx):
    key = (STREAMS["toy-walk.steps"],)
    gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(ctx.seed, spawn_key=key)))
    walk = np.cumsum(p.scale * gen.standard_normal(p.steps))
    return RunResult("toy-walk", {"steps": p.steps, "scale": p.scale}, {"walk": walk}, "completed",
                     "walked", summary={"final": float(walk[-1])})


def summary(p, result):
    return {"final": result.summary["final"]}


def table(p, result):
    return f"final position {result.summary['final']:.3f} after {p.steps} steps"


def plot_walk(result, out_dir, formats=("png", "pdf")):
    from dyntools import plots

    fig, axes = plots.figure()
    ax = axes[0, 0]
    ax.plot(np.arange(1, result["walk"].size + 1), result["walk"], color=plots.PALETTE[0])
    ax.set_xlabel("step")
    ax.set_ylabel("position")
    ax.set_title("a toy random walk")
    return plots.save(fig, out_dir, "toy_walk", formats)


EXPERIMENT = Experiment(
    name="toy-walk", verb="simulate", help="a toy random walk added as one plugin module",
    example="dyntools simulate toy-walk --steps 20 --out runs/walk",
    params=WalkParams, run=run, table=table, summary=summary,
    results=(derive("toy-walk", WalkParams, "steps scale", summary={"final": "number"}),),
    figures={"toy-walk": plot_walk})

#: the smallest run that writes a result of its kind (`dyntools simulate toy-walk --steps 5`): the fuzz suite runs it
#: and damages every field the result schema declares
SAMPLE_RUNS = {"toy-walk": ["--steps", "5"]}


def reproduce(ctx):
    from dyntools.report import Section

    result = run(WalkParams(steps=10 if ctx.quick else 100), ctx)
    paths = plot_walk(result, ctx.figure_dir, ("png",))
    links = "".join(f"![walk]({ctx.relative(p)})" for p in paths)
    body = f"The walk ends at {result.summary['final']:.3f}.\\n\\n{links}"
    return Section("A toy random walk", body, numbers={"final": result.summary["final"]},
                   figures=[ctx.relative(p) for p in paths], headline="toy: the walk was drawn")


REPORT = Entry("toy", "A toy random walk", reproduce, order=999, single_core=True)
'''


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    """A folder holding the toy module and the dist-info that names it in the ``dyntools.plugins`` group."""
    root = tmp_path_factory.mktemp("toy_plugin")
    (root / "dyntools_toy_walk.py").write_text(textwrap.dedent(TOY), encoding="utf-8")
    info = root / "dyntools_toy_walk-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dyntools-toy-walk\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[dyntools.plugins]\ntoy-walk = dyntools_toy_walk\n", encoding="utf-8")
    return root


def _run(plugin_path: Path, *args, code: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(plugin_path)]))
    argv = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "dyntools", *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=plugin_path, timeout=900)


def test_the_toy_is_a_command_and_dyntools_plot_draws_it_from_its_declaration(plugin_path, tmp_path):
    listed = _run(plugin_path, "simulate", "--help")
    assert listed.returncode == 0, listed.stderr
    assert "toy-walk" in listed.stdout and "a toy random walk added as one plugin module" in listed.stdout
    own = _run(plugin_path, "simulate", "toy-walk", "--help")
    assert own.returncode == 0 and "--steps" in own.stdout and "--scale" in own.stdout
    bad = _run(plugin_path, "simulate", "toy-walk", "--steps", "0", "--out", tmp_path / "bad")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "bad").exists()

    out = tmp_path / "walk"
    done = _run(plugin_path, "simulate", "toy-walk", "--steps", "20", "--seed", "3", "--out", out, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "result.json").read_text())["kind"] == "toy-walk"
    drawn = _run(plugin_path, "plot", out, "--json")
    assert drawn.returncode == 0, drawn.stderr
    figures = [Path(p) for p in json.loads(drawn.stdout)["figures"]]
    assert sorted(p.name for p in figures) == ["toy_walk.pdf", "toy_walk.png"]
    assert all(p.stat().st_size > 1000 for p in figures)


def test_without_the_plugin_the_toy_is_unknown(tmp_path):
    """The control: the same commands without the entry point know nothing of the toy."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "dyntools", "simulate", "--help"], capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0 and "toy-walk" not in proc.stdout


def test_the_toy_is_a_report_entry_listed_on_the_page(plugin_path, tmp_path):
    out = tmp_path / "report"
    proc = _run(plugin_path, "reproduce", "--quick", "--only", "toy", "--out", out)
    assert proc.returncode == 0, proc.stderr
    page = (out / "report.md").read_text(encoding="utf-8")
    assert "A toy random walk" in page and "toy: the walk was drawn" in page
    assert (out / "figures" / "toy_walk.png").exists()
    assert "A toy random walk" in (out / "report.html").read_text(encoding="utf-8")


def test_the_toy_is_in_the_docs_catalogue_and_its_stream_purpose_is_checked(plugin_path):
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / "docs" / "_ext")!r})
        import catalogue
        from dyntools import plugins
        page = catalogue.page()
        assert "`dyntools simulate toy-walk`" in page, page
        assert "`toy`" in page and "A toy random walk" in page
        assert "`toy-walk` | `dyntools_toy_walk.plot_walk`" in page
        assert plugins.stream_keys()["toy-walk.steps"] == 0x70E1
        print("ok")
    """)
    proc = _run(plugin_path, code=code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_the_fuzz_suite_damages_the_toys_result_from_its_declared_sample_run(plugin_path, tmp_path):
    """tests/test_fuzz_results.py's schema fuzz, run where the toy is installed: the toy's kind is among the kinds it
    damages (its sample made by its declared ``SAMPLE_RUNS``, no committed golden), and every damage of its config
    and summary is refused with one line naming result.json and the field."""
    code = textwrap.dedent(f"""
        import json
        from pathlib import Path
        from tests import fuzz_cases as F
        samples = F.result_samples()
        cases = F.schema_cases(kinds=["toy-walk"])
        failures = F.run_cases(cases, Path({str(tmp_path)!r}))
        print(json.dumps({{"kinds": sorted({{c.note.split(":")[0] for c in F.schema_cases(every=9)}}),
                          "committed": "toy-walk" in F.committed_samples(), "sample": samples["toy-walk"],
                          "cases": [c.note for c in cases], "failures": F.describe(failures) if failures else ""}}))
    """)
    proc = _run(plugin_path, code=code)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "toy-walk" in found["kinds"] and not found["committed"]
    assert found["sample"]["argv"] == ["simulate", "toy-walk", "--steps", "5"]
    assert found["sample"]["config"] == {"steps": 5, "scale": 1.0} and "final" in found["sample"]["summary"]
    notes = " | ".join(found["cases"])
    for field in ("config steps: below the range", "config scale: missing", "summary final: a string"):
        assert f"toy-walk: {field}" in notes, notes
    assert not found["failures"], found["failures"]
