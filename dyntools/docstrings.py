"""Docstrings that share their numpydoc sections: the sections written once, appended to each function.

Two functions with the same arguments (a compiled kernel and its NumPy twin, readers of the same result) keep
one ``Parameters``/``Returns``/``Raises`` text; :func:`with_sections` appends it to each one's own summary, so
``help()``, ``inspect.getdoc`` and the API pages show the whole docstring.
"""

from __future__ import annotations

import inspect


def with_sections(sections: str, **fields):
    """Decorator: append ``sections`` (numpydoc text, no indentation; ``{name}`` filled from ``fields``) to the
    function's docstring, after a blank line."""
    text = inspect.cleandoc(sections.format(**fields) if fields else sections)

    def attach(function):
        function.__doc__ = inspect.cleandoc(function.__doc__ or "") + "\n\n" + text
        return function
    return attach
