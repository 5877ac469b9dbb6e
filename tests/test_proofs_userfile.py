"""`dyntools prove --file` and `dyntools.prove(claims)` as a researcher uses them, and every bad input:
one line on stderr naming the file (and the claim), exit 2, nothing written."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dyntools
from dyntools.cli import main
from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]

CLAIMS_FILE = textwrap.dedent('''
    import sympy as sp
    from dyntools.symbolic import Claim

    t = sp.Symbol("t", integer=True, positive=True)
    beta = sp.Symbol("beta", positive=True)
    i, k = sp.symbols("i k", integer=True)
    g = sp.IndexedBase("g", real=True)
    m_hat = sp.Sum(beta**i * (1 - beta) * g[t - i], (i, 0, t - 1)) / (1 - beta**t)
    x = sp.Symbol("x", real=True)

    CLAIMS = [
        Claim.equation("mhat-is-average", m_hat, sp.Sum(g[k], (k, 1, t)) / t,
                       domains={beta: sp.Interval.open(0, 1)}),
        Claim.equation("square", (x + 1) ** 2, x**2 + 2 * x + 1),
    ]
''')


def _write(tmp_path, text, name="my_claims.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_file_claims_verdict_table_and_counterexample(tmp_path, capsys):
    path = _write(tmp_path, CLAIMS_FILE)
    md = tmp_path / "out.md"
    code = main(["prove", "--file", str(path), "--md", str(md)])
    out = capsys.readouterr().out
    assert code == 1  # one claim is refuted
    assert "mhat-is-average" in out and "refuted" in out and "square" in out and "verified" in out
    assert "counterexample" in out and "difference=" in out
    assert "mhat-is-average" in md.read_text()


def test_file_selected_claim_json(tmp_path, capsys):
    path = _write(tmp_path, CLAIMS_FILE)
    assert main(["prove", "--file", str(path), "square", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in out["claims"]] == ["square"] and out["all_verified"]


def test_file_list(tmp_path, capsys):
    path = _write(tmp_path, CLAIMS_FILE)
    assert main(["prove", "--file", str(path), "--list", "--json"]) == 0
    assert [r["claim"] for r in json.loads(capsys.readouterr().out)["claims"]] == ["mhat-is-average", "square"]


def test_file_as_a_subprocess_with_latex(tmp_path):
    path = _write(tmp_path, CLAIMS_FILE)
    tex = tmp_path / "out.tex"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "dyntools", "prove", "--file", str(path), "--json",
                           "--latex", str(tex)], capture_output=True, text=True, env=env, timeout=HANG_GUARD)
    assert proc.returncode == 1, proc.stderr
    by_name = {c["name"]: c for c in json.loads(proc.stdout)["claims"]}
    assert by_name["mhat-is-average"]["verdict"] == "refuted"
    assert by_name["mhat-is-average"]["counterexample"]["t"] == "2"
    assert by_name["square"]["verdict"] == "verified"
    assert r"\end{document}" in tex.read_text()


def test_help_says_the_file_is_executed(capsys):
    with pytest.raises(SystemExit):
        main(["prove", "--help"])
    text = capsys.readouterr().out
    assert "--file" in text and "executed" in text


BAD = {
    "missing": (None, "no such file"),
    "syntax": ("x = (\n", "syntax error"),
    "no-claims": ("x = 1\n", "defines no claims"),
    "raises-at-import": ("1 / 0\n", "ZeroDivisionError"),
    "claim-raises": ("""
        from dyntools.symbolic import Claim
        def boom(proof):
            raise KeyError("oops")
        CLAIMS = [Claim("exploding", "t", "s", "x", boom)]
        """, "'exploding' raised KeyError"),
    "bad-assumption": ("""
        import sympy as sp
        from dyntools.symbolic import Claim
        b = sp.Symbol("beta")
        CLAIMS = [Claim.equation("ranged", b, b, domains={b: "(0, 1)"})]
        """, "claim 'ranged': assumption on beta"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file_is_one_line_exit_2_nothing_written(tmp_path, capsys, case):
    text, message = BAD[case]
    path = tmp_path / "my_claims.py" if text is None else _write(tmp_path, text)
    md = tmp_path / "out.md"
    code = main(["prove", "--file", str(path), "--md", str(md)])
    captured = capsys.readouterr()
    assert code == 2
    err = captured.err.strip()
    assert err.count("\n") == 0 and "my_claims.py" in err and message in err, err
    assert captured.out == "" and not md.exists()


def test_unknown_claim_name_in_file(tmp_path, capsys):
    path = _write(tmp_path, CLAIMS_FILE)
    md = tmp_path / "out.md"
    assert main(["prove", "--file", str(path), "nope", "--md", str(md)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "my_claims.py" in err and "nope" in err and "square" in err
    assert not md.exists()


def test_bad_timeout_is_usage_error(capsys):
    assert main(["prove", "--timeout", "0", "sgd-l2-equals-decay"]) == 2
    assert "--timeout" in capsys.readouterr().err


def test_library_prove_takes_claim_objects():
    import sympy as sp

    from dyntools.symbolic import Claim

    x = sp.Symbol("x", real=True)
    report = dyntools.prove([Claim.equation("wrong", (x + 1) ** 2, x**2 + 1), Claim.equation("ok", x, x)])
    assert report["wrong"].verdict == "refuted" and report["ok"].verdict == "verified"
    assert "counterexample x=1" in str(report) and "difference=2" in str(report)
    assert report.summary()["counts"] == {"verified": 1, "refuted": 1, "inconclusive": 0}
    with pytest.raises(TypeError, match="Claim objects"):
        dyntools.prove(["not a claim"])


def test_overrunning_file_claim_is_inconclusive_timed_out(tmp_path, capsys):
    path = _write(tmp_path, """
        from dyntools.symbolic import Claim

        def spin(proof):
            while True:
                pass

        CLAIMS = [Claim("forever", "t", "s", "x", spin)]
        """)
    assert main(["prove", "--file", str(path), "--timeout", "0.5", "--json"]) == 1
    [claim] = json.loads(capsys.readouterr().out)["claims"]
    assert claim["verdict"] == "inconclusive" and claim["reason"] == "budget: timed out after 0.5 s"
    assert claim["seconds"] < 60      # a hang guard: the budget stopped it, however slow the machine


def test_markdown_shows_the_domains(tmp_path, capsys):
    path = _write(tmp_path, CLAIMS_FILE)
    md = tmp_path / "out.md"
    main(["prove", "--file", str(path), "--md", str(md)])
    assert "`beta` ∈ `Interval.open(0, 1)`" in md.read_text()


def test_public_names_give_the_builtin_claims_and_load_files(tmp_path):
    import dyntools as dt

    families = dt.claim_families()
    assert "sgd-weight-decay" in families and "proofs" not in families
    plain = dt.builtin_claims(["sgd-weight-decay"])
    with_controls = dt.builtin_claims(["sgd-weight-decay"], controls=True)
    assert plain and all(c.family == "sgd-weight-decay" and not c.control for c in plain)
    assert any(c.control for c in with_controls) and len(with_controls) > len(plain)
    with pytest.raises(ValueError, match="Invalid claim name"):
        dt.builtin_claims(["no-such-claim"])
    f = tmp_path / "mine.py"
    f.write_text("import sympy as sp\nfrom dyntools import Claim\nx = sp.Symbol('x', real=True)\n"
                 "CLAIMS = [Claim.equation('sq', (x + 1) ** 2, x**2 + 1)]\n")
    report = dt.prove(dt.load_claims(f))
    assert report["sq"].verdict == "refuted" and "sq" in report["sq"].markdown()


def test_file_with_expected_refutation_exits_zero(tmp_path, capsys):
    """A claims file whose false statement is marked ``expected="refuted"`` is all as expected:
    exit 0, and the summary line counts the control (issue 26, item 13)."""
    path = _write(tmp_path, """
        import sympy as sp
        from dyntools.symbolic import Claim

        x = sp.Symbol("x", real=True)
        CLAIMS = [Claim.equation("square", (x + 1) ** 2, x**2 + 2 * x + 1),
                  Claim.equation("not-square", (x + 1) ** 2, x**2 + 1, expected="refuted")]
        """)
    assert main(["prove", "--file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1/2 verified, 1 of 1 false controls refuted as expected; 2/2 as expected" in out
