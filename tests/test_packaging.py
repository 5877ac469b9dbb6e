"""The project's own promises: README Quickstart ↔ .ci/run, lint, and the CLI skeleton."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def quickstart_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)


def test_quickstart_has_exactly_two_commands():
    cmds = quickstart_commands()
    assert len(cmds) == 2
    assert "dyntools reproduce" in cmds[0]
    assert "pytest" in cmds[1]
    assert all("\n" not in c for c in cmds)


def test_ci_runs_the_readme_test_command_verbatim():
    test_cmd = quickstart_commands()[1]
    ci_lines = [ln.strip() for ln in (ROOT / ".ci/run").read_text().splitlines()]
    assert test_cmd in ci_lines


@pytest.mark.skipif(shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
                    reason="ruff not installed")
def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    proc = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_readme_python_api_blocks_run(tmp_path, monkeypatch):
    """The README's Python API section is code a user pastes: every block must run as printed."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## The Python API", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)\n```", section, flags=re.S)
    assert blocks and "dt.train(" in section
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    assert (tmp_path / "runs" / "adam-diag" / "result.json").exists()
