"""``dyntools grade FILE``: the problem set's autograder (see :mod:`dyntools.autograder`)."""

from __future__ import annotations

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
    report = grade(args.file, problems=problems, steps=args.steps)
    return CommandOutput(report.as_dict(), str(report), exit_code=0 if report.passed else 1)
