"""Run families of claims with their false controls: ``python -m dyntools.proofs [NAME …] [--md FILE] [--verbose]``.

The one runner of the proof modules (none of them has a ``__main__`` block of its own). ``NAME`` is a family
(``sgd-weight-decay``) or a claim (every family when none is given); the false controls of the chosen families
run too, since a control that is not refuted is a failure. It prints the verdict table, the counterexamples and
the reasons of inconclusive verdicts; ``--md FILE`` also writes the derivations, ``--verbose`` prints them.

Exit status: 0 when every verdict is the expected one (claims verified, controls refuted), 1 otherwise, 2 for a
bad command line (one line on stderr, nothing written). ``dyntools prove NAME --controls`` does the same with
the command's other options (``--json``, ``--latex``, ``--timeout``).
"""

from __future__ import annotations

import argparse
import sys


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def main(argv=None) -> int:
    from dyntools.proofs import _package

    from dyntools.symbolic import INCONCLUSIVE, registry, render

    parser = _Parser(prog="python -m dyntools.proofs", description=__doc__.split("\n\n")[1])
    parser.add_argument("names", nargs="*", metavar="NAME", help="families or claims (default: all)")
    parser.add_argument("--md", help="also write the derivations as Markdown to this file")
    parser.add_argument("--verbose", action="store_true", help="print every derivation step")
    try:
        args = parser.parse_args(argv)
        if args.md:
            render.check_output_file(args.md, "--md")
        claims = _package.registry().select(args.names, controls=True)
    except ValueError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    results = registry.run(claims)
    if args.verbose:
        print(render.markdown(results))
    print(render.text_table(results))
    for r in results:
        if r.counterexample:
            print(f"  {r.claim.name}: counterexample " + ", ".join(f"{k}={v}" for k, v in r.counterexample.items()))
        if r.verdict == INCONCLUSIVE:
            print(f"  {r.claim.name}: {r.reason}")
    if args.md:
        render.write_atomic(args.md, render.markdown(results))
    ok = all(r.as_expected for r in results)
    print("all verdicts as expected" if ok else "SOME VERDICTS ARE NOT AS EXPECTED", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
