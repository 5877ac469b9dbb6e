"""A few fuzz cases of each class as real ``python -m dyntools`` processes: the in-process harness is not
hiding anything (warnings, exit codes, threads that keep a process alive)."""

import time

import pytest

from tests import fuzz_cases as F


def _pick(cases, *fractions):
    return [cases[int(f * (len(cases) - 1))] for f in fractions]


CASES = (_pick(F.value_cases(), 0.3, 0.7) + _pick(F.file_cases(), 0.5) + _pick(F.output_cases(), 0.4))


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.cls}:{' '.join(map(str, c.argv))[:60]}")
def test_as_a_real_process(tmp_path, case):
    problem = F.run_subprocess(case, tmp_path)
    assert not problem, problem


def test_a_silent_server_as_a_real_process(tmp_path):
    pytest.importorskip("distributed")
    port, close = F.fake_server("silent")
    try:
        case = F.server_cases(port, "silent", timeout=1.0)[0]
        start = time.perf_counter()
        problem = F.run_subprocess(case, tmp_path)
        elapsed = time.perf_counter() - start
    finally:
        close()
    assert not problem, problem
    # a hang guard (+ interpreter start-up on a busy machine), below dask's own 30 s connect default
    assert elapsed < 1.0 + 27.0, f"the process took {elapsed:.1f} s to give up"
