"""The API reference, generated before Sphinx reads the sources: one page per public entry of ``import dyntools as
dt`` at its public path, and an index grouped by subject with one-line summaries.

An *entry* is a public name of ``dyntools.__all__`` (``dt.train``, ``dt.MLP``, ``dt.schedules``) or a member of a
public module (``dt.schedules.CosineAnnealingLR``, ``dt.data.sparse_regression``). A module's members are its
``__all__`` when it has one, else the public functions and classes defined in it (or in its subpackages). A
member that is the same object as an earlier entry (``dt.optim.adamw`` is ``dt.adamw``) gets no second page: the
module's table links to the first. The pages go to ``api/`` of the source directory being built (``python
docs/build.py`` builds a staged copy, so the checkout stays clean); nothing is hand-written per name, so a new
public name gets its page by being exported.

The signatures carry the annotations (``autodoc_typehints = "signature"``); ``sphinx.ext.viewcode`` adds the
``[source]`` links, pointed from the public path to the module that defines the object (:func:`defining_module`).
"""

from __future__ import annotations

import functools
import inspect
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path

import dyntools

#: names of ``dyntools.__all__`` that are not documented objects
SKIP = {"__version__"}

#: the API index's sections, in order: title → (one sentence, the top-level names it lists)
GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Training": ("One function trains any model with any optimizer, schedule, sampler and recorder.",
                 ("train", "toy_data", "trajectories")),
    "Models": ("Parameter layouts with compiled loss-and-gradient kernels and their NumPy twins.",
               ("Model", "SymbolicModel", "DiagNet", "MLP", "QuadraticToy", "ToyModel", "VoronoiLadder",
                "VoronoiMLP", "ResNet", "Transformer", "Surface", "models")),
    "Optimizers and schedules": ("PyTorch's update rules as chains of transforms, and learning-rate schedules.",
                                 ("Optimizer", *dyntools.optim.ALIASES, "adamw_decay", "optim", "schedules")),
    "Data": ("Data sets, one module per family, each with its seed.", ("data",)),
    "Metrics": ("Measurements of a trained network: ranks, sparsity, sharpness, norms.",
                ("metrics", "model_metrics")),
    "SDEs": ("Stochastic differential equations: terms, schemes, built-in models and the label-noise SDE.",
             ("SDE", "solve", "sde_models", "label_noise_match")),
    "Symbolic": ("Claims proved by exact algebra or certified intervals, and the problem set's autograder.",
                 ("prove", "Claim", "ClaimFamily", "IntervalCheck", "unroll", "load_claims", "builtin_claims",
                  "claim_families", "model_claims", "grade")),
    "Plots": ("Figures: one module per kind, no global state.", ("plots",)),
    "Results": ("One result object per run, saved and loaded atomically.", ("RunResult", "save", "load", "plot")),
}

#: a sentence for the subjects that have no public Python name of their own
NOTES = {
    "Sweeps": "Grids of runs are driven from the command line (``dyntools sweep NAME``, local processes or a Dask "
              "cluster) and read back with :py:obj:`dt.load <dyntools.load>`; see :doc:`../guide/sweeps`.",
}


@dataclass(frozen=True)
class Entry:
    """One documented object: ``path`` is its public path after ``dt.`` (``"schedules.CosineAnnealingLR"``)."""

    path: str
    obj: object

    @property
    def target(self) -> str:
        """The Python-domain name of the entry (``dyntools.schedules.CosineAnnealingLR``)."""
        return f"dyntools.{self.path}"

    @property
    def page(self) -> str:
        """The document name of the entry's page."""
        return f"api/{self.path}"

    @property
    def kind(self) -> str:
        obj = self.obj
        if inspect.ismodule(obj):
            return "module"
        if inspect.isclass(obj):
            return "class"
        return "function" if callable(obj) else "data"


def public_names() -> list[str]:
    """The documented public names, in the order ``dyntools.__all__`` gives them."""
    return [name for name in dyntools.__all__ if name not in SKIP]


def module_members(module) -> list[str]:
    """The public members of a public module: its ``__all__``, else the functions and classes defined in it."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [name for name, value in vars(module).items()
            if not name.startswith("_") and (inspect.isfunction(value) or inspect.isclass(value))
            and (getattr(value, "__module__", "") or "").split(".")[:len(module.__name__.split("."))]
            == module.__name__.split(".")]


@functools.lru_cache(maxsize=1)
def entries() -> tuple[Entry, ...]:
    """Every entry with a page, top-level names first, then the members of each public module."""
    found = [Entry(name, getattr(dyntools, name)) for name in public_names()]
    seen = {id(entry.obj) for entry in found if entry.kind != "data"}
    for entry in list(found):
        if entry.kind != "module":
            continue
        for name in module_members(entry.obj):
            obj = getattr(entry.obj, name)
            if inspect.ismodule(obj) or (id(obj) in seen and (inspect.isclass(obj) or callable(obj))):
                continue
            seen.add(id(obj))
            found.append(Entry(f"{entry.path}.{name}", obj))
    return tuple(found)


def by_object() -> dict[int, Entry]:
    """The entry of each documented function or class, keyed by ``id`` (an alias resolves to its first entry)."""
    table: dict[int, Entry] = {}
    for entry in entries():
        if entry.kind in ("function", "class"):
            table.setdefault(id(entry.obj), entry)
    return table


def resolve(dotted: str) -> Entry | None:
    """The entry a reader means by ``dt.<dotted>`` (``"schedules.CosineAnnealingLR"``, ``"optim.adamw"``,
    ``"RunResult.status"``): the longest prefix of the path that is documented, or None when ``dt.<first
    part>`` is not a public name."""
    parts = dotted.split(".")
    if parts[0] not in public_names():
        return None
    known = {entry.path: entry for entry in entries()}
    objects = by_object()
    obj, best = dyntools, None
    for cut, part in enumerate(parts, 1):
        obj = getattr(obj, part, None)
        if obj is None:
            break
        path = ".".join(parts[:cut])
        best = known.get(path) or objects.get(id(obj)) or best
    return best


def summary(obj) -> str:
    """The first paragraph of the object's docstring, on one line (empty when it has none), for a table: its
    cross-reference roles become plain code (they were written relative to their own module) and a trailing
    ``::`` a colon."""
    doc = inspect.getdoc(obj) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    text = re.sub(r":(?:py:)?[a-z]+:`~?([^`<]*?)(?:\s*<[^`]*>)?`", r"``\1``", text)
    return re.sub(r"::$", ":", text)


def defining_module(public_module: str, fullname: str) -> str | None:
    """The module that defines ``public_module.fullname`` (``dyntools.schedules``, ``CosineAnnealingLR.step``
    → ``dyntools.optim.schedules``), for the ``[source]`` links; None when it is not in dyntools."""
    if not public_module or not fullname or not public_module.startswith("dyntools"):
        return None
    obj = dyntools
    for part in public_module.split(".")[1:] + fullname.split(".")[:1]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    name = getattr(obj, "__module__", None) if not inspect.ismodule(obj) else obj.__name__
    return name if name and name.startswith("dyntools") else None


def _title(text: str) -> str:
    return f"{text}\n{'=' * len(text)}\n\n"


def _table(rows: list[tuple[str, str]]) -> str:
    """A two-column list table of (linked name, summary) rows."""
    lines = [".. list-table::", "   :widths: 35 65", "   :class: dyntools-api-table", ""]
    for name, text in rows:
        lines += [f"   * - {name}", f"     - {text or ' '}"]
    return "\n".join(lines) + "\n"


def _link(entry: Entry) -> str:
    return f":py:obj:`dt.{entry.path} <{entry.target}>`"


def _members_table(entry: Entry) -> str:
    """The table of a module's members: each links to its page (or to the alias's first entry)."""
    known = {e.path: e for e in entries()}
    objects = by_object()
    rows = []
    for name in module_members(entry.obj):
        obj = getattr(entry.obj, name)
        if inspect.ismodule(obj):
            continue
        member = known.get(f"{entry.path}.{name}") or objects.get(id(obj))
        rows.append((_link(member), summary(obj) if member.kind != "data" else ""))
    if entry.obj is getattr(dyntools, "models", None):
        for info in pkgutil.iter_modules(entry.obj.__path__):
            if not info.name.startswith("_"):
                module = __import__(f"{entry.obj.__name__}.{info.name}", fromlist=["_"])
                rows.append((f"``dt.models.{info.name}``", summary(module)))
    return "\n" + _table(rows) if rows else ""


def page(entry: Entry) -> str:
    """The reStructuredText page of one entry."""
    module, _, name = entry.target.rpartition(".")
    head = _title(f"dt.{entry.path}")
    if entry.kind == "module":
        note = f"``dt.{entry.path}`` is the module ``{entry.obj.__name__}``.\n\n"
        members = _members_table(entry)
        return (head + f".. automodule:: {entry.target}\n\n" + note
                + (f"Members\n-------\n{members}" if members else ""))
    where = getattr(entry.obj, "__module__", None)
    note = (f"``dt.{entry.path}`` is defined in ``{where}``.\n\n"
            if entry.kind != "data" and where and where != module else "")
    if entry.kind == "data":
        return head + f".. py:data:: {entry.target}\n\n   {describe(entry.obj)}\n"
    directive = "autoclass" if entry.kind == "class" else "autofunction"
    options = "   :members:\n" if entry.kind == "class" else ""
    return head + note + f".. currentmodule:: {module}\n\n.. {directive}:: {name}\n{options}"


def describe(value) -> str:
    """One line on a public constant: its value when short, else its type and shape."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"A ``{value.dtype}`` array of shape ``{tuple(shape)}``."
    text = repr(value)
    return f"``{text}``" if len(text) <= 200 else f"A ``{type(value).__name__}`` of length {len(value)}."


def index() -> str:
    """The API index: one section per subject, a table of (entry, summary) rows, then the module members."""
    known = {entry.path: entry for entry in entries()}
    text = [_title("API reference"),
            "Everything below is reached from one import, ``import dyntools as dt``: the names "
            "``dyntools/__init__.py`` exports and the members of its public modules, each on a page generated "
            "from its docstring (typed signature, parameters, the mathematics, a ``[source]`` link).\n\n"]
    listed = set()
    for title, (sentence, names) in GROUPS.items():
        text.append(f"{title}\n{'-' * len(title)}\n\n{sentence}\n\n")
        rows = []
        for name in names:
            if name not in known:
                continue
            listed.add(name)
            rows.append((_link(known[name]), summary(known[name].obj)))
        text.append(_table(rows) + "\n")
    rest = [name for name in public_names() if name not in listed]
    if rest:
        text.append("Other\n-----\n\n" + _table([(_link(known[n]), summary(known[n].obj)) for n in rest]) + "\n")
    for title, sentence in NOTES.items():
        text.append(f"{title}\n{'-' * len(title)}\n\n{sentence}\n\n")
    text.append(_sidebar())
    return "".join(text)


def _sidebar() -> str:
    """Hidden toctrees, one per section of the index (the sidebar's groups): each top-level entry of the
    section followed by its module's members; the names no section lists come last."""
    groups = {title: [name for name in names] for title, (_, names) in GROUPS.items()}
    groups["Other"] = [name for name in public_names() if not any(name in names for names in groups.values())]
    text = []
    for title, names in groups.items():
        paths = [e.path for name in names for e in entries() if e.path == name or e.path.startswith(f"{name}.")]
        if paths:
            text.append(f".. toctree::\n   :hidden:\n   :caption: {title}\n\n" + "".join(f"   {p}\n" for p in paths))
    return "\n".join(text)


def write_pages(srcdir: Path) -> list[Path]:
    """Write ``api/index.rst`` and ``api/<path>.rst`` for every entry (only files whose text changed)."""
    out = Path(srcdir) / "api"
    out.mkdir(exist_ok=True)
    written = []
    pages = [(out / "index.rst", index())] + [(out / f"{e.path}.rst", page(e)) for e in entries()]
    for path, text in pages:
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written


def _on_init(app):
    write_pages(Path(app.srcdir))


def _follow(app, modname, fullname):
    return defining_module(modname, fullname)


def _find_source(app, modname):
    """The source and tags of a dyntools module for viewcode, with an alias tag for each entry exported under
    another name (``dt.load`` is ``load_result`` of :mod:`dyntools.plugins`)."""
    if not modname.startswith("dyntools"):
        return None
    from sphinx.pycode import ModuleAnalyzer

    try:
        analyzer = ModuleAnalyzer.for_module(modname)
        analyzer.find_tags()
    except Exception:  # noqa: BLE001 - viewcode then falls back to its own lookup, as without this hook
        return None
    tags = dict(analyzer.tags)
    for entry in entries():
        name, real = entry.path.rsplit(".", 1)[-1], getattr(entry.obj, "__qualname__", None)
        if getattr(entry.obj, "__module__", None) == modname and real in tags and name not in tags:
            tags[name] = tags[real]
    return analyzer.code, tags


def setup(app):
    app.connect("builder-inited", _on_init)
    app.connect("missing-reference", _internal_reference)
    app.connect("viewcode-follow-imported", _follow)
    app.connect("viewcode-find-source", _find_source)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def resolve_in_code(target: str, module: str | None, klass: str | None) -> bool:
    """Whether the Python name ``target`` exists in the code, looked up as written and relative to the
    module (and class) whose docstring mentions it, as a reader of that docstring would."""
    import importlib

    target = target.lstrip("~.")
    candidates = [target]
    if module:
        candidates += [f"{module}.{klass}.{target}" if klass else None, f"{module}.{target}"]
    for candidate in filter(None, candidates):
        parts = candidate.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                break
            return True
    return False


def _internal_reference(app, env, node, contnode):
    """A cross-reference in a docstring to a name of dyntools that has no page of its own (an internal
    module, a helper) becomes plain code when that name exists in the code; a name that does not
    exist stays a missing reference, which fails the build (``-n -W``)."""
    from docutils import nodes

    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"]
    import builtins

    modules = [node.get("py:module"), _page_module(node.get("refdoc", ""))]
    if target in dir(builtins) or any(resolve_in_code(target, module, node.get("py:class")) for module in modules):
        return nodes.literal("", contnode.astext())
    return None


def _page_module(docname: str) -> str | None:
    """The module that defines the object of an API page (``api/prove`` → ``dyntools.symbolic.api``): the
    context in which that object's docstring names its neighbours."""
    if not docname.startswith("api/"):
        return None
    entry = {e.page: e for e in entries()}.get(docname)
    if entry is None:
        return None
    return entry.obj.__name__ if entry.kind == "module" else getattr(entry.obj, "__module__", None)
