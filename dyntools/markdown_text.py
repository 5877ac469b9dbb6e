"""Markdown that says what its author typed: the report's prose is full of mathematics in plain text
(``θ*²``, ``E[x²](1 − …)``, ``η_t``) that CommonMark would otherwise read as markup.

:func:`protect` takes a Markdown text whose intended markup is tables, links to files or anchors, images,
``**bold**``, ``*emphasis*`` between spaces, code spans, fenced code and HTML tags, and escapes what would
turn mathematics into markup by accident:

* a ``*`` or ``_`` that is not one of a matched pair ``*word*`` / ``_word_`` (opened after a space or
  punctuation, closed before one), not part of ``**`` and not a list bullet: ``θ*² … θ*⁴`` stays two stars
  instead of italicising what lies between them (an ``_`` inside a word, ``η_t``, is literal already);
* brackets that would make a link whose target is not a file, URL or ``#anchor`` (``E[x²](1 − ε)`` is a
  formula, ``[proofs.md](proofs.md)`` a link), or a reference link ``[a][b]``;
* a ``<`` that would open an HTML tag the report does not use (``a<b and c>d``).

Code spans, fenced code blocks, HTML tags and the targets of real links are left untouched. :func:`escape`
escapes every Markdown character of a plain string (a name or a message shown as text).
"""

from __future__ import annotations

import re

#: a link target that is a file path, a URL or an anchor (ASCII, no spaces)
_TARGET = re.compile(r"(?:#[\w.-]+|(?:https?|mailto):\S+|[\w./%-]+\.\w+(?:#[\w.-]*)?)", re.ASCII)
#: the HTML tags the report's text may use; any other ``<`` followed by a letter is text (``a<b and c>d``); an
#: anchor or image is a tag only with an attribute (``<a id="x">``): a bare ``<a >`` is text
_TAGS = "details|summary|br|sub|sup"
_ATTR = r"\s+[\w-]+=(?:\"[^\"]*\"|'[^']*')"
#: the pieces that are never touched: code spans, HTML tags, and links/images with a real target
_KEEP = re.compile(r"(`+)(?:.|\n)*?(?<!`)\1(?!`)"                   # a code span
                   rf"|</?(?:{_TAGS})(?:{_ATTR})*\s*/?>|<(?:a|img)(?:{_ATTR})+\s*/?>|</a>"   # a tag the report uses,
                   r"|<!--.*?-->"                                   # attributes quoted
                   r"|!?\[[^\[\]\n]*\]\((?P<target>[^()\s]*)\)")    # a link or image (target checked below)
#: a matched single-character emphasis: opened after start/space/punctuation, closed before end/space/punct.
_PAIR = {c: re.compile(rf"(?<![\w\\{c}]){re.escape(c)}(?![\s{c}])[^{c}\n]*?(?<![\s\\{c}]){re.escape(c)}(?![\w{c}])")
         for c in "*_"}
_BULLET = re.compile(r"^\s*\*(?=\s)")


def escape(text: str) -> str:
    """``text`` shown literally: every ASCII punctuation character is backslash-escaped (CommonMark allows it
    for each, and each may mean something somewhere: ``*``, ``[``, a ``-`` or ``1.`` opening a list …)."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", str(text))


def protect(markdown: str) -> str:
    """``markdown`` with accidental markup escaped (see the module docstring); intended markup unchanged."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            out.append(line)
        else:
            out.append(line if fenced else _protect_line(line))
    return "\n".join(out)


def _protect_line(line: str) -> str:
    pieces, pos = [], 0
    for m in _KEEP.finditer(line):
        target = m.group("target")
        if target is not None and not _TARGET.fullmatch(target):
            continue                                        # not a real link: its brackets are text
        pieces += [_protect_text(line[pos:m.start()], at_start=pos == 0), m.group(0)]
        pos = m.end()
    pieces.append(_protect_text(line[pos:], at_start=pos == 0))
    return "".join(pieces)


def _protect_text(text: str, at_start: bool) -> str:
    # [a](b) or [a][b] that is no real link; brackets escaped already are left alone (protect is idempotent)
    text = re.sub(r"(?<!\\)\[((?:[^\[\]\n\\]|\\.)*)(?<!\\)\](?=[(\[])", r"\\[\1\\]", text)
    # … and one whose text holds brackets itself (``[[]]()`` is a link whose text is ``[]``): its closing bracket
    text = re.sub(r"(?<!\\)\](?=[(\[])", r"\\]", text)
    text = re.sub(r"(?<!\\)<(?=[A-Za-z/!?])", r"\\<", text)                 # no HTML tag: a<b and c>d
    for c in "*_":
        text = _escape_lone(text, c, bullet=at_start and c == "*")
    return text


def _escape_lone(text: str, c: str, bullet: bool) -> str:
    """Escape each ``c`` outside a matched pair, not doubled, not already escaped (and not the bullet)."""
    keep = set()
    for m in _PAIR[c].finditer(text):
        keep.update((m.start(), m.end() - 1))
    if bullet and (b := _BULLET.match(text)):
        keep.add(b.end() - 1)
    chars = []
    for i, ch in enumerate(text):
        before, after = text[i - 1] if i else " ", text[i + 1] if i + 1 < len(text) else " "
        lone = (ch == c and i not in keep and before not in (c, "\\") and after != c
                and not (c == "_" and before.isalnum() and after.isalnum()))   # η_t: CommonMark keeps it
        chars.append("\\" + ch if lone else ch)
    return "".join(chars)
