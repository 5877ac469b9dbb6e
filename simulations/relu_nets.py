"""Small ReLU networks: loss stabilization and sparse features (Andriushchenko et al. 2023, seed 004).

The paper's three simple-network experiments, with the published parameters:

1. ``1d`` — two-layer ReLU network, m = 100 hidden units with first-layer biases, on the 12-point
   1-D regression; SGD batch 1 for 10^4.5 iterations; η = 2·10⁻⁴ with a linear warm-up of factor
   400·L (L the schedule length before the decay, as a fraction of the run: ×8 for the 2 % run,
   ×200 for the 50 % run; ramp measured against the whole run) until the decay, decayed ×2.5 at 2 %
   versus ×3 at 50 %.
2. ``teacher2`` — two-layer teacher–student, n = 15 points on the unit circle (d = 2), teacher of 3
   neurons, student of 20 (init scales 0.5 and 0.0), 10^4.15 iterations; η = 0.13 constant versus
   η = 0.455 decayed ×2 / ×4 / ×5 at 10 % / 30 % / 50 %.
3. ``teacher3`` — three-layer teacher–student, n = 50 on the sphere of R⁵, teacher [2, 2], student
   [10, 10] with biases (init 0.8), 10⁴ iterations; η = 0.011 constant versus η = 0.04 with a power
   warm-up (×6, exponent 0.5) until the decay, decayed ×3.5 / ×2.5 / ×5 at 10 % / 30 % / 50 %.

Each run trains every schedule from the same initialization and data and records the train/test
loss, the feature sparsity coefficient of each hidden layer, the rank of the Jacobian φ_θ(X) and
(in 1-D) the number of distinct kinks. :func:`simulate` also repeats the final numbers over several
seeds (data, teacher and initialization all change with the seed) for the table.

Choices the source does not fix (stated so they can be changed): the 1-D init scale s = 1
(``--init-scale``; at s = 1 the per-example sharpness 2‖∇h‖² at init puts η = 2·10⁻⁴ near the
stability edge, as the paper's choice of η suggests); biases start at 0; a teacher–student student
has biases only in ``teacher3`` (the two-layer student and teacher have none); Jacobian rank
threshold 10⁻⁴ relative (the paper's code), feature correlation threshold 0.99.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dyntools import memory, validation
from dyntools.plots import relu as relu_figures
from dyntools.relu_settings import SETTINGS, Setting, build, get_setting
from dyntools.result_schema import derive
from dyntools.spec import Entry, Experiment, RunContext, param

TITLE = "Small ReLU networks: loss stabilization and sparse features (seed 004)"


@dataclass(frozen=True)
class ReluParams:
    """``dyntools simulate relu``: a setting of :data:`SETTINGS`, some of its fields replaced (``None``: the
    setting's value), and the measurement options."""

    setting: str = param("teacher3", choices=tuple(SETTINGS), help="the experiment")
    seeds: int = param(5, low=1, high=1000, help="seeds in the final table")
    log10_steps: float | None = param(None, kind="float", low=0.0, low_open=True, high=9.0,
                                      help="iterations = 10^x (default: the setting's; ≤ 9: hours per run)")
    records: int = param(60, low=2, high=10**4, help="recorded steps on a log grid")
    method: str | None = param(None, kind="str", choices=("sgd", "gd"), help="SGD or full-batch GD (default sgd)")
    batch: int | None = param(None, kind="int", low=1, high=10**6, help="SGD mini-batch size (default 1)")
    n: int | None = param(None, kind="int", low=1, high=10**6,
                          help="training points (teacher-student settings; n × parameters ≤ 2^28: the Jacobian)")
    d: int | None = param(None, kind="int", low=1, high=10**4, help="teacher input dimension (teacher-student settings)")
    width: tuple | None = param(None, kind="ints", low=1, high=10**4, max_len=16, metavar="M[,M…]", help="student hidden widths, e.g. 10,10")
    student_d: int | None = param(None, kind="int", low=1, high=10**4, label="student input dimension",
                                  help="student input dimension (must equal --d; default: equal)")
    teacher_widths: tuple | None = param(None, kind="ints", low=1, high=10**4, max_len=16, metavar="K[,K…]",
                                         help="teacher hidden widths, e.g. 2,2")
    init_scale: tuple | None = param(None, kind="floats", low=0.0, high=1e6, max_len=17, metavar="S[,S…]",
                                     help="init scale (per layer for Gaussian)")
    eta_small: float | None = param(None, kind="float", low=0.0, low_open=True,
                                    help="constant small step (teacher settings)")
    eta_large: float | None = param(None, kind="float", low=0.0, low_open=True, help="large step before the decay")
    decays: str | None = param(None, kind="str", metavar="F:K[,F:K…]",
                               help="one large-step run per pair: divide η by K after a fraction F of the run")
    warmup_factor: float | None = param(None, kind="float", low=0.0, low_open=True, help="warm-up multiplier (1: none)")
    warmup_exponent: float | None = param(None, kind="float", low=0.0, low_open=True,
                                          help="warm-up exponent (1: linear)")
    warmup_scaling: str | None = param(None, kind="str", choices=("fixed", "length"),
                                       help="warm-up factor as given, or times the decay fraction (1d default: length)")
    threshold: float = param(0.99, low=0.0, high=1.0, low_open=True, help="neuron-merging correlation threshold")
    rank_threshold: float = param(1e-4, low=0.0, high=1.0, low_open=True, label="rank threshold",
                                  help="relative singular-value threshold of the Jacobian rank")
    kernel: str = param("numba", choices=("numba", "numpy"), help="compiled kernel or its NumPy twin")
    dtype: str = param("float64", choices=("float64", "float32"),
                       help="precision of the training (the metrics are computed in float64)")


_P = ReluParams()


def parse_decays(text: str | None):
    """``"0.1:2,0.3:4"`` → ((0.1, 2.0), (0.3, 4.0))."""
    if text is None:
        return None
    out = []
    for part in text.split(","):
        bits = part.split(":")
        try:
            frac, factor = float(bits[0]), float(bits[1])
            if len(bits) != 2:
                raise IndexError
        except (ValueError, IndexError):
            raise ValueError(f"Invalid --decays: {text!r} "
                             "(expected FRACTION:FACTOR pairs, e.g. 0.1:2,0.5:5)") from None
        out.append((frac, factor))
    return tuple(out)


def overrides(p: ReluParams) -> dict:
    """The fields of the setting that ``p`` replaces (``None``: keep the setting's)."""
    return {"hidden": p.width, "teacher": p.teacher_widths, "n": p.n, "d": p.d, "batch": p.batch,
            "method": p.method, "log10_steps": p.log10_steps, "eta_small": p.eta_small, "eta_large": p.eta_large,
            "decays": parse_decays(p.decays), "warmup_factor": p.warmup_factor,
            "warmup_exponent": p.warmup_exponent,
            "warmup_per_length": None if p.warmup_scaling is None else p.warmup_scaling == "length",
            "init_scales": p.init_scale}


def check(p: ReluParams) -> None:
    s = get_setting(p.setting, **overrides(p))                 # validates every field of the setting
    if p.student_d is not None and p.student_d != s.d:
        raise ValueError(f"Invalid student input dimension: {p.student_d} (must equal the teacher's d = {s.d})")
    layers = len(s.hidden) + 1
    if len(s.init_scales) not in (1, layers):        # e.g. teacher2's two scales with --width 10,10
        scales = ",".join(f"{x:g}" for x in s.init_scales)
        if p.init_scale is not None:
            raise ValueError(f"Invalid --init-scale: {scales} ({len(s.init_scales)} values for {layers} layers; "
                             "give one, or one per layer)")
        raise ValueError(f"Invalid --width: {','.join(map(str, s.hidden))} makes {layers} layers but setting "
                         f"{s.name} has {len(s.init_scales)} init scales ({scales}); give --init-scale with one "
                         f"value or {layers}")
    sizes = (s.d, *s.hidden, 1)
    n_params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    memory.require_each({      # float64: the Jacobian with its SVD's copy and factor; θ at every recording, twice
        "the Jacobian (3 × --n × network parameters)": (24 * max(s.n, s.n_test) * n_params, "--n"),
        "the records (2 × --seeds × --records × network parameters)":
            (16 * p.seeds * p.records * n_params, "--records")})



def schedules(s: Setting):
    """``[(label, η, Schedule)]``: the constant run (if any) then one large-step run per decay."""
    from dyntools.optim.schedules import Constant, PiecewiseDecay, PowerWarmup

    out = []
    if s.eta_small is not None:
        out.append((f"small step: η = {s.eta_small:g} constant", s.eta_small, Constant()))
    for frac, factor in s.decays:
        decay = PiecewiseDecay((frac,), (factor,))
        warm = ""
        warm_factor = s.warmup_factor * frac if s.warmup_per_length else s.warmup_factor
        if warm_factor != 1.0:
            decay = PowerWarmup(warm_factor, frac, s.warmup_exponent, inner=decay)
            kind = "linearly" if s.warmup_exponent == 1.0 else f"as t^{s.warmup_exponent:g}"
            peak = s.eta_large * (1.0 + (warm_factor - 1.0) * frac ** s.warmup_exponent)   # PowerWarmup at the decay
            warm = f" rising {kind} to {peak:.3g}"
        # without a small-step run (1-D) the earliest decay is the reference: its warm-up is short and its step
        # stays small, so it is not called a large step
        kind = "reference (early decay)" if s.eta_small is None and not out else "large step"
        out.append((f"{kind}: η = {s.eta_large:g}{warm}, ÷{factor:g} at {frac:.0%}", s.eta_large, decay))
    return out


def paper_snapshot_steps(steps: int) -> np.ndarray:
    """The iterations of the authors' 1-D predictor figure: entries 99, 101, 105, 130, 170, 248 of
    their recording grid (steps 0–99, then ``round(linspace(0, T, 151))`` without its last point),
    clipped to the run."""
    grid = np.unique(np.concatenate([np.arange(100), np.round(np.linspace(0, steps, 151))[:-1]])).astype(np.int64)
    picks = grid[np.minimum([99, 101, 105, 130, 170, 248], grid.size - 1)]
    return np.unique(np.minimum(picks, steps))


def run_seed(s: Setting, seed: int, *, records: int = _P.records, threshold: float = _P.threshold,
             rank_threshold: float = _P.rank_threshold, kernel: str = _P.kernel, dtype: str = _P.dtype,
             progress: bool = False):
    """Train every schedule of ``s`` for one seed in ``dtype``; returns (arrays, seconds of training)."""
    from types import SimpleNamespace

    from dyntools.dynamics.train import train
    from dyntools.engine.record import make_grid
    from dyntools.metrics import network_metrics
    from dyntools.optim import optimizers as O

    layout, theta0, X, y, X_test, y_test, teacher = build(s, seed, dtype)
    sched = schedules(s)
    base = make_grid("log", s.steps, records)
    snaps = paper_snapshot_steps(s.steps) if s.task == "1d" else np.zeros(0, dtype=np.int64)
    record_steps = np.union1d(base, snaps)   # also the snapshots of the paper's 1-D figure (kept apart)
    res = train(layout, SimpleNamespace(X=X, y=y), [O.sgd(eta) for _, eta, _ in sched],
                schedule=[sc for _, _, sc in sched], steps=s.steps, batch=s.batch,
                sampler="full" if s.method == "gd" else "distinct", record_steps=record_steps, seed=seed,
                theta0=theta0,
                common_stream=True, kernel=kernel, chunks=20 if progress else 1, progress=progress)
    on_base = np.isin(record_steps, base)
    theta_rec, diverged_at = res["theta"][:, 0][:, on_base], res["diverged_at"][:, 0]
    snapshot_theta = res["theta"][:, 0][:, np.isin(record_steps, snaps)]
    etas = np.ascontiguousarray(np.broadcast_to(res["lrs"], (len(sched), s.steps)))
    seconds = res.timings["simulate"]
    is_1d = s.task == "1d"
    metrics = network_metrics(layout, theta_rec, X, y, None if is_1d else X_test, None if is_1d else y_test,
                              threshold=threshold, rank_threshold=rank_threshold, kinks=is_1d,
                              kink_range=(float(X.min()), float(X.max())) if is_1d else None)
    arrays = {"steps": base, "theta": theta_rec, "diverged_at": diverged_at, "etas": etas, "X": X, "y": y,
              **metrics}
    if not is_1d:
        arrays["teacher"] = teacher
    else:
        arrays["snapshot_steps"], arrays["snapshot_theta"] = snaps, snapshot_theta
    return layout, arrays, seconds


def init_sharpness(s: Setting, seed: int) -> dict:
    """Stability diagnostics at initialization: the Gauss–Newton sharpness of the training loss
    ``λ_GN = (2/n) σ_max(φ_θ0(X))²`` (full-batch GD is linearly stable below ``η = 2/λ_GN``) and the
    largest per-example curvature ``max_i 2‖∇_θ h_θ0(x_i)‖²`` (a batch-1 step on example i overshoots
    along its gradient when η exceeds 2 over it)."""
    layout, theta0, X, *_ = build(s, seed)
    J = layout.jacobian(theta0, X)
    lam = 2.0 / X.shape[0] * float(np.linalg.eigvalsh(J @ J.T)[-1])
    per = 2.0 * float(np.max(np.sum(J * J, axis=1)))
    return {"gn_sharpness": lam, "gd_step_limit": 2.0 / lam if lam > 0 else float("inf"),
            "max_example_curvature": per, "example_step_limit": 2.0 / per if per > 0 else float("inf")}


def phase_windows(s: Setting) -> list[tuple[int, int]]:
    """Per schedule, the recording window ``[f T / 2, f T)`` just before its decay at fraction f
    (for the constant run: the window of the latest decay). Loss stabilization shows as a train
    loss that stays high there for the large step while the small step keeps decreasing it."""
    T = s.steps
    last = max(f for f, _ in s.decays)
    wins = [(int(last * T / 2), int(last * T))] if s.eta_small is not None else []
    return wins + [(int(f * T / 2), int(f * T)) for f, _ in s.decays]


def phase_loss(steps: np.ndarray, train_loss: np.ndarray, windows) -> np.ndarray:
    """Median train loss of each run over the recorded steps inside its window (NaN if none)."""
    out = np.full(len(windows), np.nan)
    for r, (a, b) in enumerate(windows):
        sel = (steps >= a) & (steps < b) & np.isfinite(train_loss[r])
        if sel.any():
            out[r] = float(np.median(train_loss[r, sel]))
    return out


def _final(arr: np.ndarray, diverged_at: np.ndarray) -> np.ndarray:
    """Last recorded value per run (NaN for diverged runs)."""
    last = arr[:, -1].astype(np.float64)
    last[diverged_at >= 0] = np.nan
    return last


def simulate(setting: str = "1d", *, seed: int = 0, seeds: int = _P.seeds, records: int = _P.records,
             threshold: float = _P.threshold, rank_threshold: float = _P.rank_threshold, kernel: str = _P.kernel,
             dtype: str = _P.dtype, progress: bool = False, **overrides):
    """Run one setting: full recordings for ``seed`` and the final numbers for ``seeds`` seeds
    (``seed, seed+1, …``). Returns a :class:`~dyntools.result.RunResult` of kind ``"relu"``."""
    from dyntools.engine.result import RunResult

    s = get_setting(setting, **overrides)
    seed = validation.seed(seed)
    seeds = validation.count("seeds", seeds)
    records = validation.count("records", records, minimum=2)
    threshold = validation.in_interval("threshold", threshold, 0.0, 1.0, closed_low=False, closed_high=True)
    rank_threshold = validation.in_interval("rank threshold", rank_threshold, 0.0, 1.0,
                                            closed_low=False, closed_high=True)
    sched = schedules(s)
    timings: dict[str, float] = {"train": 0.0}
    import time

    start = time.perf_counter()
    table = {k: np.full((seeds, len(sched)), np.nan) for k in ("final_test_loss", "final_train_loss",
                                                               "final_sparsity", "final_rank", "final_kinks",
                                                               "phase_loss")}
    windows = phase_windows(s)
    arrays = layout = None
    for j in range(seeds):
        layout_j, arr, secs = run_seed(s, seed + j, records=records, threshold=threshold,
                                       rank_threshold=rank_threshold, kernel=kernel, dtype=dtype,
                                       progress=progress)
        timings["train"] += secs
        if j == 0:
            arrays, layout = arr, layout_j
        div = arr["diverged_at"]
        table["final_train_loss"][j] = _final(arr["train_loss"], div)
        table["final_test_loss"][j] = _final(arr["test_loss"], div)
        table["final_sparsity"][j] = _final(arr["sparsity"][:, :, -1], div)
        table["final_rank"][j] = _final(arr["jac_rank"], div)
        table["phase_loss"][j] = phase_loss(arr["steps"], arr["train_loss"], windows)
        if "kinks" in arr:
            table["final_kinks"][j] = _final(arr["kinks"], div)
    timings["total"] = time.perf_counter() - start
    arrays.update({f"table_{k}": v for k, v in table.items()})
    arrays["table_seeds"] = np.arange(seed, seed + seeds)
    labels = [lab for lab, _, _ in sched]
    div = arrays["diverged_at"]
    n_div = int((div >= 0).sum())
    if n_div:
        parts = [f"{labels[r]} diverged at step {int(div[r])}" for r in np.flatnonzero(div >= 0)]
        status, message = "diverged", "; ".join(parts)
    else:
        status = "completed"
        message = f"{len(labels)} schedules trained for {s.steps} steps without divergence (this seed)"
    config = {"setting": s.name, "task": s.task, "widths": list(layout.widths), "biases": list(layout.biases),
              "init": s.init, "init_scales": list(s.init_scales), "steps": s.steps, "method": s.method,
              "batch": s.batch, "n": s.n, "d": s.d, "teacher": list(s.teacher), "n_test": s.n_test,
              "eta_small": s.eta_small, "eta_large": s.eta_large, "decays": [list(x) for x in s.decays],
              "warmup_factor": s.warmup_factor, "warmup_exponent": s.warmup_exponent,
              "warmup_per_length": s.warmup_per_length, "labels": labels,
              "threshold": threshold, "rank_threshold": rank_threshold, "records": records, "seeds": seeds,
              "snapshots": paper_snapshot_steps(s.steps).tolist() if s.task == "1d" else [],
              "kernel": kernel, "dtype": dtype}
    summary = {"status": status, "schedules": labels, "table": table_rows(table, labels),
               "init": init_sharpness(s, seed)}
    return RunResult("relu", config, arrays, status, message, seed=seed, summary=summary, timings=timings)


def collapsed(table: dict[str, np.ndarray]) -> np.ndarray:
    """(seeds, runs) mask of *collapsed* runs: no neuron of the last hidden layer is active on any
    training point at the end (sparsity coefficient exactly 0), so the network is a constant
    function. Such a run is a failure to train, not a sparse solution."""
    return table["final_sparsity"] == 0.0


def table_rows(table: dict[str, np.ndarray], labels) -> list[dict]:
    """Mean ± std over seeds of the final numbers, one row per schedule, over the seeds where the
    run neither diverged nor collapsed (both counted in their own columns)."""
    rows = []
    dead = collapsed(table)
    for r, lab in enumerate(labels):
        row = {"schedule": lab}
        for key, name in (("final_test_loss", "test loss"), ("final_train_loss", "train loss"),
                          ("final_sparsity", "sparsity"), ("final_rank", "Jacobian rank"),
                          ("final_kinks", "kinks"), ("phase_loss", "loss in large-step phase")):
            col = table[key][:, r]
            ok = np.isfinite(col) & ~dead[:, r]
            if not ok.any():
                continue
            row[name] = f"{np.mean(col[ok]):.3g} ± {np.std(col[ok]):.2g}"
            row[f"{name} mean"] = float(np.mean(col[ok]))
        row["diverged seeds"] = int((~np.isfinite(table["final_train_loss"][:, r])).sum())
        row["collapsed seeds"] = int(dead[:, r].sum())
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------ report entry

#: The source's level of the 1-D loss during stabilization (seed 004: "stabilization is observed at around 10^-5").
SOURCE_1D_STABILIZATION = 1e-5


def _column(result, key: str, r: int) -> np.ndarray:
    """Final values of schedule ``r`` over the seeds: NaN where the run diverged or collapsed."""
    t = {k: result[f"table_{k}"] for k in ("final_sparsity", "final_train_loss", key)}
    col = np.array(t[key][:, r], dtype=np.float64)
    col[collapsed(t)[:, r] | ~np.isfinite(t["final_train_loss"][:, r])] = np.nan
    return col


def claims(result) -> list[tuple[str, object]]:
    """Seed 004's claims on one setting as ``(claim, Verdict)`` rows, every one a sign test over the paired
    seeds (:func:`dyntools.verdicts.sign_test`: every schedule of a seed starts from the same weights) or the
    order-of-magnitude rule. Teacher–student: each large-step schedule ends with a *lower* feature sparsity
    coefficient and a *lower* Jacobian rank than the small step (the paper: "both the rank and the feature
    sparsity coefficient decrease"). 1-D: the late-decay run (the longer large-step phase) ends with fewer
    distinct kinks than the early-decay run (the reference: it decays at 2 %, after a short warm-up), and the
    loss stabilizes "at around 10⁻⁵" (:data:`SOURCE_1D_STABILIZATION`) in the late run's large-step phase."""

    from dyntools import verdicts as V

    labels = result.config["labels"]
    rows = []

    if result.config["task"] == "1d":
        late = labels[-1].split(", ")[-1]
        rows.append((f"late decay ({late}) ends with fewer distinct kinks than the early-decay reference",
                     V.sign_test(_column(result, "final_kinks", len(labels) - 1), _column(result, "final_kinks", 0))))
        level = V.magnitude(result["table_phase_loss"][:, -1], SOURCE_1D_STABILIZATION,
                            min_alive=min(V.MIN_ALIVE, len(result["table_seeds"])))
        if level.word != V.SHOWN:
            limit, c = result.summary["init"]["gd_step_limit"], result.config
            frac = c["decays"][-1][0]
            warm = c["warmup_factor"] * frac if c["warmup_per_length"] else c["warmup_factor"]
            peak = c["eta_large"] * (1.0 + (warm - 1.0) * frac ** c["warmup_exponent"])   # η when the decay comes
            if 0 < limit < float("inf"):
                level = replace(level, why=level.why + (
                    f" Measured as the median train loss over [fT/2, fT) before the decay, where the warm-up has "
                    f"raised η towards {peak:.3g}, ×{peak / limit:.0f} GD's stability limit at initialization "
                    f"({limit:.3g}): the loss bounces at that level rather than settling near the source's."))
        rows.append((f"the loss stabilizes at around {SOURCE_1D_STABILIZATION:g} in the large-step phase ({late})",
                     level))
        return rows
    for r in range(1, len(labels)):
        short = labels[r].split(", ")[-1]
        for key, what in (("final_sparsity", "feature sparsity coefficient"), ("final_rank", "Jacobian rank")):
            rows.append((f"large step ({short}) ends with a lower {what} than the small step",
                         V.sign_test(_column(result, key, r), _column(result, key, 0))))
    return rows


def divergence_line(result) -> str:
    """How many seeds diverged per schedule (the status line speaks of one seed only)."""
    div = ~np.isfinite(result["table_final_train_loss"])
    n = div.shape[0]
    return ("Over the " + f"{n} seeds, diverged runs per schedule: "
            + "; ".join(f"{lab.split(', ')[-1] if i else lab}: {int(div[:, i].sum())}/{n}"
                        for i, lab in enumerate(result.config["labels"])) + ".")


def _stability_line(result) -> str:
    init = result.summary["init"]
    etas = [e for e in (result.config["eta_small"], result.config["eta_large"]) if e is not None]
    return (f"At initialization (seed {result.seed}): full-batch GD is stable below η = 2/λ_GN = "
            f"{init['gd_step_limit']:.3g}; the stiffest single example allows "
            f"η < {init['example_step_limit']:.3g}; "
            f"the schedules start at η = {', '.join(f'{e:g}' for e in etas)}.")


#: The final train losses the authors' 1-D notebook prints (fc_nets_1d_regression.ipynb; PyTorch
#: init, seed 3), per run (decay at 2 %, decay at 50 %). With the warm-up ×500·L their 50 % run
#: stays at a high loss: their "over-regularization" example.
AUTHORS_1D_FINAL = {"1d": (2.085922606056556e-04, 1.6900205810088664e-04),
                    "1d-warmup500": (1.599380193511024e-04, 0.26857006549835205)}


def authors_1d_line(res) -> str:
    """The 1-D runs' final train losses (seed ``res.seed``) beside the authors' (a different init
    draw, so the per-run numbers are a comparison of regimes, not a replay)."""
    ref = AUTHORS_1D_FINAL.get(res.config["setting"])
    if ref is None:
        return ""
    from dyntools.verdicts import measured

    ours = res["train_loss"][:, -1]
    if not measured(*ours):
        return (f"Final train loss, seed {res.seed}: a run diverged or was not recorded "
                f"({', '.join(f'{o:.3g}' for o in ours)}); the authors' runs are not compared.")
    pairs = "; ".join(f"{lab.split(', ')[-1]}: {o:.3g} here vs {a:.3g} in the authors' notebook"
                      for lab, o, a in zip(res.config["labels"], ours, ref))
    over = ref[1] > 100 * ref[0]
    return (f"Final train loss, seed {res.seed}: {pairs}. "
            + ("The authors' late-decay run stays at a high loss (over-regularization); "
               + ("so does this one." if ours[1] > 100 * ours[0] else "this one does not: NOT reproduced with "
                  "this initialization draw (the authors' PyTorch init with seed 3 cannot be replayed here).")
               if over else "Both runs fit the data in both codes."))


#: Seeds of the report per task (quick, full): a sign test needs 5 untied pairs at α = 5 %, and up to 2 of 5
#: teacher–student seeds diverge under the large step; their runs take about a second for 16 seeds, the 1-D
#: runs about 13 s per seed.
REPORT_SEEDS = {"1d": (5, 8), "teacher": (16, 16)}


def survivors(rows) -> str:
    """``"3–5 survived per comparison"``: the range of surviving pairs over a setting's claims."""
    alive = [v.survivors for _, v in rows]
    return f"{min(alive)}–{max(alive)} survived per comparison" if min(alive) != max(alive) else \
        f"{alive[0]} survived per comparison"


def report_seeds(name: str, quick: bool) -> int:
    """The report's number of seeds for setting ``name`` (:data:`REPORT_SEEDS`)."""
    return REPORT_SEEDS[SETTINGS[name].task][0 if quick else 1]


def reproduce(ctx):
    """Catalogue entry: the settings, figures, tables and claims over :data:`REPORT_SEEDS` seeds."""
    from dyntools import verdicts as V
    from dyntools.plots import relu as relu_plots
    from dyntools.report import Section
    from dyntools.tables import markdown_table

    md, numbers, figures, headlines = [], {}, [], []
    for name in SETTINGS:
        if ctx.quick and name == "1d-warmup500":     # the authors' second 1-D run: full report only
            continue
        seeds = report_seeds(name, ctx.quick)
        res = simulate(name, seed=ctx.seed, seeds=seeds, records=30 if ctx.quick else 60)
        paths = relu_plots.plot_result(res, ctx.figure_dir / f"relu_{name}", ("png",))
        figures += [ctx.relative(p) for p in paths]
        rows = claims(res)
        words = [v.word for _, v in rows]
        headlines.append(f"{name}: " + ", ".join(f"{words.count(w)} {w}" for w in V.WORDS if words.count(w))
                         + f" of {len(rows)} ({'; '.join(dict.fromkeys(v.rule for _, v in rows))}; {seeds} seeds, "
                           f"{survivors(rows)})")
        cols = table_columns(name)
        md += [f"### Setting `{name}` ({res.config['steps']} iterations, {seeds} seeds)", "",
               f"Recorded seed {res.seed}: {res.status} — {res.message}. {divergence_line(res)} Training time "
               f"(all seeds, all schedules): {res.timings['train']:.2f} s.", "",
               markdown_table(res.summary["table"], cols), "",
               _stability_line(res), "", authors_1d_line(res), "",
               "Claims of the source (seed 004), each by a declared rule over the seeds (diverged or collapsed "
               "runs left out of their pairs):", "", V.claims_table(rows), ""]
        md += [f"![{name}: {p.stem}]({ctx.relative(p)})" for p in paths]
        md.append("")
        numbers[name] = {row["schedule"]: {k: v for k, v in row.items() if k.endswith("mean")}
                         for row in res.summary["table"]}
        numbers[name]["claims"] = {c: v.as_dict() for c, v in rows}
    md.insert(0, "Large-step SGD (with warm-up, decayed late) against a small step: the loss stabilizes "
                 "while the step is large and the network ends with fewer distinct active features (feature "
                 "sparsity coefficient, last hidden layer) and a lower-rank Jacobian φ_θ(X). Table entries: "
                 "mean ± std of the final values over the seeds where the run neither diverged nor collapsed "
                 "(collapsed: no neuron of the last hidden layer active on any training point, a constant "
                 "predictor; counted apart); \"loss in large-step phase\" is the median "
                 "train loss over the recorded steps in [fT/2, fT) before the run's decay at fraction f "
                 "(the constant run: the latest decay's window)."
                 + (" Quick mode: 5 seeds (1-D), 30 recordings per run (the runs are as long as in full mode); the "
                    "authors' second 1-D run (warm-up ×500·f, setting `1d-warmup500`) is in the full report only."
                    if ctx.quick else "") + "\n")
    return Section(TITLE, "\n".join(md), numbers=numbers, figures=figures,
                   headline="seed 004's claims: " + "; ".join(headlines))


# ----------------------------------------------------------------------------------- the command line

def table_columns(setting: str) -> list[str]:
    return (["schedule", "loss in large-step phase", "test loss", "train loss", "sparsity", "Jacobian rank"]
            + (["kinks"] if setting == "1d" else []) + ["diverged seeds", "collapsed seeds"])


def run(p: ReluParams, ctx: RunContext):
    return simulate(p.setting, seed=ctx.seed, seeds=p.seeds, records=p.records, threshold=p.threshold,
                    rank_threshold=p.rank_threshold, kernel=p.kernel, dtype=p.dtype, progress=ctx.progress,
                    **overrides(p))


def summary(p: ReluParams, result) -> dict:
    return {"status": result.status, "message": result.message, "setting": p.setting,
            "steps": result.config["steps"], "seeds": p.seeds, "table": result.summary["table"],
            "seconds": result.timings}


def table(p: ReluParams, result) -> str:
    from dyntools.tables import text_table

    cols = table_columns(p.setting)
    return "\n".join([f"status: {result.status} — {result.message}", "",
                      text_table([{c: r.get(c, "") for c in cols} for r in result.summary["table"]], cols)])


RESULTS = (derive("relu", ReluParams, "batch d eta_large eta_small kernel method n rank_threshold records "
                          "seeds setting threshold warmup_exponent warmup_factor",
                  summary={"init": "mapping", "schedules": "list", "status": "str", "table": "list"}),)

EXPERIMENT = Experiment.declare(
    globals(), name="relu", verb="simulate",
    help="small ReLU networks (seed 004): loss stabilization, feature sparsity, Jacobian rank",
    example="dyntools simulate relu --setting teacher3 --seeds 5 --seed 0 --out runs/relu3",
    params=ReluParams, figures={"relu": relu_figures.plot_result})

#: kind → the arguments of the smallest run that writes a result of it (the fuzz suite damages what it writes)
SAMPLE_RUNS = {
    "relu": ["--setting", "1d", "--seeds", "2", "--log10-steps", "2.5", "--records", "8"],
}

REPORT = Entry("relu-nets", TITLE, reproduce, order=20, single_core=True)
