"""One declaration of where a sweep's cells run (dyntools/sweep_backend.py) and the heatmap grid's settings
derived from its command's parameters (dyntools/heatmap_grid.py)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dyntools import heatmap_grid as H
from dyntools.plugins import experiments
from dyntools.spec import params_of
from dyntools.sweep_backend import GROUP, SweepBackendParams

BACKEND = tuple(f.name for f in dataclasses.fields(SweepBackendParams))


def test_every_sweep_command_takes_its_backend_options_from_the_one_declaration():
    sweeps = experiments("sweep")
    backed = {name for name, exp in sweeps.items() if issubclass(exp.params, SweepBackendParams)}
    assert {"adamw-grid", "grokking", "voronoi-ladder"} <= backed
    for name in backed:                          # the fields are the mixin's own objects, not copies
        fields = {f.name: f for f in dataclasses.fields(sweeps[name].params)}
        for base in dataclasses.fields(SweepBackendParams):
            assert fields[base.name].metadata["param"] is base.metadata["param"], (name, base.name)
    for name, exp in sweeps.items():             # no sweep copies the five options (local-only ones take --workers)
        names = {f.name for f, _ in params_of(exp.params)}
        assert not set(BACKEND) <= names or name in backed, f"{name} copies the backend options"


def test_backend_hands_run_sweep_its_keywords_and_check_refuses_two_backends():
    p = H.AdamWGridParams(workers=3, retries=0, connect_timeout=2.5)
    assert p.backend() == {"workers": 3, "dask_local": None, "scheduler": None, "connect_timeout": 2.5,
                           "retries": 0}
    assert {prm.group for f, prm in params_of(p) if f.name in BACKEND} == {GROUP}
    p.check_backend()
    with pytest.raises(ValueError, match="--dask-local: cannot be combined with --scheduler"):
        H.AdamWGridParams(dask_local=2, scheduler="tcp://127.0.0.1:8786").check_backend()


def test_grid_config_fields_are_the_params_fields_but_the_axes_and_the_backend():
    params = {f.name for f in dataclasses.fields(H.AdamWGridParams)}
    config = {f.name for f in dataclasses.fields(H.GridConfig)}
    assert config - params == {"lr_range", "n_lr", "wd_range", "n_wd", "learning_curve_points", "extra"}
    assert params - config == set(H.NOT_SETTINGS)
    defaults = H.AdamWGridParams()
    for f in dataclasses.fields(H.GridConfig):       # each shared setting defaults to the command's default
        if f.name in params:
            assert f.default == getattr(defaults, f.name), f.name


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 5000), epochs=st.floats(1.0, 500.0), momentum=st.floats(0.0, 0.99),
       threshold=st.floats(0.0, 1.0), paired=st.booleans(), batch_norm=st.booleans(),
       schedule=st.sampled_from(["constant", "cosine", "step"]), curve_points=st.integers(0, 50),
       lr=st.tuples(st.floats(1e-5, 1e-2), st.floats(1e-2, 1.0, exclude_min=True), st.integers(1, 20)),
       wd=st.tuples(st.floats(1e-8, 1e-3), st.floats(1e-3, 10.0, exclude_min=True), st.integers(2, 30)))
def test_grid_config_carries_every_setting_of_the_command(n, epochs, momentum, threshold, paired, batch_norm,
                                                          schedule, curve_points, lr, wd):
    # the high ends exclude the low ends' maximum: a grid of N > 1 points with HIGH = LOW is refused (a valid
    # command is what this test builds; the refusal: tests/test_adamw_grid_cli.py, test_adamw_heatmaps.py)
    p = H.AdamWGridParams(n=n, epochs=epochs, momentum=momentum, threshold=threshold, paired=paired,
                          batch_norm=batch_norm, schedule=schedule, curve_points=curve_points, lr_grid=lr,
                          weight_decay=wd, batch_size=2, workers=2)
    cfg = H.grid_config(p)
    for f in dataclasses.fields(p):
        if f.name not in H.NOT_SETTINGS:
            assert getattr(cfg, f.name) == getattr(p, f.name), f.name
    assert (cfg.lr_range, cfg.n_lr) == (lr[:2], lr[2]) and (cfg.wd_range, cfg.n_wd) == (wd[:2], wd[2])
    assert cfg.learning_curve_points == curve_points
    assert "workers" not in cfg.as_json()           # where the cells run is not a setting of the grid
