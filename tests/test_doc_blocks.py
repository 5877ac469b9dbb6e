"""Every code block of README.md, docs/**/*.md and the docstrings' Examples runs or is checked, found by
one collector (tests/doc_blocks.py: a new block is covered without touching this file).

* Python blocks run, page by page in one fresh process (each page its own namespace, blocks in order),
  and every ``# -> TEXT`` they show is compared with what the statement gave;
* shell blocks marked ``run`` are executed with ``python -m dyntools`` in a temporary directory holding the
  page's files (a Python block whose first line is ``# NAME.py`` is that file), their ``# -> TEXT`` compared;
* every other ``dyntools`` command is parsed by the real parser and checked as the command checks its
  options before running (unknown flags, bad values, unknown names fail here);
* a block that is not meant to run says so by a visible marker, and an unmarked block of another kind fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dyntools.cli import UsageError
from tests import doc_blocks as D
from tests.conftest import HANG_GUARD

BLOCKS = D.all_blocks()
#: Pages whose Python blocks another test runs as a whole, with checks of its own (not run twice).
RUN_ELSEWHERE = {
    "README.md": ("tests/test_packaging.py", "test_readme_examples_run"),
    "docs/guide/bring-your-own.md": ("tests/test_guide_byo.py", "test_every_python_block_of_the_guide_runs"),
}
PYTHON_PAGES: dict[str, list[D.Block]] = {}
for _b in BLOCKS:
    if _b.lang == "python" and _b.action == "run" and _b.source not in RUN_ELSEWHERE:
        PYTHON_PAGES.setdefault(_b.source, []).append(_b)
SHELL = [b for b in BLOCKS if b.lang in D.SHELL and b.action in ("parse", "run")]
FILE_NAME = re.compile(r"^#\s*(?P<name>[\w.-]+\.py)\b")


def page_files(source: str) -> dict[str, str]:
    """The files a page defines: its Python blocks that begin with ``# NAME.py``."""
    return {m["name"]: b.text for b in BLOCKS if b.source == source and b.lang == "python"
            and (m := FILE_NAME.match(b.text))}


def test_the_collector_finds_every_kind_of_block():
    sources = {b.source for b in BLOCKS}
    assert "README.md" in sources and "docs/guide/bring-your-own.md" in sources
    assert {"dyntools/symbolic/__init__.py", "dyntools/symbolic/api.py"} <= sources     # docstring Examples
    assert len(BLOCKS) >= 60 and len(PYTHON_PAGES) >= 12
    # a block nested in a list item, a tilde fence and a marker are found as such
    text = ("* item\n\n  <!-- doc-test: skip — shown only -->\n  ```python\n  x = 1\n  ```\n\n~~~\ndyntools x\n~~~\n"
            "```{toctree}\nindex\n```\n")
    path = D.ROOT / "docs" / "_collector_probe.md"
    try:
        path.write_text(text)
        found = D.markdown_blocks(path)
    finally:
        path.unlink()
    assert [(b.lang, b.action, b.text) for b in found] == [("python", "skip", "x = 1\n"), ("", "parse", "dyntools x\n")]


def test_every_block_is_run_checked_or_visibly_marked():
    problems = []
    for b in BLOCKS:
        if b.action == "unmarked":
            problems.append(f"{b.where}: a ```{b.lang} block without a doc-test marker")
        elif b.action not in ("skip", "parse", "run"):
            problems.append(f"{b.where}: unknown marker {b.marker!r}")
        elif b.marker and b.action != "run" and not re.search(r"—\s*\S", b.marker):
            problems.append(f"{b.where}: the marker {b.marker!r} gives no reason")
        elif b.lang in D.SHELL and b.action == "parse" and not b.marker:
            others = [argv[0] for argv, _ in D.shell_commands(b.text) if D.dyntools_argv(argv) is None]
            if others:
                problems.append(f"{b.where}: runs {others} (not dyntools): mark it parse or skip with the reason")
    assert not problems, "\n".join(problems)


def test_pages_run_elsewhere_are_run_there_and_show_nothing_unchecked():
    for source, (test_file, test_name) in RUN_ELSEWHERE.items():
        text = (D.ROOT / test_file).read_text()
        assert f"def {test_name}(" in text and Path(source).name in text, f"{test_file} does not run {source}"
        blocks = [b for b in BLOCKS if b.source == source and b.lang == "python" and b.action == "run"]
        assert blocks and not [b.where for b in blocks if D.OUTPUT.search(b.text)], \
            f"{source}: a '# ->' output here would not be compared ({test_file} runs the page): compare it there"


def test_shown_output_matching():
    assert D.shown("completed | 16 paths ... (a band, not 0)", "completed |  16 paths finished: 0.02 (a band, not 0)\n")
    assert D.shown("... refuted ... x=1/6 ...", "claim  verdict\n c  refuted\n  counterexample x=1/6\n")
    assert D.shown("(1, 16, ..., 1) (1, 16)", "(1, 16, 41, 1) (1, 16)\n")
    assert not D.shown("... refuted ...", "verified")
    assert not D.shown("completed (1000, 101, 1)", "completed (1000, 101, 2)")
    assert D.shown("'verified'", "'verified'") and not D.shown("'verified'", "'refuted'")


def write_image_sets(home: Path) -> None:
    """Small image files in the published formats where the image-data page points (``~/data/mnist``,
    ``~/data/fashion``, ``~/data/cifar``), as many images as the page's examples draw: the tests give the page's
    blocks this ``home`` as ``HOME``, so ``~`` is a folder the tests wrote, never the user's."""
    from tests.test_image_files import write_cifar, write_idx_set

    write_idx_set(home / "data" / "mnist", n_train=5000, n_test=1000, gz=True)
    write_idx_set(home / "data" / "fashion", n_train=5000, n_test=1000, seed=1)
    write_cifar(home / "data" / "cifar", per_batch=400, n_test=100, seed=2)


@pytest.mark.parametrize("block", SHELL, ids=[b.where for b in SHELL])
def test_shell_block_commands_are_valid(block, tmp_path, monkeypatch):
    """Each ``dyntools`` command of the block, as the real parser and the command's own checks see it. A file it
    reads (``.npy``, ``.npz``, ``.py``) is created empty in a temporary directory: a parameter check that then
    fails on that file's content has checked every flag before it, and passes here."""
    monkeypatch.chdir(tmp_path)
    if "~/data/" in block.text:
        write_image_sets(tmp_path)
        monkeypatch.setenv("HOME", str(tmp_path))
    commands = [a for argv, _ in D.shell_commands(block.runnable_text()) if (a := D.dyntools_argv(argv)) is not None]
    assert commands or block.marker, f"{block.where}: no dyntools command"
    for argv in commands:
        placeholders = [name for arg in argv for name in re.findall(r"^[\w./-]+\.(?:npy|npz|py)$", arg)
                        if not Path(name).exists()]
        for name in placeholders:
            Path(name).parent.mkdir(parents=True, exist_ok=True)
            Path(name).touch()
        try:
            D.validate(argv)
        except SystemExit as exc:            # --version / --help: argparse prints and exits 0
            assert exc.code == 0, f"{block.where}: dyntools {' '.join(argv)} exits {exc.code}"
        except (UsageError, ValueError, TypeError) as exc:
            # the parser accepted every flag; the parameter check stopped at a user's (empty) file's content
            if not (isinstance(exc, ValueError) and any(name in str(exc) for name in placeholders)):
                pytest.fail(f"{block.where}: dyntools {' '.join(argv)}: {exc}")


RUN = [b for b in SHELL if b.action == "run"]


@pytest.mark.parametrize("block", RUN, ids=[b.where for b in RUN])
def test_shell_blocks_marked_run_execute_and_show_their_output(block, tmp_path):
    for name, text in page_files(block.source).items():
        (tmp_path / name).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(D.ROOT)}
    for argv, shows in D.shell_commands(block.runnable_text()):
        args = D.dyntools_argv(argv)
        assert args is not None, f"{block.where}: a block marked run runs dyntools commands only ({argv[0]})"
        proc = subprocess.run([sys.executable, "-m", "dyntools", *args], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=HANG_GUARD)
        # 0: as expected; 1: a claim not as expected (a shown refutation of an unexpected claim); 2: bad input
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, (block.where, args, proc.stderr[-2000:])
        if shows:
            assert D.shown(f"... {shows} ...", proc.stdout), f"{block.where}: shows {shows!r}, printed:\n{proc.stdout}"


@pytest.fixture(scope="module")
def python_results(tmp_path_factory):
    """Run every page's Python blocks in one child process (a fresh interpreter: pages register tuned loops,
    write runs/…), in an empty working directory."""
    work = tmp_path_factory.mktemp("doc-python")
    pages = {src: [(b.where, b.runnable_text()) for b in blocks] for src, blocks in PYTHON_PAGES.items()}
    (work / "pages.json").write_text(json.dumps(pages))
    write_image_sets(work)
    env = {**os.environ, "PYTHONPATH": str(D.ROOT), "MPLBACKEND": "Agg",
           "DYNTOOLS_LOOP_CACHE": str(work / "loops"), "HOME": str(work),
           "DYNTOOLS_SYMBOLIC_CACHE": os.environ.get("DYNTOOLS_SYMBOLIC_CACHE",
                                                     str(Path.home() / ".cache" / "dyntools" / "symbolic"))}
    proc = subprocess.run([sys.executable, "-m", "tests.doc_blocks", str(work / "pages.json")], capture_output=True,
                          text=True, cwd=work, env=env, timeout=HANG_GUARD)
    results = {r["source"]: r["failures"] for r in
               (json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines() if line.startswith("RESULT "))}
    return results, proc


@pytest.mark.parametrize("source", sorted(PYTHON_PAGES))
def test_python_blocks_run_and_show_what_they_print(source, python_results):
    results, proc = python_results
    assert source in results, f"the child stopped before {source}:\n{proc.stderr[-3000:]}"
    assert not results[source], "\n".join(results[source])
