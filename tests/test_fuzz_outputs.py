"""Fuzz: unwritable and odd output locations for every command that writes, and a full file system
(issue 16, "output paths"): one line naming the option, exit 2, nothing left anywhere."""

import os
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
    mnt = tmp_path / "full"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:                          # ENOSPC: full
            pass
        finally:
            os.close(fd)
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


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
