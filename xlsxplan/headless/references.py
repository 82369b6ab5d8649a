"""The references a formula holds, read from the engine's own tokenizer (``formualizer.tokenize``), never by
stripping text with regular expressions: text literals, quoted sheet names holding ``"`` or ``!``, and structured
references are the tokenizer's to tell apart, as the engine reads them.

Three uses, each decided on the tokens:

* :func:`threat`: a DDE call (``=cmd|' /C calc'!A0``: a ``|`` outside text and quoted sheet names), a reference to
  another workbook (``[1]Sheet1!A1``, ``'C:\\data\\[rates.xlsx]Sheet1'!A1``: a workbook part, or a "sheet" name
  that holds a character Excel forbids in sheet names, ``\\ / ? * [ ]``), or a reference outside Excel's grid
  (``XFE1``, ``A1048577``): reasons to refuse a workbook before the engine is given it;
* :func:`ordered`: a formula with its reversed ranges (``B1:A1``, ``4:1``, ``XFD:A``) written corner first and its
  chains of ranges (``A1:B1:XFD1``) as the one range that holds them, as Excel reads them (the engine fails the
  whole calculation on a reversed cell range, and gives ``#REF!`` for the others);
* :func:`areas`: every range a formula refers to, with its sheet and bounds (whole rows and columns marked), for
  costing what the engine would go through (:func:`.untrusted.check_ranges`).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .package import MAX_COL, MAX_ROW, col_index, col_letter

__all__ = [
    "Area",
    "Operand",
    "tokens",
    "operands",
    "threat",
    "may_threaten",
    "ordered",
    "areas",
    "computed_range",
    "COMPUTED_RANGE",
    "SHEET_FORBIDDEN",
]

COMPUTED_RANGE = (
    "not calculated headlessly: a range whose corner is a function's result ({shown}); Excel computes it, the engine "
    "gives #REF!: refer to the range itself, or use OFFSET"
)

SHEET_FORBIDDEN = frozenset("\\/?*[]")
"""Characters Excel forbids in a sheet name (``:`` too, which separates the sheets of a 3-D reference)."""

_PART = re.compile(r"^(\$?)([A-Za-z]{1,3})?(\$?)(\d+)?$")


def tokens(formula: str) -> list[Any] | None:
    """The engine's tokens of ``formula`` (a leading ``=`` added if missing), or None if it cannot tokenize it."""
    import formualizer as fz

    text = formula if formula.startswith("=") else "=" + formula
    try:
        return list(fz.tokenize(text))
    except BaseException as err:
        if isinstance(err, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise
        return None


@dataclass(frozen=True)
class Area:
    """A rectangle of a sheet: rows ``r1..r2`` and columns ``c1..c2`` (1-based, inclusive); ``rows`` for a whole-row
    reference (``1:3``), ``cols`` for a whole-column one (``A:C``)."""

    r1: int
    c1: int
    r2: int
    c2: int
    rows: bool = False
    cols: bool = False

    @property
    def inside(self) -> bool:
        return 1 <= self.r1 <= self.r2 <= MAX_ROW and 1 <= self.c1 <= self.c2 <= MAX_COL


@dataclass(frozen=True)
class Operand:
    """One reference token: ``prefix`` as written before its ``!`` (quotes included; None without one), ``sheets``
    the sheet names it names (two for ``Jan:Dec!``), ``ref`` what follows the ``!``, ``outside`` what of the token
    lies outside its quoted sheet name (where a ``|`` is a DDE call), and ``start``/``end`` its byte offsets."""

    text: str
    prefix: str | None
    sheets: tuple[str, ...]
    ref: str
    outside: str
    start: int
    end: int
    quoted: bool

    def area(self) -> Area | None:
        """The rectangle ``ref`` names (``B4``, ``A1:C9``, ``A:C``, ``1:3``, in any order), or None for a name, a
        structured reference or anything else; out-of-grid corners are kept (see :attr:`Area.inside`)."""
        return _area(self.ref)


def _split(text: str) -> tuple[str | None, str, str, bool]:
    """(prefix as written or None, the rest after its ``!``, the token outside its quoted name, quoted)."""
    if text.startswith("'"):
        i = 1
        while True:
            j = text.find("'", i)
            if j < 0:  # unterminated: all of it is outside any name
                return None, text, text, False
            if text.startswith("''", j):
                i = j + 2
                continue
            break
        prefix, rest = text[: j + 1], text[j + 1 :]
        if rest.startswith("!"):
            return prefix, rest[1:], rest, True
        return None, text, rest, True  # a quoted run not followed by "!" ('cmd'|): not a sheet name
    bang = text.find("!")
    if bang < 0:
        return None, text, text, False
    return text[:bang], text[bang + 1 :], text, False


def operands(toks: list[Any]) -> Iterator[Operand]:
    """The reference tokens among ``toks``."""
    for tok in toks:
        if str(tok.token_type) != "Operand" or str(tok.subtype) != "Range":
            continue
        prefix, ref, outside, quoted = _split(tok.value)
        sheets: tuple[str, ...] = ()
        if prefix is not None:
            name = prefix[1:-1].replace("''", "'") if quoted else prefix
            sheets = tuple(name.split(":")) if ":" in name else (name,)
        yield Operand(tok.value, prefix, sheets, ref, outside, tok.start, tok.end, quoted)


def _part(text: str) -> tuple[str, int | None, str, int | None] | None:
    m = _PART.match(text)
    if m is None or (m.group(2) is None and m.group(4) is None):
        return None
    col = col_index(m.group(2)) if m.group(2) else None
    row = int(m.group(4)) if m.group(4) else None
    if col is None:  # $4: the "$" is the row's
        return "", None, m.group(1) or m.group(3), row
    return m.group(1), col, m.group(3), row


def _area(ref: str) -> Area | None:
    first, colon, last = ref.partition(":")
    a = _part(first)
    if a is None:
        return None
    if not colon:
        if a[1] is None or a[3] is None:
            return None
        return Area(a[3], a[1], a[3], a[1])
    b = _part(last)
    if b is None:
        return None
    (_, ca, _, ra), (_, cb, _, rb) = a, b
    if ca is not None and ra is not None and cb is not None and rb is not None:
        return Area(min(ra, rb), min(ca, cb), max(ra, rb), max(ca, cb))
    if ca is not None and cb is not None and ra is None and rb is None:
        return Area(1, min(ca, cb), MAX_ROW, max(ca, cb), cols=True)
    if ra is not None and rb is not None and ca is None and cb is None:
        return Area(min(ra, rb), 1, max(ra, rb), MAX_COL, rows=True)
    return None


def threat(formula: str) -> str | None:
    """Why a formula (or a defined name's text) must not be evaluated, or None; decided on the engine's tokens.

    A DDE call (``=cmd|' /C calc'!A0``: a ``|`` outside text and quoted sheet names) asks Excel to start a
    program; an external reference (``[1]Sheet1!A1``, ``'C:\\data\\[rates.xlsx]Sheet1'!A1``) reads another file;
    a reference outside Excel's grid (``XFE1``, ``A1:A1048577``) is not one Excel can hold, so no number computed
    for it would be Excel's. Structured table references (``Table1[Column]``) are none of these.
    """
    if not _maybe_threat(formula):  # almost every formula: decided on its text, with nothing to remember
        return None
    return _threat(formula)


@functools.lru_cache(maxsize=4096)  # a column of one formula, a table's cells: decided once per text
def _threat(formula: str) -> str | None:
    """:func:`threat` of a formula the test over its text could not clear, on the engine's tokens."""
    toks = tokens(formula)
    if toks is None:
        if "|" in formula or "[" in formula:
            return "cannot be read by the engine's tokenizer and holds '|' or '[' (a DDE call or another workbook?)"
        return None
    for tok in toks:
        kind = str(tok.token_type)
        if kind == "Operand" and str(tok.subtype) == "Text":
            continue
        if kind != "Operand" and "|" in tok.value:
            return "holds a DDE call (a reference with '|', which asks Excel to start a program)"
    for i in range(len(toks) - 2):  # where a corner is outside the grid, the tokenizer splits the range at ":"
        a, colon, b = toks[i : i + 3]
        if str(colon.token_type) == "OpInfix" and colon.value == ":" and all(_operand(t) for t in (a, b)):
            prefix, ref, _, _ = _split(f"{a.value}:{b.value}")
            area = _area(ref)
            if area is not None and not area.inside:
                return _outside(ref)
    for op in operands(toks):
        if "|" in op.outside:
            return "holds a DDE call (a reference with '|', which asks Excel to start a program)"
        if op.prefix is not None:
            names = op.sheets
            if op.prefix.lstrip("'").startswith("[") or any(SHEET_FORBIDDEN.intersection(n) for n in names):
                return f"refers to another workbook ({op.prefix}{'' if op.quoted else '!'})"
        elif op.ref.startswith("[") and "]" in op.ref and "!" in op.ref:
            return f"refers to another workbook ({op.ref})"
        area = op.area()
        if area is not None and not area.inside:
            return _outside(op.ref)
    return None


_CLASSES = str.maketrans({**dict.fromkeys(string.ascii_letters, "a"), **dict.fromkeys("123456789", "1"), "0": "z"})
_OUTSIDE_SHAPES = ("aaa1", "aaaz", "aaa$1", "aaa$z", ":aaa", ":$aaa", "aaa:", "az", "$z", ":z", "z:")
"""What a reference outside the grid looks like with letters as ``a``, digits 1-9 as ``1`` and 0 as ``z``: a
column of three letters (XFE1, A:XFE), or a row 0 (A0, 0:3); a row of seven digits is tested apart."""


def _maybe_threat(formula: str) -> bool:
    """Whether ``formula`` may hold a DDE call, another workbook or a reference outside the grid: a test over the
    raw text, text literals included, that errs towards yes (what it lets through, the tokens decide) and spares
    the tokenizer for almost every formula. Each of those needs one of the characters ``| [ ] \\``, a quote with
    a ``/``, ``?`` or ``*`` (which only a path quoted as a sheet name holds), a column of three letters, a row of
    seven digits, or a row 0."""
    if any(ch in formula for ch in "|[]\\") or ("'" in formula and any(ch in formula for ch in "/?*")):
        return True
    shape = formula.translate(_CLASSES)
    return any(s in shape for s in _OUTSIDE_SHAPES) or "1111111" in shape.replace("z", "1")


def may_threaten(formulas: Iterable[str]) -> bool:
    """Whether any of ``formulas`` may hold a DDE call, another workbook or a reference outside the grid: the test
    :func:`threat` starts with, over all their texts at once, joined by a NUL (a character that no shape the test
    looks for holds, so none is found across two texts). False clears every one of them in one pass over their
    text, where a sheet of 100,000 formulas cost 100,000 tests; True says only that one of them needs
    :func:`threat`."""
    return _maybe_threat("\0".join(formulas))


def _operand(tok: Any) -> bool:
    return str(tok.token_type) == "Operand" and str(tok.subtype) in ("Range", "Number")


def _outside(ref: str) -> str:
    return f"refers to {ref}, outside Excel's grid (columns A to XFD, rows 1 to {MAX_ROW:,}), which Excel cannot hold"


def _corner(col: tuple[str, int | None], row: tuple[str, int | None]) -> str:
    return (f"{col[0]}{col_letter(col[1])}" if col[1] is not None else "") + (
        f"{row[0]}{row[1]}" if row[1] is not None else ""
    )


def _ordered_ref(ref: str) -> str | None:
    """``ref`` (``B$1:$A1``, ``4:1``, ``XFD:A``) with its corners in order, each column and row keeping its ``$``;
    None when it is in order already or is not a range."""
    first, colon, last = ref.partition(":")
    if not colon:
        return None
    a, b = _part(first), _part(last)
    if a is None or b is None:
        return None
    cols = [(a[0], a[1]), (b[0], b[1])]
    rows = [(a[2], a[3]), (b[2], b[3])]
    if (cols[0][1] is None) != (cols[1][1] is None) or (rows[0][1] is None) != (rows[1][1] is None):
        return None
    swap_c = cols[0][1] is not None and cols[0][1] > cols[1][1]  # type: ignore[operator]
    swap_r = rows[0][1] is not None and rows[0][1] > rows[1][1]  # type: ignore[operator]
    if not (swap_c or swap_r):
        return None
    if swap_c:
        cols.reverse()
    if swap_r:
        rows.reverse()
    return f"{_corner(cols[0], rows[0])}:{_corner(cols[1], rows[1])}"


def ordered(formula: str) -> str:
    """``formula`` with each reversed range written corner first (``SUM(XFD1:A1)`` as ``SUM(A1:XFD1)``, ``4:1`` as
    ``1:4``, ``$B$1:A1`` as ``A1:$B$1``) and each chain of ranges on one sheet (``A1:B1:XFD1``) as the range that
    holds them, as Excel reads them; and a whole row or column that INDEX reads (``INDEX(1:1,16384)``) as the
    rectangle it is (``$A1:$XFD1``): the engine cuts whole rows and columns at the last cell in use, so that INDEX
    past it is ``#REF!`` where Excel's is the empty cell there. The formula itself when there is nothing to
    change."""
    if ":" not in formula or not (_maybe_reversed(formula) or "INDEX" in formula.upper()):
        return formula
    toks = tokens(formula)
    if toks is None:
        return formula
    offset = 0 if formula.startswith("=") else 1
    raw = formula.encode("utf-8")
    edits: list[tuple[int, int, str]] = []
    ops = {op.start: op for op in operands(toks)}
    indexed = _indexed_whole(toks, ops)
    i = 0
    while i < len(toks):
        tok = toks[i]
        op = ops.get(tok.start) if str(tok.token_type) == "Operand" else None
        if op is None:
            i += 1
            continue
        chain = [op]
        j = i
        while (
            j + 2 < len(toks)
            and str(toks[j + 1].token_type) == "OpInfix"
            and toks[j + 1].value == ":"
            and toks[j + 2].start in ops
        ):
            chain.append(ops[toks[j + 2].start])
            j += 2
        if len(chain) > 1:
            merged = _merge(chain)
            if merged is not None:
                edits.append((chain[0].start, chain[-1].end, merged))
            i = j + 1
            continue
        new = _ordered_ref(op.ref)
        if op.start in indexed:
            new = _bounded(new or op.ref)
        if new is not None:
            edits.append((op.start, op.end, (f"{op.prefix}!" if op.prefix is not None else "") + new))
        i += 1
    if not edits:
        return formula
    out, last = [], 0
    for start, end, text in edits:
        out += [raw[last : start - offset], text.encode("utf-8")]
        last = end - offset
    out.append(raw[last:])
    return b"".join(out).decode("utf-8")


def _indexed_whole(toks: list[Any], ops: dict[int, Operand]) -> set[int]:
    """The start offsets of the whole-row and whole-column references that are INDEX's first argument."""
    found: set[int] = set()
    stack: list[tuple[str, int]] = []  # (function name or "", argument number)
    for k, tok in enumerate(toks):
        kind, sub = str(tok.token_type), str(tok.subtype)
        if kind == "Func" and sub == "Open":
            stack.append((tok.value[:-1].strip().upper().removeprefix("_XLFN."), 0))
        elif kind in ("Paren", "Array") and sub == "Open":
            stack.append(("", 0))
        elif sub == "Close" and kind in ("Func", "Paren", "Array"):
            if stack:
                stack.pop()
        elif kind == "Sep" and sub == "Arg" and stack:
            stack[-1] = (stack[-1][0], stack[-1][1] + 1)
        elif tok.start in ops and stack and stack[-1] == ("INDEX", 0):
            area = ops[tok.start].area()
            nxt = toks[k + 1] if k + 1 < len(toks) else None
            alone = nxt is None or str(nxt.token_type) in ("Sep", "Func", "Whitespace")
            if area is not None and (area.rows or area.cols) and area.inside and alone:
                found.add(tok.start)
    return found


def _bounded(ref: str) -> str | None:
    """A whole-row (``1:3``, ``$1:$3``) or whole-column (``A:C``) reference as the rectangle it spans."""
    first, _, last = ref.partition(":")
    a, b = _part(first), _part(last)
    if a is None or b is None:
        return None
    if a[1] is None and b[1] is None:  # rows: every column, fixed
        return f"$A{a[2]}{a[3]}:$XFD{b[2]}{b[3]}"
    if a[3] is None and b[3] is None:  # columns: every row, fixed
        return f"{a[0]}{col_letter(a[1])}$1:{b[0]}{col_letter(b[1])}${MAX_ROW}"  # type: ignore[arg-type]
    return None


def _merge(chain: list[Operand]) -> str | None:
    """A chain of ranges on one sheet (``A1:B1:XFD1``, ``Data!A1:B1:XFD1``) as the range that holds them all, or
    None."""
    if len({op.prefix.casefold() for op in chain if op.prefix is not None}) > 1 or (
        chain[0].prefix is None and any(op.prefix is not None for op in chain)
    ):
        return None  # the sheet of the first range, if any, is the chain's
    found = [op.area() for op in chain]
    if any(a is None or not a.inside for a in found):
        return None
    kinds = {(a.rows, a.cols) for a in found if a is not None}
    if len(kinds) != 1:
        return None
    rows, cols = kinds.pop()
    r1 = min(a.r1 for a in found if a)
    c1 = min(a.c1 for a in found if a)
    r2 = max(a.r2 for a in found if a)
    c2 = max(a.c2 for a in found if a)
    ref = (
        f"{r1}:{r2}"
        if rows
        else f"{col_letter(c1)}:{col_letter(c2)}"
        if cols
        else (f"{col_letter(c1)}{r1}:{col_letter(c2)}{r2}")
    )
    prefix = chain[0].prefix
    return (f"{prefix}!" if prefix is not None else "") + ref


_PAIR = re.compile(r"(\$?[A-Za-z]{1,3})?\$?(\d+)?\s*:\s*(?=((\$?[A-Za-z]{1,3})?\$?(\d+)?)\s*(:?))")


def _maybe_reversed(formula: str) -> bool:
    """Whether ``formula`` may hold a reversed range or a chain of ranges: a cheap test over the raw text (text
    literals included, so it errs towards yes) that spares the tokenizer for almost every formula."""
    for m in _PAIR.finditer(formula):
        c1, r1, _, c2, r2, chained = m.groups()
        if chained:
            return True
        if c1 and c2 and col_index(c1.lstrip("$")) > col_index(c2.lstrip("$")):
            return True
        if r1 and r2 and int(r1) > int(r2):
            return True
    return False


def computed_range(formula: str) -> str | None:
    """The first range of ``formula`` that the range operator builds from a function's result
    (``A1:INDEX(A:A,5)``, ``OFFSET(A1,0,0):B9``), as written around its ``:``; None if there is none."""
    if ":" not in formula or "(" not in formula:
        return None
    toks = tokens(formula)
    if toks is None:
        return None
    raw = (formula if formula.startswith("=") else "=" + formula).encode("utf-8")
    for i, tok in enumerate(toks):
        if str(tok.token_type) != "OpInfix" or tok.value != ":" or not 0 < i < len(toks) - 1:
            continue
        before, after = toks[i - 1], toks[i + 1]
        if (str(before.token_type), str(before.subtype)) == ("Func", "Close") or (
            str(after.token_type),
            str(after.subtype),
        ) == ("Func", "Open"):
            start = before.start if str(before.token_type) == "Operand" else max(0, tok.start - 24)
            end = after.end if str(after.token_type) == "Operand" else min(len(raw), tok.end + 24)
            return raw[start:end].decode("utf-8", "replace") + ("..." if end < len(raw) else "")
    return None


def areas(formula: str) -> list[tuple[Operand, Area]] | None:
    """Every range (and cell) ``formula`` refers to with its rectangle; None if the engine cannot tokenize it."""
    toks = tokens(formula)
    if toks is None:
        return None
    out = []
    for op in operands(toks):
        area = op.area()
        if area is not None:
            out.append((op, area))
    return out
