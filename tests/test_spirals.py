"""The spiral data of the (lr, weight decay) heatmaps (the classifier itself: tests/test_mlp.py)."""

import numpy as np
import pytest

from dyntools import data


def test_spirals_shapes_balance_and_determinism():
    d = data.spirals(300, classes=3, turns=2.0, noise=0.1, seed=1)
    assert d.X.shape == (300, 2) and d.X_val.shape == (300, 2)
    assert np.bincount(d.y).tolist() == [100, 100, 100]
    d2 = data.spirals(300, classes=3, turns=2.0, noise=0.1, seed=1)
    np.testing.assert_array_equal(d.X, d2.X)
    assert not np.array_equal(d.X, data.spirals(300, classes=3, turns=2.0, noise=0.1, seed=2).X)
    # without noise every point lies on its arm: angle − 2π·turns·r ≡ 2πk/K
    clean = data.spirals(90, classes=3, turns=1.25, noise=0.0, seed=0)
    r = np.hypot(*clean.X.T)
    phase = np.arctan2(clean.X[:, 1], clean.X[:, 0]) - 2 * np.pi * 1.25 * r - 2 * np.pi * clean.y / 3
    np.testing.assert_allclose(np.cos(phase), 1.0, atol=1e-9)


@pytest.mark.parametrize("kwargs, match", [({"n": 1}, "Invalid n"), ({"turns": 0}, "Invalid turns"),
                                           ({"noise": -1}, "Invalid noise"),
                                           ({"classes": 1}, "Invalid classes")])
def test_spirals_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        data.spirals(**kwargs)


def test_digits_is_available_from_a_plain_install():
    from dyntools.heatmap_grid import GridConfig

    cfg = GridConfig(dataset="digits", n_lr=1, n_wd=1)   # scikit-learn is a runtime dependency
    assert cfg.classes == 10 and cfg.n + cfg.n_val == 1797
    with pytest.raises(ValueError, match="Invalid dataset"):
        GridConfig(dataset="imagenet")
    with pytest.raises(ValueError, match="Invalid data_dir"):      # image files: read from --data-dir only
        GridConfig(dataset="mnist")
