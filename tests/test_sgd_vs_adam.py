"""The SGD/SGDW/Adam/AdamW entry's verdicts follow from the sweep's numbers, ties included, and say
"not measured" when an optimizer's every cell diverged."""

from __future__ import annotations

import math

import pytest
from dyntools.simulations.sgd_vs_adam import COMPETES, verdicts


def _summary(best, cells):
    return {k: {"best_val_acc": b, "cells_above_threshold": c} for k, b, c in zip(("sgd", "sgdw", "adam", "adamw"),
                                                                                    best, cells)}


@pytest.mark.parametrize("best, cells, competes, widens", [
    ((0.93, 0.92, 0.94, 0.955), (1, 2, 2, 5), True, True),
    ((0.95, 0.92, 0.94, 0.95 - COMPETES), (3, 3, 2, 2), True, True),            # ties hold
    ((0.99, 0.92, 0.94, 0.95), (3, 2, 2, 5), False, False),
    ((math.nan, math.nan, 0.94, 0.95), (0, 0, 2, 5), None, True),                # SGD all diverged
    ((0.93, 0.92, 0.94, math.nan), (1, 2, 2, 0), None, False),
])
def test_verdicts(best, cells, competes, widens):
    v = verdicts(_summary(best, cells))
    assert v["competes"] is competes and v["widens"] is widens
