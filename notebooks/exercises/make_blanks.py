"""Write the exercise notebooks (notebooks/exercises/*.ipynb) from their solutions (solutions/*.ipynb).

In a solution's code cell, the lines from ``# BEGIN SOLUTION`` to ``# END SOLUTION`` are the answer; the
exercise shows ``# YOUR CODE HERE`` there instead, followed by the lines marked ``# BLANK: …`` (with the
marker removed): a placeholder that keeps the notebook running until its check cell fails. Run
``python notebooks/exercises/make_blanks.py`` after editing a solution; tests/test_exercises.py checks that
the exercises are up to date, that every exercise fails its check and every solution passes it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_BEGIN, _END, _BLANK = re.compile(r"^(\s*)# BEGIN SOLUTION\s*$"), re.compile(r"^\s*# END SOLUTION\s*$"), "# BLANK: "


def blank_source(source: str) -> str:
    """A code cell's source with every solution region replaced by its blank."""
    out, inside, indent = [], False, ""
    for line in source.splitlines():
        begin = _BEGIN.match(line)
        if begin:
            inside, indent = True, begin.group(1)
            out.append(f"{indent}# YOUR CODE HERE")
        elif _END.match(line):
            if not inside:
                raise ValueError(f"# END SOLUTION without # BEGIN SOLUTION in:\n{source}")
            inside = False
        elif inside:
            stripped = line.strip()
            if stripped.startswith(_BLANK):
                out.append(f"{indent}{stripped[len(_BLANK):]}")
        else:
            out.append(line)
    if inside:
        raise ValueError(f"# BEGIN SOLUTION without # END SOLUTION in:\n{source}")
    return "\n".join(out)


def blank_notebook(solution: dict) -> dict:
    book = json.loads(json.dumps(solution))
    for cell in book["cells"]:
        if cell["cell_type"] == "code":
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = blank_source(src)
    return book


def render(book: dict) -> str:
    return json.dumps(book, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    for path in sorted((HERE / "solutions").glob("*.ipynb")):
        solution = json.loads(path.read_text(encoding="utf-8"))
        (HERE / path.name).write_text(render(blank_notebook(solution)), encoding="utf-8")
        print(HERE / path.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
