"""Build the dyntools documentation site.

    python docs/build.py                      # -> docs/_build/html, notebooks rendered without outputs
    python docs/build.py --executed DIR       # render the executed copies of the notebooks found in DIR
    python docs/build.py --execute            # execute every notebook (full size; cached in docs/_build)

Sphinx reads a staged copy of ``docs/`` with ``notebooks/*.ipynb`` added under ``notebooks/`` and the
generated API pages, so building never writes into the checkout except the output directory. Warnings
are errors (``-W --keep-going``) and references are checked (``-n``).
"""

from __future__ import annotations

import argparse
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


def stage(target: Path, executed: Path | None = None) -> Path:
    """Copy the site's sources into ``target``: docs/ (without its build) and the notebooks, taking a
    notebook from ``executed`` when an executed copy of the same name is there."""
    src = Path(target)
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "__pycache__", "build.py"))
    (src / "notebooks" / "exercises").mkdir(parents=True, exist_ok=True)
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        done = Path(executed) / notebook.name if executed else None
        copy = src / "notebooks" / notebook.name
        shutil.copy2(done if done is not None and done.exists() else notebook, copy)
        number_title(copy)
    for exercise in sorted((NOTEBOOKS / "exercises").glob("*.ipynb")):     # the student versions, with blanks
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


def build(out: Path, *, executed: Path | None = None, execute: bool = False, quiet: bool = True,
          timeout: float = 1800) -> subprocess.CompletedProcess:
    """Build the HTML site into ``out`` in a subprocess; returns it (``returncode`` 0 when no warning)."""
    out = Path(out).resolve()
    env = dict(os.environ, DYNTOOLS_ROOT=str(ROOT), MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    if execute:
        env["DYNTOOLS_DOCS_EXECUTE"] = "cache"
    with tempfile.TemporaryDirectory(prefix="dyntools-docs-") as tmp:
        src = stage(Path(tmp) / "src", executed)
        cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n", "-j", "1",
               "-d", str(out.parent / f".{out.name}-doctrees"), str(src), str(out)]
        if execute:
            cmd[-2:-2] = ["-D", f"nb_execution_cache_path={out.parent / '.jupyter_cache'}"]
        if quiet:
            cmd.insert(3, "-q")
        return subprocess.run(cmd, env=env, capture_output=quiet, text=True, timeout=timeout)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DOCS / "_build" / "html", help="output directory")
    parser.add_argument("--executed", type=Path, default=None, help="directory of executed notebooks to render")
    parser.add_argument("--execute", action="store_true", help="execute the notebooks while building")
    args = parser.parse_args(argv)
    proc = build(args.out, executed=args.executed, execute=args.execute, quiet=False)
    if proc.returncode == 0:
        print(f"built {args.out / 'index.html'}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
