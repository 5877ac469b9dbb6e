"""Print the fuzz suite's counts: cases tried and handled, per class of issue 16.

    python tests/fuzz_report.py            # from the repository root, about a minute on 2 cores

It runs the same generators as ``tests/test_fuzz_*.py`` (every subcommand, option and loader the registry
finds), lists every case not handled, and exits 1 if there is one. The full-disk class needs a small
tmpfs (root); it is reported as skipped where it cannot be mounted.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("MPLBACKEND", "Agg")

from tests import fuzz_cases as F  # noqa: E402


def _full_disk(base: Path) -> list:
    """The full-disk cases: commands writing into a full tmpfs, then a sweep whose disk fills in the middle."""
    failures = []
    with F.tmpfs(base / "full", "256k") as mounted:
        if not mounted:
            return []
        mnt = base / "full"
        F.fill(mnt)
        for case in F.full_disk_cases(mnt):
            failures += F.run_cases([case], base / "sandbox-full")
            left = [p.name for p in mnt.iterdir() if p.name != "filler"]
            if left:
                failures.append((case, f"left {left} on the full file system"))
                F.TALLY["full disk"]["handled"] -= 1
    with F.tmpfs(base / "small", "4m") as mounted:
        if mounted:
            failures += F.full_disk_mid_sweep(base / "sandbox-mid", base / "small")
    return failures


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
        failures += F.run_cases(F.schema_cases(), base / "schema")
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
