"""The ``dyntools`` command: a thin argparse front end.

It parses, validates, calls the library and prints. Errors from the library (``ValueError``,
``TypeError``, :class:`dyntools.store.StoreError`) become one line on stderr and exit status 2,
with no traceback and nothing half-written (commands validate before they write, and write
atomically).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dyntools.version import __version__

EXIT_USAGE = 2


class UsageError(Exception):
    """A bad command line (unknown option, malformed value)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (raised, so ``main`` decides how to print them)."""

    def error(self, message):  # noqa: D401 - argparse API
        raise UsageError(f"{self.prog}: {message}")


def _formatter(prog):
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def _add_common(parser: argparse.ArgumentParser, *, seed=True, out=True, json=True, default_out=None):
    if seed:
        parser.add_argument("--seed", type=int, default=0, help="root seed (non-negative integer; default 0)")
    if out:
        parser.add_argument("--out", type=Path, default=default_out, metavar="DIR",
                            help="directory to write" + (f" (default {default_out})" if default_out else ""))
    if json:
        parser.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")


def _experiment_subparsers(parent, verb: str, title: str, dest: str):
    """One subcommand per experiment spec of ``simulations/`` with this verb (found by :mod:`dyntools.plugins`)."""
    from dyntools import plugins
    from dyntools.commands import experiment

    sub = parent.add_subparsers(dest=dest, metavar="NAME", title=title, parser_class=_Parser)
    sub.required = True
    for exp in plugins.experiments(verb).values():
        experiment.add_parser(sub, exp, _formatter)
    return sub


def _command(sub, name: str, module, *, help: str, description: str) -> argparse.ArgumentParser:
    """The parser of ``dyntools NAME``, run by ``module.run(args, progress)`` (a module of dyntools/commands/)."""
    p = sub.add_parser(name, help=help, formatter_class=_formatter, description=description)
    p.set_defaults(_module=module)
    return p


def build_parser() -> argparse.ArgumentParser:
    from dyntools.commands import bench, grade, plot, prove, reproduce

    parser = _Parser(prog="dyntools", formatter_class=_formatter,
                     description="Theory and dynamics of optimization in deep learning.\n\n"
                                 "example:\n  dyntools reproduce --quick --out report")
    parser.add_argument("--version", action="version", version=f"dyntools {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = _command(sub, "prove", prove, help="verify the symbolic derivations of the source documents",
                 description="Verify symbolic claims exactly (sympy / certified intervals).\n"
                             "Built-in claims by default; --file runs the claims of your own Python\n"
                             "file (it is executed: use only files you trust).\n\n"
                             "example:\n  dyntools prove --list\n"
                             "  dyntools prove --md proofs.md\n"
                             "  dyntools prove --file my_claims.py --json")
    prove.add_arguments(p)
    p.add_argument("--json", action="store_true", help="print the verdicts as one JSON object on stdout")

    p = sub.add_parser("simulate", help="run one model and save the result directory",
                       formatter_class=_formatter,
                       description="Run a model.\n\nexample:\n"
                                   "  dyntools simulate stabilization --eta 1.08 --out runs/stab")
    _experiment_subparsers(p, "simulate", "models", "model")

    p = sub.add_parser("sweep", help="run a grid of runs (locally, or on a Dask cluster)",
                       formatter_class=_formatter,
                       description="Run a grid of runs.\n\nexample:\n  dyntools sweep adamw-grid --out runs/grid")
    _experiment_subparsers(p, "sweep", "sweeps", "sweep")

    p = _command(sub, "plot", plot, help="draw the figures of a result directory",
                 description="Draw the figures of a result (or of every result below DIR).\n\n"
                             "example:\n  dyntools plot runs/stab")
    p.add_argument("dir", type=Path, metavar="DIR", help="a result directory written by simulate or sweep")
    p.add_argument("--out", default=None, metavar="DIR", help="where figures go (default DIR/figures)")
    p.add_argument("--format", default="png,pdf", help="comma-separated figure formats (default png,pdf)")
    p.add_argument("--json", action="store_true", help="print the written files as one JSON object")

    p = _command(sub, "reproduce", reproduce, help="run the catalogue of headline results and write report.md",
                 description="Run every headline result of the source documents and write\n"
                             "figures and a report.md embedding them with the measured numbers.\n\n"
                             "example:\n  dyntools reproduce --quick --out report")
    p.add_argument("--quick", action="store_true", help="reduced sizes: every entry, figure and check with fewer "
                   "steps, seeds and grid points (measured times: docs/performance.md)")
    p.add_argument("--only", default=None, metavar="NAMES", help="comma-separated catalogue entries to run")
    p.add_argument("--self-contained", action="store_true",
                   help="embed the figures in report.html (one file to send; default: the files beside it)")
    _add_common(p, default_out=Path("report"))

    p = _command(sub, "grade", grade, help="grade a student's Adam and AdamW against the PyTorch-exact reference",
                 description="The problem set's autograder (seed 001): runs the Adam and AdamW of FILE\n"
                             "(functions adam_step/adamw_step or classes Adam/AdamW; see\n"
                             "dyntools.autograder) and the reference on the same deterministic problems,\n"
                             "step by step; exit 0 only when both are defined and every run matches\n"
                             "to 1e-10. FILE is executed in a child process with a time limit\n"
                             "(--timeout), memory and CPU limits and a temporary working directory.\n"
                             "That is NOT a security sandbox (the code runs as you, with your files\n"
                             "and network): grade only files you would run yourself.\n\n"
                             "example:\n  dyntools grade my_adam.py\n"
                             "  dyntools grade my_adam.py --problem spirals --steps 50 --json")
    p.add_argument("file", type=Path, metavar="FILE", help="the student's Python file")
    p.add_argument("--problem", default="gradients,spirals", metavar="NAMES",
                   help="comma-separated problems: gradients (a fixed gradient sequence), spirals (the MLP's "
                        "first steps); default both")
    p.add_argument("--steps", type=int, default=None, help="steps per problem (default 25 / 30; at most 10000)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="wall-clock limit of the child process running FILE (default 60); over it: FAILED, exit 1")
    p.add_argument("--memory", type=int, default=4096, metavar="MB",
                   help="address-space limit of that process in MB (default 4096)")
    p.add_argument("--json", action="store_true", help="print the grades as one JSON object on stdout")

    p = _command(sub, "bench", bench, help="time each fast kernel against its NumPy twin (ratios, one run)",
                 description="Benchmarks: each compiled kernel and its baseline in the same process.\n\n"
                             "example:\n  dyntools bench stabilization --json")
    p.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all)")
    p.add_argument("--quick", action="store_true", help="smaller problem sizes (a smoke test, not the targets)")
    p.add_argument("--json", action="store_true", help="print the measurements as one JSON object on stdout")
    p.add_argument("--isa", default="native", metavar="LIST",
                   help="instruction sets to run on, comma-separated: native (this processor), avx2 (a subprocess "
                        "restricted to AVX2 + FMA: numba for Haswell with 256-bit panels, XLA capped at AVX2, "
                        "OpenBLAS's Haswell kernels); default native")
    return parser


def main(argv: list[str] | None = None) -> int:
    from dyntools.store import StoreError, to_json

    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        output = args._module.run(args, progress=sys.stderr.isatty())
    except UsageError as exc:
        print(f"{exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, TypeError, StoreError) as exc:
        print(f"dyntools: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (MemoryError, OverflowError) as exc:      # a size or value the machine cannot hold: one line
        what = "does not fit in memory" if isinstance(exc, MemoryError) else "overflows float64"
        print(f"dyntools: error: the request {what} ({type(exc).__name__}: {exc}); use smaller sizes or values",
              file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("dyntools: interrupted", file=sys.stderr)
        return 130
    try:
        print(to_json(output.summary) if getattr(args, "json", False) else output.table, flush=True)
    except BrokenPipeError:            # e.g. `dyntools … | head`: the reader left, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return output.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
