"""The one alias table (issue 37, item 1): every reader of an optimizer name reads ``dyntools.optim.ALIASES``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyntools as dt
from dyntools.optim import aliases, torch_names
from dyntools.optim import optimizers as O

ROOT = Path(__file__).resolve().parents[1]
BUILT_IN = ("sgd", "sgdw", "adam", "adamw", "adamw_l1", "adamw_l1l2", "adagrad", "rmsprop", "rmsprop_bc")


def test_every_existing_name_is_an_alias_and_builds_its_optimizer():
    assert tuple(aliases.ALIASES) == BUILT_IN
    assert tuple(O.FACTORIES) == BUILT_IN and len(O.FACTORIES) == len(BUILT_IN)
    for name in BUILT_IN:
        opt = dt.optim.make(name, lr=0.01, weight_decay=0.1)
        assert opt.name == name and O.FACTORIES[name] is aliases.ALIASES[name].factory
        assert getattr(dt, name) is getattr(dt.optim, name) is aliases.ALIASES[name].factory


def test_make_names_the_choices_of_an_unknown_name():
    with pytest.raises(ValueError, match=r"Invalid optimizer: 'lion' \(must be one of 'sgd', 'sgdw', 'adam'"):
        dt.optim.make("lion", lr=0.1)


def test_the_package_exports_read_the_table():
    assert set(BUILT_IN) <= set(dt.__all__) and set(BUILT_IN) <= set(dir(dt))
    assert "Optimizer" in dt.__all__ and "train" in dt.__all__ and dt.__all__[:3] == ["RunResult", "save",
                                                                                     "__version__"]
    assert len(dt.__all__) == len(set(dt.__all__))
    with pytest.raises(AttributeError, match="has no attribute 'lion'"):
        dt.lion     # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute '_private'"):
        dt._private     # noqa: B018


def test_a_second_factory_under_a_taken_name_is_refused_and_ranges_are_checked():
    def adamw(lr=1e-3, weight_decay=0.0):   # another function of the same name
        raise AssertionError("never called")

    with pytest.raises(ValueError, match="Invalid alias: 'adamw' is already the optimizer"):
        aliases.alias()(adamw)
    assert aliases.ALIASES["adamw"].factory is O.adamw
    aliases.alias(torch="AdamW")(O.adamw)   # declaring the same factory again changes nothing
    assert aliases.ALIASES["adamw"].factory is O.adamw
    for bad in ((0.0, 1.0), (1.0, 0.1), (1e-3, float("inf"))):
        with pytest.raises(ValueError, match="Invalid lr_range"):
            aliases.alias(lr_range=bad)


def test_torch_names_come_from_the_aliases():
    assert torch_names.optimizers() == {"SGD": "sgd", "Adam": "adam", "AdamW": "adamw", "Adagrad": "adagrad",
                                        "RMSprop": "rmsprop"}
    for torch, name in torch_names.optimizers().items():
        assert torch_names.torch_name(name) == torch
        assert torch_names.optimizer_from_torch(torch, {"lr": 0.01}).name == name
    assert torch_names.torch_name("sgdw") is None and torch_names.torch_name("rmsprop_bc") is None
    with pytest.raises(ValueError, match="Invalid torch optimizer: 'SGDW'"):
        torch_names.optimizer_from_torch("SGDW", {})
    with pytest.raises(ValueError, match="Invalid optimizer: 'Adam'"):
        torch_names.torch_name("Adam")


def test_the_grid_reads_its_ranges_choices_and_momentum_from_the_aliases():
    from dyntools.classifier_cell import make_optimizer
    from dyntools.heatmap_grid import MAX_OPTIMIZERS, AdamWGridParams, GridConfig
    from dyntools.spec import params_of

    cfg = GridConfig(optimizers=("sgd", "adamw", "adagrad"))
    assert [cfg.lr_range_of(n) for n in cfg.optimizers] == [(1e-3, 1.0), (1e-4, 1e-1), (1e-3, 1.0)]
    assert GridConfig(optimizers=("adamw",), lr_range=(0.5, 0.6)).lr_range_of("adamw") == (0.5, 0.6)
    prm = dict((f.name, p) for f, p in params_of(AdamWGridParams))["optimizers"]
    assert prm.max_len == MAX_OPTIMIZERS > len(aliases.ALIASES)      # a bound on the input, not a table's length
    assert all(name in prm.help for name in BUILT_IN)
    with pytest.raises(ValueError, match="Invalid optimizer: 'lion'"):
        GridConfig(optimizers=("lion",))
    for name, with_trace in (("sgd", True), ("sgdw", True), ("rmsprop", False), ("adamw", False)):
        opt = make_optimizer(name, 0.01, 0.1, 0.9)
        assert ("trace" in opt.chain.names()) == with_trace, name
        assert "momentum_after" not in opt.chain.names()    # --momentum reaches SGD and SGDW only


def test_the_docs_list_has_one_row_per_alias():
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        import optimizer_list
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))
    page = optimizer_list.page()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == list(BUILT_IN)
    assert "| `adamw` | `torch.optim.AdamW` | `scale_by_adam → add_decay` |" in page
    assert "| `adam` | `torch.optim.Adam` | `add_decay → scale_by_adam` |" in page
    assert "| `sgdw` | — | `trace → add_decay` |" in page
    assert all(r.count("|") - r.count("\\|") == 6 for r in rows)      # no cell breaks the table


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab |`*_\\[]<>$:\n"), max_size=40))
def test_a_docstring_never_breaks_its_table_cell(text):
    """Whatever a factory's docstring holds, its cell in the optimizer list has no unescaped ``|`` and no
    newline, and its code spans are paired."""
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        import optimizer_list
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))
    cell = optimizer_list._text(text)
    assert "\n" not in cell
    assert "|" not in cell.replace("\\|", "")
    assert cell.count("`") % 2 == 0
