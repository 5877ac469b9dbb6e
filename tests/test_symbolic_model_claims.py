"""Claims from a SymbolicModel (dt.model_claims) and ``dyntools prove --file`` on a model file (issue 25.4)."""

from __future__ import annotations

import json

import pytest
import sympy as sp

import dyntools as dt
from dyntools.models import symbolic_examples
from dyntools.symbolic import model_claims as mc
from tests.conftest import run_cli

u, v, w, x = sp.symbols("u v w x")


@pytest.fixture(scope="module")
def diag3():
    return dt.SymbolicModel(u * v * w * x, params=[u, v, w], inputs=x, coordinates=2, name="diag3")


def _verdict(claim):
    return claim.run().verdict


def test_hand_written_gradient_is_verified_and_a_wrong_one_refuted(diag3):
    assert _verdict(mc.gradient_claim(diag3, "ok", {u: v * w * x, v: u * w * x, w: u * v * x})) == "verified"
    assert _verdict(mc.gradient_claim(diag3, "bad", {u: v * x})) == "refuted"
    toy = symbolic_examples.quadratic_toy()
    th = sp.Symbol("theta")
    assert _verdict(mc.gradient_claim(toy, "toy", {th: -x * th * (mc.Y - x * th**2)}, of="loss")) == "verified"
    assert _verdict(mc.gradient_claim(toy, "toy-bad", {th: -2 * x * th * (mc.Y - x * th**2)}, of="loss")) == "refuted"


def test_fixed_points_of_the_gd_map(diag3):
    X, y = [[1.0, 0.5], [0.5, 2.0]], [1.0, 0.5]                  # y = x_0: β = (1, 0) interpolates
    interpolating = {"u_0": 1, "v_0": 1, "w_0": 1, "u_1": 0, "v_1": 0, "w_1": 0}
    assert _verdict(mc.fixed_point_claim(diag3, "fp", interpolating, X, y)) == "verified"
    origin = {f"{s}_{j}": 0 for s in "uvw" for j in range(2)}       # depth 3: the origin is critical
    assert _verdict(mc.fixed_point_claim(diag3, "origin", origin, X, y)) == "verified"
    assert _verdict(mc.fixed_point_claim(diag3, "not", {**interpolating, "w_0": 2}, X, y)) == "refuted"


@pytest.mark.parametrize("make", [lambda: dt.SymbolicModel(u * v * w * x, params=[u, v, w], inputs=x, coordinates=2),
                                  symbolic_examples.quadratic_toy, lambda: symbolic_examples.relu_net(1, 2)])
def test_the_label_noise_sde_drift_is_minus_the_gradient(make):
    assert _verdict(mc.sde_drift_claim(make(), "drift", n=2)) == "verified"


def test_prove_file_runs_the_claims_of_a_model_file(tmp_path):
    f = tmp_path / "my_model.py"
    f.write_text('''
import sympy as sp
import dyntools as dt
from dyntools.symbolic import model_claims as mc

u, v, w, x = sp.symbols("u v w x")
MODEL = dt.SymbolicModel(u * v * w * x, params=[u, v, w], inputs=x, coordinates=2, name="diag3")
CLAIMS = [mc.gradient_claim(MODEL, "diag3-gradient", {u: v * w * x, v: u * w * x, w: u * v * x}),
          mc.sde_drift_claim(MODEL, "diag3-sde-drift")]
''')
    proc = run_cli("prove", "--file", f, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    verdicts = {c["name"]: c["verdict"] for c in out["claims"]}
    assert verdicts == {"diag3-gradient": "verified", "diag3-sde-drift": "verified"}
