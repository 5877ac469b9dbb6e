"""The autograder (dyntools grade): a correct solution passes in both styles, each classic mistake is
recognised and named, the equations' reference matches dyntools' PyTorch-exact optimizers, and bad
input is one line, exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from dyntools import autograder as G
from tests.conftest import assert_usage_error, run_cli

HERE = Path(__file__).parent / "grading"
CORRECT = (HERE / "correct_functions.py").read_text()

#: One edit of the correct solution per classic mistake (old text, new text), and the hint's words.
MUTATIONS = {
    "no-bias-correction": ("m_hat = m / (1 - b1 ** t)\n        v_hat = v / (1 - b2 ** t)",
                           "m_hat = m\n        v_hat = v", "bias corrections are missing"),
    "bias-correction-t+1": ("m_hat = m / (1 - b1 ** t)\n        v_hat = v / (1 - b2 ** t)",
                            "m_hat = m / (1 - b1 ** (t + 1))\n        v_hat = v / (1 - b2 ** (t + 1))",
                            "power t + 1"),
    "bias-correction-t-1": ("m_hat = m / (1 - b1 ** t)\n        v_hat = v / (1 - b2 ** t)",
                            "m_hat = m / (1 - b1 ** (t - 1))\n        v_hat = v / (1 - b2 ** (t - 1))",
                            "power t − 1"),
    "eps-inside-sqrt": ("(np.sqrt(v_hat) + eps)", "np.sqrt(v_hat + eps)", "inside the square root"),
    "betas-swapped": ("b1, b2 = betas", "b2, b1 = betas", "swapped"),
    "l2-in-adaptive-term": ("decoupled=True)", "decoupled=False)", "Adam with L2"),
    "decay-without-lr": ("p * (1 - lr * weight_decay)", "p * (1 - weight_decay)", "not multiplied by the learning"),
}


@pytest.mark.parametrize("which", ["adam", "adamw"])
@pytest.mark.parametrize("name", G.PROBLEMS)
def test_equations_match_dyntools_reference(which, name):
    """An independent reference: Adam/AdamW written from the equations equals dyntools' optimizers."""
    prob = G.problem(name, 12)
    ref, _ = G.reference_run(which, prob)
    assert G._deviation(G.equation_run(which, prob), ref).max() <= 1e-13


@pytest.mark.parametrize("mistake", [m for m in G.MISTAKES])
def test_each_mistake_changes_the_run(mistake):
    """Every variant departs from the reference by far more than the tolerance (else it could not be told)."""
    prob = G.problem("gradients")
    which = G.ONLY_FOR.get(mistake, "adamw")
    ref, _ = G.reference_run(which, prob)
    with np.errstate(all="ignore"):
        dev = G._deviation(G.equation_run(which, prob, mistake), ref)
    assert dev.max() > 1e3 * G.TOL


@pytest.mark.parametrize("style", ["correct_functions.py", "correct_classes.py"])
def test_a_correct_solution_passes(style):
    report = G.grade(HERE / style, steps=15)
    assert report.passed, str(report)
    assert {(g.optimizer, g.problem) for g in report.graded} == {(o, p) for o in ("adam", "adamw") for p in G.PROBLEMS}
    spiral = [g for g in report.graded if g.problem == "spirals"][0]
    assert spiral.steps[-1]["loss_student"] == pytest.approx(spiral.steps[-1]["loss_reference"], rel=1e-12)


@pytest.mark.parametrize("mistake", list(MUTATIONS))
def test_each_classic_mistake_is_named(tmp_path, mistake):
    old, new, words = MUTATIONS[mistake]
    assert old in CORRECT
    student = tmp_path / f"{mistake}.py"
    student.write_text(CORRECT.replace(old, new))
    with np.errstate(all="ignore"):
        report = G.grade(student, problems="gradients")
    assert not report.passed
    bad = [g for g in report.graded if not g.matched]
    assert bad and all(words in (g.hint or "") for g in bad), str(report)
    assert all(g.first_difference and g.first_difference["step"] >= 1 for g in bad)


def test_decoupled_decay_handed_in_as_adam_is_named(tmp_path):
    student = tmp_path / "s.py"
    student.write_text(CORRECT.replace("decoupled=False)", "decoupled=True)"))
    adam = [g for g in G.grade(student, problems="gradients").graded if g.optimizer == "adam"][0]
    assert not adam.matched and "decoupled" in adam.hint and adam.first_difference["step"] == 1


def test_an_unknown_error_is_located_without_a_hint(tmp_path):
    student = tmp_path / "s.py"
    student.write_text(CORRECT.replace("out.append(p - lr", "out.append(p - 1.001 * lr"))
    g = G.grade(student, problems="gradients").graded[0]
    assert not g.matched and g.hint is None
    assert re.fullmatch(r"params\[\d\]\[[\d, ]+\]", g.first_difference["coordinate"])


def test_student_code_that_raises_is_a_failed_grade(tmp_path):
    student = tmp_path / "s.py"
    student.write_text(CORRECT.replace("b1, b2 = betas", "b1, b2 = betas\n    if t == 3:\n        raise KeyError('m')"))
    g = G.grade(student, problems="gradients").graded[0]
    assert not g.matched and g.error.startswith("step 3 raised KeyError") and len(g.steps) == 2


def test_cli_passes_and_fails_with_exit_codes(tmp_path):
    ok = run_cli("grade", HERE / "correct_classes.py", "--steps", "10", "--json")
    assert ok.returncode == 0, ok.stderr
    summary = json.loads(ok.stdout)
    assert summary["passed"] and len(summary["graded"]) == 4
    student = tmp_path / "s.py"
    student.write_text(CORRECT.replace("(np.sqrt(v_hat) + eps)", "np.sqrt(v_hat + eps)"))
    bad = run_cli("grade", student, "--problem", "spirals")
    assert bad.returncode == 1 and "hint: ε is inside the square root" in bad.stdout and "FAILED" in bad.stdout


@pytest.mark.parametrize("args, needle", [
    (["missing.py"], "no such file"),
    (["{syntax}"], "syntax error"),
    (["{empty}"], "defines none of adam_step, Adam, adamw_step, AdamW"),
    (["{ok}", "--problem", "cifar"], "--problem"),
    (["{ok}", "--steps", "0"], "--steps"),
    (["{ok}", "--steps", "100000"], "--steps"),
])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, args, needle):
    (tmp_path / "syntax.py").write_text("def adam_step(:\n")
    (tmp_path / "empty.py").write_text("x = 1\n")
    files = {"syntax": tmp_path / "syntax.py", "empty": tmp_path / "empty.py", "ok": HERE / "correct_functions.py"}
    argv = [a.format(**files) for a in args]
    assert_usage_error(run_cli("grade", *argv, cwd=tmp_path), needle)


def test_a_mapping_of_functions_is_graded_like_a_file():
    ns: dict = {}
    exec(CORRECT, ns)
    report = G.grade({"adam_step": ns["adam_step"], "adamw_step": ns["adamw_step"]}, problems="gradients")
    assert report.passed and report.file == "adam_step, adamw_step"
