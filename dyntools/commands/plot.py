"""``dyntools plot DIR``: figures of one result directory, or of every result below DIR."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from dyntools import store
from dyntools.commands import CommandOutput

FORMATS = ("png", "pdf", "svg")


def _result_dirs(root: Path) -> list[Path]:
    if store.is_result_dir(root):
        return [root]
    try:
        is_dir = root.is_dir()
    except OSError as exc:                      # a name too long, a link loop …
        raise store.StoreError(f"Invalid DIR: cannot use {str(root)[:80]} ({exc.strerror or exc})") from None
    if not is_dir:
        raise store.StoreError(f"Invalid DIR: {root} does not exist")
    found = sorted(p.parent for p in root.rglob(store.META_FILE))
    if not found:
        raise store.StoreError(f"Invalid DIR: no dyntools result below {root}")
    return found


def check_out(out) -> Path | None:
    """``--out``: an existing writable directory (figures go inside it) or a new directory
    :func:`dyntools.store.check_writable` accepts — checked before any result is read."""
    if out is None:
        return None
    if str(out).strip() == "":
        raise store.StoreError("Invalid --out: empty path (name a directory for the figures)")
    out = Path(out)
    try:
        existing = out.is_dir() and str(out).strip() != "" and not out.is_symlink()
    except OSError:
        existing = False
    if not existing:
        return store.check_writable(out)
    if out.resolve().parent == out.resolve():
        raise store.StoreError(f"Invalid --out: {str(out)!r} is a root; name a directory for the figures")
    store.check_writable(out / ".figures")          # the probe: can a new entry be made there?
    return out


def run(args, progress: bool) -> CommandOutput:
    from dyntools import plots, plugins  # the plotters each experiment declares; matplotlib only when drawing

    formats = tuple(dict.fromkeys(f.strip() for f in args.format.split(",") if f.strip()))   # each drawn once
    bad = [f for f in formats if f not in FORMATS]
    if not formats or bad:
        raise ValueError(f"Invalid --format: {args.format!r} (choose from {', '.join(FORMATS)})")
    args.out = check_out(args.out)
    dirs = _result_dirs(args.dir)
    results = [(d, store.load(d)) for d in dirs]          # validate everything before drawing
    drawers = {r.kind: plugins.plotter(r.kind) for _, r in results}      # every kind known before drawing
    written: list[str] = []
    for d, r in results:
        out = args.out if args.out is not None else d / "figures"
        if args.out is not None and len(results) > 1:
            out = args.out / d.relative_to(args.dir)
        store.check_writable(out) if not Path(out).exists() else None
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)      # NaN/inf in a figure: drawn, not printed
                written += [str(p) for p in plots.plot_result(r, out, formats, plotter=drawers[r.kind])]
        except store.StoreError:
            raise
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:   # contents a plotter cannot use
            first = (str(exc).splitlines() or [""])[0][:160]
            raise store.StoreError(f"Damaged result directory {d}: its figures need {type(exc).__name__} "
                                   f"{first} (the result does not hold what its kind {r.kind!r} promises)") from None
    return CommandOutput({"figures": written}, "\n".join(f"wrote {p}" for p in written), written=written)
