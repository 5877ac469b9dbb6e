"""Fuzz: ``--scheduler`` pointed at a TCP server on 127.0.0.1 that is no Dask scheduler (issue 16, "foreign
servers"), for every experiment that has the option: silent, HTTP, garbage. Each fails within the timeout
with one line naming --scheduler, exit 2, nothing written."""

import time

import pytest

from tests import fuzz_cases as F

pytest.importorskip("distributed")


@pytest.mark.parametrize("mode", ["silent", "http", "garbage"])
def test_a_foreign_server_is_one_line_within_the_timeout(tmp_path, mode):
    port, close = F.fake_server(mode)
    try:
        cases = F.server_cases(port, mode, timeout=1.0)
        assert cases, "no experiment has a --scheduler option"
        failures = []
        for case in cases:
            start = time.perf_counter()
            failures += F.run_cases([case], tmp_path)
            elapsed = time.perf_counter() - start
            if elapsed > 1.0 + 20.0:        # hang guard: below dask's own 30 s default, far above a busy machine
                failures.append((case, f"took {elapsed:.1f} s with --connect-timeout 1"))
    finally:
        close()
    print(f"servers ({mode}): {len(cases) - len(failures)} of {len(cases)} handled")
    assert not failures, F.describe(failures)
