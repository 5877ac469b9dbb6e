"""The library's optimizers on sympy symbols: one definition, numeric and symbolic (issue #15)."""

import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools import optim
from dyntools.optim import optimizers as O
from dyntools.optim import transforms as T
from dyntools.symbolic import REFUTED, VERIFIED
from dyntools.symbolic.unroll import lift, unroll

FACTORY_KW = {
    "sgd": dict(lr=0.1, momentum=0.9, dampening=0.25, weight_decay=0.05),
    "sgdw": dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.05),
    "adam": dict(lr=0.01, weight_decay=0.1, amsgrad=True),
    "adamw": dict(lr=0.01, betas=(0.5, 0.75), weight_decay=0.1),
    "adamw_l1l2": dict(lr=0.01, weight_decay=0.1, l1_ratio=0.25),
    "adagrad": dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5),
    "rmsprop": dict(lr=0.01, alpha=0.9, weight_decay=0.1, momentum=0.5, centered=True),
    "rmsprop_bc": dict(lr=0.01, beta2=0.9, weight_decay=0.1, decoupled=True),
}


@settings(max_examples=16, deadline=None)
@given(name=st.sampled_from(sorted(FACTORY_KW)),
       grads=st.lists(st.lists(st.integers(-4, 4).filter(bool), min_size=2, max_size=2), min_size=3, max_size=3),
       theta0=st.lists(st.integers(-3, 3), min_size=2, max_size=2))
def test_symbolic_iterates_at_exact_values_equal_the_numeric_run(name, grads, theta0):
    """unroll(exact=True) evaluated exactly agrees with the float run of the same optimizer."""
    opt = optim.make(name, **FACTORY_KW[name])
    exact = unroll(opt, 3, params=theta0, grads=grads, exact=True)
    theta, state = np.array(theta0, dtype=float), opt.init(np.array(theta0, dtype=float))
    for t, g in enumerate(grads, start=1):
        theta, state = opt.step(theta, np.array(g, dtype=float), state, t)
    got = np.array([float(sp.N(v, 30)) for v in exact.iterates[3]])
    np.testing.assert_allclose(got, theta, rtol=1e-12, atol=1e-12)


def test_lift_names_and_keeps_structure():
    chain, lr, used = lift(optim.adamw(lr=1e-3, weight_decay=1e-2))
    assert chain.names() == ["scale_by_adam", "add_decay"]
    assert set(used) == {"lr", "b1", "b2", "eps", "weight_decay"} and lr == sp.Symbol("eta", positive=True)
    with pytest.raises(ValueError, match="no hyperparameter named momentum"):
        unroll(optim.adamw(), 1, symbols={"momentum": 1})


def test_numeric_transforms_stay_float():
    theta = np.array([1.0, -2.0])
    opt = optim.adam(lr=0.1, weight_decay=0.1, amsgrad=True)
    new, state = opt.step(theta, np.array([0.5, 0.25]), opt.init(theta), 1)
    assert new.dtype == np.float64 and all(s.dtype == np.float64 for s in state[1])


def test_import_dyntools_does_not_import_sympy():
    code = "import sys, dyntools; print('sympy' in sys.modules); print(callable(dyntools.prove))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def _run(name):
    from dyntools.proofs import optimizer_code

    [claim] = [c for c in optimizer_code.CLAIMS if c.name == name]
    return claim.run()


def test_code_claims_hold_on_the_library():
    for name in ("code-sgd-momentum-l2-in-buffer", "code-preconditioner-rmsprop-bc", "code-sgdw-differs"):
        assert _run(name).verdict == VERIFIED, name


def test_breaking_the_bias_correction_breaks_its_proof(monkeypatch):
    """Perturb one transform (drop the bias correction): the M_t proofs from the code fail, refuted."""
    def no_correction(self, u, state, params, t, lr_t):
        (v,) = state
        v = v * self.b2 + (1 - self.b2) * u * u
        return u / (T._sqrt(v) + self.eps), (v,)

    monkeypatch.setattr(T.scale_by_rms_bias_corrected, "update", no_correction)
    assert _run("code-preconditioner-rmsprop-bc").verdict == REFUTED
    assert _run("code-preconditioners-any-t").verdict == REFUTED


def test_moving_the_decay_breaks_the_l2_equivalence(monkeypatch):
    """Put SGD's decay after the momentum (decoupled): the L2-in-the-buffer proof is refuted."""
    original = O._with_decay
    monkeypatch.setattr(O, "_with_decay", lambda core, wd, where, l1=0.0: original(core, wd, O.DECOUPLED, l1))
    r = _run("code-sgd-momentum-l2-in-buffer")
    assert r.verdict == REFUTED and r.counterexample
