"""Extensions whose whole job is to write pages into the documentation's source folder before Sphinx reads it
(the catalogue of experiments, the guide's table of contents)."""

from __future__ import annotations

from pathlib import Path


def writes_source(write):
    """The ``setup(app)`` of such an extension: ``write(srcdir)`` when the builder starts, before any page is
    read; parallel reading and writing stay safe (nothing else is shared)."""

    def setup(app):
        app.connect("builder-inited", lambda app: write(Path(app.srcdir)))
        return {"parallel_read_safe": True, "parallel_write_safe": True}

    return setup
