"""``dyntools bench cold-start``: how long a new user waits for a first result, and how long the next process does.

Each row runs in a CHILD process whose compile caches are empty directories — numba's
(``NUMBA_CACHE_DIR``), the symbolic models' generated code (``DYNTOOLS_SYMBOLIC_CACHE``) and the trainer
loops generated for users' kernels (``DYNTOOLS_LOOP_CACHE``) — then again in a second child given the same,
now filled, directories ("warm": the second process of an installation). Nothing else is shared: each child
is a new interpreter (Python's own ``.pyc`` files are not cleared, as after any install).

Rows are Python snippets run with ``python -c`` (``import`` is timed apart from ``first``, the first call to
its returned result; ``cold``/``warm`` are their sum; ``again``: the same call once more in the same process)
or commands run with ``python -m dyntools`` (wall time of the whole child). Targets are those of issue 38
(seconds, lower is better). JAX's compile time for the same models is reported beside them when JAX is
installed (a note says so when it is not).

``--quick`` runs the ``dt.train`` rows of DiagNet and the toy and the user SDE. The environment variable
``DYNTOOLS_COLD_START_ROWS`` (comma-separated row names) selects rows instead; ``reproduce-quick`` (minutes)
runs only when named there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from dyntools.bench.report import Benchmark, BenchReport, Target, machine_target

#: the compile caches a child starts from (environment variable → sub-directory of the row's cache folder)
CACHE_VARIABLES = {"NUMBA_CACHE_DIR": "numba", "DYNTOOLS_SYMBOLIC_CACHE": "symbolic",
                   "DYNTOOLS_LOOP_CACHE": "loops"}

_CHILD = """\
import json, os, time
_seen = {{v: sum(len(f) for _, _, f in os.walk(os.environ[v])) for v in {variables!r}}}
_t0 = time.perf_counter()
{listener}
{setup}
_t1 = time.perf_counter()
{first}
_t2 = time.perf_counter()
{first}
_t3 = time.perf_counter()
from dyntools.dynamics import compile_helper as _helper
print(json.dumps({{"import": _t1 - _t0, "first": _t2 - _t1, "again": _t3 - _t2, "files_seen": _seen,
                  "helpers": _helper.started, **_compiles.summary()}}))
"""

#: a child's record of numba's compile events (``numba.core.event``): how many functions compiled, the seconds
#: of the outermost compiles (a nested compile's time is inside its caller's) and the slowest outermost ones;
#: ``_compiles.every`` names every function compiled, nested ones too (for tests).
#: Installed after the clock starts: importing numba for it is part of the row's ``import`` time, as it would be.
LISTENER = """\
import time as _time


class _Compiles:
    def __init__(self):
        self.depth, self.started, self.count, self.outer, self.every = 0, [], 0, [], []

    def on_start(self, ev):
        self.depth += 1
        self.started.append(_time.perf_counter())

    def on_end(self, ev):
        self.depth -= 1
        self.count += 1
        seconds = _time.perf_counter() - self.started.pop()
        f = getattr(ev.data.get("dispatcher"), "py_func", None)
        name = f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}"
        self.every.append(name)
        if self.depth == 0:
            self.outer.append((seconds, name))

    def summary(self):
        top = sorted(self.outer, reverse=True)[:4]
        return {"compiles": self.count, "compile s": sum(s for s, _ in self.outer),
                "slowest": [f"{name} {s:.2f} s" for s, name in top]}


_compiles = _Compiles()
try:
    from numba.core import event as _event

    class _Listener(_event.Listener):
        on_start = staticmethod(_compiles.on_start)
        on_end = staticmethod(_compiles.on_end)

    _event.register("numba:compile", _Listener())
except ImportError:                      # a numba without the event API: the counts stay 0
    pass
"""

_DATA = "type('Data', (), {'X': X, 'y': y, 'X_test': globals().get('Xt'), 'y_test': globals().get('yt')})()"

_CIR = '''\
"""A user's Cox-Ingersoll-Ross process dX = kappa (mu - X) dt + sigma sqrt(X) dW, as a user writes it."""
import numba
import numpy as np
import dyntools as dt


@numba.njit
def drift(t, x, args, out):
    out[0] = args[0] * (args[1] - x[0])


@numba.njit
def diffusion(t, x, args, out):
    out[0, 0] = args[2] * np.sqrt(max(x[0], 0.0))


sde = dt.SDE(drift, diffusion, dim=1, noise_dim=1, args=[2.0, 0.5, 0.3], name="cir")
'''


@dataclass(frozen=True)
class Row:
    """One figure: ``setup`` (imports, timed as ``import``) then ``first`` (the first result), or ``argv``
    (a ``dyntools`` command, wall time); the issue's targets for the empty and the filled caches."""

    name: str
    cold_goal: float
    warm_goal: float | None
    setup: str = ""
    first: str = ""
    argv: tuple[str, ...] = ()
    #: a user's file written into the row's folder before the children run (name, text)
    user_file: tuple[str, str] | None = None


def _train_row(name: str, make: str, data: str, steps: int = 10) -> Row:
    return Row(name, 5.0, 1.0, setup=f"import numpy as np\nimport dyntools as dt\n{data}",
               first=f"dt.train({make}, {_DATA}, dt.optim.sgd(1e-3), steps={steps}, seed=0, records=2)")


_RNG = "rng = np.random.default_rng(0)"
ROWS = (
    _train_row("train-diag-net", "dt.DiagNet(200)", f"{_RNG}\nX = rng.standard_normal((100, 200)); y = X[:, 0].copy()\n"
               "Xt = rng.standard_normal((1000, 200)); yt = Xt[:, 0].copy()"),
    _train_row("train-toy", "dt.ToyModel(dt.QuadraticToy.uniform(n=100))",
               "t = dt.toy_data(dt.QuadraticToy.uniform(n=100)); X, y = t.X, t.y"),
    _train_row("train-mlp", "dt.MLP((2, 16, 16, 3), head='cross-entropy')",
               f"{_RNG}\nX = rng.standard_normal((60, 2)); y = np.arange(60) % 3"),
    _train_row("train-relu-net", "dt.MLP((5, 10, 10, 1))",
               f"{_RNG}\nX = rng.standard_normal((50, 5)); y = X[:, 0].copy()"),
    _train_row("train-symbolic-diag3-d100", "model",
               f"{_RNG}\nfrom dyntools.models import symbolic_examples\n"
               "X = rng.standard_normal((100, 100)); y = X[:, 0].copy()\n"
               "model = symbolic_examples.diagonal_net(100, depth=3)"),
    Row("user-sde-first-step", 5.0, 1.0, setup="import sys\nsys.path.insert(0, os.getcwd())\nfrom cir_user import sde\n"
        "import dyntools as dt", first="dt.solve(sde, 0.4, t1=1e-3, h=1e-3, paths=1)",
        user_file=("cir_user.py", _CIR)),
    Row("sweep-adamw-grid-8-cells", 20.0, 5.0,
        argv=("sweep", "adamw-grid", "--optimizers", "adamw", "--lr-grid", "1e-3:1e-2:4", "--wd-grid", "1e-4:1e-2:2",
              "--n", "200", "--n-val", "100", "--epochs", "2", "--workers", "2", "--curve-points", "0", "--json")),
    Row("reproduce-quick", 150.0, 60.0, argv=("reproduce", "--quick", "--json")),
)
QUICK = ("train-diag-net", "train-toy", "user-sde-first-step")
#: how a target is judged (by :class:`dyntools.bench.report.Target`, never by hand)
RULE = ("rule: a row's target is met when its seconds are <= the goal of issue 38 (cold: empty caches; warm: "
        "a second process on the caches the first filled); times taken under load say so in the load averages")
#: rows run only when named in ``DYNTOOLS_COLD_START_ROWS``
ON_REQUEST = ("reproduce-quick",)


def child_environment(folder: str) -> dict[str, str]:
    """The environment of a child whose caches are the sub-folders of ``folder`` (created empty if absent)."""
    from dyntools.child import environment

    env = environment()
    for variable, sub in CACHE_VARIABLES.items():
        env[variable] = os.path.join(folder, "caches", sub)
        os.makedirs(env[variable], exist_ok=True)
    return env


def run_child(row: Row, folder: str) -> dict:
    """One child of ``row`` with its caches in ``folder``: ``{"import", "first", "again", "total", "files_seen"}``
    (seconds; ``files_seen``: files in each cache directory when the child started; commands: ``total`` only)."""
    env = child_environment(folder)
    work = os.path.join(folder, "work")
    os.makedirs(work, exist_ok=True)
    if row.user_file:
        path = os.path.join(work, row.user_file[0])
        if not os.path.exists(path):                       # the same file (and time stamp) for both children
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(row.user_file[1])
    if row.argv:
        seen = {v: sum(len(f) for _, _, f in os.walk(env[v])) for v in CACHE_VARIABLES}
        cmd = [sys.executable, "-m", "dyntools", *row.argv, "--out", os.path.join(work, f"out-{time.time_ns()}")]
        start = time.perf_counter()
        run = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True)
        total = time.perf_counter() - start
        out = {"total": total, "files_seen": seen}
    else:
        code = _CHILD.format(variables=tuple(CACHE_VARIABLES), setup=row.setup, first=row.first, listener=LISTENER)
        run = subprocess.run([sys.executable, "-c", code], env=env, cwd=work, capture_output=True, text=True)
        out = json.loads(run.stdout.strip().splitlines()[-1]) if run.returncode == 0 else {}
        out["total"] = out.get("import", 0.0) + out.get("first", 0.0)
    if run.returncode != 0:
        raise RuntimeError(f"cold-start row {row.name} failed: {run.stderr.strip()[-400:]}")
    return out


def measure(row: Row) -> dict:
    """``row`` cold (empty caches) then warm (a second child on the caches the first one filled)."""
    with tempfile.TemporaryDirectory(prefix="dyntools-cold-") as folder:
        cold = run_child(row, folder)
        warm = run_child(row, folder)
    return {"cold": cold, "warm": warm}


def jax_note() -> str | None:
    """None when JAX is importable (its compile time is then measured), else the note that says why not."""
    import importlib.util

    if importlib.util.find_spec("jax") is None:
        return "JAX is not installed here: no JAX compile times beside the rows (pip install jax to add them)"
    return None


def jax_compile_seconds(d: int = 100, depth: int = 3) -> float:
    """Seconds for JAX to trace and compile 10 steps of batch-1 SGD on a depth-``depth`` diagonal net (d inputs),
    in a fresh child (jit of a ``lax.scan``: what a JAX user writes for the symbolic row's model)."""
    code = f"""\
import time, json
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
X = jnp.ones((100, {d})); y = jnp.ones(100); idx = jnp.arange(10) % 100
def loss(th, x, yi):
    return 0.5 * (jnp.dot(x, jnp.prod(th.reshape({depth}, {d}), axis=0)) - yi) ** 2
@jax.jit
def run(th):
    return jax.lax.scan(lambda t, i: (t - 1e-3 * jax.grad(loss)(t, X[i], y[i]), None), th, idx)[0]
s = time.perf_counter(); run(jnp.full({depth * d}, 0.1)).block_until_ready(); print(json.dumps(time.perf_counter() - s))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(json.loads(run.stdout.strip().splitlines()[-1]))


def selected(quick: bool) -> list[Row]:
    """The rows to run: ``DYNTOOLS_COLD_START_ROWS`` when set, else the quick subset or all but on-request ones."""
    names = [n for n in os.environ.get("DYNTOOLS_COLD_START_ROWS", "").split(",") if n]
    known = {r.name: r for r in ROWS}
    for n in names:
        if n not in known:
            raise ValueError(f"Invalid DYNTOOLS_COLD_START_ROWS: {n!r} (rows: {', '.join(known)})")
    if names:
        return [known[n] for n in names]
    return [r for r in ROWS if (r.name in QUICK if quick else r.name not in ON_REQUEST)]


def run(quick: bool = False, rows: list[Row] | None = None) -> BenchReport:
    report = BenchReport("cold-start")
    if hasattr(os, "getloadavg"):                    # a busy machine multiplies every figure: say how busy
        report.measurements["load average (1 min) at start"] = os.getloadavg()[0]
    for row in rows if rows is not None else selected(quick):
        got = measure(row)
        if hasattr(os, "getloadavg"):
            report.measurements[f"{row.name} load average (1 min) after"] = os.getloadavg()[0]
        for phase in ("cold", "warm"):
            for part in ("import", "first", "again", "total", "compile"):
                if part in got[phase] or f"{part} s" in got[phase]:
                    report.measurements[f"{row.name} {phase} {part} s"] = got[phase].get(part, got[phase].get(
                        f"{part} s"))
            if "compiles" in got[phase]:
                report.measurements[f"{row.name} {phase} functions compiled"] = got[phase]["compiles"]
            if got[phase].get("helpers"):      # their compiles ran on another core, not counted above
                report.measurements[f"{row.name} {phase} compile helper processes"] = got[phase]["helpers"]
            if got[phase].get("slowest"):
                report.notes.append(f"{row.name} {phase}: slowest compiles {'; '.join(got[phase]['slowest'])}")
        report.targets.append(Target(f"{row.name} cold", got["cold"]["total"], row.cold_goal,
                                     higher_is_better=False, unit="s"))
        if row.warm_goal is not None:
            report.targets.append(Target(f"{row.name} warm", got["warm"]["total"], row.warm_goal,
                                         higher_is_better=False, unit="s"))
    report.notes.append(RULE)
    note = jax_note()
    if note is None:
        report.measurements["jax compile s (depth-3 diagonal net, d = 100)"] = jax_compile_seconds()
    else:
        report.notes.append(note)
    report.notes.append("the test suite's pytest time is not measured here (it takes many minutes): time "
                        "`pytest` itself")
    report.target = machine_target()
    report.notes.append(f"processor: {processor()}")
    return report


def processor() -> str:
    """The processor's model name (``/proc/cpuinfo``; the platform's name elsewhere), the target numba compiles
    for and the logical processors: "AMD EPYC" alone names both a Zen 4 and a Zen 5, whose compile times differ
    by up to 1.9× (docs/performance.md)."""
    import platform

    from dyntools.engine.target import compile_target

    name = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            name = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), name)
    except OSError:
        pass
    return f"{name} (numba target {compile_target()['cpu_name']}, {os.cpu_count()} logical processors)"


BENCHMARK = Benchmark("cold-start", run, compiles_in_children=True)
