"""The problem set's autograder (seed 001): a student's Adam and AdamW against dyntools' PyTorch-exact ones.

Seed 001 ships "an autograder running the students' optimizers in a deterministic way that should output
the same loss as ours". :func:`grade` runs the optimizers of a student's file and the reference
(:func:`dyntools.optim.adam` / :func:`~dyntools.optim.adamw`, which match ``torch.optim.Adam``/``AdamW``)
on the same deterministic problems, step by step:

* ``gradients``: a fixed sequence of gradients (seeded normal draws whose scales span four decades, so
  that ε, the bias corrections and the decay all matter) on three parameter arrays;
* ``spirals``: the first steps of full-batch training of a 2-16-16-2 MLP on 200 spiral points (the
  problem set's data set), where each gradient depends on the parameters the optimizer produced.

After each step the student's parameters are compared with the reference's; they *match* when every
coordinate agrees to ``|a − b| ≤ tol · max(1, |b|)`` with ``tol = 1e-10``. The report gives, per step,
the largest difference (and both losses on ``spirals``), the first step and coordinate where the runs
part, and — when the student's run coincides with a classic mistake — a hint. The mistakes are
recognised by running variants of Adam written from the equations

    m_t = β₁ m_{t−1} + (1 − β₁) g_t,   v_t = β₂ v_{t−1} + (1 − β₂) g_t²,
    m̂_t = m_t / (1 − β₁ᵗ),   v̂_t = v_t / (1 − β₂ᵗ),
    Adam (L2):  g_t ← g_t + λ θ_{t−1},   θ_t = θ_{t−1} − α m̂_t / (√v̂_t + ε)
    AdamW:      θ_t = θ_{t−1} − α λ θ_{t−1} − α m̂_t / (√v̂_t + ε)

with one change each (:data:`MISTAKES`): bias correction missing or with the power t + 1, the decay
inside the adaptive term (Adam+L2 handed in as AdamW) or decoupled where L2 was asked, the decay applied
after the Adam step (to θ_t instead of θ_{t−1}), ε inside the square root, β₁ and β₂ swapped, the decay
not multiplied by the learning rate. A hint is given only when its variant reproduces the student's
values; NaN or ∞ matches nothing (a power t − 1 divides by 1 − β⁰ = 0 and is NaN from step 1, like any
other bug that makes everything NaN, so it is reported as "not finite from step 1", never as a named
mistake). The unchanged variant is an independent reference: it must (and is tested to) match dyntools' own.

The student's file is Python and is executed — by :func:`grade`, in a child process
(:mod:`dyntools.child`) with a wall-clock time limit (default 60 s), memory and processor-time limits and
a temporary working directory: an infinite loop is stopped and reported, a stray ``os.remove`` lands in
the temporary folder. That is **not a security sandbox** (the code runs as you, with your files and
network): grade only files you would run yourself. Every expected piece must be there — a file defining
only Adam is graded on Adam and FAILS, naming what is missing. It defines, for each of
``adam`` and ``adamw``, either a function

    adam_step(params, grads, state, t, *, lr, betas, eps, weight_decay) -> new params (or None: in place)

(``params``/``grads``: lists of float64 arrays; ``state``: a dict, empty before step ``t = 1``, kept
between calls) or a torch-style class

    class Adam:
        def __init__(self, params, lr, betas, eps, weight_decay): ...   # keeps the list of arrays
        def step(self, grads): ...                                       # updates them in place

(named ``adamw_step`` / ``AdamW`` for AdamW). A class that is a ``torch.optim.Optimizer`` is driven
with torch tensors when torch is installed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: The two optimizers graded, with the names a student's file may use for each.
NAMES = {"adam": ("adam_step", "Adam"), "adamw": ("adamw_step", "AdamW")}
#: Hyperparameters of the grading runs: ε and λ large enough that a misplaced ε or decay shows at 1e-10.
HPARAMS = {"adam": {"lr": 0.01, "betas": (0.8, 0.95), "eps": 1e-3, "weight_decay": 0.1},
           "adamw": {"lr": 0.01, "betas": (0.8, 0.95), "eps": 1e-3, "weight_decay": 0.1}}
#: Relative tolerance of a match.
TOL = 1e-10
#: Problems, in the order they are graded.
PROBLEMS = ("gradients", "spirals")
#: Mistakes that only one of the two optimizers can make.
ONLY_FOR = {"decoupled-decay": "adam", "l2-in-adaptive-term": "adamw", "decay-without-lr": "adamw",
            "decay-after-step": "adamw"}
#: The classic mistakes recognised, with the hint given.
MISTAKES = {
    "no-bias-correction": "the bias corrections are missing (m and v used instead of m̂ = m/(1 − β₁ᵗ), "
                          "v̂ = v/(1 − β₂ᵗ))",
    "bias-correction-t+1": "the bias corrections use the power t + 1 (off by one step: 1 − βᵗ⁺¹)",
    "l2-in-adaptive-term": "the decay is inside the adaptive term: this is Adam with L2 (g + λθ fed to the "
                           "moments), not AdamW's decoupled decay θ ← θ − αλθ",
    "decoupled-decay": "the decay is decoupled (θ ← θ − αλθ, AdamW) where Adam's L2 term (g + λθ) was asked",
    "eps-inside-sqrt": "ε is inside the square root (√(v̂ + ε) instead of √v̂ + ε)",
    "betas-swapped": "β₁ and β₂ are swapped (β₁ must weight the first moment m, β₂ the second moment v)",
    "decay-without-lr": "the decoupled decay is not multiplied by the learning rate (θ ← θ − λθ instead of "
                        "θ ← θ − αλθ)",
    "decay-after-step": "the decay is applied after the Adam step, to the updated parameters "
                        "(θ_t = (1 − αλ)(θ_{t−1} − α m̂/(√v̂ + ε))) instead of to θ_{t−1} "
                        "(θ_t = θ_{t−1} − αλθ_{t−1} − α m̂/(√v̂ + ε))",
}
#: The message naming a piece the file does not define.
MISSING = {"adam": "no Adam: define adam_step or class Adam", "adamw": "no AdamW: define adamw_step or class AdamW"}
#: Default limits of the child process that runs a student's file (see :mod:`dyntools.child`).
TIMEOUT = 60.0
MEMORY_MB = 4096


# ------------------------------------------------------------------------------------------ problems

@dataclass(frozen=True)
class Problem:
    """A deterministic grading problem: initial parameter arrays and a gradient function of the
    (flat) parameters and the step, returning ``(loss or NaN, gradient)``."""

    name: str
    shapes: tuple[tuple[int, ...], ...]
    theta0: np.ndarray
    gradient: Callable[[np.ndarray, int], tuple[float, np.ndarray]]
    steps: int

    def split(self, flat: np.ndarray) -> list[np.ndarray]:
        out, start = [], 0
        for shape in self.shapes:
            size = int(np.prod(shape))
            out.append(np.array(flat[start:start + size], dtype=np.float64).reshape(shape))
            start += size
        return out

    def coordinate(self, k: int) -> str:
        """``params[i][j, …]`` of flat index ``k``."""
        start = 0
        for i, shape in enumerate(self.shapes):
            size = int(np.prod(shape))
            if k < start + size:
                idx = np.unravel_index(k - start, shape)
                return f"params[{i}][{', '.join(str(int(j)) for j in idx)}]"
            start += size
        raise IndexError(k)


def gradient_problem(steps: int = 25) -> Problem:
    """Three arrays (3×4, 4, 2) and seeded gradients ``g_t`` whose coordinates have scales 10⁻³…10."""
    shapes = ((3, 4), (4,), (2,))
    p = sum(int(np.prod(s)) for s in shapes)
    rng = np.random.Generator(np.random.PCG64(20260101))
    theta0 = rng.standard_normal(p)
    scales = 10.0 ** rng.uniform(-3, 1, size=p)
    draws = rng.standard_normal((steps, p)) * scales

    def gradient(theta, t):
        return float("nan"), draws[t - 1].copy()

    return Problem("gradients", shapes, theta0, gradient, steps)


def spiral_problem(steps: int = 30) -> Problem:
    """Full-batch cross-entropy of a 2-16-16-2 ReLU MLP on 200 spiral points (NumPy twin of the kernel)."""
    from dyntools.data import spirals
    from dyntools.models.mlp import MLP

    data = spirals(200, seed=0)
    model = MLP((2, 16, 16, 2), head="cross-entropy")
    theta0 = model.init(0)
    X, y = np.ascontiguousarray(data.X, dtype=np.float64), np.ascontiguousarray(data.y, dtype=np.int64)
    iargs, fargs = model.kernel_args()
    n = X.shape[0]
    idx, noise, ws = np.arange(n), np.zeros(n), np.zeros(model.workspace_size(n))
    shapes = tuple(s for W, b in model.unpack(theta0) for s in ((W.shape,) + ((b.shape,) if b is not None else ())))

    def gradient(theta, t):
        grad = np.empty(model.n_params)
        loss = model.loss_grad_np(np.ascontiguousarray(theta), X, y, idx, n, noise, grad, ws, iargs, fargs)
        return float(loss), grad

    return Problem("spirals", shapes, theta0, gradient, steps)


def problem(name: str, steps: int | None = None) -> Problem:
    from dyntools import validation

    validation.one_of("problem", name, PROBLEMS)
    make = gradient_problem if name == "gradients" else spiral_problem
    return make() if steps is None else make(validation.count("steps", steps))


# ------------------------------------------------------------------------------------------ runners

def reference_run(which: str, prob: Problem) -> tuple[np.ndarray, np.ndarray]:
    """Parameters after each step ``(steps, p)`` and losses ``(steps,)`` of dyntools' optimizer."""
    from dyntools.optim import adam, adamw

    opt = (adam if which == "adam" else adamw)(**HPARAMS[which])
    theta = prob.theta0.copy()
    state = opt.init(theta)
    thetas, losses = [], []
    for t in range(1, prob.steps + 1):
        loss, g = prob.gradient(theta, t)
        theta, state = opt.step(theta, g, state, t)
        thetas.append(theta.copy())
        losses.append(loss)
    return np.array(thetas), np.array(losses)


def equation_run(which: str, prob: Problem, mistake: str | None = None) -> np.ndarray:
    """Parameters after each step of Adam/AdamW written from the equations of the module docstring,
    with one of :data:`MISTAKES` (``None``: as written)."""
    settings = HPARAMS[which]
    lr, (b1, b2), eps, lam = settings["lr"], settings["betas"], settings["eps"], settings["weight_decay"]
    if mistake == "betas-swapped":
        b1, b2 = b2, b1
    decoupled = (which == "adamw") != (mistake in ("l2-in-adaptive-term", "decoupled-decay"))
    theta = prob.theta0.copy()
    m, v = np.zeros_like(theta), np.zeros_like(theta)
    thetas = []
    for t in range(1, prob.steps + 1):
        _, g = prob.gradient(theta, t)
        if not decoupled:
            g = g + lam * theta
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        power = t + 1 if mistake == "bias-correction-t+1" else t
        if mistake == "no-bias-correction":
            m_hat, v_hat = m, v
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                m_hat, v_hat = m / (1 - b1 ** power), v / (1 - b2 ** power)
        denom = np.sqrt(v_hat + eps) if mistake == "eps-inside-sqrt" else np.sqrt(v_hat) + eps
        decay = 1 - (lam if mistake == "decay-without-lr" else lr * lam)
        if decoupled and mistake != "decay-after-step":
            theta = theta * decay
        theta = theta - lr * m_hat / denom
        if mistake == "decay-after-step":
            theta = theta * decay
        thetas.append(theta.copy())
    return np.array(thetas)


def _student_stepper(obj, which: str, params: list[np.ndarray]):
    """A function ``step(grads, t) -> list of arrays`` driving the student's function or class."""
    hp = dict(HPARAMS[which])
    if inspect.isclass(obj):
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and issubclass(obj, torch.optim.Optimizer):
            tensors = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in params]
            opt = obj(tensors, **hp)

            def torch_step(grads, t):
                for tensor, g in zip(tensors, grads):
                    tensor.grad = torch.tensor(g, dtype=torch.float64)
                with torch.no_grad():
                    opt.step()
                return [tensor.detach().numpy().copy() for tensor in tensors]

            return torch_step
        opt = obj(params, **hp)

        def class_step(grads, t):
            out = opt.step([np.array(g) for g in grads])
            return [np.asarray(p, dtype=np.float64) for p in (out if out is not None else params)]

        return class_step
    state: dict = {}
    current = [p.copy() for p in params]

    def function_step(grads, t):
        nonlocal current
        out = obj(current, [np.array(g) for g in grads], state, t, **hp)
        current = [np.asarray(p, dtype=np.float64) for p in (out if out is not None else current)]
        return current

    return function_step


def student_run(obj, which: str, prob: Problem) -> tuple[np.ndarray, np.ndarray, str | None]:
    """Parameters ``(k, p)`` and losses of the student's optimizer for the ``k`` steps it completed, and
    the error it raised (``None`` when it ran every step)."""
    theta = prob.theta0.copy()
    step = _student_stepper(obj, which, prob.split(theta))
    thetas, losses = [], []
    for t in range(1, prob.steps + 1):
        loss, g = prob.gradient(theta, t)
        try:
            arrays = step(prob.split(g), t)
            flat = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])
            if flat.shape != theta.shape:
                raise ValueError(f"returned {flat.size} parameters, expected {theta.size}")
        except Exception as exc:                              # the student's code: report, do not crash
            first = (str(exc).strip().splitlines() or [""])[0][:160]
            return np.array(thetas).reshape(-1, theta.size), np.array(losses), \
                f"step {t} raised {type(exc).__name__}: {first}"
        theta = flat
        thetas.append(theta.copy())
        losses.append(loss)
    return np.array(thetas), np.array(losses), None


# ------------------------------------------------------------------------------------------ grading

def _deviation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per step, the largest ``|a − b| / max(1, |b|)`` (∞ where a value is not finite in either: NaN never
    matches NaN, so an all-NaN run reproduces no mistake)."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(a - b) / np.maximum(1.0, np.abs(b))
    d = np.where(np.isfinite(a) & np.isfinite(b), d, np.inf)
    return d.max(axis=1) if d.size else np.zeros(0)


@dataclass
class Graded:
    """The grade of one optimizer on one problem."""

    optimizer: str
    problem: str
    matched: bool
    steps: list[dict] = field(default_factory=list)       # per step: max difference (and losses)
    first_difference: dict | None = None                  # step, coordinate, student, reference
    hint: str | None = None
    error: str | None = None
    nonfinite_from: int | None = None                     # the first step with a NaN or ∞ parameter

    def as_dict(self) -> dict:
        return {"optimizer": self.optimizer, "problem": self.problem, "matched": self.matched,
                "first_difference": self.first_difference, "hint": self.hint, "error": self.error,
                "nonfinite_from": self.nonfinite_from, "steps": self.steps}


def diagnose(which: str, prob: Problem, student: np.ndarray) -> str | None:
    """The classic mistake whose trajectory the student's reproduces (to 1e-8 relative over every step
    run, every value finite), or ``None``."""
    best, best_dev = None, np.inf
    for mistake in MISTAKES:
        if ONLY_FOR.get(mistake, which) != which:
            continue
        with np.errstate(all="ignore"):
            ref = equation_run(which, prob, mistake)[: len(student)]
        dev = float(_deviation(student, ref).max()) if len(student) else np.inf
        if dev < best_dev:
            best, best_dev = mistake, dev
    return MISTAKES[best] if best is not None and best_dev <= 1e-8 else None


def grade_one(obj, which: str, prob: Problem) -> Graded:
    ref_theta, ref_loss = reference_run(which, prob)
    theta, loss, error = student_run(obj, which, prob)
    dev = _deviation(theta, ref_theta[: len(theta)])
    rows = []
    for t in range(len(theta)):
        row = {"step": t + 1, "max_difference": float(dev[t])}
        if prob.name == "spirals":
            row["loss_student"], row["loss_reference"] = float(loss[t]), float(ref_loss[t])
        rows.append(row)
    bad = np.flatnonzero(dev > TOL)
    first = None
    if bad.size:
        t = int(bad[0])
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(theta[t] - ref_theta[t]) / np.maximum(1.0, np.abs(ref_theta[t]))
        k = int(np.nanargmax(np.where(np.isfinite(d), d, np.inf)))
        first = {"step": t + 1, "coordinate": prob.coordinate(k), "student": float(theta[t, k]),
                 "reference": float(ref_theta[t, k])}
    matched = error is None and not bad.size and len(theta) == prob.steps
    hint = None if matched else diagnose(which, prob, theta)
    nonfinite = np.flatnonzero(~np.isfinite(theta).all(axis=1)) if len(theta) else np.zeros(0, int)
    return Graded(which, prob.name, matched, rows, first, hint, error,
                  int(nonfinite[0]) + 1 if nonfinite.size else None)


@dataclass
class GradeReport:
    """Every grade of a student's file. ``passed`` only when both optimizers were found and each matched on
    every problem; ``missing`` names the pieces the file does not define, ``stopped`` why the child running
    it gave no grades (its time or memory limit)."""

    file: str
    graded: list[Graded]
    missing: list[str] = field(default_factory=list)      # messages of :data:`MISSING` (with near names)
    stopped: str | None = None

    @property
    def passed(self) -> bool:
        return bool(self.graded) and not self.missing and self.stopped is None and all(g.matched for g in self.graded)

    def as_dict(self) -> dict:
        return {"file": self.file, "passed": self.passed, "tolerance": TOL, "missing": self.missing,
                "stopped": self.stopped,
                "hyperparameters": {k: {kk: list(vv) if isinstance(vv, tuple) else vv for kk, vv in v.items()}
                                    for k, v in HPARAMS.items()},
                "graded": [g.as_dict() for g in self.graded]}

    @classmethod
    def from_dict(cls, d: dict) -> GradeReport:
        """The report back from :meth:`as_dict` (the child process sends it as JSON)."""
        fields = ("optimizer", "problem", "matched", "steps", "first_difference", "hint", "error", "nonfinite_from")
        return cls(d["file"], [Graded(**{k: g[k] for k in fields}) for g in d["graded"]], list(d["missing"]),
                   d["stopped"])

    def verdict(self) -> str:
        """The last line: PASSED, or FAILED with the reason when it is not a mismatch."""
        if self.passed:
            return f"PASSED: {self.file}"
        if self.stopped:
            return f"FAILED (nothing graded: {self.stopped}): {self.file}"
        if self.missing:
            return (f"FAILED ({len(self.missing)} of {len(NAMES)} optimizers missing; grading the others does not "
                    f"pass the file): {self.file}")
        return f"FAILED: {self.file}"

    def __str__(self) -> str:
        lines = []
        for g in self.graded:
            worst = max((r["max_difference"] for r in g.steps), default=float("nan"))
            head = f"{g.optimizer} on {g.problem}: " + ("matches" if g.matched else "DOES NOT MATCH")
            lines.append(f"{head} (largest relative difference {worst:.3g} over {len(g.steps)} steps, "
                         f"tolerance {TOL:g})")
            if g.error:
                lines.append(f"  your code: {g.error}")
            if g.first_difference:
                f = g.first_difference
                lines.append(f"  first difference at step {f['step']}, {f['coordinate']}: yours {f['student']!r}, "
                             f"reference {f['reference']!r}")
            if g.hint:
                lines.append(f"  hint: {g.hint}")
            elif g.nonfinite_from is not None:
                lines.append(f"  hint: your parameters are not finite (NaN or ∞) from step {g.nonfinite_from} on; NaN "
                             "matches no classic mistake, so none is named: look for a division by zero (such as "
                             "1 − βᵗ with t = 0) or an overflow in that step")
            elif not g.matched:
                lines.append("  hint: no classic mistake reproduces your run; compare the step equations one by one")
            if g.problem == "spirals" and g.steps:
                last = g.steps[-1]
                lines.append(f"  loss after step {last['step']}: yours {last['loss_student']:.12g}, reference "
                             f"{last['loss_reference']:.12g}")
        lines += [f"MISSING: {m}" for m in self.missing]
        lines.append(self.verdict())
        return "\n".join(lines)


def load_student(source) -> tuple[dict[str, object], list[str]]:
    """The student's optimizers (``{"adam": obj, "adamw": obj}``, at least one) found in ``source`` — the
    path of a Python file, or a mapping of names (a notebook's ``{"adam_step": adam_step, …}``) — and the
    messages of the pieces not found (:data:`MISSING`, with the names that look like a misspelling)."""
    from collections.abc import Mapping

    from dyntools.user_code import run_file

    if isinstance(source, Mapping):
        namespace, path = source, "the given names"
    else:
        path = Path(source)
        namespace = run_file(path, "FILE")
    found = {}
    for which, names in NAMES.items():
        for name in names:
            obj = namespace.get(name)
            if obj is not None:
                if not callable(obj):
                    raise ValueError(f"FILE {path}: {name} is a {type(obj).__name__}, not a function or class")
                found[which] = obj
                break
    if not found:
        raise ValueError(f"FILE {path}: defines none of adam_step, Adam, adamw_step, AdamW")
    return found, [MISSING[w] + near_names(namespace, w) for w in NAMES if w not in found]


def near_names(namespace, which: str) -> str:
    """`` (found: adamW_step?)`` when the namespace has a callable whose name, in lower case without
    underscores, is that of a graded name of ``which`` (a misspelling), else ``""``."""
    wanted = {n.lower().replace("_", "") for n in NAMES[which]}
    near = [n for n, obj in namespace.items() if callable(obj) and n not in NAMES[which]
            and n.lower().replace("_", "") in wanted]
    return f" (found {', '.join(near)}: the names are case- and underscore-exact)" if near else ""


def grade(source, *, problems=PROBLEMS, steps: int | None = None, timeout: float = TIMEOUT,
          memory_mb: int | None = MEMORY_MB) -> GradeReport:
    """Grade the student's optimizers in ``source`` — a file path, or a mapping such as
    ``{"adam_step": adam_step, "adamw_step": adamw_step}`` (see the module docstring).

    A file runs in a child process (:mod:`dyntools.child`: ``timeout`` seconds of wall clock, ``memory_mb``
    of address space, a temporary working directory; not a security sandbox); a file that overruns a limit
    gets a report with ``stopped`` set (not passed). A mapping's functions already live in this process and
    run here, without limits.

    Parameters
    ----------
    source : path or mapping
        The student's file, or a mapping of step-function names to functions.
    problems : str or sequence of str, default ("gradients", "spirals")
        The problems graded.
    steps : int, optional
        Steps per problem (each problem's own default otherwise).
    timeout : float, default TIMEOUT
        Wall-clock seconds the child process running a file may take (a file only).
    memory_mb : int or None, default MEMORY_MB
        Address-space limit of that child process in MiB (``None``: no limit).

    Returns
    -------
    GradeReport
        With ``stopped`` set when the child overran a limit (then not passed).
    """
    from collections.abc import Mapping

    problems = (problems,) if isinstance(problems, str) else tuple(problems)
    from dyntools import validation

    for name in problems:                              # bad names or steps: the ValueError here, before any child
        validation.one_of("problem", name, PROBLEMS)
    if steps is not None:
        validation.count("steps", steps)
    if isinstance(source, Mapping):
        return grade_here(source, problems=problems, steps=steps)
    from dyntools.child import ChildStopped, run_limited
    from dyntools.user_code import compiled

    path = Path(source)
    compiled(path, "FILE")                             # a missing or malformed file: one line, before the child
    try:
        report = run_limited("dyntools.autograder:_grade_in_child",
                             {"path": str(path.resolve()), "problems": list(problems), "steps": steps},
                             timeout=timeout, memory_mb=memory_mb)
    except ChildStopped as stop:
        return GradeReport(str(source), [], stopped=stop.reason)
    report = GradeReport.from_dict(report)
    report.file = str(source)
    return report


def grade_here(source, *, problems=PROBLEMS, steps: int | None = None) -> GradeReport:
    """:func:`grade` in this process, without limits (the child process calls it on the file)."""
    from collections.abc import Mapping

    problems = (problems,) if isinstance(problems, str) else tuple(problems)
    probs = [problem(name, steps) for name in problems]
    found, missing = load_student(source)
    name = ", ".join(found_names(source)) if isinstance(source, Mapping) else str(source)
    return GradeReport(name, [grade_one(obj, which, prob) for which, obj in found.items() for prob in probs], missing)


def _grade_in_child(path: str, problems: list[str], steps: int | None) -> dict:
    with np.errstate(all="ignore"):                 # the student's NaN are graded, not warned about
        return grade_here(path, problems=problems, steps=steps).as_dict()


def found_names(namespace) -> list[str]:
    """The graded names present in ``namespace``."""
    return [n for names in NAMES.values() for n in names if namespace.get(n) is not None]
