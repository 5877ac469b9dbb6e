"""Bad data named (issue 30, item 3): each mistake one error naming the argument and what was expected;
a NaN made by the dynamics reported as non-finite, distinct from a state beyond the bound."""

import numba
import numpy as np
import pytest

import dyntools as dt
from dyntools.dynamics.sde import SDE, solve
from tests.byo_model import Affine

X = np.random.default_rng(0).normal(size=(8, 3))


class Data:
    def __init__(self, y):
        self.X, self.y = X, y


class ShortInit(Affine):
    def init(self, seed, index=0):
        return np.zeros(3)


class PythonKernel(Affine):
    loss_grad = staticmethod(Affine.loss_grad_np)


@pytest.mark.parametrize("make, needle", [
    (lambda: dt.train(Affine(3), Data(np.r_[np.nan, np.ones(7)]), dt.sgd(lr=0.1), steps=3, batch=2),
     r"Invalid data: y has 1 non-finite entries \(first y\[0\] = nan\)"),
    (lambda: dt.train(Affine(3), Data(np.ones((8, 1))), dt.sgd(lr=0.1), steps=3, batch=2),
     r"Invalid data: y has shape \(8, 1\) \(expected \(8,\): one target per example; flatten it with y.ravel\(\)\)"),
    (lambda: dt.train(Affine(3), Data(np.array(["a"] * 8)), dt.sgd(lr=0.1), steps=3, batch=2),
     r"Invalid data: y has dtype <U1 \(expected numbers\)"),
    (lambda: dt.train(ShortInit(3), Data(np.ones(8)), dt.sgd(lr=0.1), steps=3, batch=2),
     r"Invalid model 'my-affine': init\(seed, 0\) returned shape \(3,\) \(expected n_params = 4"),
    (lambda: dt.train(Affine(3), Data(np.ones(8)), dt.sgd(lr=0.1), steps=3, batch=2, theta0=np.zeros(3)),
     r"Invalid theta0: expected shape \(4,\)"),
    (lambda: dt.train(PythonKernel(3), Data(np.ones(8)), dt.sgd(lr=0.1), steps=3, batch=2),
     r"Invalid model 'my-affine': kernel='numba' needs model.loss_grad compiled with numba.njit"),
])
def test_bad_training_input_is_named(make, needle):
    with pytest.raises(ValueError, match=needle):
        make()


def test_train_divergence_says_non_finite_or_beyond_the_bound():
    nan_run = dt.train(Affine(3), Data(np.ones(8)), dt.sgd(lr=1e300), steps=5, batch=8, sampler="full",
                       theta0=np.ones(4), bound=1e308)
    assert nan_run.status == "diverged" and "became non-finite" in nan_run.message, nan_run.message
    big = dt.train(Affine(3), Data(np.ones(8)), dt.sgd(lr=10.0), steps=50, batch=8, sampler="full", bound=1e3)
    assert big.status == "diverged" and "grew beyond the bound 1000" in big.message, big.message


@numba.njit
def _cir_drift(t, x, args, out):
    out[0] = args[0] * (args[1] - x[0])


@numba.njit
def _cir_diffusion(t, x, args, out):
    out[0, 0] = args[2] * np.sqrt(x[0])


def test_sde_args_too_short_blames_args_not_the_diffusion():
    sde = SDE(_cir_drift, _cir_diffusion, 1, 1, noise="diagonal", args=[1.0, 0.5], name="cir")
    with pytest.raises(ValueError, match=r"Invalid args: diffusion reads beyond args, which has 2 entries"):
        solve(sde, 0.5, t1=1.0, h=0.1)


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_cir_sqrt_of_negative_is_non_finite_not_beyond_the_bound(kernel):
    """Euler–Maruyama on a CIR with a large σ steps below 0; √x of a negative x is NaN: the message says
    non-finite (and when), where a GBM that explodes says beyond the bound."""
    cir = SDE(_cir_drift, _cir_diffusion, 1, 1, noise="diagonal", args=[1.0, 0.02, 2.0], name="cir")
    r = solve(cir, 0.02, t1=5.0, h=0.05, paths=20, kernel=kernel)
    assert r.status == "diverged" and "became non-finite at t = " in r.message and "beyond" not in r.message
    gbm = SDE(_cir_drift, _cir_diffusion, 1, 1, noise="diagonal", args=[-30.0, 0.0, 0.0], name="growth")
    r = solve(gbm, 1.0, t1=5.0, h=0.05, paths=2, kernel=kernel, bound=1e6)
    assert r.status == "diverged" and "grew beyond the bound 1e+06" in r.message, r.message
