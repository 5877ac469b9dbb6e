"""Progress bars for long work: shown on a terminal, silent otherwise (pipes, CI, notebooks' logs)."""

from __future__ import annotations

import sys

from tqdm.auto import tqdm


def progress_bar(total: int, desc: str, *, enabled: bool | None = None, unit: str = "it"):
    """A ``tqdm`` bar on stderr; ``enabled=None`` means "only if stderr is a terminal"."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr,
                dynamic_ncols=True, leave=False)
