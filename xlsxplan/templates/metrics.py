"""Font metrics for wrapping text so that no printed line is cut: DejaVu Sans advance widths, the font LibreOffice
prints Calibri with where Calibri is missing (wider than Calibri, so text that fits in it fits in Excel too)."""

from __future__ import annotations

import re

PURPOSE_CHARS_PER_WIDTH = 1.15
"""Characters of the purpose's italic 10-point text per character width of a column, with some to spare: an
Inputs page cut "... the shipped values are exa" after 75 characters in 55 widths (1.36)."""


_ADVANCE = dict(zip(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;()\"'/_-\u00a7^+=*%$![]&<>",
    (1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186, 569, 1995, 1298, 1253, 1300, 1300, 842, 1067, 803,
     1298, 1212, 1675, 1212, 1212, 1075, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604, 604, 1343, 1141, 1767,
     1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, *(1303,) * 10, 651, 651, 651, 690,
     690, 799, 799, 940, 563, 690, 1024, 739, 1024, 1716, 1716, 1716, 1024, 1946, 1303, 821, 799, 799, 1595, 1716,
     1716),
))  # fmt: skip
"""Advance widths of DejaVu Sans, in 1/2048 em: the font LibreOffice prints Calibri with where Calibri is missing,
wider than Calibri, so text that fits in it fits in Excel too."""


def text_em(text: str) -> float:
    """The printed width of ``text`` in ems of its font (DejaVu Sans's advances; an unknown letter as a digit)."""
    return sum(_ADVANCE.get(c, 1303) for c in text) / 2048


def wrap_em(text: str, em: float) -> list[str]:
    """``text`` broken at spaces into lines no wider than ``em`` ems (a longer word keeps a line of its own)."""
    lines: list[str] = []
    for word in text.split():
        if lines and text_em(lines[-1] + " " + word) <= em:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


_NBSP, _NBHYPHEN = "\u00a0", "\u2011"
_GLUED = re.compile(
    r"\b(?:Table|section|notes?) (?=\d)|\b(?:Envelope|Memory) (?=§)|\bCompute (?=and Memory\b)"
    r"|\band (?=Memory\b)|\bet (?=al\.)"
)
"""Spaces a wrapped line must not break at: inside a short title ("Compute and Memory") or between it and its
section ("Back-of-the-Envelope §4"), "et al.", "Table 3", "section 5". A full title may break between its words."""
_HYPHENED = re.compile(r"\bBack-of-the-Envelope\b")
"""A title whose hyphens a wrapped line must not break at: never "Back-of-" at a line's end."""


def keep_together(text: str) -> str:
    """``text`` with the spaces and hyphens of :data:`_GLUED` and :data:`_HYPHENED` made unbreakable for
    :mod:`textwrap`; :func:`as_printed` turns a wrapped line back."""
    text = _GLUED.sub(lambda m: m.group(0)[:-1] + _NBSP, text)
    return _HYPHENED.sub(lambda m: m.group(0).replace("-", _NBHYPHEN), text)


def as_printed(line: str) -> str:
    """A line wrapped from :func:`keep_together`'s text, with plain spaces and hyphens again."""
    return line.replace(_NBSP, " ").replace(_NBHYPHEN, "-")


def balanced_lines(text: str, chars: int) -> list[str]:
    """``text`` in as few lines of at most ``chars`` characters as it needs, of about the same length, never broken
    inside a reference (:func:`keep_together`)."""
    import textwrap

    text = keep_together(text)
    n = len(textwrap.wrap(text, chars))
    width = -(-len(text) // n)
    while len(lines := textwrap.wrap(text, width)) > n:
        width += 1
    return [as_printed(line) for line in lines]
