"""The errors xlsxplan raises, and the error values a cell shows.

Every error is raised once, in the core, with a one-line message that names the argument at fault and says what
is allowed. Each class knows the Excel error value it shows as in a cell, so the adapters (xlwings, the headless
engine, the command line) only decide how to *present* it, never what it is. :class:`CellError` is such a value
in a cell: the Excel error code with its one-line reason.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "XlsxplanError",
    "ArgumentError",
    "OutOfRangeError",
    "UnknownPresetError",
    "NotAvailableError",
    "CatalogError",
    "WorkbookError",
    "CellError",
    "EXCEL_ERRORS",
]


class XlsxplanError(ValueError):
    """Base class of every error xlsxplan raises on purpose.

    Attributes
    ----------
    excel_error : str
        The Excel error value this error shows as in a cell (``#VALUE!``, ``#NUM!`` or ``#N/A``).
    argument : str or None
        The argument at fault, where there is one.
    """

    excel_error = "#VALUE!"

    def __init__(self, message: str, argument: str | None = None) -> None:
        # One line, always: a cell, a hover tip and a terminal line all need it that way.
        message = " ".join(str(message).split())
        super().__init__(message)
        self.message = message
        self.argument = argument


class ArgumentError(XlsxplanError):
    """An argument of the wrong kind: text where a number belongs, an empty required cell, a boolean."""

    excel_error = "#VALUE!"


class OutOfRangeError(XlsxplanError):
    """A number outside what the argument allows (negative, zero where it divides, above a physical limit)."""

    excel_error = "#NUM!"


class UnknownPresetError(XlsxplanError, LookupError):
    """A model, accelerator, field or format name that the catalog does not hold."""

    excel_error = "#N/A"


class NotAvailableError(XlsxplanError, LookupError):
    """A figure the catalog knows does not exist (FP8 throughput of an A100) or was never published."""

    excel_error = "#N/A"


class CatalogError(XlsxplanError):
    """A catalog data file that is malformed: a figure missing, negative or without a source."""


class WorkbookError(XlsxplanError):
    """A workbook that cannot be read or written safely: corrupt, hostile, too large or locked."""


EXCEL_ERRORS = (
    "#NULL!",
    "#DIV/0!",
    "#VALUE!",
    "#REF!",
    "#NAME?",
    "#NUM!",
    "#N/A",
    "#GETTING_DATA",
    "#SPILL!",
    "#CALC!",
    "#CONNECT!",
    "#BLOCKED!",
    "#UNKNOWN!",
    "#FIELD!",
    "#BUSY!",
    "#PYTHON!",
    "#EXTERNAL!",
)
"""Excel's error values: the classic seven, and the newer ones (dynamic arrays, data types, Python in Excel) that
xlwings passes as text with ``err_to_str=True``."""


@dataclass(frozen=True)
class CellError:
    """An Excel error value with the one-line reason behind it."""

    code: str
    message: str = ""

    def __str__(self) -> str:
        return f"{self.code} {self.message}".strip()
