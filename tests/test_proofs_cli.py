"""`dyntools prove` as a user runs it, `python -m dyntools.proofs <family>`, and the reproduce entry."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dyntools.claims import builtin_registry
from tests.conftest import HANG_GUARD

BUILTIN = builtin_registry()

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def prove(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "dyntools", "prove", *args],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd or ROOT,
        timeout=HANG_GUARD,
    )


def test_list_shows_claims_and_controls():
    proc = prove("--list", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["claims"]
    names = {r["claim"] for r in rows}
    assert set(BUILTIN.all_claims()) == names
    assert any(r["kind"] == "control" for r in rows)


def test_verified_claim_exit_zero_and_documents_written(tmp_path):
    md, tex = tmp_path / "d.md", tmp_path / "d.tex"
    proc = prove("sgd-l2-equals-decay", "stab-h-value", "--md", str(md), "--latex", str(tex))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verified" in proc.stdout and "seconds" in proc.stdout
    assert "sgd-l2-equals-decay" in md.read_text() and r"\end{document}" in tex.read_text()
    assert "0.6532705" in md.read_text()


def test_refuted_control_is_as_expected_exit_zero_with_counterexample_in_json():
    """A false control refuted is what was expected: exit 0 (a researcher's CI stays green)."""
    proc = prove("seed004-pushforward-misprint", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    [claim] = out["claims"]
    assert claim["verdict"] == "refuted" and claim["counterexample"]["theta_*"] == "2"
    assert out["all_verified"] is False and out["all_as_expected"] is True and out["controls"] == 1
    text = prove("seed004-pushforward-misprint")
    assert text.returncode == 0 and "1 of 1 false controls refuted as expected; 1/1 as expected" in text.stdout


def test_family_selection_runs_only_that_family():
    proc = prove("gd-quadratic", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [c["name"] for c in json.loads(proc.stdout)["claims"]] == ["gd-quadratic-step-threshold"]


def test_unknown_name_is_one_line_error_exit_2(tmp_path):
    md = tmp_path / "x.md"
    proc = prove("sgd-l2-equals-decay", "no-such-claim", "--md", str(md))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no-such-claim" in proc.stderr
    assert proc.stdout == "" and not md.exists()


@pytest.mark.parametrize("where", ["missing-dir", "is-dir", "read-only"])
def test_unwritable_latex_is_one_line_error_exit_2(tmp_path, where):
    if where == "missing-dir":
        target = tmp_path / "nope" / "out.tex"
    elif where == "is-dir":
        target = tmp_path
    else:
        if os.geteuid() == 0:
            pytest.skip("root ignores directory permissions")
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        target = ro / "out.tex"
    md = tmp_path / "ok.md"
    proc = prove("sgd-l2-equals-decay", "--md", str(md), "--latex", str(target))
    assert proc.returncode == 2
    assert "--latex" in proc.stderr and str(target.name) in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert not md.exists(), "nothing may be written when an output is invalid"


def test_bad_option_is_usage_error():
    proc = prove("--nope")
    assert proc.returncode == 2 and "unrecognized" in proc.stderr


def test_every_family_runs_alone():
    """`python -m dyntools.proofs <family>` from a bare checkout's root (no PYTHONPATH), one process per family
    (concurrently): the one runner of the proof modules."""
    modules = [p.name for p in (ROOT / "proofs").glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(BUILTIN.families) == len(modules) - 2      # every module but report.py and _package.py
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    procs = {
        family: subprocess.Popen([sys.executable, "-m", "dyntools.proofs", family], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
        for family in BUILTIN.families
    }
    for module, proc in procs.items():
        out, err = proc.communicate(timeout=HANG_GUARD)
        assert proc.returncode == 0, module + out + err
        assert "verified" in out and "all verdicts as expected" in err, module
