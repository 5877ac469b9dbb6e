"""``dyntools prove``: verify symbolic claims (the machinery lives in :mod:`dyntools.symbolic`).

Names are claim names or family names (``dyntools prove --list``). Without names every claim of
every family runs; false controls (statements that must come out refuted) run when named or with
``--controls``. Exit status 0 only when every selected claim is verified.
"""

from __future__ import annotations

from pathlib import Path

from dyntools.commands import CommandOutput


def add_arguments(parser) -> None:
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help="claims or families to verify (default: all)"
    )
    parser.add_argument("--list", action="store_true", help="list the claims and exit")
    parser.add_argument(
        "--controls",
        action="store_true",
        help="also run the false controls of the selected families (expected: refuted)",
    )
    parser.add_argument("--md", type=Path, metavar="FILE", help="write the derivations as Markdown")
    parser.add_argument("--latex", type=Path, metavar="FILE", help="write the derivations as LaTeX")


def run(args, progress: bool) -> CommandOutput:
    from dyntools import tables
    from dyntools.symbolic import registry, render

    claims = registry.select(args.names, controls=args.controls or args.list and not args.names)
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
        results = registry.run(claims, progress=lambda r: bar.update(1))
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
    exit_code = 0 if summary["all_verified"] else 1
    return CommandOutput(summary, table, exit_code=exit_code, written=written)
