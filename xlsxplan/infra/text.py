"""Text as a cell can hold it, and text that stays text.

Text that xlsxplan writes into a cell from user input (a model name, a note) goes through :func:`set_text`, which
stores it as text and never as a formula, whatever it starts with (formula injection).
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import WorkbookError

__all__ = ["EXCEL_TEXT_MAX", "FORMULA_TRIGGERS", "UNSEEN", "UNSEEN_CHARS", "clean_text", "set_text"]

EXCEL_TEXT_MAX = 32_767
"""The most characters an Excel cell holds."""

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")
"""First characters that make a spreadsheet treat typed text as a formula (OWASP, "CSV Injection")."""

UNSEEN_CHARS = "\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069"
"""A regular-expression class body of the characters a reader cannot see as written: C0 and C1 control characters
(an escape sequence recolours or rewrites a terminal) and the bidirectional marks and overrides that reorder what
is shown."""
UNSEEN = re.compile(f"[{UNSEEN_CHARS}]")

_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def clean_text(text: object, what: str = "text") -> str:
    """``text`` as a cell can hold it: control characters replaced by U+FFFD, at most 32,767 characters."""
    value = str(text)
    value = _ILLEGAL.sub("\ufffd", value)
    if len(value) > EXCEL_TEXT_MAX:
        raise WorkbookError(f"{what} is {len(value):,} characters long; an Excel cell holds at most {EXCEL_TEXT_MAX:,}")
    return value


def set_text(cell: Any, text: object, what: str = "text") -> Any:
    """Store ``text`` in an openpyxl cell as text, never as a formula; return the cell.

    openpyxl turns any string that starts with ``=`` into a formula. This helper writes the string as a text
    cell (``data_type = "s"``) and, when it starts with a character that makes Excel read typed input as a
    formula (``= + - @``, tab, line break), also sets the cell's *quote prefix* so that Excel keeps it text even
    after someone edits the cell. Control characters that XML cannot hold become U+FFFD.
    """
    value = clean_text(text, what)
    cell.value = value
    cell.data_type = "s"
    if value.startswith(FORMULA_TRIGGERS):
        cell.quotePrefix = True
    return cell
