"""The schedule-family entry: every run used exactly its schedule's η_t (the trainer's lrs against the
schedule's own multipliers), the reactive plateau run only ever cuts by its factor, and the figure passes
the figure check."""

from __future__ import annotations

import numpy as np
from dyntools.simulations import schedule_family as SF

from dyntools.plots import check


def test_each_run_used_its_schedule_and_the_figure_is_clean(tmp_path, monkeypatch):
    steps = 150
    names, results = SF.run(steps, seeds=1)
    family = SF.schedules(steps)
    assert names == list(family) and len(names) == 7
    for name, res in zip(names, results):
        eta = np.broadcast_to(res["lrs"][0], (steps,))
        if name == "reduce-on-plateau":
            ratios = eta[1:] / eta[:-1]
            assert np.all(np.isclose(ratios, 1.0) | np.isclose(ratios, 0.3)) and eta[0] == SF.LR
        else:
            expected = SF.LR * np.broadcast_to(family[name].multipliers(steps), (steps,))
            np.testing.assert_allclose(eta, expected, rtol=1e-15)
        assert np.isfinite(res["test_loss"]).all()
    monkeypatch.setenv(check.ENV, "strict")
    from dyntools.plots import schedule_family

    assert schedule_family.plot(names, results, SF.LR, tmp_path, ("png",))[0].is_file()
