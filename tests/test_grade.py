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
        report = G.grade_here(student, problems="gradients")
    assert not report.passed
    bad = [g for g in report.graded if not g.matched]
    assert bad and all(words in (g.hint or "") for g in bad), str(report)
    assert all(g.first_difference and g.first_difference["step"] >= 1 for g in bad)


def test_decoupled_decay_handed_in_as_adam_is_named(tmp_path):
    student = tmp_path / "s.py"
    student.write_text(CORRECT.replace("decoupled=False)", "decoupled=True)"))
    adam = [g for g in G.grade_here(student, problems="gradients").graded if g.optimizer == "adam"][0]
    assert not adam.matched and "decoupled" in adam.hint and adam.first_difference["step"] == 1


def test_an_unknown_error_is_located_without_a_hint(tmp_path):
    student = tmp_path / "s.py"
    student.write_text(CORRECT.replace("out.append(p - lr", "out.append(p - 1.001 * lr"))
    g = G.grade_here(student, problems="gradients").graded[0]
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
    (["{ok}", "--timeout", "0"], "--timeout"),
    (["{ok}", "--timeout", "nan"], "--timeout"),
    (["{ok}", "--memory", "10"], "--memory"),
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


# ------------------------------------------------------------------ issue 36, item 7: limits, missing pieces, hints

DECAY_AFTER_STEP = CORRECT.replace("if decoupled:\n            p = p * (1 - lr * weight_decay)\n        else:\n",
                                   "if not decoupled:\n").replace(
    "out.append(p - lr * m_hat / (np.sqrt(v_hat) + eps))",
    "out.append((p - lr * m_hat / (np.sqrt(v_hat) + eps)) * ((1 - lr * weight_decay) if decoupled else 1))")


def _write(tmp_path, text, name="student.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("where", ["module", "step"])
def test_an_infinite_loop_is_stopped_at_the_time_limit(tmp_path, where):
    """A loop at import or inside adamw_step: the child is killed at --timeout, the grade says so, exit 1."""
    text = ("while True:\n    pass\n" if where == "module"
            else CORRECT.replace("def adamw_step(params, grads, state, t, *, lr, betas, eps, weight_decay):\n",
                                 "def adamw_step(params, grads, state, t, *, lr, betas, eps, weight_decay):\n"
                                 "    while True:\n        pass\n"))
    proc = run_cli("grade", _write(tmp_path, text), "--timeout", "3", "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert not summary["passed"] and summary["graded"] == []
    assert summary["stopped"].startswith("stopped at the time limit of 3 s")


def test_an_endless_print_is_stopped_without_filling_the_caller(tmp_path):
    """adamw_step prints forever: its output is a file capped at 64 MB, so the write fails (Python reports
    'File too large') or the time limit passes; either way a failed grade, exit 1, and nothing piles up here."""
    text = CORRECT.replace("def adamw_step(params, grads, state, t, *, lr, betas, eps, weight_decay):\n",
                           "def adamw_step(params, grads, state, t, *, lr, betas, eps, weight_decay):\n"
                           "    while True:\n        print('x' * 4096)\n")
    proc = run_cli("grade", _write(tmp_path, text), "--problem", "gradients", "--timeout", "30", "--json",
                   cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-500:]
    summary = json.loads(proc.stdout)
    assert not summary["passed"]
    adamw = [g for g in summary["graded"] if g["optimizer"] == "adamw"]
    assert (adamw and "File too large" in adamw[0]["error"]) or summary["stopped"].startswith("stopped at the time")


def test_the_file_runs_in_a_temporary_folder_not_the_callers(tmp_path):
    """A file that deletes every file of its working directory (and writes one) leaves the caller's alone."""
    (tmp_path / "victim.txt").write_text("keep me")
    text = CORRECT + "\nimport os\nfor _f in os.listdir('.'):\n    os.remove(_f)\nopen('litter.txt', 'w').close()\n"
    proc = run_cli("grade", _write(tmp_path, text), "--steps", "3", "--problem", "gradients", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "victim.txt").read_text() == "keep me" and (tmp_path / "student.py").exists()
    assert not (tmp_path / "litter.txt").exists()


def test_a_misnamed_adamw_is_named_and_the_file_fails(tmp_path):
    """Only Adam found: it is graded (and matches), AdamW is named as missing, the file FAILS (exit 1)."""
    path = _write(tmp_path, CORRECT.replace("def adamw_step(", "def AdamW_step("))
    proc = run_cli("grade", path, "--steps", "3", "--problem", "gradients", cwd=tmp_path)
    assert proc.returncode == 1
    assert "adam on gradients: matches" in proc.stdout
    assert "MISSING: no AdamW: define adamw_step or class AdamW (found AdamW_step" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith("FAILED (1 of 2 optimizers missing")
    report = G.grade_here(path, problems="gradients", steps=3)
    assert not report.passed and all(g.matched for g in report.graded) and len(report.missing) == 1


def test_nan_at_step_one_gets_no_off_by_one_hint(tmp_path):
    """Everything NaN at step 1: NaN matches nothing, so no mistake is named (not 'power t − 1')."""
    path = _write(tmp_path, CORRECT.replace("out.append(p - lr", "out.append(np.nan * p - lr"))
    report = G.grade_here(path, problems="gradients")
    assert not report.passed
    for g in report.graded:
        assert g.hint is None and g.nonfinite_from == 1
    assert "t − 1" not in str(report) and "not finite (NaN or ∞) from step 1" in str(report)


def test_a_power_t_minus_one_is_nan_from_step_one_and_named_as_such(tmp_path):
    """The t − 1 bias correction divides by 1 − β⁰ = 0: its values are NaN, so it is reported as not finite
    from step 1 — the grader cannot tell it from any other NaN bug and says no more."""
    path = _write(tmp_path, CORRECT.replace("m_hat = m / (1 - b1 ** t)\n        v_hat = v / (1 - b2 ** t)",
                                            "m_hat = m / (1 - b1 ** (t - 1))\n        v_hat = v / (1 - b2 ** (t - 1))"))
    with np.errstate(all="ignore"):
        report = G.grade_here(path, problems="gradients")
    assert all(g.hint is None and g.nonfinite_from == 1 for g in report.graded)


def test_decay_after_the_adam_step_is_named(tmp_path):
    assert DECAY_AFTER_STEP != CORRECT
    report = G.grade_here(_write(tmp_path, DECAY_AFTER_STEP), problems="gradients")
    adam, adamw = sorted(report.graded, key=lambda g: g.optimizer)
    assert adam.matched and not adamw.matched
    assert "applied after the Adam step" in adamw.hint and adamw.first_difference["step"] == 1


def test_the_memory_limit_stops_a_runaway_allocation(tmp_path):
    """A step that asks for 8 GB under a 1 GB limit: a MemoryError in the student's step, a failed grade."""
    path = _write(tmp_path, CORRECT.replace("    b1, b2 = betas\n", "    b1, b2 = betas\n    np.ones(2**30)\n"))
    proc = run_cli("grade", path, "--memory", "1024", "--problem", "gradients", "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    errors = [g["error"] for g in json.loads(proc.stdout)["graded"]]
    assert errors and all(e and "MemoryError" in e for e in errors)


def test_help_says_it_is_not_a_security_sandbox():
    proc = run_cli("grade", "--help")
    assert proc.returncode == 0 and "NOT a security sandbox" in proc.stdout and "--timeout" in proc.stdout
