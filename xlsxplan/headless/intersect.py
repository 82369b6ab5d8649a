"""Implicit intersection, as Excel computes a formula that is not an array formula.

In a formula entered in one cell (not an array formula: what every workbook saved before dynamic arrays holds, and
what Excel 365 saves for a formula that shows no ``@``), a reference to several cells where the formula wants one
value is *implicitly intersected*: it gives the cell of the range in the formula's own row (a range down a column)
or column (a range along a row), and ``#VALUE!`` when there is none. ``B2: =A1:A3*10`` is ``A2*10`` = 20; the same
formula in B5 is ``#VALUE!``. A reference where the function takes a reference or a range (``SUM(A1:A3)``,
``INDEX(A1:A3,2)``, ``COUNTIF(A1:A3,">1")``) is passed whole, and inside an argument that takes an array
(``SUMPRODUCT(A1:A3*2)``) nothing is intersected. Excel writes the ``@`` operator of Excel 365 as
``_xlfn.SINGLE(...)`` in the file. (Microsoft, "Implicit intersection operator: @", and the token classes of the
Excel file format: value, reference and array parameters.)

formualizer 0.13 evaluates every formula as an array formula: ``=A1:A3*10`` is ``{10;20;30}`` and the cell shows its
first element, 10, with no error. Its ``@`` operator intersects as Excel does, so :func:`intersect` writes ``@(...)``
around each such reference before the engine sees the formula. A function it does not list (the registry's, the
newer dynamic-array functions) is left as it is: its arguments are read whole, as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from . import engine

__all__ = ["intersect", "PARAMETERS"]

V, R, P = "V", "R", "P"
"""Parameter classes: a value (a range there is intersected), a reference (a range there is passed whole; an
expression there still computes values), and pass-through (the argument is the function's result, so it is read as
the call itself is read: IF's branches, CHOOSE's choices)."""

_VALUE_FUNCTIONS = engine.LIFTED | frozenset(
    "SIN COS TAN ATAN2 ISFORMULA LOWER UPPER CONCATENATE ENCODEURL WEEKNUM ISOWEEKNUM DAYS DATEDIF "
    "YEARFRAC DAYS360 BIN2DEC DEC2HEX HEX2DEC OCT2DEC ARABIC COMBINA SQRTPI FACTDOUBLE GAMMA ERFC "
    "COT CSC SEC COTH CSCH SECH ACOT ACOTH FISHER FISHERINV GAMMALN.PRECISE PHI GAUSS "
    "BETA.DIST BETA.INV BETADIST BETAINV BINOM.DIST BINOM.DIST.RANGE BINOM.INV BINOMDIST CRITBINOM NEGBINOM.DIST "
    "NEGBINOMDIST EXPON.DIST EXPONDIST GAMMA.DIST GAMMA.INV GAMMADIST GAMMAINV LOGNORM.DIST LOGNORM.INV LOGNORMDIST "
    "LOGINV NORM.INV NORMDIST NORMINV NORMSDIST NORMSINV POISSON.DIST POISSON WEIBULL.DIST WEIBULL T.DIST T.DIST.2T "
    "T.DIST.RT T.INV T.INV.2T TDIST TINV CHISQ.DIST CHISQ.DIST.RT CHISQ.INV CHISQ.INV.RT CHIDIST CHIINV F.DIST "
    "F.DIST.RT F.INV F.INV.RT FDIST FINV HYPGEOM.DIST HYPGEOMDIST STANDARDIZE CONFIDENCE CONFIDENCE.NORM "
    "CONFIDENCE.T".split()
)
"""Functions whose every parameter takes one value (Microsoft's page on each), so a range given to any of them is
intersected."""


def _params(*classes: str, repeat: int = 1) -> tuple[tuple[str, ...], int]:
    """The classes of a function's parameters; the last ``repeat`` repeat for any further argument."""
    return classes, repeat


_ALL_R = _params(R)
PARAMETERS: dict[str, tuple[tuple[str, ...], int]] = {
    **{
        name: _ALL_R
        for name in (
            "SUM AVERAGE AVERAGEA COUNT COUNTA COUNTBLANK MAX MAXA MIN MINA PRODUCT MEDIAN MODE MODE.SNGL STDEV "
            "STDEV.S STDEV.P STDEVA STDEVP STDEVPA VAR VAR.S VAR.P VARA VARP VARPA SUMSQ AND OR XOR ROWS COLUMNS ROW "
            "COLUMN AREAS ISREF CONCAT GEOMEAN HARMEAN AVEDEV DEVSQ KURT SKEW"
        ).split()
    },
    "IF": _params(V, P),
    "IFERROR": _params(P),
    "IFNA": _params(P),
    "CHOOSE": _params(V, P),
    "INDEX": _params(R, V),
    "OFFSET": _params(R, V),
    "SUMIF": _params(R, V, R),
    "AVERAGEIF": _params(R, V, R),
    "COUNTIF": _params(R, V),
    "COUNTIFS": _params(R, V, repeat=2),
    "SUMIFS": _params(R, R, V, repeat=2),
    "AVERAGEIFS": _params(R, R, V, repeat=2),
    "MAXIFS": _params(R, R, V, repeat=2),
    "MINIFS": _params(R, R, V, repeat=2),
    "VLOOKUP": _params(V, R, V),
    "HLOOKUP": _params(V, R, V),
    "MATCH": _params(V, R, V),
    "XLOOKUP": _params(V, R, R, V),
    "XMATCH": _params(V, R, V),
    "LARGE": _params(R, V),
    "SMALL": _params(R, V),
    "PERCENTILE": _params(R, V),
    "PERCENTILE.INC": _params(R, V),
    "PERCENTILE.EXC": _params(R, V),
    "QUARTILE": _params(R, V),
    "QUARTILE.INC": _params(R, V),
    "QUARTILE.EXC": _params(R, V),
    "RANK": _params(V, R, V),
    "RANK.EQ": _params(V, R, V),
    "RANK.AVG": _params(V, R, V),
    "SUBTOTAL": _params(V, R),
    "NPV": _params(V, R),
    "IRR": _params(R, V),
    "TEXTJOIN": _params(V, V, R),
    "NETWORKDAYS": _params(V, V, R),
    "WORKDAY": _params(V, V, R),
    **{name: _params(V) for name in _VALUE_FUNCTIONS},
}
"""The classes of the parameters of Excel's functions that :func:`intersect` reads (names without ``_xlfn.``)."""

_SINGLE = "_XLFN.SINGLE("
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_PLAIN = ("_XLFN._XLWS.", "_XLFN.", "_XLWS.")


def _plain(name: str) -> str:
    upper = name.upper()
    for prefix in _PLAIN:
        if upper.startswith(prefix):
            return upper[len(prefix) :]
    return upper


def _class_of(name: str, index: int) -> str | None:
    """The class of argument ``index`` (0-based) of the function ``name``; None for a function not listed (its
    arguments are read whole)."""
    entry = PARAMETERS.get(_plain(name))
    if entry is None:
        return None
    classes, repeat = entry
    if index < len(classes):
        return classes[index]
    return classes[len(classes) - repeat + (index - len(classes)) % repeat]


def intersect(formula: str, multi: Callable[[str], bool] | None = None) -> str:
    """``formula`` (with its ``=``; a formula of one cell, not an array formula) with each reference to several
    cells that Excel intersects written ``@(...)``, and ``_xlfn.SINGLE(`` as ``@(``. ``multi(name)`` says whether a
    defined name refers to several cells. A formula that needs neither is returned as it is."""
    code = engine.code_text(formula) if '"' in formula else formula
    if ":" not in code and "SINGLE(" not in code.upper():
        if multi is None or not any(multi(word) for word in _WORD.findall(code)):
            return formula  # no range, no name of one: nothing to intersect (most formulas)
    tokens = engine.tokenized(formula)
    if tokens is None:
        return formula
    # one frame per open function, parenthesis or array constant: [name ("" for a parenthesis, "{" for an array
    # constant), argument index, how the frame's own position is read (V or R), whether everything inside is read
    # whole (within a function not listed, or an array constant)]
    frames: list[list[Any]] = []
    edits: list[tuple[int, int, str]] = []
    significant = [i for i, t in enumerate(tokens) if str(t.token_type) != "Whitespace"]
    position = {i: n for n, i in enumerate(significant)}

    def neighbour(i: int, step: int) -> tuple[str, str, str]:
        n = position[i] + step
        if not 0 <= n < len(significant):
            return ("", "", "")
        t = tokens[significant[n]]
        return str(t.token_type), str(t.subtype), str(t.value)

    def slot_class() -> str:
        """How an argument standing alone in the innermost frame is read: V or R."""
        if not frames:
            return R  # the whole formula: the cell's own @(...) reads it
        name, index, outer, _ = frames[-1]
        if name == "":
            return outer
        cls = _class_of(name, index)
        return outer if cls in (P, None) else cls

    def whole() -> bool:
        return bool(frames) and frames[-1][3]

    def alone(i: int) -> bool:
        before, after = neighbour(i, -1), neighbour(i, 1)
        return _opens(before) and _closes(after)

    def reference_operator(i: int) -> bool:
        """Whether the operand at ``i`` is joined to another reference (``:``, a space, a union's comma)."""
        for step in (-1, 1):
            k, _, value = neighbour(i, step)
            if k == "OpInfix" and value.strip() in (":", "", ","):
                return True
        return False

    for i, tok in enumerate(tokens):
        k, sub, value = str(tok.token_type), str(tok.subtype), str(tok.value)
        if sub == "Open" and k in ("Func", "Paren", "Array"):
            name = value[:-1].strip() if k == "Func" else ("" if k == "Paren" else "{")
            read_whole = whole() or k == "Array" or (k == "Func" and _plain(name) not in PARAMETERS)
            outer = slot_class() if _alone_group(i, tokens, position, significant) else V
            frames.append([name, 0, outer, read_whole])
            if k == "Func" and value.upper().replace(" ", "") == _SINGLE:
                edits.append((tok.start, tok.end, "@("))
        elif sub == "Close" and k in ("Func", "Paren", "Array"):
            if frames:
                frames.pop()
        elif k == "Sep" and sub == "Arg" and frames:
            frames[-1][1] += 1
        elif k == "Operand" and sub == "Range":
            if whole() or reference_operator(i):
                continue
            if ":" not in value and not (multi is not None and multi(value)):
                continue
            if (slot_class() if alone(i) else V) == V:
                edits.append((tok.start, tok.end, f"@({value})"))
    if not edits:
        return formula
    raw = formula.encode("utf-8")
    out, last = [], 0
    for start, end, text in sorted(edits):
        out += [raw[last:start], text.encode("utf-8")]
        last = end
    out.append(raw[last:])
    return b"".join(out).decode("utf-8")


def _opens(t: tuple[str, str, str]) -> bool:
    """Whether the token ``t`` (kind, subtype, text) can stand before a whole argument."""
    return t[0] == "" or (t[1] == "Open" and t[0] in ("Func", "Paren")) or t[:2] == ("Sep", "Arg")


def _closes(t: tuple[str, str, str]) -> bool:
    """Whether the token ``t`` can stand after a whole argument."""
    return t[0] == "" or (t[1] == "Close" and t[0] in ("Func", "Paren")) or t[:2] == ("Sep", "Arg")


def _triple(t: Any) -> tuple[str, str, str]:
    return str(t.token_type), str(t.subtype), str(t.value)


def _alone_group(i: int, tokens: list[Any], position: dict[int, int], significant: list[int]) -> bool:
    """Whether the call or parenthesis opened at token ``i`` is a whole argument (or the whole formula): nothing
    but a separator or a bracket before it and after its closing bracket."""
    n = position[i]
    if n > 0 and not _opens(_triple(tokens[significant[n - 1]])):
        return False
    depth = 0
    for j in significant[n:]:
        k, sub, _ = _triple(tokens[j])
        if sub == "Open" and k in ("Func", "Paren", "Array"):
            depth += 1
        elif sub == "Close" and k in ("Func", "Paren", "Array"):
            depth -= 1
            if depth == 0:
                m = position[j] + 1
                return m >= len(significant) or _closes(_triple(tokens[significant[m]]))
    return True
