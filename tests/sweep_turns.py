"""A sweep cell whose warm-up logs when it runs (tests/test_sweep.py: the workers of a local pool warm up in
turn). The warm-up stands for a cold compile: it holds the processor for ``config["warm"]`` seconds."""

import os
import time

from dyntools.sweep import demo_cell


def logged_cell(config: dict, cell: dict, seed: int, index: int) -> dict:
    return demo_cell(config, cell, seed, index)


def _warm_up(config: dict) -> None:
    start = time.monotonic()
    while time.monotonic() - start < config["warm"]:     # busy, as a compile is
        pass
    with open(os.path.join(config["warm_log"], f"{os.getpid()}.txt"), "w", encoding="utf-8") as fh:
        fh.write(f"{start} {time.monotonic()}\n")


logged_cell.warm_up = _warm_up


def compiling_cell(config: dict, cell: dict, seed: int, index: int) -> dict:
    return demo_cell(config, cell, seed, index)


def _compiling_warm_up(config: dict) -> None:
    """Compiles a fresh function (a numba compile event, as a warm-up with empty caches has)."""
    from numba import njit

    njit(lambda x: x + 1.0)(1.0)


compiling_cell.warm_up = _compiling_warm_up
