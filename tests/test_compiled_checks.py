"""No unchecked path: every compiled piece a user hands in is run against its readable version before it
trains, and a mismatch is one error naming the piece and the first differing coordinate (issue 36, item 4).

Here: a transform's ``compiled()`` kernel against its ``update()`` (dyntools.optim.chain_step)."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numba import njit

import dyntools as dt
from dyntools.dynamics import train as train_module
from dyntools.models.least_squares import LeastSquares
from dyntools.optim import chain_step
from dyntools.optim import transforms as T
from dyntools.validation import KernelMismatch, first_difference
from tests.byo_lion import _lion_kernel, lion, scale_by_lion

RNG = np.random.default_rng(5)
X = RNG.normal(size=(16, 3))


class Data:
    def __init__(self, X, y):
        self.X, self.y = X, y


DATA = Data(X, X @ np.array([1.0, -2.0, 0.5]))


@njit(cache=True)
def _lion_without_momentum(u, state, params, t, lr_t, hp):
    """Lion's direction, but the momentum is never updated (the planted defect)."""
    for i in range(u.shape[0]):
        u[i] = np.sign(hp[0] * state[0, i] + (1 - hp[0]) * u[i])


@dataclass(frozen=True)
class forgetful_lion(scale_by_lion):
    def compiled(self):
        return _lion_without_momentum, np.array([self.b1, self.b2])


@dataclass(frozen=True)
class lion_with_swapped_betas(scale_by_lion):
    """The right kernel (tests/byo_lion.py's) handed the wrong hyperparameter layout (β₂, β₁)."""

    def compiled(self):
        return _lion_kernel, np.array([self.b2, self.b1])


def test_a_kernel_that_forgets_momentum_is_refused_before_training(monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("training started with an unchecked kernel")

    monkeypatch.setattr(train_module, "advance_path_numpy", no_training)
    bad = dt.Optimizer("lion", 0.01, T.chain(forgetful_lion(), T.add_decay(0.1)))
    with pytest.raises(KernelMismatch) as err:
        dt.train(LeastSquares(3, reduction="mean"), DATA, bad, steps=2000, batch=4, seed=0)
    message = str(err.value)
    assert isinstance(err.value, ValueError) and "\n" not in message
    assert message.startswith("Invalid transform forgetful_lion: its compiled() kernel does not step like its update()")
    # step 1: the direction agrees (both read the same momentum); the state does not, from its first entry
    assert "at probe step 1 of 5" in message and "state[(0, 0)]" in message
    values = message.split("state[(0, 0)] is ")[1].split(" by update()")[0]
    kernel_value, readable_value = map(float, values.split(" by the kernel but "))
    assert kernel_value != readable_value


def test_a_wrong_hyperparameter_layout_is_refused_naming_the_first_difference():
    """Checked where it compiles (p = 4 probe parameters): at step 1 the swapped β₂ already moves the state
    (the direction's signs happen to agree)."""
    bad = dt.Optimizer("lion", 0.01, T.chain(lion_with_swapped_betas(b1=0.9, b2=0.2)))
    with pytest.raises(KernelMismatch, match=r"lion_with_swapped_betas: .*at probe step 1 of 5 .*state\[\(0, 0\)\]"):
        dt.train(LeastSquares(3, reduction="mean"), DATA, bad, steps=5, batch=4, seed=0)


def test_a_faithful_kernel_passes_and_trains_like_update():
    """The compiled Lion of tests/byo_lion.py passes the probe, runs in the compiled loop and trains bit for bit
    like its update()."""
    kw = dict(steps=50, batch=4, seed=1)
    fast = dt.train(LeastSquares(3, reduction="mean"), DATA, lion(0.01, 0.1, compiled=True), **kw)
    slow = dt.train(LeastSquares(3, reduction="mean"), DATA, lion(0.01, 0.1), **kw)
    assert fast.config["runs"][0]["optimizer_step"] == "fused"
    assert np.array_equal(fast["final_theta"], slow["final_theta"])


def test_the_probe_runs_once_per_transform_and_shape(monkeypatch):
    calls = []
    real = chain_step.first_difference
    monkeypatch.setattr(chain_step, "_probed", set())
    monkeypatch.setattr(chain_step, "first_difference", lambda *a, **k: calls.append(1) or real(*a, **k))
    opt = lion(0.01, compiled=True)
    for _ in range(3):
        chain_step.ChainStepper(opt, np.zeros(4))
    assert len(calls) == 2 * chain_step.PROBE_STEPS          # direction and state at every probe step, once
    chain_step.ChainStepper(opt, np.zeros(5))                # another parameter count: probed again
    assert len(calls) == 4 * chain_step.PROBE_STEPS


def test_first_difference_reports_the_first_entry_with_both_values():
    assert first_difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) is None
    assert first_difference([1.0, 2.0, 3.0], [1.0, 2.5, 4.0]) == (1, 2.0, 2.5)
    where, readable, compiled = first_difference([[0.0, 1.0]], [[0.0, np.nan]])
    assert where == (0, 1) and readable == 1.0 and np.isnan(compiled)
    assert first_difference([np.nan], [np.nan]) is None
    assert first_difference([1.0], [1.0 + 1e-12]) is None


# ------------------------------------------------------------------ a user's model kernel against its twin

def _affine_kernel(*, noise: float = 1.0, grad_factor: float = 1.0, loss_factor: float = 0.5):
    """The compiled affine least-squares loss and gradient (:func:`_affine_np`), or a planted defect of it:
    ``noise=0.0`` forgets the label noise (finite differences run without noise: they pass), ``grad_factor=2.0,
    loss_factor=1.0`` computes twice the loss and gradient (consistent with itself, not with the twin)."""

    @njit
    def kernel(theta, X, y, idx, b, noise_q, grad, ws, iargs, fargs):
        d = X.shape[1]
        tot = 0.0
        for j in range(d + 1):
            grad[j] = 0.0
        for q in range(b):
            i = idx[q]
            r = theta[d] - y[i] - noise * noise_q[q]
            for j in range(d):
                r += X[i, j] * theta[j]
            tot += r * r
            for j in range(d):
                grad[j] += grad_factor * r * X[i, j] / b
            grad[d] += grad_factor * r / b
        return loss_factor * tot / b
    return kernel


_affine = _affine_kernel()
_affine_doubled = _affine_kernel(grad_factor=2.0, loss_factor=1.0)
_affine_no_noise = _affine_kernel(noise=0.0)


def _affine_np(theta, X, y, idx, b, noise, grad, ws, iargs, fargs):
    """L = (1/2b) Σ_q r_q², r_q = ⟨w, x_i⟩ + c − y_i − noise_q."""
    i = np.asarray(idx[:b])
    r = X[i] @ theta[:-1] + theta[-1] - y[i] - noise[:b]
    grad[:-1], grad[-1] = X[i].T @ r / b, r.sum() / b
    return float(0.5 * (r @ r) / b)


def _affine_model(kernel):
    from dyntools.models.base import Model

    class Affine(Model):
        name, head = "my-affine", "regression"
        init_stream, sampling_stream = "user.init", "user.sampling"
        loss_grad = staticmethod(kernel)
        loss_grad_np = staticmethod(_affine_np)
        n_params = 4

        def workspace_size(self, batch):
            return 0

        def init(self, seed, index=0):
            return np.full(4, 0.1)

    return Affine()


@pytest.mark.parametrize("kernel, what", [(_affine_doubled, "the loss"), (_affine_no_noise, "the loss")])
def test_a_model_kernel_that_disagrees_with_its_twin_is_refused(kernel, what):
    with pytest.raises(KernelMismatch) as err:
        dt.train(_affine_model(kernel), DATA, dt.sgd(0.01), steps=100, batch=4, seed=0)
    message = str(err.value)
    assert message.startswith("Invalid model 'my-affine': its compiled loss_grad does not compute what its "
                              "loss_grad_np computes") and f"label noise, {what} is " in message and "\n" not in message


def test_a_faithful_model_kernel_passes_its_twin():
    res = dt.train(_affine_model(_affine), DATA, dt.sgd(0.01), steps=100, batch=4, seed=0, label_noise=0.1)
    assert res.status in ("completed", "converged")


# ------------------------------------------------------------------ a user's SDE terms against their readable versions

SCALE = 1.5


@njit
def _gbm_drift(t, x, args, out):
    out[0] = args[0] * x[0]


@njit
def _gbm_diffusion(t, x, args, out):
    out[0, 0] = args[1] * x[0]


@njit
def _gbm_diffusion_dx(t, x, args, out):
    out[0, 0] = args[1]


@njit
def _gbm_diffusion_dx_wrong(t, x, args, out):
    out[0, 0] = args[1] * x[0]          # σ itself, not ∂σ/∂x (the planted defect)


@njit
def _drift_reading_a_global(t, x, args, out):
    out[0] = SCALE * x[0]               # numba freezes SCALE at compile time


def _gbm(**terms):
    from dyntools.dynamics.sde import SDE

    return SDE(terms.get("drift", _gbm_drift), _gbm_diffusion, dim=1, noise_dim=1, noise="diagonal",
               diffusion_dx=terms.get("dx", _gbm_diffusion_dx), args=[0.5, 0.3])


def test_a_wrong_diffusion_derivative_is_refused_before_milstein_runs():
    with pytest.raises(KernelMismatch, match=r"Invalid diffusion_dx: it is not ∂σ_i/∂x_i of diffusion — at x0, "
                                             r"coordinate 0: diffusion_dx gives 0\.6, central finite differences "
                                             r"of diffusion 0\.3"):
        dt.solve(_gbm(dx=_gbm_diffusion_dx_wrong), x0=2.0, t1=1.0, h=0.01, paths=4, scheme="milstein")
    res = dt.solve(_gbm(), x0=2.0, t1=1.0, h=0.01, paths=4, scheme="milstein")
    assert res.status == "completed"


@njit
def _square_diffusion(t, x, args, out):
    out[0, 0] = x[0] * x[0]


@njit
def _square_diffusion_dx_wrong(t, x, args, out):
    out[0, 0] = 3.0 * x[0]              # ∂(x²)/∂x is 2x: equal to 3x at x0 = 0 only (the planted defect)


@njit
def _square_diffusion_dx(t, x, args, out):
    out[0, 0] = 2.0 * x[0]


@njit
def _sqrt_diffusion(t, x, args, out):
    out[0, 0] = np.sqrt(x[0])           # NaN below 0: the point x0 − s is outside the domain at x0 = 0


@njit
def _sqrt_diffusion_dx(t, x, args, out):
    out[0, 0] = 0.5 / np.sqrt(x[0]) if x[0] > 0.0 else 0.0


def test_a_derivative_right_at_x0_only_is_refused_at_a_shifted_point():
    """At x0 = 0 the planted 3x and the true 2x agree; the seeded points x0 ± s tell them apart."""
    from dyntools.dynamics.sde import SDE

    def sde(dx):
        return SDE(_gbm_drift, _square_diffusion, dim=1, noise_dim=1, noise="diagonal", diffusion_dx=dx,
                   args=[-0.5, 0.3])

    with pytest.raises(KernelMismatch, match=r"Invalid diffusion_dx: it is not ∂σ_i/∂x_i of diffusion — at x0 [+−] s "):
        dt.solve(sde(_square_diffusion_dx_wrong), x0=0.0, t1=0.1, h=0.01, paths=2, scheme="milstein")
    assert dt.solve(sde(_square_diffusion_dx), x0=0.0, t1=0.1, h=0.01, paths=2, scheme="milstein").status \
        == "completed"


def test_a_shifted_point_outside_the_domain_is_left_out():
    from dyntools.dynamics.sde import SDE, check_points

    sde = SDE(_gbm_drift, _sqrt_diffusion, dim=1, noise_dim=1, noise="diagonal", diffusion_dx=_sqrt_diffusion_dx,
              args=[0.5, 0.3])
    names = [name for name, _ in check_points(sde, np.zeros(1), 0.0)]
    assert names[0] == "x0" and len(names) == 2 and names[1].startswith("x0 + s")
    assert dt.solve(sde, x0=1.0, t1=0.1, h=0.01, paths=2).status == "completed"


def test_a_term_whose_compiled_code_differs_from_its_source_is_refused(monkeypatch):
    sde = _gbm(drift=_drift_reading_a_global)
    assert dt.solve(sde, x0=1.0, t1=0.1, h=0.01, paths=2).status == "completed"      # compiled with SCALE = 1.5
    monkeypatch.setitem(globals(), "SCALE", 3.0)                                     # the source now reads 3.0
    with pytest.raises(KernelMismatch, match=r"Invalid drift: the compiled term does not compute what its Python "
                                             r"source computes — at x0, out\[0\] is 1\.5 compiled but 3\.0"):
        dt.solve(sde, x0=1.0, t1=0.1, h=0.01, paths=2)


def test_a_sweep_refuses_a_forgetful_kernel_before_its_first_cell(tmp_path):
    """``--optimizer-file`` with a Lion whose compiled kernel forgets momentum: one line, exit 2, nothing written."""
    from tests.conftest import assert_usage_error, run_cli

    root = Path(__file__).resolve().parents[1]
    source = (root / "tests" / "byo_lion.py").read_text().replace(
        "        state[0, i] = b2 * state[0, i] + (1 - b2) * g\n", "").replace("compiled=False):", "compiled=True):")
    assert "state[0, i] =" not in source and "compiled=True):" in source
    (tmp_path / "forgetful.py").write_text(source)
    out = tmp_path / "grid"
    proc = run_cli("sweep", "adamw-grid", "--optimizer-file", tmp_path / "forgetful.py", "--optimizers", "lion",
                   "--lr-grid", "1e-3:1e-2:2", "--wd-grid", "1e-3:1e-1:2", "--epochs", "1", "--out", out,
                   env={"PYTHONPATH": str(root)}, cwd=tmp_path)
    assert_usage_error(proc, "Invalid transform", "compiled() kernel does not step like its update()", out_dir=out)


# ------------------------------------------------------------------ a commutative-noise Milstein term against diffusion

@njit
def _gbm_general_diffusion(t, x, args, out):
    out[0, 0] = args[1] * x[0]


@njit
def _gbm_milstein(t, x, args, dw, h, out):
    out[0] = 0.5 * args[1] * args[1] * x[0] * (dw[0] * dw[0] - h)


@njit
def _gbm_milstein_without_h(t, x, args, dw, h, out):
    out[0] = 0.5 * args[1] * args[1] * x[0] * dw[0] * dw[0]          # the −h part forgotten (the planted defect)


@njit
def _two_noise_diffusion(t, x, args, out):
    """σ = [[x0, 1], [0, x1]]: columns σ¹ = (x0, 0), σ² = (1, x1); L¹σ² = 0, L²σ¹ = (1, 0) — not commutative, so
    a term built from the j1 = j2 part only misses ½(L²σ¹)ΔW₁ΔW₂ in coordinate 0."""
    out[0, 0] = x[0]
    out[0, 1] = 1.0
    out[1, 0] = 0.0
    out[1, 1] = x[1]


@njit
def _two_dim_drift(t, x, args, out):
    out[0] = -x[0]
    out[1] = -x[1]


@njit
def _two_noise_diagonal_only(t, x, args, dw, h, out):
    out[0] = 0.5 * x[0] * (dw[0] * dw[0] - h)
    out[1] = 0.5 * x[1] * (dw[1] * dw[1] - h)


def _commutative(diffusion, milstein, dim, noise_dim):
    from dyntools.dynamics.sde import SDE

    drift = _gbm_drift if dim == 1 else _two_dim_drift
    return SDE(drift, diffusion, dim=dim, noise_dim=noise_dim, noise="commutative", milstein=milstein,
               args=[0.5, 0.3])


def test_a_milstein_term_that_forgets_h_is_refused_before_it_runs():
    with pytest.raises(KernelMismatch) as err:
        dt.solve(_commutative(_gbm_general_diffusion, _gbm_milstein_without_h, 1, 1), x0=2.0, t1=1.0, h=0.01,
                 paths=4, scheme="milstein")
    message = str(err.value)
    assert message.startswith("Invalid milstein: it is not ½ Σ (L^j1 σ^j2)") and "coordinate 0:" in message
    assert "\n" not in message
    res = dt.solve(_commutative(_gbm_general_diffusion, _gbm_milstein, 1, 1), x0=2.0, t1=1.0, h=0.01, paths=4,
                   scheme="milstein")
    assert res.status == "completed"


def test_a_milstein_term_missing_a_cross_term_is_refused_naming_its_coordinate():
    with pytest.raises(KernelMismatch, match=r"Invalid milstein: .* coordinate 0: .*1 of 2 coordinates disagree"):
        dt.solve(_commutative(_two_noise_diffusion, _two_noise_diagonal_only, 2, 2), x0=[1.0, 2.0], t1=0.1, h=0.01,
                 paths=2, scheme="milstein")


def test_the_finite_difference_milstein_term_matches_the_closed_form():
    from dyntools.dynamics.sde import milstein_term_fd

    sde = _commutative(_gbm_general_diffusion, _gbm_milstein, 1, 1)
    dw = np.array([0.7])
    term, _ = milstein_term_fd(sde, np.array([2.0]), 0.0, dw, 0.01)
    assert term[0] == pytest.approx(0.5 * 0.3**2 * 2.0 * (0.49 - 0.01), rel=1e-7)


# ------------------------------------------------------------------ a SymbolicModel's generated kernel against its twin

@pytest.fixture(autouse=True)
def _drop_generated_modules_of_this_test(tmp_path):
    """After each test, the generated modules it imported from its own code cache (some hold a planted, edited
    kernel) leave ``sys.modules``: a later test whose model has the same key must not import them."""
    import sys

    yield
    for name, module in list(sys.modules.items()):
        if name.startswith("dyntools_generated_") and str(getattr(module, "__file__", "")).startswith(str(tmp_path)):
            del sys.modules[name]


def _forget_generated_modules(monkeypatch, tmp_path):
    """A fresh code cache in ``tmp_path``, with no generated module already imported from another."""
    import sys

    monkeypatch.setenv("DYNTOOLS_SYMBOLIC_CACHE", str(tmp_path))
    for name in [m for m in sys.modules if m.startswith("dyntools_generated_")]:
        monkeypatch.delitem(sys.modules, name)


def _tiny_symbolic():
    import sympy as sp

    from dyntools.models.symbolic import SymbolicModel

    a, c, x = sp.symbols("a c x")
    return SymbolicModel(a * sp.tanh(c * x), params=[a, c], inputs=x, name="tiny-tanh")


def _reload_after_edit(model, old: str, new: str):
    """Edit the generated kernel file of ``model`` (the planted defect: a stale or hand-edited cache entry) and
    declare the model again, so that it loads the edited code."""
    import sys

    path = Path(model.code_paths["kernel"])
    source = path.read_text()
    assert source.count(old) == 1
    path.write_text(source.replace(old, new))
    sys.modules.pop(f"dyntools_generated_kernel_{model.key}", None)
    return _tiny_symbolic()


def test_an_edited_generated_kernel_is_refused_even_after_a_clean_run_was_stamped(tmp_path, monkeypatch):
    from dyntools.dynamics import kernel_check

    _forget_generated_modules(monkeypatch, tmp_path)
    data = Data(X[:, :1], np.tanh(0.7 * X[:, 0]))
    model = _tiny_symbolic()
    calls = []
    real = kernel_check.check_twin
    monkeypatch.setattr(kernel_check, "check_twin", lambda *a, **k: calls.append(1) or real(*a, **k))
    for _ in range(2):                       # clean: checked on the first run, stamped, not checked again
        assert dt.train(model, data, dt.sgd(0.1), steps=20, batch=4, seed=0).status in ("completed", "converged")
    assert len(calls) == 1 and model.twin_checked()
    assert (tmp_path / f"twin_{model.key}.py").is_file() and not (tmp_path / f"numpy_{model.key}.py").exists()
    assert not hasattr(model, "_hv")         # the cheapest twin: no Hessian–vector expressions derived
    bad = _reload_after_edit(model, "(-t0*x0*(a0**2 - 1))", "(-t0*x0*(a0**2 - 1.5))")
    assert not bad.twin_checked()            # another file: another stamp
    with pytest.raises(KernelMismatch) as err:
        dt.train(bad, data, dt.sgd(0.1), steps=20, batch=4, seed=0)
    message = str(err.value)
    assert message.startswith("Invalid model 'tiny-tanh': its generated loss_grad does not compute what its "
                              "generated NumPy twin computes") and "label noise, grad[1] is " in message
    assert str(tmp_path) in message and "\n" not in message


def test_a_generated_kernel_that_forgets_the_label_noise_is_refused(tmp_path, monkeypatch):
    _forget_generated_modules(monkeypatch, tmp_path)
    bad = _reload_after_edit(_tiny_symbolic(), "r = h0 - (y[i] + noise[q])", "r = h0 - y[i]")
    with pytest.raises(KernelMismatch, match=r"label noise, the loss is .* by the kernel but .* by the twin"):
        dt.train(bad, Data(X[:, :1], X[:, 0]), dt.sgd(0.1), steps=20, batch=4, seed=0)


# ------------------------------------------------------------------ a user's tuned loop against the generic loop

def _registered(monkeypatch, skip_first_step: bool):
    """A DiagNet subclass whose registered tuned loop wraps the built-in one — faithfully, or skipping the first
    step of every chunk (the planted defect)."""
    from dyntools.dynamics import fast
    from dyntools.dynamics.fast import probe

    monkeypatch.setattr(fast, "TUNED", dict(fast.TUNED))
    monkeypatch.setattr(probe, "_probed", set())
    calls = []

    class MyNet(dt.DiagNet):
        pass

    def select(model, setting):
        inner = fast.select(dt.DiagNet(model.d), setting)
        if inner is None:
            return None

        def my_loop(*args, workers=None):
            calls.append(args[2:4])
            args = list(args)
            args[2] += int(skip_first_step and args[2] < args[3])
            return inner(*args, workers=workers)

        return my_loop

    fast.register(MyNet, select)
    return MyNet(30), calls


def test_a_tuned_loop_that_skips_a_step_is_refused_before_training(monkeypatch):
    model, calls = _registered(monkeypatch, skip_first_step=True)
    data = dt.data.sparse_regression(20, 30, 3, seed=0)
    with pytest.raises(KernelMismatch) as err:
        dt.train(model, data, dt.sgd(0.05), steps=200, chunks=4)
    message = str(err.value)
    assert message.startswith("Invalid tuned loop _registered.<locals>.select.<locals>.my_loop registered for MyNet: "
                              "it does not compute what the generic loop computes — after 5 steps from the same θ "
                              "and the same indices, theta[(0, ") and "\n" not in message
    assert calls == [(0, 5)]                          # the probe only: no chunk of the run started


def test_a_faithful_tuned_loop_is_probed_once_and_runs(monkeypatch):
    model, calls = _registered(monkeypatch, skip_first_step=False)
    data = dt.data.sparse_regression(20, 30, 3, seed=0)
    for _ in range(2):
        res = dt.train(model, data, dt.sgd(0.05), steps=200, chunks=4)
        assert res.config["path"] == "tuned"
    assert calls == [(0, 5)] + [(0, 50), (50, 100), (100, 150), (150, 200)] * 2
    ref = dt.train(dt.DiagNet(30), data, dt.sgd(0.05), steps=200, fast=False)      # the generic loop
    np.testing.assert_allclose(res["final_theta"], ref["final_theta"], rtol=1e-12)


def test_a_built_in_tuned_loop_is_not_probed(monkeypatch):
    from dyntools.dynamics.fast import probe

    monkeypatch.setattr(probe, "check_tuned_loop", lambda *a, **k: pytest.fail("probed a built-in loop"))
    res = dt.train(dt.DiagNet(30), dt.data.sparse_regression(20, 30, 3, seed=0), dt.sgd(0.05), steps=20)
    assert res.config["path"] == "tuned"


def test_the_probe_leaves_no_steps_in_a_loop_that_keeps_state(monkeypatch):
    """A loop object counting its steps across chunks (as the toy's counters do) counts the run's steps only."""
    from dyntools.dynamics import fast
    from dyntools.dynamics.fast import probe

    monkeypatch.setattr(fast, "TUNED", dict(fast.TUNED))
    monkeypatch.setattr(probe, "_probed", set())

    class Counting:
        def __init__(self, inner):
            self.inner, self.steps = inner, 0

        def __call__(self, *args, workers=None):
            self.steps += args[3] - args[2]
            return self.inner(*args, workers=workers)

    class CountedNet(dt.DiagNet):
        pass

    loops = []
    fast.register(CountedNet, lambda model, s: loops.append(Counting(fast.select(dt.DiagNet(model.d), s)))
                  or loops[-1])
    res = dt.train(CountedNet(30), dt.data.sparse_regression(20, 30, 3, seed=0), dt.sgd(0.05), steps=40)
    assert res.config["path"] == "tuned" and len(loops) == 1 and loops[0].steps == 40
