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
    assert [ln for ln in ci_lines if ln][-1] == test_cmd, "the README's test command is .ci/run's last line"


def test_ci_installs_chromium_before_the_tests():
    """tests/test_docs.py needs a browser: .ci/run installs Debian's chromium quietly when it is missing."""
    text = (ROOT / ".ci/run").read_text()
    install = text.find("apt-get install")
    assert install != -1 and "chromium" in text[install:text.find("\n", install + 200)]
    assert install < text.find(quickstart_commands()[1])


@pytest.mark.skipif(shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
                    reason="ruff not installed")
def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    proc = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file, as printed."""
    return re.findall(r"```python\n(.*?)\n```", path.read_text(), flags=re.S)


def test_python_api_page_blocks_run(tmp_path, monkeypatch):
    """The user guide's Python API page is code a user pastes: every block must run as printed."""
    page = ROOT / "docs" / "guide" / "python-api.md"
    blocks = python_blocks(page)
    assert blocks and "dt.train(" in page.read_text()
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(page), "exec"), {})
    assert (tmp_path / "runs" / "adam-diag" / "result.json").exists()


def test_readme_examples_run(tmp_path, monkeypatch):
    """The README's Python examples run as printed, and its claim comes out as its comment says."""
    import dyntools as dt

    blocks = python_blocks(ROOT / "README.md")
    assert len(blocks) == 2 and "dt.train(" in blocks[0] and "CLAIMS" in blocks[1]
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "README.md", "exec"), {})
    assert dt.load(tmp_path / "runs" / "adam-diag").status in ("converged", "completed")
    namespace = {}
    exec(compile(blocks[1], "README.md", "exec"), namespace)
    result = dt.prove(namespace["CLAIMS"])["m-hat-is-the-average"]
    assert result.verdict == "refuted"
    assert "refuted: beta=1/2, t=2, g[1]=0, g[2]=1, difference=1/6" in (ROOT / "README.md").read_text()


def test_readme_is_short_and_has_no_issue_numbers():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    assert not re.search(r"issue\s*#?\d+|#\d+\b", text, flags=re.I)


def test_version_is_one_and_printed(cli):
    """``dyntools --version`` prints the version of pyproject.toml, and results record it."""
    import tomllib

    import dyntools
    from dyntools.engine.result import package_versions

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert dyntools.__version__ == declared
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"dyntools {declared}"
    assert package_versions()["dyntools"] == declared
