"""docs/guide/bring-your-own.md runs as written: its Python blocks, in order, in one fresh process
(the "bring your own optimizer" and "bring your own model kernel" examples and the claim)."""

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "bring-your-own.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_every_python_block_of_the_guide_runs(tmp_path):
    blocks = python_blocks(PAGE.read_text())
    assert len(blocks) >= 4
    script = tmp_path / "guide.py"
    script.write_text("\n\n".join(blocks))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DYNTOOLS_LOOP_CACHE": str(tmp_path / "loops")}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "chain ['chain (numpy)', 'chain (numpy)']" in proc.stdout   # AdamW too: the run set goes by its chains
    assert "wrote past its workspace" in proc.stdout and "'difference'" in proc.stdout


# ------------------------------------------------------------- the claim: Adam + L2 against AdamW, exactly

def _exact_form(expr):
    """Every fractional power's base expanded: equal radicands become the same sympy atom, so that
    ``cancel`` of a difference decides it exactly (a rational function of the same atoms)."""
    import sympy as sp

    return expr.replace(lambda x: x.is_Pow and x.exp.is_Rational and not x.exp.is_Integer,
                        lambda x: sp.Pow(sp.expand(x.base), x.exp))


def _hand_written(weight_decay_in_gradient: bool, decoupled: bool):
    """Two steps of torch.optim.Adam written out (θ_t = θ_{t−1} − η/(1−β₁ᵗ) · m_t / (√v_t/√(1−β₂ᵗ) + ε)),
    on the gradient g_t + λθ_{t−1} (L2) or g_t, and with AdamW's θ ← θ − ηλθ before the step (decoupled)."""
    import sympy as sp

    eta, b1, b2, eps, lam = (sp.Symbol(n, positive=True) for n in ("eta", "beta_1", "beta_2", "epsilon", "lambda"))
    theta, m, v = sp.Symbol("theta_0", real=True), 0, 0
    for t in (1, 2):
        g = sp.Symbol(f"g_{t}", real=True) + (lam * theta if weight_decay_in_gradient else 0)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g**2
        theta = theta * (1 - eta * lam if decoupled else 1) - eta / (1 - b1**t) * m / (sp.sqrt(v) / sp.sqrt(1 - b2**t)
                                                                                       + eps)
    return theta


def test_the_claim_block_unrolls_adam_plus_l2_and_is_refuted_for_the_decay():
    """The page's claim block, run as printed: its ``l2`` is Adam + L2 written by hand (exactly: the difference
    cancels to 0) — not the L2 term added twice, as it was when ``dt.adam(weight_decay=…)`` was also given
    ``g_t + λθ``; ``decoupled`` is AdamW by hand; the control is refuted at a point where λ ≠ 0 with the
    hand-written difference, and at λ = 0 the two sides are one expression (the decay alone separates them)."""
    import sympy as sp

    import dyntools as dt

    block = next(b for b in python_blocks(PAGE.read_text()) if "adam-l2-is-adamw" in b)
    ns: dict = {}
    exec(compile(block, str(PAGE), "exec"), ns)
    by_hand, adamw_by_hand = _hand_written(True, False), _hand_written(False, True)
    assert sp.cancel(_exact_form(ns["l2"].theta(2)) - _exact_form(by_hand)) == 0
    assert sp.cancel(_exact_form(ns["decoupled"].theta(2)) - _exact_form(adamw_by_hand)) == 0
    # dt.adam(weight_decay=λ) is the same Adam + L2; fed g_t + λθ as well, it is not (the page's old bug)
    assert sp.cancel(_exact_form(dt.unroll(dt.adam(weight_decay=1e-2), 2).theta(2)) - _exact_form(by_hand)) == 0
    lam = sp.Symbol("lambda", positive=True)
    twice = dt.unroll(dt.adam(weight_decay=1e-2), 2, grads=lambda th, t: sp.Symbol(f"g_{t}", real=True) + lam * th)
    point = {s: sp.Rational(k + 2, 7) for k, s in enumerate(sorted(by_hand.free_symbols, key=str))}
    assert abs((twice.theta(2) - by_hand).subs(point).evalf(50)) > 1e-6

    result = ns["result"]
    assert result.verdict == "refuted" and result.as_expected
    at = {s: sp.Rational(result.counterexample[s.name]) for s in by_hand.free_symbols | adamw_by_hand.free_symbols}
    assert at[lam] != 0
    difference = (by_hand - adamw_by_hand).subs(at)
    assert difference != 0 and sp.simplify(difference - sp.sympify(result.counterexample["difference"])) == 0
    without_decay = [_exact_form(ns[name].theta(2).subs(lam, 0)) for name in ("l2", "decoupled")]
    assert sp.cancel(without_decay[0] - without_decay[1]) == 0
