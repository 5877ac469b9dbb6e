"""The trainer's table of tuned loops (dyntools.dynamics.fast): keyed by model type, chosen by the setting.

Whether each tuned loop computes the generic loop's run is tested with the loop (test_engine.py,
test_mlp.py, test_mlp_float32.py, test_toy_stabilization.py); here: which loop the trainer is handed."""

from __future__ import annotations

import pytest

from dyntools.dynamics import fast
from dyntools.dynamics.fast import diag_net as fast_diag_net
from dyntools.dynamics.fast import mlp as fast_mlp
from dyntools.dynamics.fast import quadratic_toy as fast_toy
from dyntools.models.diag_net import DiagNet
from dyntools.models.least_squares import LeastSquares
from dyntools.models.mlp import MLP
from dyntools.models.quadratic_toy import QuadraticToy, ToyModel
from dyntools.optim import optimizers as O
from dyntools.optim.compiled import compile_runs


def setting(**changes) -> dict:
    """The trainer's setting (with ``plain_sgd`` read from the optimizers' compiled runs, as the trainer does)."""
    base = {"sampler": "with-replacement", "batch": 1, "label_noise": 0.0, "optimizers": [O.sgd(0.1)],
            "kernel": "numba", "step_loss": False}
    out = {**base, **changes}
    return {**out, "plain_sgd": compile_runs(out["optimizers"]).plain_sgd}


def test_each_built_in_model_gets_its_loop_for_the_setting_it_knows():
    assert fast.select(DiagNet(5), setting()) is fast_diag_net.advance
    for sampler in ("full", "with-replacement", "distinct"):                  # dt.train's default among them
        assert fast.select(MLP((2, 3, 1)), setting(sampler=sampler)) is fast_mlp.regression_loop
        assert fast.select(MLP((2, 3, 1)), setting(sampler=sampler, batch=8)) is fast_mlp.regression_loop
    for sampler in ("epoch", "replay"):                                        # the generic loop draws these
        assert fast.select(MLP((2, 3, 1)), setting(sampler=sampler)) is None
    assert fast.select(MLP((2, 3, 1)), setting(kernel="numpy")) is None
    assert fast.select(MLP((2, 3, 1), dropout=0.5), setting()) is None
    assert fast.select(MLP((2, 3, 2), head="cross-entropy"), setting(batch=4)) is fast_mlp.cross_entropy_loop
    assert fast.select(MLP((2, 3, 2), head="cross-entropy", dropout=0.5), setting(batch=4)) is None
    toy = ToyModel(QuadraticToy.uniform(theta_star=1.0, x_min=1.0, x_max=1.05, n=10, seed=0))
    loop = fast.select(toy, setting())
    assert isinstance(loop, fast_toy.FastPath) and loop.toy is toy.toy and loop.eta == 0.1


@pytest.mark.parametrize("changes", [{"optimizers": [O.sgd(0.1, momentum=0.5)]},
                                     {"optimizers": [O.sgdw(0.1, weight_decay=0.01)]},
                                     {"optimizers": [O.sgd(0.1), O.adam(0.1)]}, {"batch": 4}, {"kernel": "numpy"},
                                     {"label_noise": 0.1}, {"step_loss": True}, {"sampler": "epoch"}])
def test_a_setting_outside_the_tuned_loop_gets_none(changes):
    assert fast.select(DiagNet(5), setting(**changes)) is None


def test_a_model_without_an_entry_gets_none_and_a_subclass_inherits_its_base_entry():
    assert fast.select(LeastSquares(3), setting()) is None

    class WiderNet(DiagNet):
        pass

    assert fast.select(WiderNet(5), setting()) is fast_diag_net.advance


def test_a_user_registers_a_loop_for_their_own_model(monkeypatch):
    monkeypatch.setattr(fast, "TUNED", dict(fast.TUNED))

    class Mine(DiagNet):
        pass

    def my_loop(*args, **kwargs):
        return None

    fast.register(Mine, lambda model, s: my_loop if s["batch"] == 1 else None)
    assert fast.select(Mine(5), setting()) is my_loop
    assert fast.select(Mine(5), setting(batch=2)) is None
    assert fast.select(DiagNet(5), setting()) is fast_diag_net.advance
    with pytest.raises(TypeError, match="model_type"):
        fast.register(Mine(5), lambda model, s: None)
    with pytest.raises(TypeError, match="selector"):
        fast.register(Mine, "advance")


def test_a_loop_taking_the_step_by_pointer_is_declared_not_probed(monkeypatch):
    """The trainer hands the run set's own step structures only to the loops declared to call the step through a
    function pointer (the MLP's; a user's through ``register(..., step_by_pointer=)``), never by an attribute."""
    monkeypatch.setattr(fast, "TUNED", dict(fast.TUNED))
    monkeypatch.setattr(fast, "STEP_BY_POINTER", set(fast.STEP_BY_POINTER))
    for loop in (fast_mlp.regression_loop, fast_mlp.cross_entropy_loop, fast_mlp.cross_entropy_loop_flushed):
        assert fast.takes_step_by_pointer(loop)
    assert not fast.takes_step_by_pointer(fast_diag_net.advance)

    class Mine(DiagNet):
        pass

    def by_pointer(*args, **kwargs):
        return None

    def by_name(*args, **kwargs):
        return None

    by_name.own_step = True                        # an attribute declares nothing
    fast.register(Mine, lambda model, s: by_pointer, step_by_pointer=[by_pointer])
    assert fast.takes_step_by_pointer(by_pointer) and not fast.takes_step_by_pointer(by_name)
    with pytest.raises(TypeError, match="step_by_pointer"):
        fast.register(Mine, lambda model, s: None, step_by_pointer=["by_pointer"])


def test_no_model_carries_a_tuned_loop_hook():
    for cls in (DiagNet, MLP, ToyModel):
        assert not hasattr(cls, "fast_path")
