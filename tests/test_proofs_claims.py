"""Every registered claim gets its expected verdict; every false control is refuted with a
counterexample; the certified numbers of the loss-stabilization argument are what they should be.

The families are plugins: each module of proofs/ declares ``FAMILY``, one discovery finds them (a user's
entry-point package too), and ``python -m dyntools.proofs`` is their one runner."""

import ast
import os
import subprocess
import sys
import types
from fractions import Fraction
from pathlib import Path

import pytest

from dyntools import plugins, report
from dyntools.claims import builtin_registry, claim_families
from dyntools.plugins import catalogue
from dyntools.symbolic import Claim, ClaimFamily, registry
from tests.conftest import HANG_GUARD, assert_usage_error

ROOT = Path(__file__).resolve().parents[1]

#: the families in the order users have always seen them (``dyntools prove --list``, the report)
FAMILY_ORDER = ["sgd-weight-decay", "adaptive-preconditioners", "decoupled-decay", "optimizer-code",
                "gd-quadratic", "loss-stabilization", "sgd-noise", "diagonal-nets", "relu-nets", "brownian",
                "voronoi"]

BUILTIN = builtin_registry()

ALL = BUILTIN.all_claims()


@pytest.fixture(scope="module")
def results():
    return {r.claim.name: r for r in registry.run(ALL.values())}


def test_the_issue_claims_are_all_registered():
    required = {
        "sgd-l2-equals-decay",
        "sgd-momentum-l2-decay-in-buffer",
        "sgdw-momentum-differs",  # 1
        "bias-corrected-ema-convex",  # 2
        "preconditioner-adagrad",
        "preconditioner-rmsprop",
        "preconditioner-rmsprop-bias-corrected",  # 3
        "l2-equiv-iff-scalar-preconditioner",
        "scale-adjusted-l2-restores-equivalence",  # 4
        "adam-effective-decay",
        "adam-l2-first-step-counterexample",  # 5
        "gd-quadratic-step-threshold",  # 6
        "stab-normalization",
        "stab-step-interval",
        "stab-invariant-interval",
        "stab-h-value",  # 7
        "stab-key-inequality",
        "stab-region-argument",
        "stab-loss-bounds",
        "sgd-noise-moments",
        "sgd-euler-maruyama-moments",  # 8
        "diag-net-gradients",
        "diag-net-hessian",
        "diag-net-label-noise-sde",  # 9
        # issue #15: proofs about the code that runs, general sizes, seed-004 claims
        "code-sgd-l2-is-decay",
        "code-sgd-momentum-l2-in-buffer",
        "code-sgdw-differs",
        "code-adam-l2-first-step",
        "code-preconditioner-adagrad",
        "code-preconditioner-rmsprop",
        "code-preconditioner-rmsprop-bc",
        "code-preconditioners-any-t",
        "sgd-noise-covariance-any-size",
        "diag-net-hessian-any-size",
        "relu-net-gradients",
        "brownian-projection-law",
    }
    controls = {
        "adam-l2-equals-adamw",
        "diagonal-preconditioner-admits-l2",
        "seed004-sgd-recursion-misprint",
        "seed004-pushforward-misprint",
        "seed004-h-sign-misprint",
        "seed004-loss-band-as-printed",
        "code-sgdw-equals-sgd-l2",
        "code-adam-l2-equals-adamw",
        "relu-gradient-without-indicator",
        "brownian-projection-l1-norm",
    }
    assert required <= {n for n, c in ALL.items() if not c.control}
    assert controls <= {n for n, c in ALL.items() if c.control}


@pytest.mark.parametrize("name", list(ALL))
def test_verdict_is_as_expected(results, name):
    r = results[name]
    assert r.verdict == r.claim.expected, (r.reason, [s.text for s in r.steps if s.ok is not True][:3])
    if r.claim.control:
        assert r.counterexample, "a false control must come with its counterexample"
    else:
        assert r.counterexample is None
        assert all(s.ok is True for s in r.steps if s.kind == "check")


def test_h_value_enclosure_and_seed_rounding(results):
    lo, hi = results["stab-h-value"].values["h_1.25(1.162)"]
    exact = Fraction(581, 500) * (1 + Fraction(5, 4) * (1 - Fraction(581, 500) ** 2))
    assert Fraction(lo) <= exact <= Fraction(hi)
    assert Fraction(lo) > Fraction(652, 1000)  # the seed's 0.652 is a lower bound, not the value


def test_band_control_counterexample_is_far_below_eps0(results):
    ce = results["seed004-loss-band-as-printed"].counterexample
    lo, hi = (Fraction(s) for s in ce["F(theta_1) at x=1"].strip("[]").split(", "))
    assert hi < Fraction(2, 100) / 100  # F(θ₁) ≈ 1.3e-4 ≪ ε₀θ*² = 0.02
    exact_z1 = Fraction(99, 100) * (1 + Fraction(108, 100) * (1 - Fraction(99, 100) ** 2))
    exact_F = Fraction(1, 4) * (1 - exact_z1**2) ** 2
    assert lo <= exact_F <= hi


def test_adam_control_counterexample_values(results):
    ce = results["adam-l2-equals-adamw"].counterexample
    assert ce["Adam+L2 theta_1"] != ce["AdamW theta_1"]


def test_simulation_crosscheck_is_consistent_with_verified_bounds():
    """Measured (not proved): simulated losses after the bounce entry stay inside the verified
    bounce-regime bounds, and the printed band's lower edge is violated on some steps."""
    from dyntools.proofs.report import simulation_crosscheck

    sim = simulation_crosscheck(steps=3000, paths=4)
    assert sim["paths_bouncing_at_end"] == 1.0
    assert sim["verified_lower"] <= sim["min_loss_after_entry"]
    assert sim["max_loss_after_entry"] < sim["verified_upper"]
    assert sim["consistent"] and sim["fraction_below_eps0"] > 0


def test_reproduce_entry_writes_table_and_derivations(results, tmp_path, monkeypatch):
    """The catalogue entry (run in-process on the results computed above, quick mode)."""
    monkeypatch.setattr(registry, "run", lambda claims, progress=None, timeout=None: [results[c.name] for c in claims])
    [section] = report.reproduce(tmp_path / "rep", catalogue(), quick=True, only="proofs")
    out = tmp_path / "rep"
    text = (out / "report.md").read_text()
    assert section.ok and "[proofs.md](proofs.md)" in text and "stab-region-argument" in text
    assert (out / "proofs.md").read_text().count("**Verdict:") == len(ALL)
    assert r"\end{document}" in (out / "proofs.tex").read_text()
    n = section.numbers
    assert n["verified"] == n["claims"] and n["controls_refuted"] == n["controls"]
    assert set(n["seconds_per_claim"]) == set(ALL)


def test_reproduce_entry_flags_a_wrong_verdict(results, tmp_path, monkeypatch):
    """If a claim stops being verified the report section is marked CHECK FAILED (ok=False)."""
    import dataclasses

    broken = dict(results)
    broken["stab-h-value"] = dataclasses.replace(results["stab-h-value"], verdict="inconclusive")
    monkeypatch.setattr(registry, "run", lambda claims, progress=None, timeout=None: [broken[c.name] for c in claims])
    [section] = report.reproduce(tmp_path / "rep", catalogue(), quick=True, only="proofs")
    assert section.ok is False


# ------------------------------------------------------------------ families are plugins, one runner


def test_the_families_are_declared_by_their_modules_in_the_order_users_know():
    assert claim_families() == FAMILY_ORDER
    assert BUILTIN.families == FAMILY_ORDER
    for name, family in plugins.claim_families().items():
        module = sys.modules[f"dyntools.proofs.{name.replace('-', '_')}"]
        assert module.FAMILY.name == name and family.claims is module.CLAIMS


def test_prove_list_shows_the_families_in_order(cli):
    import json

    proc = cli("prove", "--list", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["claims"]
    assert list(dict.fromkeys(r["family"] for r in rows)) == FAMILY_ORDER
    assert [r["claim"] for r in rows] == list(ALL)


def _module_sources():
    return {p.name: p.read_text() for p in sorted((ROOT / "proofs").glob("*.py"))}


def test_proof_modules_have_no_main_no_path_splice_and_no_command_imports():
    """One runner (proofs/__main__.py) for every family; no ``sys.path``/``sys.modules`` edits anywhere in
    proofs/ or in dyntools/__init__.py; proofs/ imports nothing of the command line."""
    sources = _module_sources()
    assert "_bootstrap.py" not in sources and "__main__.py" in sources
    sources["dyntools/__init__.py"] = (ROOT / "dyntools" / "__init__.py").read_text()
    for name, text in sources.items():
        tree = ast.parse(text)
        mains = [n for n in ast.walk(tree) if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        assert len(mains) == (name == "__main__.py"), name
        assert "sys.path" not in text and "sys.modules" not in text, name
        imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in imported if m.startswith(("dyntools.commands", "dyntools.cli"))], name
        declares = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "FAMILY" for t in n.targets)
                       for n in tree.body)
        assert declares == (name.removesuffix(".py").replace("_", "-") in FAMILY_ORDER), name


def _fake_module(name, **attrs):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


@pytest.fixture
def discovered(monkeypatch):
    """Plant the plugin modules the family discovery sees (its cache cleared before and after)."""
    def plant(*modules):
        plugins.claim_families.cache_clear()
        monkeypatch.setattr(plugins, "modules", lambda packages=plugins.PACKAGES: modules)
        return plugins.claim_families()
    yield plant
    plugins.claim_families.cache_clear()


def test_declarations_are_checked(discovered):
    import sympy as sp

    x = sp.Symbol("x", real=True)
    claim = Claim.equation("planted-claim", x, x)
    found = discovered(_fake_module("b", FAMILY=ClaimFamily("late"), CLAIMS=[claim]),
                       _fake_module("a", FAMILIES=[ClaimFamily("early", order=-1, claims=[claim])]))
    assert list(found) == ["early", "late"] and found["late"].claims == [claim]
    with pytest.raises(TypeError, match="m: FAMILY must be a ClaimFamily, got str"):
        discovered(_fake_module("m", FAMILY="a-string"))
    with pytest.raises(TypeError, match="family 'f' has no claims"):
        discovered(_fake_module("m", FAMILY=ClaimFamily("f")))
    with pytest.raises(RuntimeError, match="two claim families named 'f'"):
        discovered(_fake_module("m", FAMILY=ClaimFamily("f", claims=[])),
                   _fake_module("n", FAMILY=ClaimFamily("f", claims=[])))
    with pytest.raises(ValueError, match="non-empty string"):
        ClaimFamily("")
    with pytest.raises(TypeError, match="order must be a number"):
        ClaimFamily("f", order="first")


USER_PLUGIN = """
import sympy as sp
from dyntools.symbolic import Claim, ClaimFamily

FAMILY = ClaimFamily("user-family", order=5)
x = sp.Symbol("x", real=True)
CLAIMS = [Claim.equation("user-square", (x + 1) ** 2, x**2 + 2 * x + 1),
          Claim.equation("user-square-control", (x + 1) ** 2, x**2 + 1, expected="refuted")]
"""


@pytest.fixture
def user_package(tmp_path, monkeypatch):
    """An installed distribution (a dist-info on sys.path) naming a module that declares a family in the
    entry-point group ``dyntools.plugins``; the discovery caches are cleared around it."""
    (tmp_path / "w46a_user_claims.py").write_text(USER_PLUGIN)
    info = tmp_path / "w46a_user_claims-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: w46a-user-claims\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{plugins.ENTRY_POINT_GROUP}]\nmine = w46a_user_claims\n")
    caches = (plugins.modules, plugins.claim_families, plugins.catalogue, plugins.experiments)
    for cached in caches:
        cached.cache_clear()
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("w46a_user_claims", None)
    for cached in caches:
        cached.cache_clear()


def test_a_family_declared_by_an_entry_point_plugin_is_found(user_package):
    import dyntools as dt

    assert dt.claim_families() == ["user-family", *FAMILY_ORDER]        # order=5: before the built-in ones
    chosen = dt.builtin_claims(["user-family"])
    assert [c.name for c in chosen] == ["user-square"] and chosen[0].family == "user-family"
    report_ = dt.prove(dt.builtin_claims(["user-family"], controls=True))
    assert report_["user-square"].verdict == "verified" and report_["user-square-control"].verdict == "refuted"
    proc = subprocess.run([sys.executable, "-m", "dyntools", "prove", "user-family", "--controls"],
                          capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": f"{ROOT}:{user_package}"},
                          timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr
    assert "user-square-control" in proc.stdout and "counterexample" in proc.stdout


def test_the_runner_runs_families_with_their_controls(tmp_path, capsys):
    from dyntools.proofs.__main__ import main

    md = tmp_path / "brownian.md"
    assert main(["brownian", "--md", str(md)]) == 0
    out = capsys.readouterr()
    assert "brownian-projection-l1-norm" in out.out and "counterexample" in out.out
    assert "all verdicts as expected" in out.err
    assert md.read_text().count("**Verdict:") == len(BUILTIN.family_claims("brownian"))


def test_the_runner_refuses_bad_input_in_one_line(tmp_path):
    def runner(*args):
        return subprocess.run([sys.executable, "-m", "dyntools.proofs", *args], capture_output=True, text=True,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              timeout=HANG_GUARD)

    assert_usage_error(runner("no-such-family"), "Invalid claim name(s): no-such-family")
    missing = tmp_path / "missing" / "x.md"
    assert_usage_error(runner("brownian", "--md", str(missing)), "Invalid --md", out_dir=missing.parent)
    assert_usage_error(runner("--bogus"), "unrecognized arguments: --bogus")


def test_a_proof_module_runs_through_the_runner_as_its_docstring_says():
    """Every module's docstring names the runner, not ``python proofs/x.py``."""
    for name in FAMILY_ORDER:
        text = (ROOT / "proofs" / f"{name.replace('-', '_')}.py").read_text()
        assert f"``python -m dyntools.proofs {name}``" in text, name
