"""Every code block the documentation shows, found automatically: README.md, docs/**/*.md and the
``Example::``/``Examples`` sections of the docstrings of dyntools/, simulations/ and proofs/.

**Markers.** A fenced block may be preceded (on the line right above its fence) by a visible marker,
an HTML comment MyST and GitHub do not render::

    <!-- doc-test: skip — REASON -->          not run at all (output shown, a synopsis, pip, a layout)
    <!-- doc-test: parse — REASON -->         shell: its dyntools commands are validated by the real
                                               parser, its other commands are not run (REASON says why)
    <!-- doc-test: run -->                     shell: its dyntools commands are executed
    <!-- doc-test: run with "OLD" as "NEW", … — REASON -->   as run, with size overrides (each OLD replaced)

Without a marker a ``python`` block runs (each page's blocks in order, in one namespace) and a shell block
(``bash``, ``console``, ``sh`` or no language) is validated command by command through the real parser;
a shell block with a command other than ``dyntools`` must say so by a ``parse`` marker. Every other
language (``text`` …) needs a marker, except those of :data:`NOT_CODE` (``bibtex``: a citation, declared so
by its info string); MyST directives (``{toctree}``, ``{eval-rst}``) are not code.

**Shown output.** A line ending in ``# -> TEXT`` shows what it prints: for a Python expression statement
``repr`` of its value, for any other statement what it printed, for a shell command a part of its
standard output. ``...`` in TEXT stands for any text; whitespace runs compare equal.

Run as a script (``python -m tests.doc_blocks PAGES.json``) it executes the Python blocks of the pages
listed in the JSON file in this process, one fresh namespace per page, and prints one JSON line per page
with the failures (tests/test_doc_blocks.py runs it in a subprocess in a temporary directory).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
import shlex
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELL = {"bash", "sh", "console", "shell", ""}
#: Languages that are not code to run, declared by the block's own info string.
NOT_CODE = {"bibtex"}
MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<body>.*?)\s*-->\s*$")
OVERRIDE = re.compile(r'"(?P<old>[^"]+)" as "(?P<new>[^"]*)"')
OUTPUT = re.compile(r"#\s*->\s*(?P<text>.*?)\s*$")
DOCSTRING_EXAMPLE = re.compile(r"^(?P<indent>[ \t]*)Examples?(::|\n(?P=indent)-{7,8})[ \t]*$", re.M)


@dataclass
class Block:
    """One code block: where it is (``source`` relative to the repository, 1-based ``line``), its
    language, its text and its marker (``""`` when none)."""

    source: str
    line: int
    lang: str
    text: str
    marker: str = ""

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def action(self) -> str:
        """``"skip"``, ``"parse"``, ``"run"`` (a marker's first word, or the default of the language), or
        ``"unmarked"`` for a block of another language without a marker."""
        if self.marker:
            return self.marker.split()[0].rstrip(",")
        if self.lang in NOT_CODE:
            return "skip"
        if self.lang == "python":
            return "run"
        return "parse" if self.lang in SHELL else "unmarked"

    def runnable_text(self) -> str:
        """The text to execute: the block, with a ``run with`` marker's size overrides applied."""
        text = self.text
        if self.marker.startswith("run with"):
            overrides = OVERRIDE.findall(self.marker.split("—")[0])
            assert overrides and "—" in self.marker, f"{self.where}: 'run with \"OLD\" as \"NEW\" — REASON'"
            for old, new in overrides:
                assert old in text, f"{self.where}: the override's {old!r} is not in the block"
                text = text.replace(old, new)
        return text


def markdown_files() -> list[Path]:
    return [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)


def markdown_blocks(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file (CommonMark fences of backticks or tildes)."""
    lines = path.read_text().splitlines()
    blocks, k = [], 0
    while k < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})\s*(.*?)\s*$", lines[k])
        if not m:
            k += 1
            continue
        fence, lang = m[2], m[3]
        end = next(j for j in range(k + 1, len(lines)) if lines[j].strip() == fence)
        above = MARKER.match(lines[k - 1]) if k else None
        if not lang.startswith("{"):                     # a MyST directive is markup, not code
            body = "\n".join(line[len(m[1]):] for line in lines[k + 1:end])
            blocks.append(Block(str(path.relative_to(ROOT)), k + 1, lang.split()[0] if lang else "", body + "\n",
                                above["body"] if above else ""))
        k = end + 1
    return blocks


def docstring_blocks(path: Path) -> list[Block]:
    """The ``Example::`` / ``Examples`` sections of every docstring of one Python file (as Python)."""
    tree = ast.parse(path.read_text())
    blocks = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        doc = ast.get_docstring(node, clean=True)
        if not doc:
            continue
        for m in DOCSTRING_EXAMPLE.finditer(doc):
            rest = doc[m.end():].splitlines()[1:]
            body = []
            for line in rest:
                if line.strip() and not line.startswith(m["indent"] + "    "):
                    break
                body.append(line[len(m["indent"]) + 4:])
            start = node.body[0].lineno if not isinstance(node, ast.Module) else 1
            line = start + doc[:m.start()].count("\n")
            blocks.append(Block(str(path.relative_to(ROOT)), line, "python", "\n".join(body).strip() + "\n"))
    return blocks


def all_blocks() -> list[Block]:
    blocks = [b for path in markdown_files() for b in markdown_blocks(path)]
    for folder in ("dyntools", "simulations", "proofs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            blocks += docstring_blocks(path)
    return blocks


def shown(text: str, got: str) -> bool:
    """Whether ``got`` is the output ``text`` shows (``...`` any text, whitespace runs equal)."""
    parts = [r"\s+".join(map(re.escape, part.split())) for part in text.split("...")]
    return re.fullmatch(r"\s*(.*?)\s*".join(parts), " ".join(got.split()), flags=re.S) is not None


# ------------------------------------------------------------------------------------ shell blocks

def shell_commands(text: str) -> list[tuple[list[str], str]]:
    """``(argv, shown output)`` of every command of a shell block: continuation lines joined, ``$``
    prompts, environment assignments and ``&&`` chains split off, ``# -> TEXT`` kept as the output."""
    joined = re.sub(r"\\\n\s*", " ", text)
    commands = []
    for line in joined.splitlines():
        line = re.sub(r"^\s*\$\s", "", line)
        out = OUTPUT.search(line)
        line = re.sub(r"\$\([^)]*\)", "SUBST", line)
        tokens = shlex.split(line, comments=True)
        while tokens:
            cut = tokens.index("&&") if "&&" in tokens else len(tokens)
            argv = tokens[:cut]
            while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
                argv = argv[1:]
            if argv:
                commands.append((argv, out["text"] if out else ""))
            tokens = tokens[cut + 1:]
    return commands


def dyntools_argv(argv: list[str]) -> list[str] | None:
    """The arguments after ``dyntools`` (or ``python -m dyntools``), or None for another program."""
    if Path(argv[0]).name == "dyntools":
        return argv[1:]
    if len(argv) >= 3 and Path(argv[0]).name.startswith("python") and argv[1:3] == ["-m", "dyntools"]:
        return argv[3:]
    return None


def validate(argv: list[str]) -> None:
    """Parse ``dyntools argv`` with the real parser and check it as the command would before running:
    an experiment's options become its checked parameter set, bench/reproduce/prove names must exist.
    Raises what the command would report (``UsageError``, ``ValueError``, ``TypeError``)."""
    from dyntools import cli, plugins
    from dyntools.commands import experiment

    args = cli.build_parser().parse_args(argv)
    if getattr(args, "_experiment", None) is not None:
        experiment.params_from_args(args._experiment, args)
    elif args.command == "bench":
        from dyntools import bench, validation

        for name in args.names:
            validation.one_of("benchmark", name, tuple(bench.benchmarks()))
        for isa in args.isa.split(","):
            validation.one_of("isa", isa, bench.ISAS)
    elif args.command == "reproduce" and args.only:
        from dyntools import validation

        for name in args.only.split(","):
            validation.one_of("entry of --only", name, tuple(plugins.catalogue()))


# ------------------------------------------------------------------------------------ Python blocks

def run_python(block_text: str, namespace: dict, filename: str) -> list[str]:
    """Execute one Python block statement by statement in ``namespace``; return the mismatches between
    the ``# -> TEXT`` comments and what their statements gave (an exception propagates)."""
    lines = block_text.splitlines()
    tree = ast.parse(block_text, filename)
    failures = []
    for stmt in tree.body:
        shows = [OUTPUT.search(lines[k]) for k in range(stmt.lineno - 1, stmt.end_lineno)]
        shows = [m["text"] for m in shows if m]
        is_value = isinstance(stmt, ast.Expr) and not (isinstance(stmt.value, ast.Call)
                                                       and getattr(stmt.value.func, "id", "") == "print")
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            if is_value:
                value = eval(compile(ast.Expression(stmt.value), filename, "eval"), namespace)
            else:
                exec(compile(ast.Module([stmt], []), filename, "exec"), namespace)
        got = repr(value) if is_value else buffer.getvalue()
        sys.stdout.write(buffer.getvalue())
        for text in shows:
            if not shown(text, got):
                failures.append(f"line {stmt.end_lineno}: shows {text!r}, gave {got.strip()!r}")
    return failures


def main(pages_json: str) -> None:
    pages = json.loads(Path(pages_json).read_text())
    for number, (source, blocks) in enumerate(pages.items()):
        namespace: dict = {"__name__": "__main__"}
        failures = []
        for k, (where, text) in enumerate(blocks):
            script = Path(f"page{number:02d}_block{k:02d}.py").resolve()    # a real file: numba's cache=True needs one
            script.write_text(text)
            try:
                failures += [f"{where} {f}" for f in run_python(text, namespace, str(script))]
            except Exception:
                failures.append(f"{where} raised:\n{traceback.format_exc(limit=-3)}")
                break
        print("RESULT " + json.dumps({"source": source, "failures": failures}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
