"""Fuzz: damaged results and sweep cells, and divergence (issue 16, "damaged results", "divergence that is
not counted"): plot refuses a damaged result with one line (or draws it, harmlessly, inside its figures
directory); a damaged cell is reported by path and recomputed; the sweep counts divergence by the engine's
one rule; figures of diverged runs say "diverged"."""

import json
import shutil

import numpy as np
import pytest

from tests import fuzz_cases as F
from tests.conftest import HANG_GUARD


@pytest.fixture(scope="module")
def sde_result(tmp_path_factory):
    base = tmp_path_factory.mktemp("src")
    (base / "w").mkdir()
    out = F.invoke(["simulate", "sde", "--model", "gbm", "--paths", "8", "--records", "11", "--out", base / "r"],
                   base / "w", block_run=False)
    assert out.code == 0, out
    return base / "r"


def test_plot_of_a_damaged_result_is_one_line_or_harmless(tmp_path, sde_result):
    cases = F.result_cases(sde_result, F.result_damages())
    config = json.loads((sde_result / "result.json").read_text())["config"]
    cases += F.result_cases(sde_result, F.config_damages(config))
    failures = F.run_cases(cases, tmp_path)
    print(f"results: {len(cases) - len(failures)} of {len(cases)} damaged results handled")
    assert not failures, F.describe(failures)


# ------------------------------------------------------------------------------- results against their kind's schema

def test_every_kind_plot_draws_has_a_schema_and_a_sample_that_passes_it():
    """The schema of each kind is the experiments' declaration; the samples are real results' config/summary
    (of each kind's declared sample run: tests/goldens/make_result_samples.py, or run by the suite), so a schema
    that refused what its experiment writes fails here."""
    from dyntools import plugins, result_schema

    F._parser_once()
    samples = F.result_samples()
    assert all(result_schema.schema_of(kind) is not None for kind in plugins.figures())
    assert set(plugins.figures()) <= set(samples)
    for kind, sample in samples.items():
        result_schema.validate(kind, sample["config"], sample["summary"])


def test_the_committed_samples_are_what_the_declared_sample_runs_write():
    """Each experiment declares its kinds' sample runs (``SAMPLE_RUNS``); a committed sample made by another command
    line, or of a kind no experiment declares any more, is stale (regenerate: tests/goldens/make_result_samples.py)."""
    from dyntools import plugins

    declared = plugins.sample_runs()
    committed = F.committed_samples()
    stale = {kind: sample["argv"] for kind, sample in committed.items()
             if kind not in F.LIBRARY_KINDS and sample["argv"] != list(declared.get(kind, ["(not declared)"]))}
    assert not stale, stale
    assert set(plugins.figures()) <= set(declared) | set(F.LIBRARY_KINDS)


def _module_declaring(kinds, runs):
    import types
    from dataclasses import dataclass

    from dyntools.result_schema import derive
    from dyntools.spec import Experiment, param

    @dataclass(frozen=True)
    class P:
        n: int = param(1, help="n", low=1, high=9)

    module = types.ModuleType("planted_plugin")
    module.EXPERIMENT = Experiment(name="planted", verb="simulate", help="h", example="e", params=P, run=print,
                                   table=print, summary=print, results=tuple(derive(k, P, "n") for k in kinds))
    module.SAMPLE_RUNS = runs
    return module


@pytest.mark.parametrize("kinds, runs, error, words", [
    (("planted-a",), {"planted-b": ["--n", "2"]}, TypeError, "names kind 'planted-b'"),
    (("planted-a",), {"planted-a": "--n 2"}, TypeError, "not a list of strings"),
    (("planted-a",), {"planted-a": ["--n", 2]}, TypeError, r"not a list of strings \(the arguments after 'simulate"),
    (("planted-a",), {"planted-a": ["--n", "2"]}, None, ""),
])
def test_a_sample_run_is_the_command_of_the_experiment_writing_its_kind(monkeypatch, kinds, runs, error, words):
    from dyntools import plugins, result_schema

    monkeypatch.setattr(result_schema, "REGISTRY", dict(result_schema.REGISTRY))   # the planted kinds stay here
    module = _module_declaring(kinds, runs)
    monkeypatch.setattr(plugins, "modules", lambda packages=plugins.PACKAGES: (module,))
    plugins.sample_runs.cache_clear()
    try:
        if error is None:
            assert plugins.sample_runs() == {"planted-a": ("simulate", "planted", "--n", "2")}
        else:
            with pytest.raises(error, match=words):
                plugins.sample_runs()
        monkeypatch.setattr(plugins, "modules", lambda packages=plugins.PACKAGES: (module, module))
        plugins.sample_runs.cache_clear()
        if error is None:                                  # two modules, one kind: refused
            with pytest.raises(RuntimeError, match="two sample runs"):
                plugins.sample_runs()
    finally:
        plugins.sample_runs.cache_clear()


def test_a_result_outside_its_kinds_schema_is_refused_naming_file_and_field(tmp_path):
    """Every 9th damage of every kind (``python tests/fuzz_report.py`` runs all of them): one line naming
    result.json and the field, exit 2, nothing drawn."""
    cases = F.schema_cases(every=9)
    assert {c.note.split(":")[0] for c in cases} == set(F.result_samples())
    failures = F.run_cases(cases, tmp_path)
    print(f"results: {len(cases) - len(failures)} of {len(cases)} results outside their schema refused")
    assert not failures, F.describe(failures)


def test_load_refuses_a_config_outside_the_schema_and_keeps_a_good_one(tmp_path):
    from dyntools import store

    F._parser_once()
    sample = F.result_samples()["sde"]
    for name in ("good", "bad"):
        (tmp_path / name).mkdir()
    F._sample_result(tmp_path / "good", "sde", sample, None)
    F._sample_result(tmp_path / "bad", "sde", sample, lambda m: m["config"].update(scheme="rk4"))
    assert store.load(tmp_path / "good" / "res").config["model"] == "gbm"
    # what a run made from Python writes is valid: its own SDE, no x0, more paths than the command line allows
    (tmp_path / "own").mkdir()
    F._sample_result(tmp_path / "own", "sde", sample,
                     lambda m: (m["config"].update(model="my-sde", paths=10**8), m["config"].pop("x0")))
    assert store.load(tmp_path / "own" / "res").config["model"] == "my-sde"
    with pytest.raises(store.StoreError, match=r"bad/res/result\.json: config\['scheme'\] = 'rk4'"):
        store.load(tmp_path / "bad" / "res")


# ----------------------------------------------------------------------------------- damaged sweep cells

def _demo(finite=("x",)):
    from dyntools import sweep

    cells = [{"sleep": 0.0, "diverge": i == 3} for i in range(6)]
    return sweep.SweepSpec("demo", sweep.demo_cell, {"size": 5}, cells, 7, finite=finite)


def _rewrite(path, edit):
    with np.load(path) as z:
        members = {k: z[k] for k in z.files}
    edit(members)
    np.savez(path, **members)


CELL_DAMAGES = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:60]),
    "empty": lambda p: p.write_bytes(b""),
    "garbage": lambda p: p.write_bytes(bytes(range(256))),
    "no metadata": lambda p: _rewrite(p, lambda m: m.pop("_meta")),
    "metadata not JSON": lambda p: _rewrite(p, lambda m: m.update(_meta=np.array("{"))),
    "unknown status": lambda p: _rewrite(p, lambda m: m.update(_meta=np.array(json.dumps(
        {"index": int(p.stem.split("_")[1]), "status": "splendid", "message": ""})))),
    "wrong index": lambda p: _rewrite(p, lambda m: m.update(_meta=np.array(json.dumps(
        {"index": 999, "status": "completed", "message": ""})))),
    "missing key": lambda p: _rewrite(p, lambda m: m.pop("x")),
    "NaN value": lambda p: _rewrite(p, lambda m: m.update(x=np.full(5, np.nan))),
    "strings": lambda p: _rewrite(p, lambda m: m.update(x=np.array(["a"]))),
}


def test_damaged_cells_are_reported_by_path_and_recomputed_bitwise(tmp_path):
    from dyntools import sweep

    first = sweep.run_sweep(_demo(), tmp_path / "s", workers=1)
    damaged = {}
    for i, (why, damage) in enumerate(CELL_DAMAGES.items()):
        index = i % 6 if i % 6 != 3 else 0                   # cell 3 diverged: its NaN are legitimate
        path = sweep.cell_path(tmp_path / "s", index)
        if not path.exists():                                # recomputed in the previous round
            sweep.run_sweep(_demo(), tmp_path / "s", workers=1)
        damage(path)
        damaged[why] = path
        again = sweep.run_sweep(_demo(), tmp_path / "s", workers=1)
        assert again.computed == 1 and again.reused == 5, why
        assert len(again.damaged) == 1 and str(path) in again.damaged[0], (why, again.damaged)
        for a, b in zip(first.cells, again.cells):
            assert np.array_equal(a["x"], b["x"], equal_nan=True) and a["status"] == b["status"], why
    F.TALLY.setdefault("cells", __import__("collections").Counter()).update(tried=len(CELL_DAMAGES),
                                                                             handled=len(CELL_DAMAGES))


def test_a_diverged_cell_with_nan_is_reused_not_damaged(tmp_path):
    from dyntools import sweep

    sweep.run_sweep(_demo(), tmp_path / "s", workers=1)
    again = sweep.run_sweep(_demo(), tmp_path / "s", workers=1)
    assert again.computed == 0 and again.damaged == [] and again.cells[3]["status"] == "diverged"


def test_the_cli_reports_and_recomputes_a_cell_with_nan_accuracy(tmp_path):
    from dyntools import sweep

    argv = ["sweep", "adamw-grid", "--optimizers", "sgd", "--lr-grid", "1e-2:1e5:3", "--wd-grid", "1e-6:1e-5:1",
            "--n", "40", "--n-val", "20", "--hidden", "4", "--batch-size", "20", "--epochs", "10", "--workers", "1",
            "--out", str(tmp_path / "g"), "--json"]
    (tmp_path / "w").mkdir()
    first = F.invoke(argv, tmp_path / "w", block_run=False)
    assert first.code == 0, first
    arrays = dict(np.load(tmp_path / "g" / "arrays.npz"))
    path = sweep.cell_path(tmp_path / "g", 0)
    _rewrite(path, lambda m: m.update(val_acc=np.array(np.nan)))
    again = F.invoke(argv, tmp_path / "w", block_run=False)
    assert again.code == 0 and again.stderr == "", again
    summary = json.loads(again.stdout)
    assert summary["computed"] == 1 and summary["damaged_cells"] and str(path) in summary["damaged_cells"][0]
    assert str(path) in summary["message"]
    now = dict(np.load(tmp_path / "g" / "arrays.npz"))
    assert all(np.array_equal(arrays[k], now[k], equal_nan=True) for k in arrays)
    # the sweep's divergence count is the cells' engine status: the lr = 1e5 cell blows up
    assert summary["diverged_cells"] == int(now["diverged"].sum()) >= 1
    assert np.all(now["diverged"] == (now["diverged_step"] >= 0))


def test_a_sweep_cell_diverges_by_the_engines_one_rule(monkeypatch):
    """Reference written from guard's rule: the first step t with not ‖θ_t‖₁ ≤ 10⁶·max(‖θ_0‖₁, 1)
    (NaN included), read off every recorded step, is the cell's diverged_step (−1: never)."""
    from dyntools import classifier_cell
    from dyntools.dynamics import train as train_module

    runs = []

    def recording_train(*args, **kwargs):
        kwargs["record_steps"] = np.arange(kwargs["steps"] + 1)
        res = real(*args, **kwargs)
        runs.append(res)
        return res

    real = train_module.train
    monkeypatch.setattr(train_module, "train", recording_train)
    config = {"n": 40, "n_val": 20, "classes": 2, "turns": 1.5, "noise": 0.05, "hidden": [8], "epochs": 10,
              "batch_size": 20, "momentum": 0.0, "schedule": "constant", "normalized_wd": False}
    seen = set()
    for lr in (0.1, 1e3, 1e5):
        out = classifier_cell.train_cell(config, {"optimizer": "sgd", "lr": lr, "wd": 0.0}, 3, 0)
        theta = runs[-1]["theta"][0, 0]                         # (steps + 1, p)
        size = np.abs(theta).sum(axis=1)
        bound = 1e6 * max(size[0], 1.0)
        with np.errstate(invalid="ignore"):
            beyond = np.flatnonzero(~(size <= bound))
        expected = int(beyond[0]) if beyond.size else -1
        assert out["diverged_step"] == expected, (lr, out["diverged_step"], expected)
        assert (out["status"] == "diverged") == (expected >= 0)
        seen.add(expected >= 0)
    assert seen == {True, False}                                # both kinds of cell were exercised


# ----------------------------------------------------------------------------------- figures of diverged runs

def _texts(monkeypatch):
    from matplotlib.figure import Figure

    texts = []
    real = Figure.savefig

    def spy(fig, *a, **k):
        texts.append(" ".join(t.get_text() for t in fig.texts))
        return real(fig, *a, **k)

    monkeypatch.setattr(Figure, "savefig", spy)
    return texts


@pytest.mark.parametrize("argv", [
    ["simulate", "stabilization", "--eta", "3", "--steps", "300", "--paths", "4"],
    ["simulate", "diag-net", "--n", "20", "--d", "30", "--r", "3", "--steps", "200", "--seeds", "2", "--eta-small",
     "50", "--eta-large", "50", "--n-test", "50", "--records", "20", "--sharpness-iters", "5"],
])
def test_figures_of_a_diverged_run_say_diverged(tmp_path, monkeypatch, argv):
    (tmp_path / "w").mkdir()
    out = F.invoke([*argv, "--out", tmp_path / "r"], tmp_path / "w", block_run=False)
    assert out.code == 0, out
    texts = _texts(monkeypatch)
    drawn = F.invoke(["plot", tmp_path / "r", "--format", "png"], tmp_path / "w", block_run=False)
    assert drawn.code == 0 and drawn.stderr == "", drawn          # an all-diverged run still has its figure
    assert texts and all("diverged:" in t for t in texts), texts


def test_figures_of_a_run_that_did_not_diverge_say_nothing_of_it(tmp_path, monkeypatch, sde_result):
    shutil.copytree(sde_result, tmp_path / "r")
    texts = _texts(monkeypatch)
    (tmp_path / "w").mkdir()
    assert F.invoke(["plot", tmp_path / "r", "--format", "png"], tmp_path / "w", block_run=False).code == 0
    assert texts and not any("diverged" in t for t in texts)


def test_dt_load_checks_the_schema_in_a_fresh_interpreter(tmp_path):
    """``dt.load`` in a new Python process (no command line ran) knows every catalogue kind's schema."""
    import subprocess
    import sys

    (tmp_path / "r").mkdir()
    F._sample_result(tmp_path / "r", "relu", F.result_samples()["relu"],
                     lambda m: m["config"].update(setting="../../ESCAPE"))
    code = ("import dyntools as dt, sys\ntry:\n    dt.load(sys.argv[1])\nexcept dt.store.StoreError as e:\n"
            "    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r" / "res")], capture_output=True, text=True,
                          timeout=HANG_GUARD)
    assert "result.json: config['setting'] = '../../ESCAPE'" in proc.stdout, proc
