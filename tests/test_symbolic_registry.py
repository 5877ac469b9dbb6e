"""The plain registry (filled by dyntools.claims from the declared families) and the layering rule."""

import ast
import types
from pathlib import Path

import pytest
import sympy as sp

from dyntools.claims import builtin_registry, claim_families
from dyntools.symbolic import Claim
from dyntools.symbolic.registry import Registry, run

ROOT = Path(__file__).resolve().parents[1]
x = sp.Symbol("x", real=True)


def _claims(*names, control=None):
    return [Claim.equation(n, x, x, expected="refuted" if n == control else "verified") for n in names]


def test_register_lists_callables_and_modules():
    reg = Registry()
    loaded = []
    reg.register_family("plain", _claims("a", "b"))
    reg.register_family("lazy", lambda: loaded.append(1) or _claims("c"))
    reg.register_family("module", types.SimpleNamespace(CLAIMS=_claims("d", "e", control="e")))
    assert not loaded and reg.families == ["plain", "lazy", "module"]
    assert [c.name for c in reg.select()] == ["a", "b", "c", "d"]  # controls only when asked
    assert [c.name for c in reg.select(["module"], controls=True)] == ["d", "e"]
    assert [c.name for c in reg.select(["e"])] == ["e"] and loaded == [1]
    assert {c.family for c in reg.all_claims().values()} == {"plain", "lazy", "module"}
    assert [r.verdict for r in run(reg.select(["a", "e"]))] == ["verified", "verified"]


def test_registry_errors():
    reg = Registry()
    reg.register_family("f", _claims("a"))
    with pytest.raises(ValueError, match="already registered"):
        reg.register_family("f", [])
    with pytest.raises(ValueError, match="nope"):
        reg.select(["nope"])
    reg.register_family("g", _claims("a"))
    with pytest.raises(ValueError, match="duplicate claim name 'a'"):
        reg.all_claims()
    bad = Registry()
    bad.register_family("h", ["not a claim"])
    with pytest.raises(TypeError, match="Claim objects"):
        bad.all_claims()


def test_builtin_families_are_the_declared_ones():
    reg = builtin_registry()
    assert reg.families == claim_families()
    assert {"optimizer-code", "relu-nets", "brownian"} <= set(reg.families)


def test_nothing_below_the_command_layer_imports_proofs_or_simulations():
    offenders = []
    for path in (ROOT / "dyntools" / "symbolic").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("proofs", "simulations")]
        if "import_module(\"proofs" in path.read_text() or "'proofs." in path.read_text():
            offenders.append(path.name)
    assert not offenders
