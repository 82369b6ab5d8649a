"""A cell's value as its Excel number format shows it: ``#,##0`` prints 1,234, ``0.0%`` prints 45.6%,
``yyyy-mm-dd`` prints the date, ``"ERROR";"ERROR";"OK"`` prints OK for 0.

:func:`format_value` covers what Microsoft documents in "Number format codes" and "Format numbers as dates or
times": up to four sections (positive; negative; zero; text) and conditions (``[>=100]``); digit placeholders
``0``, ``#`` and ``?``; the decimal point; the comma as a thousands separator (between placeholders) or a scale of
1,000 (after them, ``0.0,,`` for millions); ``%``; scientific notation (``0.00E+00``); fractions (``# ?/?``,
``# ??/16``); literal text (``"USD"``, ``\\$``, ``$ - + ( ) :`` and spaces, ``_x`` as a space, ``*x`` as nothing);
colours and locales (``[Red]``, ``[$-409]``; a currency ``[$€-407]`` prints its symbol); the text placeholder
``@``; dates and times (``yyyy``, ``yy``, ``m`` to ``mmmmm``, ``d`` to ``dddd``, ``h``, ``hh``, ``mm``, ``ss``,
``.0``, ``AM/PM``, ``A/P``, elapsed ``[h]``, ``[mm]``, ``[ss]``), from the serial numbers Excel stores (1900 date
system, with its 29 February 1900, or 1904); and General, as Excel shows it in a cell of the standard width (up to
11 characters: 0.730434783, 1.23457E+11).

Numbers are rounded as Excel rounds them: to 15 significant digits first, then half away from zero. A date outside
0 to 31 December 9999 (which Excel shows as ``####``) prints as General. The locale is en-US: ``.`` for decimals,
``,`` for thousands, English month and day names, and the built-in short date (format 14) as ``yyyy-mm-dd``.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal
from fractions import Fraction
from typing import Any

__all__ = ["BUILTIN_FORMATS", "format_value", "general", "is_date_format"]

BUILTIN_FORMATS = {
    0: "General",
    1: "0",
    2: "0.00",
    3: "#,##0",
    4: "#,##0.00",
    9: "0%",
    10: "0.00%",
    11: "0.00E+00",
    12: "# ?/?",
    13: "# ??/??",
    14: "yyyy-mm-dd",  # the locale's short date; printed in ISO order, which no reader misreads
    15: "d-mmm-yy",
    16: "d-mmm",
    17: "mmm-yy",
    18: "h:mm AM/PM",
    19: "h:mm:ss AM/PM",
    20: "h:mm",
    21: "h:mm:ss",
    22: "yyyy-mm-dd h:mm",
    37: "#,##0 ;(#,##0)",
    38: "#,##0 ;[Red](#,##0)",
    39: "#,##0.00;(#,##0.00)",
    40: "#,##0.00;[Red](#,##0.00)",
    45: "mm:ss",
    46: "[h]:mm:ss",
    47: "mmss.0",
    48: "##0.0E+0",
    49: "@",
}
"""The formats ECMA-376 Part 1 §18.8.30 numbers without writing them in the styles part (en-US)."""

_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_WIDE = Context(prec=400)  # room for every digit of a float's integer part (1.8e308 has 309)
_LAST_SERIAL = 2958465  # 9999-12-31, the last date Excel shows

_TOKEN = re.compile(
    r'"(?P<quoted>[^"]*)"?'
    r"|\\(?P<escaped>.)"
    r"|_(?P<space>.)"
    r"|\*(?P<fill>.)"
    r"|\[(?P<bracket>[^\]]*)\]"
    r"|(?P<general>general)"
    r"|(?P<ampm>am/pm|a/p)"
    r"|(?P<exp>[eE][+-])"
    r"|(?P<date>y+|m+|d+|h+|s+|e)"
    r"|(?P<digit>[0#?])"
    r"|(?P<point>\.)"
    r"|(?P<comma>,)"
    r"|(?P<percent>%)"
    r"|(?P<slash>/)"
    r"|(?P<at>@)"
    r"|(?P<other>.)",
    re.IGNORECASE | re.DOTALL,
)
_CONDITION = re.compile(r"^(<=|>=|<>|<|>|=)\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$")
_ELAPSED = re.compile(r"^(h+|m+|s+)$", re.IGNORECASE)


def _sections(code: str) -> list[str]:
    """The sections of a format, split at each ``;`` outside quotes, brackets and escapes."""
    out, start, i, n = [], 0, 0, len(code)
    while i < n:
        ch = code[i]
        if ch == '"':
            end = code.find('"', i + 1)
            i = n if end < 0 else end + 1
            continue
        if ch in "\\_*":
            i += 2
            continue
        if ch == "[":
            end = code.find("]", i + 1)
            i = n if end < 0 else end + 1
            continue
        if ch == ";":
            out.append(code[start:i])
            start = i + 1
        i += 1
    out.append(code[start:])
    return out


def _tokens(section: str) -> tuple[list[tuple[str, str]], tuple[str, float] | None]:
    """A section as (kind, text) tokens, and its condition (operator, number) if it has one."""
    tokens: list[tuple[str, str]] = []
    condition = None
    for m in _TOKEN.finditer(section):
        kind = m.lastgroup or "other"
        text = m.group(kind) if kind != "other" else m.group(0)
        if kind == "quoted":
            tokens.append(("lit", text))
        elif kind == "escaped":
            tokens.append(("lit", text))
        elif kind == "space":
            tokens.append(("lit", " "))
        elif kind == "fill":
            continue
        elif kind == "bracket":
            cond = _CONDITION.match(text.strip())
            if cond:
                condition = (cond.group(1), float(cond.group(2)))
            elif _ELAPSED.match(text):
                tokens.append(("elapsed", text.lower()))
            elif text.startswith("$"):
                symbol = text[1:].split("-", 1)[0]
                if symbol:
                    tokens.append(("lit", symbol))
            # else a colour ([Red], [Color10]) or another locale tag: nothing printed
        elif kind == "date":
            tokens.append(("date", text.lower()))
        elif kind == "percent":
            tokens.append(("percent", "%"))
        else:
            tokens.append((kind, text))
    return tokens, condition


def is_date_format(code: str) -> bool:
    """Whether a format shows a number as a date or a time (its first section has date or time codes)."""
    tokens, _ = _tokens(_sections(code)[0])
    return any(kind in ("date", "ampm", "elapsed") for kind, _ in tokens)


def _holds(condition: tuple[str, float], x: float) -> bool:
    op, limit = condition
    return {
        "<": x < limit,
        ">": x > limit,
        "=": x == limit,
        "<=": x <= limit,
        ">=": x >= limit,
        "<>": x != limit,
    }[op]


def format_value(value: Any, code: str | None, date1904: bool = False) -> str:
    """``value`` (a number, text, bool or None) as a cell with the number format ``code`` shows it.

    None is empty; a bool is ``TRUE`` or ``FALSE`` whatever the format; text goes through the format's text
    section (``@``) if it has one, else is shown as is. ``date1904`` reads serial numbers in the 1904 date system.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    code = code if code else "General"
    sections = _sections(code)
    if isinstance(value, str):
        section = sections[3] if len(sections) > 3 else sections[0] if len(sections) == 1 else None
        if section is None:
            return value
        tokens, _ = _tokens(section)
        if not any(kind == "at" for kind, _ in tokens):
            return value if len(sections) <= 3 else "".join(t for k, t in tokens if k == "lit")
        return "".join(value if kind == "at" else text for kind, text in tokens if kind in ("lit", "at"))
    if not isinstance(value, (int, float)):
        return str(value)
    x = float(value)
    if not math.isfinite(x):
        return str(x)
    parsed = [_tokens(s) for s in sections[:3]]
    if any(cond is not None for _, cond in parsed[:2]):
        chosen = None
        for i, (_, cond) in enumerate(parsed):
            if cond is not None and _holds(cond, x):
                chosen = i
                break
        if chosen is None:
            chosen = next((i for i, (_, cond) in enumerate(parsed) if cond is None), None)
        if chosen is None:
            return "#" * 8  # Excel's answer for a number no section takes
        tokens = parsed[chosen][0]
        return ("-" if x < 0 else "") + _section(abs(x), tokens, date1904)
    if x < 0 and len(parsed) >= 2:
        return _section(-x, parsed[1][0], date1904)
    if x == 0 and len(parsed) >= 3:
        return _section(0.0, parsed[2][0], date1904)
    tokens = parsed[0][0]
    if x < 0:
        shown = _section(-x, tokens, date1904)
        return shown if shown.startswith("-") else "-" + shown
    return _section(x, tokens, date1904)


def _section(x: float, tokens: list[tuple[str, str]], date1904: bool) -> str:
    """A number that is zero or positive (the sign is the caller's) through one section."""
    kinds = {kind for kind, _ in tokens}
    if kinds & {"date", "ampm", "elapsed"}:
        shown = _date(x, tokens, date1904)
        if shown is not None:
            return shown
        return general(x)
    if "general" in kinds:
        return "".join(general(x) if kind == "general" else text for kind, text in tokens if kind in ("lit", "general"))
    if "digit" not in kinds:  # literal text only ("OK"), or the text placeholder, which shows a number as General
        kept = ("lit", "percent", "other", "comma", "point", "slash", "at")
        return "".join(general(x) if kind == "at" else text for kind, text in tokens if kind in kept)
    x *= 100 ** sum(1 for kind, _ in tokens if kind == "percent")
    if "exp" in kinds:
        return _scientific(x, tokens)
    if "slash" in kinds:
        shown = _fraction(x, tokens)
        if shown is not None:
            return shown
    return _fixed(x, tokens)


# ---------------------------------------------------------------------------------------------------------------
# Numbers


def _rounded(x: float, decimals: int) -> tuple[str, str]:
    """``x`` (zero or positive) rounded as Excel rounds it: its integer and decimal digits."""
    exact = Decimal(f"{x:.15g}").quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP, context=_WIDE)
    text = f"{exact:f}"
    whole, _, frac = text.partition(".")
    return whole.lstrip("0"), frac.ljust(decimals, "0")[:decimals]


def _scales_and_groups(tokens: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], int, bool]:
    """The tokens without the commas that are not literal, the scale (commas after the last digit placeholder of
    a part: 1,000 each) and whether a comma between digit placeholders asks for thousands separators."""
    out: list[tuple[str, str]] = []
    scale, grouped = 0, False
    for i, (kind, text) in enumerate(tokens):
        if kind != "comma":
            out.append((kind, text))
            continue
        before = next((k for k, _ in reversed(tokens[:i]) if k != "comma"), None)
        after = next((k for k, _ in tokens[i + 1 :] if k != "comma"), None)
        if before == "digit" and after == "digit":
            grouped = True
        elif before in ("digit", "point"):
            scale += 1
        else:
            out.append(("lit", ","))
    return out, scale, grouped


def _digits_into(places: list[str], digits: str, grouped: bool) -> list[str]:
    """The integer digits filled into the integer placeholders from the right: what each placeholder shows (the
    leftmost takes the digits left over)."""
    shown = [""] * len(places)
    rest = digits
    for i in range(len(places) - 1, -1, -1):
        if rest:
            shown[i], rest = rest[-1], rest[:-1]
        else:
            shown[i] = {"0": "0", "?": " ", "#": ""}[places[i]]
    if places:
        shown[0] = rest + shown[0]
    if grouped:
        joined = "".join(shown)
        lead = len(joined) - len(joined.lstrip(" "))
        body = joined[lead:]
        groups: list[str] = []
        while len(body) > 3:
            body, tail = body[:-3], body[-3:]
            groups.insert(0, tail)
        joined = " " * lead + ",".join([body, *groups] if body else groups)
        return [joined] + [""] * (len(places) - 1)
    return shown


def _fixed(x: float, tokens: list[tuple[str, str]]) -> str:
    tokens, scale, grouped = _scales_and_groups(tokens)
    x /= 1000**scale
    point = next((i for i, (kind, _) in enumerate(tokens) if kind == "point"), None)
    int_idx = [i for i, (kind, _) in enumerate(tokens) if kind == "digit" and (point is None or i < point)]
    frac_idx = [i for i, (kind, _) in enumerate(tokens) if kind == "digit" and point is not None and i > point]
    whole, frac = _rounded(x, len(frac_idx))
    int_shown = _digits_into([tokens[i][1] for i in int_idx], whole, grouped)
    if not int_idx and whole:  # no integer placeholder: the integer digits go before the point
        int_shown = []
    frac_shown = list(frac)
    significant = len(frac.rstrip("0"))
    for j, i in enumerate(frac_idx):
        if j >= significant and tokens[i][1] != "0":
            frac_shown[j] = "" if tokens[i][1] == "#" else " "
    by_index = dict(zip(int_idx, int_shown)) | dict(zip(frac_idx, frac_shown))
    out = []
    for i, (kind, text) in enumerate(tokens):
        if i in by_index:
            out.append(by_index[i])
        elif kind == "point":
            out.append(("" if int_idx else whole) + ".")
        elif kind in ("lit", "percent", "other", "slash"):
            out.append(text)
    return "".join(out)


def _scientific(x: float, tokens: list[tuple[str, str]]) -> str:
    tokens, _, _ = _scales_and_groups(tokens)
    e_at = next(i for i, (kind, _) in enumerate(tokens) if kind == "exp")
    mantissa, exponent = tokens[:e_at], tokens[e_at + 1 :]
    point = next((i for i, (kind, _) in enumerate(mantissa) if kind == "point"), None)
    int_places = [t for i, (k, t) in enumerate(mantissa) if k == "digit" and (point is None or i < point)]
    decimals = sum(1 for i, (k, _) in enumerate(mantissa) if k == "digit" and point is not None and i > point)
    step = len(int_places) if len(int_places) > 1 and "#" in int_places else 1  # ##0.0E+0: engineering
    power = 0 if x == 0 else math.floor(math.log10(x))
    power -= power % step if step > 1 else 0
    m = x / 10**power if x else 0.0
    whole, frac = _rounded(m, decimals)
    if x and len(whole) > max(1, step) and step == 1:  # 9.99 rounding up to 10.0
        power += 1
        whole, frac = _rounded(x / 10**power, decimals)
    exp_zeros = sum(1 for k, t in exponent if k == "digit" and t == "0")
    sign = "-" if power < 0 else ("+" if tokens[e_at][1][1] == "+" else "")
    exp_text = str(abs(power)).rjust(max(exp_zeros, 1), "0")
    head = _fixed_parts(mantissa, whole, frac)
    tail = "".join(t for k, t in exponent if k in ("lit", "other"))
    return f"{head}{tokens[e_at][1][0].upper()}{sign}{exp_text}{tail}"


def _fixed_parts(tokens: list[tuple[str, str]], whole: str, frac: str) -> str:
    point = next((i for i, (kind, _) in enumerate(tokens) if kind == "point"), None)
    int_idx = [i for i, (kind, _) in enumerate(tokens) if kind == "digit" and (point is None or i < point)]
    frac_idx = [i for i, (kind, _) in enumerate(tokens) if kind == "digit" and point is not None and i > point]
    int_shown = _digits_into([tokens[i][1] for i in int_idx], whole, False)
    by_index = dict(zip(int_idx, int_shown)) | dict(zip(frac_idx, frac))
    out = []
    for i, (kind, text) in enumerate(tokens):
        if i in by_index:
            out.append(by_index[i])
        elif kind == "point":
            out.append(".")
        elif kind in ("lit", "other", "percent"):
            out.append(text)
    return "".join(out)


def _fraction(x: float, tokens: list[tuple[str, str]]) -> str | None:
    """``# ?/?``, ``?/?``, ``# ??/16``: a whole part (if the format has one) and a fraction."""
    slash = next(i for i, (kind, _) in enumerate(tokens) if kind == "slash")
    before, after = tokens[:slash], tokens[slash + 1 :]
    num_start = slash
    while num_start > 0 and before[num_start - 1][0] == "digit":
        num_start -= 1
    numerator, lead = before[num_start:], before[:num_start]
    if not numerator:
        return None
    den_places = [t for k, t in after if k == "digit"]
    fixed_den = "".join(t for k, t in after if k in ("lit", "other") and t.isdigit())
    whole_places = [t for k, t in lead if k == "digit"]
    whole_part = math.floor(x) if whole_places else 0
    rest = x - whole_part
    if fixed_den:
        den = int(fixed_den)
        num = int(Decimal(rest * den).quantize(Decimal(1), rounding=ROUND_HALF_UP, context=_WIDE))
    else:
        limit = 10 ** max(len(den_places), 1) - 1
        f = Fraction(rest).limit_denominator(limit)
        num, den = f.numerator, f.denominator
    if whole_places and num == den:
        whole_part, num = whole_part + 1, 0
    out = []
    if whole_places:
        out.append(str(whole_part) if whole_part or num == 0 else "")
        out.append("".join(t for k, t in lead if k in ("lit", "other")) if num else "")
    if num == 0 and whole_places:
        return "".join(out).strip() or "0"
    width = len(numerator)
    out.append(str(num).rjust(width) if "?" in "".join(t for _, t in numerator) else str(num))
    out.append("/")
    out.append(str(den).ljust(len(den_places)) if den_places and not fixed_den else str(den))
    return "".join(out)


def general(x: float) -> str:
    """A number as Excel's General format shows it in a cell of the standard width: at most 11 characters (a
    minus sign aside), in scientific notation from 1E+11 and below 1E-04 (``1.23457E+11``, ``1E-05``)."""
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    sign = "-" if x < 0 else ""
    a = abs(x)
    power = math.floor(math.log10(a))
    if -5 < power < 11:
        digits = max(power + 1, 1)
        text = f"{Decimal(f'{a:.15g}').quantize(Decimal(1).scaleb(-max(0, 10 - digits)), ROUND_HALF_UP):f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        if len(text) <= 11 or power < 0:
            return sign + text
    mantissa, _, exp = f"{a:.5E}".partition("E")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{sign}{mantissa}E{exp[0]}{exp[1:].lstrip('0').rjust(2, '0')}"


# ---------------------------------------------------------------------------------------------------------------
# Dates and times


def _serial_date(days: int, date1904: bool) -> tuple[int, int, int, int]:
    """(year, month, day, weekday Monday=0) of a serial day number, as Excel counts them (1900: day 1 is
    1900-01-01, day 60 the 29 February 1900 that Lotus 1-2-3 counted and Excel keeps, day 0 is 1900-01-00)."""
    if date1904:
        d = _dt.date(1904, 1, 1) + _dt.timedelta(days=days)
        return d.year, d.month, d.day, d.weekday()
    if days == 0:
        return 1900, 1, 0, 5  # Excel calls it Saturday
    if days == 60:
        return 1900, 2, 29, 2  # a Wednesday, by the days around it
    if days < 60:  # Excel's weekdays before the day it added are one behind the calendar's
        d = _dt.date(1899, 12, 31) + _dt.timedelta(days=days)
        return d.year, d.month, d.day, (d.weekday() - 1) % 7
    d = _dt.date(1899, 12, 30) + _dt.timedelta(days=days)
    return d.year, d.month, d.day, d.weekday()


def _date(x: float, tokens: list[tuple[str, str]], date1904: bool) -> str | None:
    last = _LAST_SERIAL - (1462 if date1904 else 0)
    if x < 0 or x >= last + 1:
        return None
    # fractional seconds: digit placeholders after a point that follows seconds
    sub = 0
    for i, (kind, _) in enumerate(tokens):
        if kind == "point" and i > 0 and any(k in ("date", "elapsed") and t.startswith("s") for k, t in tokens[:i]):
            j = i + 1
            while j < len(tokens) and tokens[j] == ("digit", "0"):
                j += 1
            sub = max(sub, j - i - 1)
    unit = 10**sub
    ticks = int(Decimal(repr(x * 86400 * unit)).quantize(Decimal(1), rounding=ROUND_HALF_UP, context=_WIDE))
    days, rest = divmod(ticks, 86400 * unit)
    seconds, fraction = divmod(rest, unit)
    hour, minute, second = seconds // 3600, seconds // 60 % 60, seconds % 60
    year, month, day, weekday = _serial_date(days, date1904)
    twelve = any(kind == "ampm" for kind, _ in tokens)
    kinds = [(k, t) for k, t in tokens]
    out: list[str] = []
    dated = [i for i, (k, _) in enumerate(kinds) if k in ("date", "elapsed")]
    i = 0
    while i < len(kinds):
        kind, text = kinds[i]
        if kind == "date":
            c = text[0]
            if c == "m" and len(text) <= 2:
                pos = dated.index(i)
                prev = kinds[dated[pos - 1]][1] if pos > 0 else ""
                nxt = kinds[dated[pos + 1]][1] if pos + 1 < len(dated) else ""
                if prev.startswith("h") or prev.startswith("[h") or nxt.startswith("s"):
                    out.append(str(minute).rjust(len(text), "0"))
                    i += 1
                    continue
            if c in "ye":
                out.append(str(year)[-2:].rjust(2, "0") if len(text) <= 2 and c == "y" else str(year))
            elif c == "m":
                n = len(text)
                name = _MONTHS[month - 1]
                out.append(
                    str(month)
                    if n == 1
                    else f"{month:02d}"
                    if n == 2
                    else name[:3]
                    if n == 3
                    else name[0]
                    if n == 5
                    else name
                )
            elif c == "d":
                n = len(text)
                name = _DAYS[weekday]
                out.append(str(day) if n == 1 else f"{day:02d}" if n == 2 else name[:3] if n == 3 else name)
            elif c == "h":
                h = (hour % 12 or 12) if twelve else hour
                out.append(str(h).rjust(min(len(text), 2), "0"))
            elif c == "s":
                out.append(str(second).rjust(min(len(text), 2), "0"))
        elif kind == "elapsed":
            total = days * 86400 + seconds
            value = {"h": total // 3600, "m": total // 60, "s": total}[text[0]]
            out.append(str(value).rjust(len(text), "0"))
        elif kind == "ampm":
            morning = hour < 12
            word = ("AM" if morning else "PM") if len(text) > 3 else ("A" if morning else "P")
            out.append(word if text[0].isupper() else word.lower())
        elif kind == "point" and sub and i + 1 < len(kinds) and kinds[i + 1] == ("digit", "0"):
            j = i + 1
            while j < len(kinds) and kinds[j] == ("digit", "0"):
                j += 1
            n = j - i - 1
            out.append("." + str(fraction).rjust(sub, "0")[:n])
            i = j
            continue
        elif kind in ("lit", "other", "slash", "comma", "point", "digit", "percent"):
            out.append(text)
        i += 1
    return "".join(out)
