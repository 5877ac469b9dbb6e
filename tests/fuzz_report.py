"""Print the fuzz suite's counts: cases tried and handled, per class of issue 16.

    python tests/fuzz_report.py            # from the repository root, about a minute on 2 cores

It runs the same generators as ``tests/test_fuzz_*.py`` (every subcommand, option and loader the registry
finds), lists every case not handled, and exits 1 if there is one. The full-disk class needs a small
tmpfs (root); it is reported as skipped where it cannot be mounted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("MPLBACKEND", "Agg")

from tests import fuzz_cases as F  # noqa: E402


def _full_disk(base: Path) -> list:
    mnt = base / "full"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True).returncode:
        return []
    try:
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        failures = []
        for case in F.full_disk_cases(mnt):
            failures += F.run_cases([case], base / "sandbox-full")
            left = [p.name for p in mnt.iterdir() if p.name != "filler"]
            if left:
                failures.append((case, f"left {left} on the full file system"))
                F.TALLY["full disk"]["handled"] -= 1
        return failures
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def _cells(base: Path) -> list:
    from dyntools import sweep
    from tests.test_fuzz_results import CELL_DAMAGES, _demo

    failures = []
    tally = F.TALLY.setdefault("damaged cells", F.Counter())
    for why, damage in CELL_DAMAGES.items():
        out = base / f"cells-{len(tally) and tally['tried']}"
        first = sweep.run_sweep(_demo(), out, workers=1)
        damage(sweep.cell_path(out, 0))
        again = sweep.run_sweep(_demo(), out, workers=1)
        ok = (again.computed == 1 and len(again.damaged) == 1 and str(sweep.cell_path(out, 0)) in again.damaged[0]
              and all((a["x"] == b["x"]).all() for a, b in zip(first.cells[:3], again.cells[:3])))
        tally["tried"] += 1
        tally["handled"] += ok
        if not ok:
            failures.append((F.Case("damaged cells", ["sweep", "(demo)"], (), note=why), "not recomputed"))
    return failures


def main() -> int:
    start = time.perf_counter()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        failures += F.run_cases(F.value_cases(), base / "v")
        failures += F.run_cases(F.file_cases(), base / "f")
        failures += F.run_cases(F.output_cases(), base / "o")
        (base / "w").mkdir()
        F.invoke(["simulate", "sde", "--model", "gbm", "--paths", "8", "--records", "11", "--out", base / "src"],
                 base / "w", block_run=False)
        config = json.loads((base / "src" / "result.json").read_text())["config"]
        failures += F.run_cases(F.result_cases(base / "src", F.result_damages() + F.config_damages(config)), base / "r")
        failures += _cells(base)
        failures += _full_disk(base)
        try:
            import distributed  # noqa: F401
            for mode in ("silent", "http", "garbage"):
                port, close = F.fake_server(mode)
                try:
                    failures += F.run_cases(F.server_cases(port, mode), base / f"s-{mode}")
                finally:
                    close()
        except ImportError:
            pass
    total = F.Counter()
    print(f"{'class':<16}{'tried':>8}{'handled':>9}")
    for cls, tally in F.TALLY.items():
        print(f"{cls:<16}{tally['tried']:>8}{tally['handled']:>9}")
        total.update(tally)
    print(f"{'all':<16}{total['tried']:>8}{total['handled']:>9}   ({time.perf_counter() - start:.0f} s)")
    if "full disk" not in F.TALLY:
        print("full disk: skipped (cannot mount a tmpfs here)")
    if failures:
        print("\nnot handled:\n" + F.describe(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
