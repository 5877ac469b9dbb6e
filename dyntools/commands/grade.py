"""``dyntools grade FILE``: the problem set's autograder (see :mod:`dyntools.autograder`)."""

from __future__ import annotations

import math

from dyntools import validation
from dyntools.commands import CommandOutput

MAX_STEPS = 10_000


def run(args, progress: bool) -> CommandOutput:
    from dyntools.autograder import PROBLEMS, grade

    problems = [p.strip() for p in str(args.problem).split(",") if p.strip()]
    if not problems:
        raise ValueError(f"Invalid --problem: {args.problem!r} (choose from {', '.join(PROBLEMS)})")
    for p in problems:
        validation.one_of("--problem", p, PROBLEMS)
    if args.steps is not None:
        validation.count("--steps", args.steps)
        if args.steps > MAX_STEPS:
            raise ValueError(f"Invalid --steps: {args.steps} (must be <= {MAX_STEPS})")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise ValueError(f"Invalid --timeout: {args.timeout} (must be a finite number of seconds > 0)")
    if args.memory < 256:
        raise ValueError(f"Invalid --memory: {args.memory} (must be >= 256 MB: Python and NumPy need about 500 MB "
                         "of address space)")
    report = grade(args.file, problems=problems, steps=args.steps, timeout=args.timeout, memory_mb=args.memory)
    return CommandOutput(report.as_dict(), str(report), exit_code=0 if report.passed else 1)
