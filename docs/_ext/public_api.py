"""One reference page per public name of ``import dyntools as dt``, written before Sphinx reads the sources.

The names are ``dyntools.__all__`` (``dyntools/__init__.py``); a module gets its module docstring and its
public functions and classes, a class its methods, a function its docstring. The pages go to ``api/`` of
the source directory being built (``python docs/build.py`` builds a staged copy, so the checkout stays
clean) and the API index lists them with their first docstring line.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import dyntools

#: names of ``dyntools.__all__`` that are not documented objects
SKIP = {"__version__"}


def public_names() -> list[str]:
    """The documented public names, in the order ``dyntools.__all__`` gives them."""
    return [name for name in dyntools.__all__ if name not in SKIP]


def page(name: str) -> str:
    """The reStructuredText reference page of ``dt.<name>``."""
    obj = getattr(dyntools, name)
    title = f"dt.{name}"
    head = f"{title}\n{'=' * len(title)}\n\n"
    if inspect.ismodule(obj):
        return (head + f"``dt.{name}`` is the module :mod:`{obj.__name__}`.\n\n"
                f".. automodule:: {obj.__name__}\n   :members:\n   :undoc-members: False\n")
    where = f"{obj.__module__}.{obj.__qualname__}"
    note = f"``dt.{name}`` is ``{where}``.\n\n"
    if inspect.isclass(obj):
        return head + note + f".. autoclass:: {where}\n   :members:\n"
    return head + note + f".. autofunction:: {where}\n"


def write_pages(srcdir: Path) -> list[Path]:
    """Write ``api/<name>.rst`` for every public name (only files whose text changed are rewritten)."""
    out = Path(srcdir) / "api"
    out.mkdir(exist_ok=True)
    written = []
    for name in public_names():
        path, text = out / f"{name}.rst", page(name)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written


def _on_init(app):
    write_pages(Path(app.srcdir))


def setup(app):
    app.connect("builder-inited", _on_init)
    app.connect("missing-reference", _internal_reference)
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

    if target in dir(builtins) or resolve_in_code(target, node.get("py:module"), node.get("py:class")):
        return nodes.literal("", contnode.astext())
    return None
