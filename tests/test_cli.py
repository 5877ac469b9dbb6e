import json

import pytest

from tests.conftest import assert_usage_error, run_cli

SUBCOMMANDS = ["prove", "simulate", "sweep", "plot", "reproduce", "bench", "grade"]


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_every_subcommand_has_help_with_an_example(sub):
    proc = run_cli(sub, "--help")
    assert proc.returncode == 0
    assert "example:" in proc.stdout and "dyntools" in proc.stdout


def _json_of(*args) -> dict:
    """``dyntools ARGS --json`` run as a user would: it succeeds and prints one JSON object, returned."""
    proc = run_cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_top_level_help_lists_subcommands():
    out = run_cli("--help").stdout
    for sub in SUBCOMMANDS:
        assert sub in out


def test_simulate_stabilization_json_and_files(tmp_path):
    out = tmp_path / "stab"
    summary = _json_of("simulate", "stabilization", "--steps", "3000", "--paths", "4", "--seed", "1", "--out", out)
    assert summary["status"] == "stabilized" and summary["regime"] == "inside"
    assert summary["proposition"]["paths_bouncing_at_end"] == 1.0
    assert (out / "result.json").is_file() and (out / "arrays.npz").is_file()
    figures = _json_of("plot", out)["figures"]
    assert {f.rsplit(".", 1)[1] for f in figures} == {"png", "pdf"}
    # same seed => identical arrays
    out2 = tmp_path / "stab2"
    run_cli("simulate", "stabilization", "--steps", "3000", "--paths", "4", "--seed", "1", "--out", out2)
    assert (out / "arrays.npz").read_bytes() == (out2 / "arrays.npz").read_bytes()


def test_human_output_is_a_table(tmp_path):
    proc = run_cli("simulate", "stabilization", "--steps", "500", "--paths", "2", "--out", tmp_path / "s")
    assert proc.returncode == 0
    assert "status" in proc.stdout and "stabilized" in proc.stdout and not proc.stdout.startswith("{")


def test_phase_diagram_mode(tmp_path):
    out = tmp_path / "phase"
    summary = _json_of("simulate", "stabilization", "--eta-grid", "0.5:2.5:5", "--steps", "1000", "--paths", "4",
                       "--out", out)
    assert len(summary["stationary_loss"]) == 5
    assert run_cli("plot", out).returncode == 0
    assert (out / "figures" / "phase_diagram.png").is_file()


@pytest.mark.parametrize("args, needle", [
    (["--eta", "0"], "eta"), (["--eta", "-1"], "eta"), (["--eta", "nan"], "eta"), (["--eta", "inf"], "eta"),
    (["--x-min", "0"], "x_min"), (["--x-min", "2", "--x-max", "1"], "x_min"),
    (["--theta-star", "0"], "theta_star"), (["--steps", "0"], "steps"), (["--paths", "0"], "paths"),
    (["--eta-grid", "1:2"], "--eta-grid"), (["--eta-grid", "a:b:3"], "--eta-grid"),
    (["--eta-grid", "2:1:5"], "--eta-grid"), (["--eta-grid", "0:1:5"], "--eta-grid"),
    (["--eta-grid", "1:2:1"], "--eta-grid"), (["--bogus"], "unrecognized"), (["--seed", "-3"], "seed"),
    (["--steps", "ten"], "--steps"),
])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, args, needle):
    out = tmp_path / "out"
    proc = run_cli("simulate", "stabilization", *args, "--out", out)
    assert_usage_error(proc, needle, out_dir=out)


def test_unwritable_out(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = run_cli("simulate", "stabilization", "--steps", "10", "--out", blocker / "sub")
    assert_usage_error(proc, "--out")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    proc = run_cli("simulate", "stabilization", "--steps", "10", "--out", foreign)
    assert_usage_error(proc, "--out")
    assert (foreign / "thesis.tex").read_text() == "precious"


def test_unknown_model_and_subcommand():
    assert_usage_error(run_cli("simulate", "nonsense"), "invalid choice")
    assert_usage_error(run_cli("frobnicate"), "invalid choice")


def test_plot_rejects_non_results(tmp_path):
    assert_usage_error(run_cli("plot", tmp_path / "missing"), "DIR")
    (tmp_path / "d").mkdir()
    assert_usage_error(run_cli("plot", tmp_path / "d"), "no dyntools result")


def test_reproduce_quick_writes_report(tmp_path):
    out = tmp_path / "rep"
    summary = _json_of("reproduce", "--quick", "--only", "loss-stabilization", "--out", out)
    entry = summary["entries"]["Loss stabilization on the quadratic toy (seed 004)"]
    assert entry["ok"]
    assert entry["cpu_seconds"] > 0 and entry["seconds"] <= summary["seconds"] < 2 * entry["seconds"]
    assert summary["cpu_seconds"] == entry["cpu_seconds"]
    report = (out / "report.md").read_text()
    assert "| total | 1 of 1 ok |" in report
    for fig in entry["figures"]:
        assert f"({fig})" in report and (out / fig).is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]      # no temp dirs left


def test_reproduce_rejects_unknown_entry(tmp_path):
    assert_usage_error(run_cli("reproduce", "--only", "nope", "--out", tmp_path / "r"), "catalogue entry",
                       out_dir=tmp_path / "r")


def test_bench_quick_json():
    bench = _json_of("bench", "stabilization", "--quick")["benchmarks"][0]
    names = {t["name"] for t in bench["targets"]}
    assert "speed-up over vectorized NumPy twin" in names
    assert all(t["value"] > 0 for t in bench["targets"])
    assert_usage_error(run_cli("bench", "nope"), "benchmark")


def test_given_samples_schedule_and_replay(tmp_path):
    import numpy as np

    x = np.random.default_rng(0).uniform(2.0, 2.1, 300)
    np.save(tmp_path / "x.npy", x)
    np.savetxt(tmp_path / "idx.txt", np.random.default_rng(1).integers(0, 300, 500))
    out = tmp_path / "run"
    summary = _json_of("simulate", "stabilization", "--samples", tmp_path / "x.npy", "--eta", "0.26", "--steps",
                       "500", "--paths", "2", "--indices", tmp_path / "idx.txt", "--decay-at", "0.5", "--decay-by", "2",
                       "--out", out)
    assert "schedule" in summary["proposition"]["statement"]
    from dyntools import store

    r = store.load(out)
    np.testing.assert_array_equal(r["x"], x)
    assert r["etas"][0] == 0.26 and r["etas"][-1] == 0.13
    assert np.array_equal(r["theta"][0], r["theta"][1])          # both paths replay the same indices


@pytest.mark.parametrize("args, needle", [
    (["--decay-at", "0.5"], "--decay-at"), (["--decay-at", "1.5", "--decay-by", "2"], "decay fraction"),
    (["--decay-at", "0.5", "--decay-by", "x"], "--decay-by"), (["--samples", "/nonexistent.npy"], "--samples"),
    (["--indices", "/nonexistent.npy"], "--indices"),
])
def test_bad_schedule_and_files(tmp_path, args, needle):
    out = tmp_path / "out"
    assert_usage_error(run_cli("simulate", "stabilization", "--steps", "10", *args, "--out", out), needle, out_dir=out)


@pytest.mark.parametrize("argv,match", [
    (["reproduce", "--only", ""], "Invalid --only"),
    (["sweep", "adamw-grid", "--hidden", "4,,4"], "empty entry"),
    (["simulate", "diag-net", "--schedules", "small,small"], "names a schedule twice"),
    (["simulate", "diag-net", "--alpha", "0"], "Invalid alpha"),
    (["simulate", "diag-net", "--alpha", "-1"], "Invalid alpha"),
    (["simulate", "stabilization", "--paths", "1000000000000", "--steps", "10"], "Invalid paths"),
    (["simulate", "stabilization", "--theta-star", "1e308"], "Invalid theta_star"),
    (["simulate", "stabilization", "--paths", "100000", "--records", "100000"], "Invalid --paths: the run needs about"),
    (["simulate", "relu", "--setting", "teacher2", "--width", "10,10"], "Invalid --width"),
])
def test_values_once_silently_accepted_are_one_line_errors(tmp_path, capsys, argv, match):
    """Issue 16's 'values silently accepted' and 'sizes without bounds': one line, exit 2, nothing written."""
    from dyntools.cli import main

    assert main(argv + ["--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and match in err[0], err
    assert not (tmp_path / "o").exists()
