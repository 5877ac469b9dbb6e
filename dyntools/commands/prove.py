"""``dyntools prove``: verify symbolic claims (the machinery lives in :mod:`dyntools.symbolic`).

Names are claim names or family names (``dyntools prove --list``). Without names every claim of
every built-in family runs; false controls (statements that must come out refuted) run when named
or with ``--controls``. With ``--file my_claims.py`` the claims of that Python file run instead
(all of them, or the ones named). Exit status 0 when every selected claim came out as expected
(claims verified, false controls — ``expected="refuted"`` — refuted), 1 otherwise, 2 for bad input
(nothing is written then); the summary line says how many were controls.

The built-in families are those that plugin modules declare (:mod:`dyntools.claims`); this module only
parses the command line and prints.
"""

from __future__ import annotations

from pathlib import Path

from dyntools.claims import builtin_registry
from dyntools.commands import CommandOutput

FILE_HELP = ("a Python file of your own claims (a list CLAIMS of dyntools.symbolic.Claim, or module-level "
             "Claim objects); the file is YOUR Python code and is executed, so only use files you trust")


def add_arguments(parser) -> None:
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help="claims or families to verify (default: all)"
    )
    parser.add_argument("--list", action="store_true", help="list the claims and exit")
    parser.add_argument("--file", type=Path, metavar="FILE", help=FILE_HELP)
    parser.add_argument(
        "--controls",
        action="store_true",
        help="also run the false controls of the selected families (expected: refuted)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="time budget per claim in processor seconds (default 60; a busy machine does not "
                             "shorten it); an overrun is 'inconclusive: budget'")
    parser.add_argument("--md", type=Path, metavar="FILE", help="write the derivations as Markdown")
    parser.add_argument("--latex", type=Path, metavar="FILE", help="write the derivations as LaTeX")


def _user_registry(path: Path):
    from dyntools.symbolic.registry import Registry
    from dyntools.symbolic.userfile import load_claims

    claims = load_claims(path)
    reg = Registry()
    reg.register_family(path.stem, claims)
    return reg


def run(args, progress: bool) -> CommandOutput:
    from dyntools import tables
    from dyntools.symbolic import registry, render

    if not 0 < args.timeout < float("inf"):
        raise ValueError(f"Invalid --timeout: {args.timeout} (must be a finite number of seconds > 0)")
    user_file = getattr(args, "file", None)
    reg = _user_registry(user_file) if user_file is not None else builtin_registry()
    try:
        claims = reg.select(args.names, controls=args.controls or user_file is not None
                            or (args.list and not args.names))
    except ValueError as exc:
        if user_file is None:
            raise
        known = reg.all_claims()
        unknown = ", ".join(n for n in args.names if n not in known and n not in reg.families)
        raise ValueError(f"--file {user_file}: no claim named {unknown} (the file defines: "
                         f"{', '.join(known)})") from exc
    if args.list:
        rows = [
            {
                "claim": c.name,
                "family": c.family,
                "kind": "control" if c.control else "claim",
                "title": c.title,
            }
            for c in claims
        ]
        return CommandOutput({"claims": rows}, tables.text_table(rows))
    md = render.check_output_file(args.md, "--md") if args.md else None
    tex = render.check_output_file(args.latex, "--latex") if args.latex else None

    from dyntools.engine.progress import progress_bar

    with progress_bar(len(claims), "claims", enabled=progress) as bar:
        results = registry.run(claims, progress=lambda r: bar.update(1), timeout=args.timeout)
    if user_file is not None:
        for r in results:
            if r.error is not None:
                raise ValueError(f"--file {user_file}: claim {r.claim.name!r} raised {r.error}")
    written = []
    if md is not None:
        render.write_atomic(md, render.markdown(results))
        written.append(str(md))
    if tex is not None:
        render.write_atomic(tex, render.latex(results))
        written.append(str(tex))
    summary = render.summary(results)
    summary["written"] = written
    table = render.text_table(results)
    notes = [f"  {r.claim.name}: {r.reason}" for r in results if r.verdict == "inconclusive"]
    notes += [
        f"  {r.claim.name}: counterexample " + ", ".join(f"{k}={v}" for k, v in r.counterexample.items())
        for r in results
        if r.counterexample
    ]
    if notes:
        table += "\n" + "\n".join(notes)
    if written:
        table += "\nwrote " + ", ".join(written)
    exit_code = 0 if summary["all_as_expected"] else 1  # a control refuted as expected is a success
    return CommandOutput(summary, table, exit_code=exit_code, written=written)
