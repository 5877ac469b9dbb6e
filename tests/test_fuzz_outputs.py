"""Fuzz: unwritable and odd output locations for every command that writes, and a full file system
(issue 16, "output paths"): one line naming the option, exit 2, nothing left anywhere."""

import subprocess

import pytest

from tests import fuzz_cases as F


def test_every_writing_command_refuses_odd_output_paths_before_work(tmp_path):
    cases = F.output_cases()
    failures = F.run_cases(cases, tmp_path)
    print(f"outputs: {len(cases) - len(failures)} of {len(cases)} odd output paths handled")
    assert not failures, F.describe(failures)


@pytest.fixture
def full_fs(tmp_path):
    """A tmpfs with no space left (mounted here, filled with one file); skipped where mounting fails."""
    with F.tmpfs(tmp_path / "full", "256k") as mounted:
        if not mounted:
            pytest.skip("cannot mount a small tmpfs here")
        F.fill(tmp_path / "full")
        yield tmp_path / "full"


@pytest.fixture
def empty_fs(tmp_path):
    """A small empty tmpfs (4 MiB) that a test fills when it chooses; skipped where mounting fails."""
    with F.tmpfs(tmp_path / "small", "4m") as mounted:
        if not mounted:
            pytest.skip("cannot mount a small tmpfs here")
        yield tmp_path / "small"


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, full_fs):
    failures = []
    cases = F.full_disk_cases(full_fs)
    for case in cases:
        failures += F.run_cases([case], tmp_path / "sandbox")
        left = sorted(p.name for p in full_fs.iterdir() if p.name != "filler")
        if left:
            failures.append((case, f"left {left} on the full file system"))
            F.TALLY["full disk"]["handled"] -= 1
            subprocess.run(["rm", "-rf", *(str(full_fs / n) for n in left)])
    print(f"full disk: {len(cases) - len(failures)} of {len(cases)} handled")
    assert not failures, F.describe(failures)


def test_a_disk_full_in_the_middle_of_a_sweep_stops_cleanly_and_resumes_bitwise(tmp_path, empty_fs):
    """The disk fills after sweep.json and 2 cells (and, second case, after all 6 cells, while the result is
    assembled): one line naming the output, exit 2, no temporary, no half cell; after freeing space the same
    command reuses the finished cells and ends bitwise identical to an uninterrupted sweep."""
    failures = F.full_disk_mid_sweep(tmp_path / "sandbox", empty_fs)
    assert not failures, F.describe(failures)
