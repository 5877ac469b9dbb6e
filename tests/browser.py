"""A real headless browser for the tests: the system's Chromium, driven through its command line.

``load(target, screenshot=…)`` opens a page (a file path or a URL) in headless Chromium, lets its scripts run
for a budget of virtual time (MathJax typesetting, a report's plots), and returns the DOM as the browser
left it; with ``screenshot`` it also writes a PNG of the window. ``chromium()`` says whether a browser can
be had (``None``: skip). No browser is downloaded: Debian's ``chromium`` package (``/usr/bin/chromium``) or
any of :data:`NAMES` on PATH, or the one named by the environment variable ``DYNTOOLS_CHROMIUM``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: executables tried in order (after $DYNTOOLS_CHROMIUM)
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str | None:
    """The path of a Chromium executable that runs, or None."""
    candidates = [os.environ.get("DYNTOOLS_CHROMIUM")] + [shutil.which(name) for name in NAMES]
    for path in filter(None, candidates):
        try:
            proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and "chrom" in proc.stdout.lower():
            return path
    return None


@dataclass
class Page:
    """What the browser showed: the DOM after scripts ran, and the screenshot (if one was asked for)."""

    dom: str
    screenshot: Path | None

    @property
    def title(self) -> str:
        match = re.search(r"<title>(.*?)</title>", self.dom, flags=re.S)
        return match.group(1).strip() if match else ""


def load(target, *, screenshot=None, size=(1280, 1600), budget_ms: int = 10_000, timeout: float = 120) -> Page:
    """Open ``target`` (a path or a URL) in headless Chromium; return the rendered DOM (and the PNG).

    ``budget_ms`` is virtual time: the page's timers and scripts run as if that much time had passed,
    without waiting for it when the page is idle. A fresh profile directory per call keeps concurrent
    calls apart. Raises RuntimeError with Chromium's stderr when it fails."""
    exe = chromium()
    if exe is None:
        raise RuntimeError("no Chromium found (install Debian's chromium package)")
    url = str(target) if re.match(r"^[a-z]+://", str(target)) else Path(target).resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="dyntools-chromium-") as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
               "--hide-scrollbars", f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}",
               f"--window-size={size[0]},{size[1]}", "--dump-dom"]
        if screenshot is not None:
            cmd.append(f"--screenshot={Path(screenshot).resolve()}")
        proc = subprocess.run([*cmd, url], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or "<html" not in proc.stdout:
        raise RuntimeError(f"chromium failed on {url} (exit {proc.returncode}): {proc.stderr[-2000:]}")
    shot = Path(screenshot) if screenshot is not None else None
    if shot is not None and not shot.exists():
        raise RuntimeError(f"chromium wrote no screenshot of {url}: {proc.stderr[-2000:]}")
    return Page(proc.stdout, shot)


def image(path):
    """The screenshot as an (height, width, channels) float array in [0, 1] (matplotlib reads PNG)."""
    import matplotlib.image

    return matplotlib.image.imread(str(path))


def is_blank(path, *, tolerance: float = 1e-3) -> bool:
    """Whether the screenshot is one flat colour (a page that did not render)."""
    pixels = image(path)
    return float(pixels[..., :3].std()) < tolerance
