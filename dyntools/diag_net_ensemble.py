"""Ensembles of the authors' diagonal-net runs over perturbed starts: the starts and the statistics (seed 004;
issue 23).

At the paper's large step (η = 0.282 for SGD on its own data set) the run sits at the edge of
stability: whether one start diverges, and its final ℓ0, depend on round-off — a different
processor (FMA contraction, vector width) or kernel flips them. So the report's verdicts on the
paper's run come from an ensemble: ``starts`` initial points ``u₀ = α·1 ⊙ (1 + s_k ξ_k)``, ``v₀ = 0``,
with relative sizes ``s_k`` log-spaced over ``[1e-12, 1e-8]`` and ``ξ_k ~ N(0, I)`` drawn from the
stream seeded ``(seed, k)``; every schedule of a start shares that start, the data set and the SGD
sample sequence (the authors'). Per schedule: the fraction that survive (Wilson 95 % interval) and
the quantiles of the final ℓ0, test loss, Jacobian rank and median column norm of φ over the
survivors; verdicts from :mod:`dyntools.verdicts` against the notebook's final numbers. The runs themselves
are ``run_ensemble`` of ``simulations/diag_nets.py`` (the experiment's presets and schedules).
"""

from __future__ import annotations

import numpy as np

from dyntools import verdicts as V

#: Relative sizes of the perturbations: log-spaced over this range.
PERTURBATION_RANGE = (1e-12, 1e-8)
#: Ensemble sizes: full report and ``--quick``.
STARTS = {"paper-sgd": 48, "paper-gd": 16}
QUICK_STARTS = 8
#: Tolerance factors of a published number against the ensemble's [q10, q90] band
#: (:func:`dyntools.verdicts.against_reference`): ℓ0 within 10 %, the test loss within ×2 (at the large
#: step it moves by up to ×10 from one step to the next).
TOLERANCE = {"l0": 1.1, "test_loss": 2.0}


def perturbed_starts(d: int, starts: int, *, seed: int = 0, alpha: float = 0.1,
                     scale_range=PERTURBATION_RANGE) -> tuple[np.ndarray, np.ndarray]:
    """``(u0, scales)``: ``starts`` initial points ``α·1 ⊙ (1 + s_k ξ_k)`` (shape (starts, d)) and their
    relative sizes ``s_k`` (log-spaced over ``scale_range``), ``ξ_k`` from the stream seeded ``(seed, k)``."""
    lo, hi = scale_range
    if not 0 < lo <= hi:
        raise ValueError(f"Invalid scale_range: {scale_range} (need 0 < low <= high)")
    scales = np.geomspace(lo, hi, starts)
    xi = np.stack([np.random.default_rng([seed, k]).standard_normal(d) for k in range(starts)])
    return alpha * (1.0 + scales[:, None] * xi), scales


def schedule_stats(result) -> list[dict]:
    """Per schedule: survivors and the spreads (:class:`~dyntools.verdicts.Spread` or None) of the final
    ℓ0, test loss, train loss, rank and median column norm over the survivors."""
    from dyntools.metrics import NORM_QUANTILES

    med = list(NORM_QUANTILES).index(0.5)
    out = []
    for g, spec in enumerate(result.config["runs"]):
        alive = result["diverged_at"][g] < 0
        pick = {"l0": result["l0"][g, :, -1], "test_loss": result["test_loss"][g, :, -1],
                "train_loss": result["train_loss"][g, :, -1], "rank": result["rank"][g, :, -1],
                "column_norm": result["col_norm_q"][g, :, -1, med]}
        out.append({"label": spec["label"], "starts": int(alive.size), "survived": int(alive.sum()),
                    "values": {k: np.where(alive, v, np.nan) for k, v in pick.items()}})
    return out


def notebook_verdicts(stats: list[dict], reference) -> list[str]:
    """Per schedule: the notebook's final (train loss, test loss, ℓ0) against the ensemble — ℓ0 and test
    loss each by :func:`~dyntools.verdicts.against_reference` (:data:`TOLERANCE`), combined."""
    out = []
    for s, (_, te0, l00) in zip(stats, reference):
        out.append(V.combine([V.against_reference(s["values"]["l0"], l00, tolerance=TOLERANCE["l0"]),
                              V.against_reference(s["values"]["test_loss"], te0, tolerance=TOLERANCE["test_loss"])]))
    return out


def column_norm_verdict(stats: list[dict]) -> str:
    """The label-noise conjecture's quantity on the ensemble: the large-step run with the longest
    large-step phase (the last schedule) against the small step (the first), by
    :func:`~dyntools.verdicts.ordered` on the final median column norms of the survivors."""
    return V.ordered(stats[-1]["values"]["column_norm"], stats[0]["values"]["column_norm"])


def column_norm_sentence(verdict: str, stats: list[dict]) -> str:
    """The sentence the report prints for :func:`column_norm_verdict`."""
    large, small = stats[-1], stats[0]
    return {V.SMALLER: "The large-step runs' column norms are the smaller (their 90 % quantile below the small "
                       "step's 10 % quantile), as the conjecture has it.",
            V.LARGER: "The large-step runs' column norms are the LARGER (their 10 % quantile above the small "
                      "step's 90 % quantile), against the conjecture.",
            V.OVERLAPPING: "The two ensembles' column norms overlap (neither's 10–90 % band lies beyond the "
                           "other's): no ordering can be claimed.",
            V.NOT_CHECKABLE: f"Not checkable: {large['survived']} and {small['survived']} starts survived, fewer "
                             f"than {V.MIN_ALIVE} on one side."}[verdict]


def rows(stats: list[dict], reference=None, verdicts=None) -> list[dict]:
    """The report's table: one row per schedule."""
    out = []
    for g, s in enumerate(stats):
        v = s["values"]
        row = {"schedule": s["label"], "survived": V.fraction_text(s["survived"], s["starts"]),
               "ℓ0": V.spread_text(v["l0"]), "test loss": V.spread_text(v["test_loss"]),
               "rank φ": V.spread_text(v["rank"]), "median column norm": V.spread_text(v["column_norm"])}
        if reference is not None:
            row["notebook ℓ0 / test loss"] = f"{reference[g][2]} / {reference[g][1]:.3g}"
            # the band rule's outcome beside the three words every headline uses
            row["verdict"] = f"{V.three_words(verdicts[g])} ({verdicts[g]})"
        out.append(row)
    return out


def numbers(stats: list[dict], verdicts=None, column_verdict=None) -> dict:
    """Headline numbers for ``--json``: survivors with their interval and the spreads, per schedule."""
    out = {}
    for g, s in enumerate(stats):
        spreads = {k: V.spread(v) for k, v in s["values"].items()}
        out[s["label"]] = {"starts": s["starts"], "survived": s["survived"],
                           "survived_ci95": list(V.wilson_interval(s["survived"], s["starts"])),
                           **{k: (None if sp is None else sp.as_dict()) for k, sp in spreads.items()}}
        if verdicts is not None:
            out[s["label"]]["verdict"] = verdicts[g]
    if column_verdict is not None:
        out["column_norms_large_vs_small"] = column_verdict
    return out
