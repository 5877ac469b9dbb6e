"""Tick labels of log axes as plain text with Unicode superscripts (``10⁻³``, ``2×10⁻³``), not mathtext.

matplotlib labels a log axis with :class:`matplotlib.ticker.LogFormatterSciNotation`, whose labels are mathtext
(``$\\mathdefault{10^{-3}}$``). Each label is parsed by matplotlib's mathtext parser whenever a layout pass or a
draw measures it, and the parser's cache belongs to one renderer and holds 50 entries: drawing again the figures of
a quick report's 26 results parsed 34 distinct label strings 2456 times (1700 misses), about a fifth of all the
drawing under cProfile (AMD EPYC Zen 4, stop 60). :class:`PlainLogFormatter` gives the same labels — the same
ticks, the same decades labelled, the same minor labels — as plain text, which is laid out without the parser:
the exponent in superscript digits (U+2070–U+2079, the superscript minus U+207B), a coefficient joined by ``×``.
A label the pattern does not know is left as matplotlib wrote it.
"""

from __future__ import annotations

import re

from matplotlib import ticker

_SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
#: ``$\mathdefault{-2\times10^{-3}}$``: sign, coefficient (optional), base, exponent
_POWER = re.compile(r"\$\\mathdefault\{(-?)(?:([0-9.]+)\\times)?([0-9.]+)\^\{(-?[0-9]+)\}\}\$")
#: ``$\mathdefault{0.5}$``: a number near 1 written as it is (``axes.formatter.min_exponent``)
_NUMBER = re.compile(r"\$\\mathdefault\{(-?[0-9.]+(?:e[-+]?[0-9]+)?)\}\$")


def plain(label: str) -> str:
    """``label`` of :class:`matplotlib.ticker.LogFormatterSciNotation` as plain text: ``$\\mathdefault{10^{-3}}$`` →
    ``10⁻³``, ``$\\mathdefault{2\\times10^{4}}$`` → ``2×10⁴``, ``$\\mathdefault{0.5}$`` → ``0.5`` (a negative one
    with the minus sign U+2212, as matplotlib writes text); an empty label or one of another form unchanged.

    Parameters
    ----------
    label : str
        A label as the formatter wrote it.

    Returns
    -------
    str
    """
    found = _POWER.fullmatch(label)
    if found:
        sign, coefficient, base, exponent = found.groups()
        sign = "\u2212" if sign else ""         # the minus sign matplotlib's text uses (axes.unicode_minus)
        return f"{sign}{coefficient + '×' if coefficient else ''}{base}{exponent.translate(_SUPERSCRIPTS)}"
    found = _NUMBER.fullmatch(label)
    return found.group(1).replace("-", "\u2212", 1) if found else label


class PlainLogFormatter(ticker.LogFormatterSciNotation):
    """:class:`matplotlib.ticker.LogFormatterSciNotation` whose labels are plain text (:func:`plain`)."""

    def __call__(self, x, pos=None):
        return plain(super().__call__(x, pos))


def plain_log_labels(fig) -> int:
    """Give every axis of ``fig`` (colour bars included) whose major or minor formatter is matplotlib's
    :class:`~matplotlib.ticker.LogFormatterSciNotation` a :class:`PlainLogFormatter` of the same settings; returns
    how many formatters were replaced. A formatter a figure chose itself (another class) is kept.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, before it is laid out or drawn.

    Returns
    -------
    int
    """
    replaced = 0
    for ax in fig.get_axes():
        for axis in (ax.xaxis, ax.yaxis):
            for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                             (axis.get_minor_formatter, axis.set_minor_formatter)):
                old = get()
                if type(old) is ticker.LogFormatterSciNotation:
                    put(PlainLogFormatter(base=old._base, labelOnlyBase=old.labelOnlyBase,
                                          minor_thresholds=old.minor_thresholds, linthresh=old._linthresh))
                    replaced += 1
    return replaced
