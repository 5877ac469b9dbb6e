"""Fuzz: bad values for every option of every subcommand (issue 16, "values silently accepted", "sizes
without bounds"). The options come from the specs the registry finds, so new experiments are covered."""

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import fuzz_cases as F


def test_every_size_option_declares_an_upper_bound():
    """Every integer option (a size, a count, a number of steps) has ``high``; every list and grid has
    ``max_len``; the bound shows in ``--help``."""
    missing = []
    for opt in F.options():
        p = opt.param
        if p.kind in ("int", "ints") and p.high is None:
            missing.append(f"{' '.join(opt.command)} {opt.flag}: no high")
        if p.kind in ("ints", "floats", "strs", "grid") and p.max_len is None:
            missing.append(f"{' '.join(opt.command)} {opt.flag}: no max_len")
    assert not missing, "\n".join(missing)


def test_the_bound_is_stated_in_help():
    from dyntools import spec
    from dyntools.commands.experiment import help_text

    for _verb, exp in F.experiments():
        for f, p in spec.params_of(exp.params):
            if p.kind == "int":
                assert f"{p.high}" in help_text(f, p, exp.presets), (exp.name, f.name)
            if p.kind == "grid":
                assert f"N <= {p.max_len}" in help_text(f, p, exp.presets), (exp.name, f.name)


def test_bad_values_of_every_option_are_one_line_exit_2_nothing_written(tmp_path):
    cases = F.value_cases()
    failures = F.run_cases(cases, tmp_path)
    print(f"values: {len(cases) - len(failures)} of {len(cases)} bad command lines handled")
    assert not failures, F.describe(failures)


NUMERIC = [o for o in F.options() if o.param.kind in ("int", "float")]


def _oracle(p, text: str) -> bool:
    """Is ``text`` a valid value of the numeric option ``p``? (written from the declaration, not the code)"""
    try:
        value = int(text) if p.kind == "int" else float(text)
    except ValueError:
        return False
    if p.kind == "float" and not math.isfinite(value):
        return False
    if p.low is not None and (value < p.low or (p.low_open and value == p.low)):
        return False
    return not (p.high is not None and (value > p.high or (p.high_open and value == p.high)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(opt=st.sampled_from(NUMERIC),
       text=st.one_of(st.text(max_size=8), st.integers(-10**20, 10**20).map(str),
                      st.floats(allow_nan=True, allow_infinity=True).map(repr)))
def test_numeric_options_accept_exactly_their_declared_range(tmp_path_factory, opt, text):
    """Random text: refused with one line naming the option, or accepted — and accepted exactly when the
    declaration says it is valid. (Cross-field checks may still refuse a valid value: then the line must
    name some option, and the value must have been valid on its own.)"""
    base = tmp_path_factory.mktemp("num")
    case = F.Case("values", [*opt.command, f"{opt.flag}={text}", "--out", "out"], opt.names)
    outcome = F.invoke(case.argv, _workdir(base))
    if outcome.code == "ran":
        assert _oracle(opt.param, text), f"{case.argv} accepted an invalid value"
        return
    assert outcome.code == 2 and len(outcome.stderr.strip().splitlines()) == 1, outcome
    if not _oracle(opt.param, text.strip()):
        assert any(n in outcome.stderr for n in opt.names), (case.argv, outcome.stderr)


def _workdir(base):
    work = base / "cwd"
    work.mkdir()
    return work


def test_the_harness_stops_every_valid_command_before_it_computes(tmp_path):
    """The suite's premise: a command that accepts its input raises ``Ran`` instead of computing (if a
    refactoring moved the run context, bad values that slip through would start real runs)."""
    for verb, exp in F.experiments():
        work = tmp_path / f"{verb}-{exp.name}"      # a name may be both a simulation and a sweep (grokking)
        work.mkdir()
        out = F.invoke([verb, exp.name, "--out", "out"], work)
        assert out.code == "ran", (exp.name, out)
        assert not any(work.iterdir())
    for argv in (["reproduce", "--only", "proofs", "--out", "out"], ["prove", "sgd-weight-decay"], ["bench", "sde"]):
        out = F.invoke(argv, tmp_path)
        assert out.code == "ran", (argv, out)
