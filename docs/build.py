"""Build the dyntools documentation site.

    python docs/build.py                      # -> docs/_build/html, every notebook executed (full size), cached
    python docs/build.py --no-execute         # quick, structure only: notebooks rendered as stored (no outputs)
    python docs/build.py --executed DIR       # render the executed copies of the notebooks found in DIR

By default the notebooks are executed while building, through myst-nb's jupyter-cache: the cache lives beside
the output (``docs/_build/.jupyter_cache/<dyntools version>/``) and is keyed by each notebook's code, so a second
build, or one after an edit elsewhere, runs no notebook again; a new dyntools version starts a new cache. Sphinx
reads a staged copy of ``docs/`` with ``notebooks/*.ipynb`` added under ``notebooks/`` and the generated API
pages, so building never writes into the checkout except the output directory. Warnings are errors (``-W
--keep-going``) and references are checked (``-n``). A notebook page that shows a local path (a home, a virtual
environment, a temporary directory) fails the build.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
NOTEBOOKS = ROOT / "notebooks"

#: what a notebook page must not show: a path of the machine that built it
LOCAL_PATH = re.compile(r"(/home/|/Users/|/work/|/tmp/|site-packages|\.venv|[A-Z]:\\Users)")


def stage(target: Path, executed: Path | None = None, *, docs: Path = DOCS, notebooks: Path = NOTEBOOKS) -> Path:
    """Copy the site's sources into ``target``: ``docs`` (without its build) and the ``notebooks``, taking a
    notebook from ``executed`` when an executed copy of the same name is there."""
    src = Path(target)
    shutil.copytree(docs, src, ignore=shutil.ignore_patterns("_build", "__pycache__", "build.py"))
    (src / "notebooks" / "exercises").mkdir(parents=True, exist_ok=True)
    for notebook in sorted(Path(notebooks).glob("*.ipynb")):
        done = Path(executed) / notebook.name if executed else None
        copy = src / "notebooks" / notebook.name
        shutil.copy2(done if done is not None and done.exists() else notebook, copy)
        number_title(copy)
    for exercise in sorted((Path(notebooks) / "exercises").glob("*.ipynb")):     # the student versions, with blanks
        shutil.copy2(exercise, src / "notebooks" / "exercises" / exercise.name)
    return src


def number_title(path: Path) -> None:
    """Give the staged notebook one numbering in the site: its first heading becomes ``NN · title`` (``NN``
    from the file name), whatever number the notebook itself writes (``02 —``, ``08 ·`` or none)."""
    number = re.match(r"(\d+)_", path.name)
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"])
        head = re.match(r"# +(?:\d+\s*[—·.:-]\s*)?(.*)", source)
        if head and number:
            cell["source"] = f"# {number.group(1)} · {head.group(1)}" + source[head.end():]
            path.write_text(json.dumps(nb, ensure_ascii=False, indent=1), encoding="utf-8")
        return


def version() -> str:
    """dyntools' version, read from its source (the build runs Sphinx in another process)."""
    text = (ROOT / "dyntools" / "version.py").read_text(encoding="utf-8")
    return re.search(r'^__version__ = "([^"]+)"', text, flags=re.M).group(1)


def cache_dir(out: Path) -> Path:
    """Where the executed notebooks are cached: beside ``out``, one cache per dyntools version."""
    return Path(out).resolve().parent / ".jupyter_cache" / version()


def build(out: Path, *, executed: Path | None = None, execute: bool = True, quiet: bool = True,
          timeout: float = 3600, docs: Path = DOCS, notebooks: Path = NOTEBOOKS) -> subprocess.CompletedProcess:
    """Build the HTML site into ``out`` in a subprocess; returns it (``returncode`` 0 when no warning).

    ``execute`` runs the notebooks (cached, :func:`cache_dir`); with ``executed`` the notebooks are taken
    from that directory as they are and nothing is executed. ``docs`` and ``notebooks`` are the sources
    (the tests stage a tiny site)."""
    out = Path(out).resolve()
    execute = execute and executed is None
    env = dict(os.environ, DYNTOOLS_ROOT=str(ROOT), MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("DYNTOOLS_DOCS_EXECUTE", None)
    if execute:
        env["DYNTOOLS_DOCS_EXECUTE"] = "cache"
        # the kernels inherit this environment: with Agg, ``plt.show()`` would put no figure in the outputs
        if importlib.util.find_spec("matplotlib_inline") is not None:
            env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    with tempfile.TemporaryDirectory(prefix="dyntools-docs-") as tmp:
        src = stage(Path(tmp) / "src", executed, docs=docs, notebooks=notebooks)
        cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n", "-j", "1",
               "-d", str(out.parent / f".{out.name}-doctrees"), str(src), str(out)]
        if execute:
            cmd[-2:-2] = ["-D", f"nb_execution_cache_path={cache_dir(out)}"]
        if quiet:
            cmd.insert(3, "-q")
        return subprocess.run(cmd, env=env, capture_output=quiet, text=True, timeout=timeout)


def leaks(out: Path) -> list[tuple[str, str]]:
    """The notebook pages of the built site ``out`` whose text shows a local path: (page, the path's context)."""
    found = []
    for page in sorted((Path(out) / "notebooks").rglob("*.html")):
        text = re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))
        match = LOCAL_PATH.search(text)
        if match:
            found.append((str(page.relative_to(out)), text[max(0, match.start() - 40): match.end() + 40].strip()))
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DOCS / "_build" / "html", help="output directory")
    parser.add_argument("--executed", type=Path, default=None,
                        help="directory of executed notebooks to render as they are (nothing is executed)")
    parser.add_argument("--no-execute", dest="execute", action="store_false",
                        help="do not execute the notebooks: a quick build that shows them without outputs")
    args = parser.parse_args(argv)
    proc = build(args.out, executed=args.executed, execute=args.execute, quiet=False)
    if proc.returncode != 0:
        return proc.returncode
    found = leaks(args.out)
    for page, context in found:
        print(f"{page} shows a local path: ...{context}...", file=sys.stderr)
    if found:
        return 1
    print(f"built {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
