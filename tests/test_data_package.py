"""dyntools.data is a package (one module per family) with the public names of the old single module."""

from __future__ import annotations

import importlib
import pkgutil

import dyntools as dt
import dyntools.data as data

PUBLIC = ("sparse_regression", "paper_diag_net_data", "paper_sgd_indices", "regression_1d", "teacher_student",
          "unit_sphere", "spirals", "digits", "RegressionData", "TeacherStudentData", "ClassificationData",
          "PAPER_SIZES", "PAPER_DATA_SEED", "PAPER_INDEX_SEED", "REGRESSION_1D_X", "REGRESSION_1D_Y")


def test_the_old_public_names_are_exported_from_their_family_modules():
    for name in PUBLIC:
        value = getattr(data, name)
        assert name in data.__all__
        assert not isinstance(value, type(data)), f"dyntools.data.{name} is a module, not the {name} of old"
    assert dt.data.sparse_regression.__module__ == "dyntools.data.sparse_linear"
    assert dt.data.spirals.__module__ == "dyntools.data.interleaved_spirals"


def test_no_family_module_is_named_after_a_public_name():
    """``import dyntools.data.<m> as x`` returns the package attribute ``<m>`` first: a module named
    like a function would hand back the function."""
    modules = {m.name for m in pkgutil.iter_modules(data.__path__)}
    assert modules >= {"containers", "sparse_linear", "one_dimensional", "teachers", "interleaved_spirals",
                       "handwritten_digits", "voronoi"}
    assert not modules & (set(data.__all__) - {"voronoi"})
    for name in modules:
        assert importlib.import_module(f"dyntools.data.{name}").__name__ == f"dyntools.data.{name}"


def test_the_voronoi_environment_is_reachable_under_one_name():
    assert dt.data.voronoi is importlib.import_module("dyntools.data.voronoi")
    assert not hasattr(dt, "data_voronoi")                  # its name before dyntools/data/ was a package: gone
    env = dt.data.voronoi.voronoi(40, n_test=10, k=5, seed=0)
    assert env.X.shape == (40, 2) and env.k == 5
