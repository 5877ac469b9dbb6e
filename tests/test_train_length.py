"""``dt.train`` reads in a minute (issue 37, item 5): validate → build the run → dispatch, ≤ 100 lines."""

import ast
from pathlib import Path

import dyntools.dynamics.train as train_module

LIMIT = 100


def code_lines(path: Path, name: str) -> int:
    """Lines of the function ``name`` in ``path`` from its def line to its last line, its docstring excluded."""
    fn = next(node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)
              and node.name == name)
    lines = fn.end_lineno - fn.lineno + 1
    first = fn.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def test_train_is_at_most_a_hundred_lines_of_code():
    lines = code_lines(Path(train_module.__file__), "train")
    assert lines <= LIMIT, f"dt.train is {lines} lines of code (docstring excluded); the limit is {LIMIT}"


def test_the_measure_counts_code_and_not_the_docstring(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    src = tmp_path / "m.py"
    src.write_text(f'def f():\n    """Doc\n\n    more doc.\n    """\n{body}\n\n\ndef train():\n    return 1\n')
    assert code_lines(src, "f") == LIMIT + 1          # the def line and the body; the 4 docstring lines not
    assert code_lines(src, "train") == 2
