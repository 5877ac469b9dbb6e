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


def _tmpfs_or_skip(path, size: str):
    """Yields ``path`` with a tmpfs of ``size`` mounted on it (unmounted after); skips where mounting fails."""
    with F.tmpfs(path, size) as mounted:
        if not mounted:
            pytest.skip("cannot mount a small tmpfs here")
        yield path


@pytest.fixture
def full_fs(tmp_path):
    """A tmpfs with no space left (mounted here, filled with one file); skipped where mounting fails."""
    for path in _tmpfs_or_skip(tmp_path / "full", "256k"):
        F.fill(path)
        yield path


@pytest.fixture
def empty_fs(tmp_path):
    """A small empty tmpfs (4 MiB) that a test fills when it chooses; skipped where mounting fails."""
    yield from _tmpfs_or_skip(tmp_path / "small", "4m")


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


def test_issue_39_inputs_are_one_line_exit_2(tmp_path):
    """D7 (300-byte path components for plot and prove --file) and D11 (fewer than one step, overflowing
    learning rates, a device as --optimizer-file): refused before any work."""
    cases = F.issue39_cases()
    failures = F.run_cases(cases, tmp_path)
    print(f"issue 39: {len(cases) - len(failures)} of {len(cases)} handled")
    assert not failures, F.describe(failures)


@pytest.fixture
def immutable_dir(tmp_path):
    """An empty directory nobody may write into, root included (chattr +i); skipped where chattr fails."""
    path = tmp_path / "imm"
    path.mkdir()
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not allowed here")
    yield path
    subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def test_an_empty_immutable_out_is_one_line_for_every_writing_command(tmp_path, immutable_dir):
    """D5: ``--out`` an existing empty directory that cannot take entries: the directory itself is probed
    (not only its parent), so every writing command refuses it in one line before any work."""
    cases = [F.Case("issue 39", [*argv, flag, str(immutable_dir)], (flag, "--out"), note="D5")
             for argv, flag in F.writing_commands() if flag == "--out"]
    failures = F.run_cases(cases, tmp_path / "sandbox")
    assert cases and not failures, F.describe(failures)


def test_duplicate_formats_are_drawn_once(tmp_path):
    """D9: ``--format png,png,…`` (a thousand times) writes each figure once, as png."""
    F.plottable_result(tmp_path)
    (tmp_path / "w").mkdir()
    outcome = F.invoke(["plot", "../res", "--out", "../figs", "--format", ",".join(["png"] * 1000), "--json"],
                       tmp_path / "w", block_run=False)
    assert outcome.code == 0, outcome
    written = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert written and all(name.endswith(".png") for name in written) and len(written) == len(set(written))
    import json

    assert len(json.loads(outcome.stdout)["figures"]) == len(written)
