"""docs/guide/bring-your-own.md runs as written: its Python blocks, in order, in one fresh process
(the "bring your own optimizer" and "bring your own model kernel" examples and the claim)."""

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "bring-your-own.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_every_python_block_of_the_guide_runs(tmp_path):
    blocks = python_blocks(PAGE.read_text())
    assert len(blocks) >= 4
    script = tmp_path / "guide.py"
    script.write_text("\n\n".join(blocks))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DYNTOOLS_LOOP_CACHE": str(tmp_path / "loops")}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "chain ['chain (numpy)', 'fused']" in proc.stdout
    assert "wrote past its workspace" in proc.stdout and "'difference'" in proc.stdout
