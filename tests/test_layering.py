"""Layering: the files of dyntools/, simulations/ and proofs/ depend on one another one way, floor by floor.

Every ``.py`` under ``dyntools/``, ``simulations/`` and ``proofs/`` (the last two under their installed names
``dyntools.simulations.*`` and ``dyntools.proofs.*``; ``simulations.x`` in a string means the same module) is
parsed with ``ast``. An *edge* ``a → b`` is any of

* an import of ``b``, at the top of a module or inside a function (a lazy import is still a dependency);
* ``import dyntools`` / ``from dyntools import load`` (a public name, not a module): an edge to the package
  namespace ``dyntools`` itself (its ``__init__``, the top floor);
* a string that *is* a module path — ``"dyntools.x.y"``, ``"dyntools.x:function"``, ``"simulations.x"``, the
  module of ``importlib.import_module("…")``, each entry of a table of such strings: what is resolved at run time
  is a dependency even if no import shows it;
* a *package scan*: a file that calls ``pkgutil.iter_modules``/``walk_packages`` depends on every module of each
  package it names in a string (and of its own package when it scans ``__path__``) — a discovery imports them all.

A string is an edge only when the whole string is the path of a module that exists (or a module and one
attribute); prose that mentions a module (a docstring, ``"see dyntools.store"``) is not.

1. **Floors.** :data:`FLOORS` lists the rooms (a top-level module or folder of dyntools/; ``simulations`` and
   ``proofs``) from the ground up; a file may depend on its own floor or a floor below, never on a floor above.
2. **No circles.** No file depends (directly or through others) on a file that depends on it back, and no room
   does (``dyntools/dynamics/fast/`` is part of the room ``dynamics``).
3. **Low-level code fenced off.** ``dyntools.lowlevel`` (numba and LLVM internals) is imported only from the
   floors up to the models', never directly from above them.
4. **The command line alone uses simulations/ and proofs/.** A module of dyntools/ outside :data:`COMMAND_LINE`
   violates it when it imports ``simulations``/``proofs`` (or ``dyntools.simulations``/``dyntools.proofs``, their
   installed names), or names one of their modules in a string literal that is a module path.

**The package's ``__init__``** (``dt.load``, ``dt.train`` … resolved through its ``_LAZY`` table, PEP 562) is the
top floor: its table's strings are edges like any others, so it may name anything, because everything lies below
it. What keeps that honest is the other direction: nothing below the command line may reach the namespace
``dyntools`` (``import dyntools as dt`` or ``from dyntools import <public name>``) — that is an edge to the top
floor, an upward one, and with the table it closes a circle. Below the top, a file imports the module it uses
(``from dyntools.dynamics.train import train``).

Every check holds over the whole tree — dyntools/, simulations/, proofs/, imports inside functions, module paths
written in strings and package scans: no circle, no climb (the planted-string tests show each check fails on the
kind of circle the string registries PLOTTERS, BUILTIN_FAMILIES and BENCHMARKS once closed). The allowed exceptions
to 1–3 are listed in :data:`EXCEPTIONS` with their reason.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("simulations", "proofs")
#: The files of dyntools/ that may name simulations/proofs: the command line, the package's ``__init__.py`` and the
#: one plugin discovery (``dyntools/plugins.py`` scans the two packages by name; ``dyntools/claims.py`` is its face
#: for the claims) and the two stubs that make the repository's folders the packages in a checkout.
COMMAND_LINE = ("dyntools/cli.py", "dyntools/commands/", "dyntools/__init__.py", "dyntools/plugins.py",
                "dyntools/claims.py", "dyntools/simulations/", "dyntools/proofs/")
#: The repository's folders scanned besides dyntools/, with the package name they are installed under.
PLUGIN_FOLDERS = {"simulations": "dyntools.simulations", "proofs": "dyntools.proofs"}

#: The floors, from the ground up: each names its rooms (a top-level module or folder of dyntools/,
#: ``"__init__"`` for the package's own ``__init__.py``, ``simulations``/``proofs`` for the plugin folders).
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("helpers", ("validation", "tables", "user_code", "version", "verdicts", "time_budget", "child", "docstrings",
                 "markdown_text", "memory", "numba_errors")),
    ("low level", ("lowlevel",)),            # numba/LLVM internals (fma panels, vector transposes, flat views)
    ("engine", ("engine", "params", "arrays_io")),
    ("code generation", ("codegen",)),      # sympy → derivatives → numba/NumPy source (the symbolic model's)
    ("declarations, storage, measures, optimizers", ("result_schema", "store", "folder_lock", "metrics",
                                                     "model_metrics", "optim")),
    ("models", ("models",)),
    ("data", ("data",)),                     # data sets may be labelled by a model (the ReLU teacher)
    ("dynamics", ("dynamics",)),             # the trainer, its generic and tuned loops, the SDEs
    ("experiments, sweeps, proofs, grading", ("spec", "sweep", "cluster", "classifier_cell", "symbolic",
                                              "autograder", "sweep_backend", "heatmap_grid", "grokking_study",
                                              "relu_settings", "diag_net_ensemble")),
    ("plots and the report", ("plots", "report")),   # the report checks the figures it writes
    ("benchmarks", ("bench",)),
    ("plugins: the experiments and the claim families", ("simulations", "proofs")),
    ("plugin discovery", ("plugins", "claims")),   # scans the plugin packages and the entry points
    ("command line", ("commands", "cli", "__main__", "__init__")),
)
FLOOR_OF = {room: level for level, (_, rooms) in enumerate(FLOORS) for room in rooms}
#: Nothing above this floor imports ``dyntools.lowlevel`` directly (it goes through the models' API).
LOWLEVEL_USERS_UP_TO = FLOOR_OF["models"]

#: Allowed exceptions to the floors, the circles and the low-level fence: ``(importer, imported)``
#: module names → the reason; an entry that no longer occurs fails the suite.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("dyntools.bench.report", "dyntools.lowlevel.width"): "a benchmark states the vector width the panels were "
                                                          "built for (a read-only fact of the target it reports)",
    ("dyntools.bench.sweep", "dyntools.lowlevel"): "the sweep benchmark reports which low-level kernels ran "
                                                   "(llvm-vector or the fallback) and inspects a panel's code",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[0] in PLUGIN_FOLDERS:
        parts = (*PLUGIN_FOLDERS[parts[0]].split("."), *parts[1:])
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def library_files() -> dict[str, Path]:
    """Module name → file, for every ``.py`` under dyntools/, simulations/ and proofs/."""
    paths = [p for folder in ("dyntools", *PLUGIN_FOLDERS) for p in sorted((ROOT / folder).rglob("*.py"))]
    return {_module_name(p): p for p in paths}


def in_package(module: str) -> bool:
    """A module of dyntools/ itself (not of the plugin folders)."""
    return room_of(module) not in PLUGIN_FOLDERS


def room_of(module: str) -> str:
    """The room of a module: ``dyntools.dynamics.fast.mlp`` → ``dynamics``, ``dyntools.simulations.x`` →
    ``simulations``, the package ``dyntools`` → ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _installed(name: str) -> str:
    """``simulations.x`` → ``dyntools.simulations.x`` (the checkout's name → the installed one)."""
    head = name.split(".")[0]
    return f"{PLUGIN_FOLDERS[head]}{name[len(head):]}" if head in PLUGIN_FOLDERS else name


def imported_modules(source: str, module: str, is_package: bool, known) -> set[str]:
    """The modules ``source`` imports, anywhere in the file (module level or inside a function).

    ``from a.b import c`` counts as an import of ``a.b.c`` when that is a module, else of ``a.b``; relative
    imports are resolved against ``module``; a name that is not a known module is cut back to its nearest
    known parent, at most to its room (``dyntools.engine.result.RunResult`` → ``dyntools.engine.result``) — or
    to the namespace ``dyntools`` for a public name of the package (``from dyntools import load``)."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()

    def add(name: str):
        name = _installed(name)
        while name.count(".") > 1 and name not in known:     # a room not written yet (lowlevel) stays a room
            name = name.rpartition(".")[0]
        if name.count(".") == 1 and name not in known and name.startswith("dyntools.") \
                and not (ROOT / "dyntools" / name.split(".")[1]).exists():
            name = "dyntools"                                 # a public name of the namespace, not a module
        if (name == "dyntools" or name.startswith("dyntools.")) and name != module:
            found.add(name)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = _installed(f"{base}.{alias.name}")
                add(full if full in known else base)
    return found


#: a string that is a module path: dotted names, optionally ``:attribute``
_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?$")
_SCANS = ("iter_modules", "walk_packages")


def _resolve_path(text: str, known) -> str | None:
    """The module a string names (``"dyntools.x.y"``, ``"dyntools.x:f"``, ``"simulations.x"``, a module and one
    attribute ``"dyntools.x.Y"``), or None when it is no module path of the tree."""
    if not _PATH.match(text) or ("." not in text and ":" not in text):
        return None
    name = _installed(text.partition(":")[0])
    if not name.startswith("dyntools."):
        return None
    if name in known:
        return name
    parent = name.rpartition(".")[0]
    return parent if parent in known and parent != "dyntools" else None


def _children(package: str, known) -> set[str]:
    return {m for m in known if m.rpartition(".")[0] == package}


def string_modules(source: str, module: str, is_package: bool, known) -> set[str]:
    """The modules ``source`` names in strings that are module paths, and — when it scans packages
    (``pkgutil.iter_modules``/``walk_packages``) — every module of each package it names (and of its own
    package when it scans ``__path__``)."""
    tree = ast.parse(source)
    named = {m for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
             for m in [_resolve_path(node.value, known)] if m}
    scans = any(isinstance(node, ast.Attribute | ast.Name) and (getattr(node, "attr", None) in _SCANS
                                                                 or getattr(node, "id", None) in _SCANS)
                for node in ast.walk(tree))
    if scans:
        packages = {m for m in named if _children(m, known)}
        if is_package and any(isinstance(n, ast.Name) and n.id == "__path__" for n in ast.walk(tree)):
            packages.add(module)
        named |= {child for p in packages for child in _children(p, known)}
    named.discard(module)
    return named


@cache
def import_graph(strings: bool = False, everything: bool = False) -> dict[str, set[str]]:
    """Module → the modules it depends on: its imports (and, with ``strings``, its module-path strings and
    package scans), over dyntools/ alone, or with ``everything`` over simulations/ and proofs/ too."""
    files = library_files()
    graph = {}
    for m, p in files.items():
        if not everything and not in_package(m):
            continue
        source, is_package = p.read_text(encoding="utf-8"), p.name == "__init__.py"
        edges = imported_modules(source, m, is_package, files)
        if strings:
            edges |= string_modules(source, m, is_package, files)
        graph[m] = edges if everything else {e for e in edges if in_package(e)}
    return graph


def string_edges(everything: bool = True) -> dict[str, set[str]]:
    """The edges that only strings and scans make (none of them is an import)."""
    plain, full = import_graph(False, everything), import_graph(True, everything)
    return {m: full[m] - plain[m] for m in full if full[m] - plain[m]}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``importer → imported`` pairs that climb a floor, or reach dyntools.lowlevel from above the models."""
    found = []
    for a, targets in graph.items():
        for b in sorted(targets):
            fa, fb = FLOOR_OF[room_of(a)], FLOOR_OF.get(room_of(b), -1)
            if (a, b) in EXCEPTIONS:
                continue
            if fb > fa:
                found.append(f"{a} ({FLOORS[fa][0]}) imports {b} ({FLOORS[fb][0]})")
            elif room_of(b) == "lowlevel" and fa > LOWLEVEL_USERS_UP_TO:
                found.append(f"{a} ({FLOORS[fa][0]}) imports {b} directly (low-level code is for the models' "
                             "floor and below)")
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if (v, w) in EXCEPTIONS:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def room_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = {}
    for a, targets in graph.items():
        rooms.setdefault(room_of(a), set()).update(room_of(b) for b in targets if room_of(b) != room_of(a))
    return rooms


def test_every_room_has_a_floor():
    rooms = {room_of(m) for m in library_files()}
    assert rooms <= set(FLOOR_OF), f"rooms of dyntools/ without a floor in FLOORS: {sorted(rooms - set(FLOOR_OF))}"
    assert {"models", "dynamics", "engine", "data", "commands", "__init__"} <= rooms


def test_no_import_climbs_a_floor():
    bad = upward_imports(import_graph())
    assert not bad, "imports from a lower floor to a higher one (see FLOORS in tests/test_layering.py):\n" + \
        "\n".join(bad)


def test_no_circle_between_files():
    found = circles(import_graph())
    assert not found, "files of dyntools/ that import one another (directly or through others):\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_no_circle_between_rooms():
    found = circles(room_graph(import_graph()))
    assert not found, "rooms of dyntools/ that import one another: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_models_do_not_know_their_loops():
    graph = import_graph()
    bad = {m: sorted(t for t in targets if room_of(t) == "dynamics")
           for m, targets in graph.items() if room_of(m) == "models"}
    assert not any(bad.values()), f"models importing dynamics: {bad}"


def test_exceptions_still_occur():
    graph = import_graph()
    for (a, b), reason in EXCEPTIONS.items():
        assert b in graph.get(a, ()), f"{a} no longer imports {b}: delete the exception ({reason})"


def _graph_with(planted: str, importer: str, strings: bool = False) -> dict[str, set[str]]:
    """The real graph (with ``strings``: of the whole tree, strings and scans included) with ``importer``'s
    edges replaced by those of the source ``planted``."""
    graph = dict(import_graph(strings, strings))
    files = library_files()
    is_package = files[importer].name == "__init__.py"
    graph[importer] = imported_modules(planted, importer, is_package, files)
    if strings:
        graph[importer] |= string_modules(planted, importer, is_package, files)
    return graph


@pytest.mark.parametrize(("importer", "planted"), [
    ("dyntools.models.mlp", "def fast_path(self):\n    from dyntools.dynamics.fast import mlp\n"),
    ("dyntools.models.diag_net", "import dyntools.dynamics.train\n"),
    ("dyntools.engine.streams", "def f():\n    from dyntools.models import mlp\n"),
    ("dyntools.optim.fuse", "class A:\n    def g(self):\n        import dyntools.dynamics.loops as L\n"),
    ("dyntools.dynamics.train", "from dyntools import sweep\n"),
    ("dyntools.data.teachers", "from dyntools.dynamics import train\n"),
    ("dyntools.validation", "from dyntools.engine import guard\n"),
    ("dyntools.plots.relu", "from dyntools.bench import relu\n"),
    ("dyntools.models.mlp", "from ..dynamics import loops\n"),
    ("dyntools.dynamics.train", "def f():\n    from dyntools.lowlevel import fma_block\n"),
])
def test_the_floors_catch_a_planted_upward_import(importer, planted):
    bad = upward_imports(_graph_with(planted, importer))
    assert any(b.startswith(importer + " ") for b in bad), bad


@pytest.mark.parametrize(("importer", "planted"), [
    ("dyntools.dynamics.train", "def f():\n    from dyntools.models import mlp\n"),
    ("dyntools.dynamics.fast.mlp", "from . import diag_net\nfrom ..loops import LOOPS\n"),
    ("dyntools.commands.plot", "import dyntools.plots.relu\n"),
    ("dyntools.models.mlp_gemm", "def f():\n    from dyntools.lowlevel import fma_block\n"),
])
def test_the_floors_allow_a_downward_import(importer, planted):
    assert not [b for b in upward_imports(_graph_with(planted, importer)) if b.startswith(importer + " ")]


@pytest.mark.parametrize(("importer", "planted"), [
    ("dyntools.dynamics.path_loop", "def f():\n    from dyntools.dynamics import train\n"),
    ("dyntools.symbolic.claim_text", "def f():\n    from dyntools.symbolic.core import ClaimResult\n"),
    ("dyntools.params", "from dyntools.result_schema import register\n"),
])
def test_the_circle_check_catches_a_planted_import_back(importer, planted):
    found = circles(_graph_with(planted, importer))
    assert any(importer in c for c in found), found


@pytest.mark.parametrize(("importer", "planted"), [
    ("dyntools.models.mlp", 'FAST = "dyntools.dynamics.fast.mlp:step"\n'),
    ("dyntools.engine.streams", 'import importlib\ndef f():\n    importlib.import_module("dyntools.models.mlp")'),
    ("dyntools.data.teachers", 'TABLE = {"a": ("dyntools.dynamics.train", "train"), "b": ("dyntools.sweep", None)}\n'),
    ("dyntools.plots.relu", 'BUILD = "simulations.relu_nets:build"\n'),
    ("dyntools.result_schema", 'DECLARED_IN = {"train": "dyntools.dynamics.train"}\n'),
    ("dyntools.dynamics.train", "from dyntools import load\n"),
    ("dyntools.models.mlp", "def f():\n    import dyntools as dt\n    return dt.train\n"),
    ("dyntools.simulations.relu_nets", "def run():\n    import dyntools as dt\n"),
    ("dyntools.report", 'import pkgutil\nPACKAGES = ("dyntools.bench",)\nNAMES = pkgutil.iter_modules([])\n'),
])
def test_the_floors_catch_a_planted_string_or_namespace_reach(importer, planted):
    bad = upward_imports(_graph_with(planted, importer, strings=True))
    assert any(b.startswith(importer + " ") for b in bad), bad


@pytest.mark.parametrize(("importer", "planted"), [
    ("dyntools.dynamics.path_loop", 'LOOP = "dyntools.dynamics.train:train"\n'),
    ("dyntools.params", 'REGISTER = ("dyntools.result_schema", "register")\n'),
    ("dyntools.bench.relu", "from dyntools.bench import benchmarks\n"),      # the package scans its modules
    ("dyntools.simulations.relu_nets", "import dyntools\n"),                 # _LAZY → plugins → the scan → here
    ("dyntools.data.image_sets", 'READERS = ["dyntools.data.idx_files:mnist"]\n'),
])
def test_the_circle_check_catches_a_planted_string_back(importer, planted):
    found = circles(_graph_with(planted, importer, strings=True))
    assert any(importer in c for c in found), found


@pytest.mark.parametrize("planted", [
    '"""See dyntools.dynamics.train for the loop; ``"dyntools.sweep"`` runs grids."""\n',
    'x = "dyntools.no_such_module.sub"\ny = "dyntools"\nz = "numpy.linalg"\n',
    'name = "proofs/report.py"\nurl = "https://example.org/dyntools.sweep"\n',
    'word = "dyntools.sweep is the module of grids"\n',
])
def test_prose_is_no_edge(planted):
    files = library_files()
    assert string_modules(planted, "dyntools.models.mlp", False, files) == set()


def test_a_string_path_resolves_to_its_module():
    files = library_files()
    source = ('A = "dyntools.dynamics.train:train"\nB = "simulations.relu_nets"\nC = "dyntools.engine.result.RunResult"'
              '\nD = ("proofs.gd_quadratic", "CLAIMS")\n')
    assert string_modules(source, "dyntools.commands.plot", False, files) == {
        "dyntools.dynamics.train", "dyntools.simulations.relu_nets", "dyntools.engine.result",
        "dyntools.proofs.gd_quadratic"}
    scan = 'import pkgutil\nfor m in pkgutil.iter_modules(__path__):\n    pass\n'
    assert "dyntools.bench.relu" in string_modules(scan, "dyntools.bench", True, files)


def test_the_scan_covers_the_whole_tree():
    files = library_files()
    assert {"dyntools.simulations.relu_nets", "dyntools.proofs.report", "dyntools.bench.relu", "dyntools",
            "dyntools.plugins"} <= set(files)
    graph = import_graph(True, True)
    assert "dyntools.plugins" in graph["dyntools"]                   # the _LAZY table's strings are edges
    assert "dyntools.simulations.relu_nets" in graph["dyntools.plugins"]   # the package scan is one
    assert "dyntools.bench.relu" in graph["dyntools.bench"]          # so is the benchmarks' scan
    assert not string_edges(everything=True).get("dyntools.result_schema")     # DECLARED_IN is gone


def test_no_circle_in_the_whole_tree_strings_included():
    found = circles(import_graph(True, True))
    assert not found, "files that depend on one another, strings and scans included:\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_no_dependency_climbs_in_the_whole_tree():
    bad = upward_imports(import_graph(True, True))
    assert not bad, "dependencies from a lower floor to a higher one:\n" + "\n".join(bad)


def test_no_circle_between_rooms_of_the_whole_tree():
    found = circles(room_graph(import_graph(True, True)))
    assert not found, "rooms that depend on one another: " + "; ".join(" <-> ".join(c) for c in found)


def test_relative_imports_are_resolved():
    files = library_files()
    assert imported_modules("from . import loops\nfrom .fast import mlp\n", "dyntools.dynamics.train", False,
                            files) == {"dyntools.dynamics.loops", "dyntools.dynamics.fast.mlp"}
    assert imported_modules("from .containers import RegressionData\n", "dyntools.data", True, files) == \
        {"dyntools.data.containers"}


# ------------------------------------------------------------------ the command line alone uses simulations/proofs

#: Known violations being fixed elsewhere (``"dyntools/<file>.py"``). Each entry must still violate (else:
#: delete it here). Was {"dyntools/symbolic/registry.py"} until branch issue15 merged.
PENDING: set[str] = set()

_MODULE_PATH = re.compile(r"^(dyntools\.)?(simulations|proofs)(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?$")


def _forbidden(name: str) -> bool:
    parts = name.split(".")
    return parts[0] in FORBIDDEN or (len(parts) > 1 and parts[0] == "dyntools" and parts[1] in FORBIDDEN)


def violations(source: str) -> list[str]:
    """What in ``source`` refers to simulations/ or proofs/ (one line each, with the line number)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if _forbidden(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _forbidden(node.module):
            found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "dyntools":
            found += [f"line {node.lineno}: from dyntools import {a.name}" for a in node.names if a.name in FORBIDDEN]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_PATH.match(node.value):
            found.append(f"line {node.lineno}: module path {node.value!r}")
    return found


def library_modules() -> list[str]:
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "dyntools").rglob("*.py"))
    return [f for f in files if not f.startswith(COMMAND_LINE)]


def test_library_does_not_use_simulations_or_proofs():
    bad = {f: v for f in library_modules() if f not in PENDING
           for v in [violations((ROOT / f).read_text(encoding="utf-8"))] if v}
    assert not bad, "below the command-line layer, dyntools/ must not use simulations/ or proofs/:\n" + "\n".join(
        f"{f}: {'; '.join(v)}" for f, v in bad.items())


def test_pending_exceptions_are_still_needed():
    for f in PENDING:
        path = ROOT / f
        assert path.is_file() and violations(path.read_text(encoding="utf-8")), \
            f"{f} no longer uses simulations/ or proofs/: delete it from PENDING in tests/test_layering.py"


def test_the_scan_covers_the_library():
    files = library_modules()
    assert "dyntools/report.py" in files and "dyntools/bench/relu.py" in files and "dyntools/spec.py" in files
    assert not any(f.startswith("dyntools/commands/") for f in files) and "dyntools/cli.py" not in files


@pytest.mark.parametrize("source", [
    "import simulations",
    "import simulations.diag_nets as dn",
    "import numpy, proofs.report",
    "from simulations import relu_nets",
    "from proofs.report import reproduce",
    "def f():\n    from simulations.relu_nets import build\n",
    "import importlib\nm = importlib.import_module('simulations.diag_nets')",
    "__import__('proofs')",
    "FAMILIES = {'gd': 'proofs.gd_quadratic'}",
    "spec = ('adamw', 'simulations.adamw_heatmaps:train_cell')",
    "import dyntools.simulations.diag_nets",
    "from dyntools.proofs.report import reproduce",
    "from dyntools import simulations",
    "def f():\n    from dyntools import proofs as P\n",
    "spec = ('adamw', 'dyntools.simulations.adamw_heatmaps:train_cell')",
])
def test_the_scan_catches(source):
    assert violations(source)


@pytest.mark.parametrize("source", [
    "import dyntools.simulations_helper",
    "from . import proofs",
    "from dyntools.symbolic import proofs_of",
    '"""See :func:`simulations.diag_nets.step_scan` for the scan."""',
    "x = 'the proofs are in proofs/'",
    "name = 'proofs/report.py'",
])
def test_the_scan_allows(source):
    assert not violations(source)
