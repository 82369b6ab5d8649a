"""What the commands share: exit statuses and how values are printed."""

from __future__ import annotations

import contextlib
import math
import re
import sys
from collections.abc import Iterator
from typing import Any

from ..errors import XlsxplanError
from ..infra.text import UNSEEN_CHARS

EXIT_OK, EXIT_FORMULA_ERROR, EXIT_USAGE = 0, 1, 2
DEBUG_FLAG = "--debug"


class UsageError(Exception):
    """A flag given a value it does not take: one line naming the flag, exit status 2."""


def flag_number(text: str, flag: str, whole: bool = False) -> float | int:
    """The number a flag's text gives (``_`` allowed as a digit separator: ``2_000_000``); a whole number where
    ``whole``. UsageError naming ``flag`` for anything else."""
    try:
        value = float(str(text).replace("_", ""))
    except ValueError:
        hint = ""
        if "," in str(text):
            try:
                float(str(text).replace(",", ""))
                hint = ": type it without thousands separators (2000000 or 2_000_000)"
            except ValueError:
                pass
        raise UsageError(f"{flag} must be a number, got {text!r}{hint}") from None
    if whole:
        if not value.is_integer():
            raise UsageError(f"{flag} must be a whole number, got {text!r}")
        return int(value)
    return value


def strip_debug(argv: list[str]) -> bool:
    """Remove ``--debug`` from ``argv`` wherever it stands before a ``--`` (in place); whether it was there."""
    end = argv.index("--") if "--" in argv else len(argv)
    found = DEBUG_FLAG in argv[:end]
    if found:
        argv[:end] = [a for a in argv[:end] if a != DEBUG_FLAG]
    return found


def unexpected(err: BaseException, debug: bool) -> int:
    """Report a failure that no check foresaw: one line on stderr (the traceback too with ``--debug``); exit 2.

    A deep recursion or an exhausted memory is said as such; anything else by its kind and first line."""
    if debug:
        import traceback

        traceback.print_exception(err)
    if isinstance(err, RecursionError):
        what = "the input nests too deeply to process (Python's recursion limit)"
    elif isinstance(err, MemoryError):
        what = "ran out of memory"
    else:
        first = next((line for line in str(err).splitlines() if line.strip()), "")
        what = f"unexpected {type(err).__name__}" + (f": {first[:300]}" if first else "")
    hint = "" if debug else " (run with --debug for the traceback)"
    print(f"xlsxplan: error: {what}{hint}", file=sys.stderr)
    return EXIT_USAGE


_warned: set[str] = set()


def warn_catalog_problems(already_said: str = "") -> None:
    """Print, once per process, a warning for each part of the user's catalog that is left out (see
    :func:`xlsxplan.catalog.catalog_problems`): a hand-edited file that breaks never breaks a command silently.
    A problem that ``already_said`` (the command's error line) states is not repeated. A command that never loaded
    the catalog (a recalculation whose formulas read no preset) used no preset, so it has nothing to warn of and
    does not load the catalog to look."""
    if f"{__package__.rpartition('.')[0]}.catalog" not in sys.modules:
        return
    from ..catalog import catalog_problems

    try:
        problems = catalog_problems()
    except XlsxplanError:  # the shipped catalog itself is broken: the command has said so, or will
        return
    for problem in problems:
        if problem in already_said:
            continue
        if problem not in _warned:
            _warned.add(problem)
            print(
                f"xlsxplan: warning: {problem} (left out until fixed; the rest of the catalog works)", file=sys.stderr
            )


_NO_UNIT = ("", "name", "names", "text", "count")
"""Units ``--format`` does not print: text has none, and a count reads right bare (``5``, not ``5 count``)."""


def format_value(value: Any, human: bool = False, unit: str = "", whole: bool = False) -> str:
    """A value as the command line prints it: a number as Python prints it (no ``.0`` on integral floats), text as
    is, an error as its value and reason.

    With ``human``, numbers get thousands separators and four significant figures (a ``whole`` result that is a
    whole number, such as a batch or a replica count, prints without decimals: ``94``), and the unit is appended
    unless it is one of :data:`_NO_UNIT`.
    """
    from ..errors import CellError

    if isinstance(value, CellError):
        return str(value)
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        x = float(value)
        if human:
            text = f"{int(x):,}" if whole and x.is_integer() and abs(x) < 1e15 else human_number(x)
            return text if unit in _NO_UNIT else f"{text} {unit}"
        if x.is_integer() and abs(x) < 1e16:
            return str(int(x))
        return repr(x)
    if value is None:
        return ""
    return str(value)


def human_number(x: float) -> str:
    """``4,387`` for 4387.49, ``0.7537`` for 0.753664, ``5.880e+21`` for 5.88e21, ``0`` for zero."""
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    magnitude = math.floor(math.log10(abs(x)))
    if magnitude >= 15 or magnitude < -3:
        return f"{x:.3e}"
    decimals = max(0, 3 - magnitude)
    return f"{x:,.{decimals}f}"


_UNSAFE = re.compile(f"[{UNSEEN_CHARS}\\\\]")
"""What a terminal must not be handed raw from a workbook's cells: the characters a reader cannot see as written
(:data:`~.infra.text.UNSEEN_CHARS`: controls, C1 controls, bidi overrides) and the backslash that escapes them."""
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def terminal_text(text: str) -> str:
    """Text from a workbook as one line a terminal shows literally: a backslash doubled, line breaks and tabs as
    ``\\n``, ``\\r``, ``\\t``, any other control or bidi-override character as ``\\xNN`` or ``\\uNNNN``."""
    return _UNSAFE.sub(
        lambda m: (
            _NAMED.get(m.group())
            or (f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}")
        ),
        text,
    )


_UNSEEN_OUT = re.compile(f"[{UNSEEN_CHARS}]")


def _escaped(m: re.Match[str]) -> str:
    ch = m.group()
    return ch if ch in "\n\t" else f"\\u{ord(ch):04x}"  # \uNNNN: literal on a terminal, and valid inside JSON


class EscapedStream:
    """A text stream for what a command prints: every character a reader cannot see as written
    (:data:`~.infra.text.UNSEEN_CHARS`: an escape sequence, a carriage return, a bidi override) is written as
    ``\\uNNNN``, but a line break and a tab. :func:`main` puts it in front of stdout and stderr, so that no command
    hands a terminal raw text from a workbook, a config or a catalog, whichever message quotes it. The
    stream itself is :attr:`raw` (a progress bar's carriage returns go there)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(_UNSEEN_OUT.sub(_escaped, text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


@contextlib.contextmanager
def escaped_output() -> Iterator[None]:
    """Within the block, stdout and stderr are :class:`EscapedStream` (restored after, whatever happens)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapedStream(out), EscapedStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
