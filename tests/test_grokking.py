"""Modular arithmetic data and the grokking study (dyntools/data/modular.py, simulations/grokking.py):
the tables against their definition, the seeded split, the verdict rule on planted counts, a tiny run through
the CLI with its figure (strict check), and bad input."""

import json

import numpy as np
import pytest
from dyntools.simulations import grokking as G
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools.data import modular as M
from tests.conftest import run_cli

TINY = ["--p", "7", "--steps", "40", "--seeds", "2", "--records", "5", "--width", "16", "--phase-decays", "0,1",
        "--phase-fractions", "0.5", "--phase-seeds", "1", "--workers", "1"]


@pytest.mark.parametrize("op, f", [("+", lambda a, b: a + b), ("-", lambda a, b: a - b), ("*", lambda a, b: a * b)])
def test_table_is_the_operation_mod_p(op, f):
    a, b, c = M.table(11, op)
    assert a.size == 121 and len(set(zip(a.tolist(), b.tolist()))) == 121
    for ai, bi, ci in zip(a, b, c):
        assert ci == f(int(ai), int(bi)) % 11 and 0 <= ci < 11


@settings(max_examples=30, deadline=None)
@given(p=st.integers(3, 30), frac=st.floats(0.05, 0.95), seed=st.integers(0, 2**32), index=st.integers(0, 3))
def test_split_is_a_seeded_partition(p, frac, seed, index):
    n_train = int(round(frac * p * p))
    if not 1 <= n_train < p * p:
        with pytest.raises(ValueError, match="train_fraction"):
            M.split(p, frac, seed, index)
        return
    train, test = M.split(p, frac, seed, index)
    assert train.size == n_train and np.array_equal(np.sort(np.concatenate([train, test])), np.arange(p * p))
    again = M.split(p, frac, seed, index)
    assert np.array_equal(train, again[0])


def test_split_differs_by_seed_and_index_and_encodings_agree():
    base = M.split(23, 0.5, 0, 0)[0]
    assert not np.array_equal(base, M.split(23, 0.5, 1, 0)[0])
    assert not np.array_equal(base, M.split(23, 0.5, 0, 1)[0])
    hot = M.modular_arithmetic(13, "-", 0.4, seed=3)
    tok = M.modular_arithmetic(13, "-", 0.4, encoding="tokens", seed=3)
    assert hot.X.shape == (68, 26) and tok.X.shape == (68, 3) and hot.n_classes == 13
    assert np.all(hot.X.sum(axis=1) == 2)
    a, b = hot.X[:, :13].argmax(axis=1), hot.X[:, 13:].argmax(axis=1)
    assert np.array_equal(a, tok.X[:, 0]) and np.array_equal(b, tok.X[:, 1]) and np.all(tok.X[:, 2] == 13)
    assert np.array_equal(hot.y, (a - b) % 13) and np.array_equal(hot.y, tok.y)


@pytest.mark.parametrize("kwargs, word", [({"op": "/"}, "op"), ({"train_fraction": 1.0}, "train_fraction"),
                                          ({"train_fraction": 0.001}, "train_fraction"), ({"p": 1}, "p"),
                                          ({"encoding": "ascii"}, "encoding")])
def test_bad_data_arguments(kwargs, word):
    with pytest.raises((ValueError, TypeError), match=word):
        M.modular_arithmetic(**{"p": 7, **kwargs})


def test_first_step_reads_the_grid():
    steps = np.array([0, 1, 3, 10, 30])
    acc = np.array([[0.1, 0.5, 0.99, 0.98, 1.0], [0.1, np.nan, 0.2, 0.3, 0.4], [1.0, 1.0, 1.0, 1.0, 1.0]])
    assert G.first_step(acc, steps, 0.99).tolist() == [3, -1, 0]


@pytest.mark.parametrize("k1, k0, n, word, note", [
    (5, 0, 5, G.SHOWN, ""), (0, 5, 5, G.CONTRADICTED, ""), (3, 0, 3, G.NOT_SHOWN, "underpowered: n needed ≈ 4"),
    (4, 4, 5, G.NOT_SHOWN, "do not differ"), (4, 1, 5, G.NOT_SHOWN, "underpowered"), (9, 1, 10, G.SHOWN, "")])
def test_decay_verdict_on_planted_counts(k1, k0, n, word, note):
    v = G.decay_verdict(k1, k0, n)
    assert v["word"] == word and note in v["note"] and (v["k_decay"], v["k_none"], v["n"]) == (k1, k0, n)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), data=st.data())
def test_decay_verdict_is_antisymmetric(n, data):
    k1, k0 = data.draw(st.integers(0, n)), data.draw(st.integers(0, n))
    a, b = G.decay_verdict(k1, k0, n)["word"], G.decay_verdict(k0, k1, n)["word"]
    mirror = {G.SHOWN: G.CONTRADICTED, G.CONTRADICTED: G.SHOWN, G.NOT_SHOWN: G.NOT_SHOWN}
    assert b == mirror[a]
    if a == G.SHOWN:
        assert k1 > k0


def test_tiny_run_through_the_cli_and_its_figure(tmp_path, monkeypatch):
    out = tmp_path / "g"
    proc = run_cli("simulate", "grokking", *TINY, "--json", "--out", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["verdict"]["n"] == 2 and summary["verdict"]["word"] in (G.SHOWN, G.NOT_SHOWN, G.CONTRADICTED)
    from dyntools import store
    from dyntools.plots import grokking as P

    res = store.load(out)
    K = res["steps"].size
    assert res["test_acc"].shape == (3, 2, K) and res["phase_reached"].shape == (2, 1, 1)
    assert np.all((res["train_acc"] >= 0) & (res["train_acc"] <= 1))
    # the recorded weight norm is the norm of the recorded parameters: step 0 is the initialization
    model = G.network(G.EXPERIMENT.make(None, p=7, width=16))
    assert res["weight_norm"][0, 1, 0] == pytest.approx(np.linalg.norm(model.init(0, 1)), rel=1e-12)
    monkeypatch.setenv("DYNTOOLS_FIGURE_CHECK", "strict")
    paths = P.plot_result(res, tmp_path / "fig", ("png",))
    assert [p.name for p in paths] == ["grokking.png"]


def test_same_seed_same_bits():
    p = G.EXPERIMENT.make(None, p=5, steps=20, seeds=2, records=4, width=8, phase_decays=(), workers=1)
    a, b = G.simulate(p, seed=3), G.simulate(p, seed=3)
    for key in ("test_acc", "train_loss", "weight_norm"):
        np.testing.assert_array_equal(a[key], b[key])
    assert a["phase_reached"].shape == (0, 3, 2)


@pytest.mark.parametrize("args, word", [(["--p", "2"], "Invalid p: 2"), (["--phase-decays", "1,0.5"], "phase_decays"),
                                        (["--model", "transformer", "--heads", "3"], "heads"),
                                        (["--train-fraction", "0.0001"], "train_fraction"), (["--op", "/"], "op")])
def test_cli_bad_input(tmp_path, args, word):
    out = tmp_path / "bad"
    proc = run_cli("simulate", "grokking", *args, "--out", out, cwd=tmp_path)
    assert proc.returncode == 2 and word in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists()


def test_the_phase_cell_of_the_study_itself_is_its_adamw_run():
    """The phase diagram takes its (λ = weight_decay, train_fraction) cell from the study's AdamW runs instead of
    training it again: the same numbers as training that cell on its own."""
    p = G.EXPERIMENT.make(None, p=11, steps=300, seeds=3, records=5, width=16, weight_decay=1.0, train_fraction=0.7,
                          phase_decays=(0.0, 1.0), phase_fractions=(0.5, 0.7), phase_seeds=2, workers=1)
    res = G.simulate(p, seed=3)
    model = G.network(p)
    data = G.datasets(p, 0.7, 2, 3)
    alone = G.train_runs(p, model, data, [G.optimizers(p, model, 1.0)[0]], 3, (1, 1), res["steps"])
    m = G.measure(model, alone["theta"], data)
    np.testing.assert_array_equal(res["phase_final_test"][1, 1], m["test_acc"][0, :, -1])
    # the comparison has teeth: at this size the λ = 0 cell ends elsewhere (a row taken from the wrong run shows)
    assert not np.array_equal(res["phase_final_test"][0, 1], res["phase_final_test"][1, 1])
