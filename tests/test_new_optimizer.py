"""Issue 37's "Done when": a new optimizer is one transform + one alias, and from those two text edits alone it
works everywhere a built-in name does.

The package is copied to a temporary directory; Lion (Chen et al. 2023) is added there exactly as
docs/howto/add-an-optimizer.md says — a transform appended to ``dyntools/optim/transforms.py`` and an ``@alias``
factory appended to ``dyntools/optim/optimizers.py``, no other file — and a subprocess with that copy first on
``sys.path`` then: trains it with ``dt.train`` (equal to Lion's equations), sweeps it with ``dyntools sweep
adamw-grid --optimizers lion`` (a 2 × 1 grid), unrolls two steps with ``dt.unroll`` (the exact symbolic
iterates), reads the PyTorch name table (Lion has none) and the docs' generated optimizer list.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

HOWTO = ROOT / "docs" / "howto" / "add-an-optimizer.md"


def howto_blocks() -> list[str]:
    """The how-to's Python code blocks: step 1's transform and step 2's alias, the text this test appends."""
    return re.findall(r"```python\n(.*?)```", HOWTO.read_text(encoding="utf-8"), flags=re.S)


#: what the subprocess does with the copy (prints one JSON object)
SCRIPT = r'''
import json, subprocess, sys
from pathlib import Path

import numpy as np
import sympy as sp

root = Path(sys.argv[1])
sys.path.insert(0, str(root))
sys.path.insert(0, str(root / "docs" / "_ext"))
import dyntools as dt
from dyntools.models.least_squares import LeastSquares
from dyntools.heatmap_grid import GridConfig
from dyntools.optim import torch_names

out = {"package": dt.__file__, "all": "lion" in dt.__all__,
       "same": dt.lion is dt.optim.lion is dt.optim.FACTORIES["lion"]}

# dt.train: full-batch least squares, 25 steps
rng = np.random.default_rng(3)
X = rng.normal(size=(12, 3)); y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=12)
class Data:
    pass
d = Data(); d.X, d.y = X, y
theta0 = np.array([0.3, -0.2, 0.1])
res = dt.train(LeastSquares(3), d, dt.optim.make("lion", lr=0.05, weight_decay=0.1), steps=25, sampler="full",
               record_steps=np.arange(26), theta0=theta0)
out["X"], out["y"], out["theta"] = X.tolist(), y.tolist(), res["theta"][0, 0].tolist()
out["optimizer_path"] = res.config["optimizer_path"]
out["optimizer_step"] = res.config["runs"][0]["optimizer_step"]

# the sweep: its default lr axis is the alias's; then a 2 x 1 grid on the command line
out["lr_range"] = list(GridConfig(optimizers=("lion",)).lr_range_of("lion"))
args = [sys.executable, "-m", "dyntools", "sweep", "adamw-grid", "--optimizers", "lion", "--lr-grid", "1e-3:1e-2:2",
        "--wd-grid", "1e-2:1e-2:1", "--n", "40", "--n-val", "40", "--epochs", "1", "--hidden", "4",
        "--batch-size", "20", "--curve-points", "0", "--workers", "1", "--seed", "3", "--json",
        "--out", sys.argv[2]]
proc = subprocess.run(args, capture_output=True, text=True, cwd=root, env={**__import__("os").environ,
                                                                            "PYTHONPATH": str(root)})
out["sweep_rc"], out["sweep_err"] = proc.returncode, proc.stderr[-2000:]
out["sweep"] = json.loads(proc.stdout) if proc.returncode == 0 else None
helptext = subprocess.run([sys.executable, "-m", "dyntools", "sweep", "adamw-grid", "--help"], capture_output=True,
                          text=True, cwd=root, env={**__import__("os").environ, "PYTHONPATH": str(root)}).stdout
out["help_lists_lion"] = "lion" in " ".join(helptext.split())

# dt.unroll: two exact symbolic steps
u = dt.unroll(dt.lion(lr=0.1, weight_decay=0.01), steps=2)
eta, lam, b1, b2 = (u.hyper[k] for k in ("lr", "weight_decay", "b1", "b2"))
th0, g1, g2 = u.theta(0), u.grads[0][0], u.grads[1][0]
th1 = th0 - eta * (sp.sign((1 - b1) * g1) + lam * th0)
th2 = th1 - eta * (sp.sign(b1 * (1 - b2) * g1 + (1 - b1) * g2) + lam * th1)
out["unroll_names"] = list(u.chain)
out["unroll_equal"] = [bool(sp.simplify(u.theta(1) - th1) == 0), bool(sp.simplify(u.theta(2) - th2) == 0)]

# the PyTorch name table: Lion has none, and says so
out["torch_name"] = torch_names.torch_name("lion")
out["torch_table"] = torch_names.optimizers()
try:
    torch_names.optimizer_from_torch("Lion", {})
    out["torch_error"] = None
except ValueError as exc:
    out["torch_error"] = str(exc)

# the docs' generated optimizer list
import optimizer_list
out["docs_row"] = [line for line in optimizer_list.page().splitlines() if line.startswith("| `lion`")]
print(json.dumps(out))
'''


def _copy(dst: Path) -> None:
    """The package, the experiments and the claims (``dyntools sweep`` discovers them) and the docs' generators;
    with the numba caches and the files' times, so that the copy loads what the checkout compiled."""
    skip = shutil.ignore_patterns("_build", "*.pyc")
    for part in ("dyntools", "simulations", "proofs", "docs/_ext"):
        shutil.copytree(ROOT / part, dst / part, ignore=skip)


def lion_reference(theta, grad, lr, wd, steps, b1=0.9, b2=0.99):
    """Lion from its equations (plain NumPy), full-batch gradient ``grad(θ)``."""
    m, out = np.zeros_like(theta), [theta.copy()]
    for _ in range(steps):
        g = grad(theta)
        theta = theta - lr * (np.sign(b1 * m + (1 - b1) * g) + wd * theta)
        m = b2 * m + (1 - b2) * g
        out.append(theta.copy())
    return np.array(out)


@pytest.fixture(scope="module")
def lion_copy(tmp_path_factory):
    """The copy with Lion added by the two documented text edits; the subprocess's report."""
    root = tmp_path_factory.mktemp("lion") / "repo"
    _copy(root)
    transform, alias = howto_blocks()
    for rel, text in (("dyntools/optim/transforms.py", transform), ("dyntools/optim/optimizers.py", alias)):
        with open(root / rel, "a", encoding="utf-8") as f:
            f.write("\n\n" + text)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(root), str(root.parent / "grid")], capture_output=True,
                          text=True, cwd=root.parent, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return root, json.loads(proc.stdout.strip().splitlines()[-1])


def _changed(a: Path, b: Path) -> list[str]:
    """The .py files that differ or exist in only one of two trees (relative paths)."""
    out = []
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__", "_build"])

    def walk(c, rel):
        out.extend(f"{rel}{n}" for n in c.left_only + c.right_only + c.diff_files if n.endswith(".py"))
        for name, sub in c.subdirs.items():
            walk(sub, f"{rel}{name}/")
    walk(cmp, "")
    return sorted(out)


def test_lion_is_two_text_edits_of_two_files(lion_copy):
    """The how-to's two code blocks, appended to the two files it names, are the only change."""
    assert len(howto_blocks()) == 2 and "class scale_by_lion" in howto_blocks()[0] and "@alias" in howto_blocks()[1]
    root, report = lion_copy
    changed = [f"{part}/{f}" for part in ("dyntools", "simulations", "proofs", "docs/_ext")
               for f in _changed(ROOT / part, root / part)]
    assert changed == ["dyntools/optim/optimizers.py", "dyntools/optim/transforms.py"]
    assert Path(report["package"]).resolve().is_relative_to(root.resolve())      # the copy ran, not the checkout
    assert report["all"] and report["same"]          # dt.lion, dt.optim.lion, FACTORIES["lion"]: one factory


def test_lion_trains_as_its_equations(lion_copy):
    _, report = lion_copy
    X, y = np.array(report["X"]), np.array(report["y"])
    ref = lion_reference(np.array([0.3, -0.2, 0.1]), lambda th: 2.0 * X.T @ (X @ th - y), 0.05, 0.1, 25)
    np.testing.assert_allclose(np.array(report["theta"]), ref, rtol=1e-12, atol=1e-14)
    assert not np.allclose(ref[-1], ref[0])
    # the how-to's element_update(): Lion runs in the compiled loop, not stepped from Python
    assert report["optimizer_path"] == "fused" and report["optimizer_step"] == "fused"


def test_lion_sweeps_on_the_command_line(lion_copy):
    _, report = lion_copy
    assert report["sweep_rc"] == 0, report["sweep_err"]
    assert report["sweep"]["cells"] == 2 and report["sweep"]["computed"] == 2
    assert list(report["sweep"]["optimizers"]) == ["lion"]
    assert report["lr_range"] == [1e-5, 1e-2]           # its alias's axis, not another optimizer's
    assert report["help_lists_lion"]


def test_lion_unrolls_symbolically(lion_copy):
    _, report = lion_copy
    assert report["unroll_names"] == ["scale_by_lion", "add_decay"]
    assert report["unroll_equal"] == [True, True]


def test_lion_has_no_torch_name_and_is_in_the_docs_list(lion_copy):
    _, report = lion_copy
    assert report["torch_name"] is None and "lion" not in report["torch_table"].values()
    assert report["torch_error"] and "Invalid torch optimizer: 'Lion'" in report["torch_error"]
    assert len(report["docs_row"]) == 1 and "| — |" in report["docs_row"][0]
    assert "Chen et al. 2023" in report["docs_row"][0]
