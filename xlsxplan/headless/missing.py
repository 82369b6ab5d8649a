"""Excel functions formualizer 0.13 does not have (a call is ``#NAME?`` there), registered by
:func:`.engine.register_functions`: DISC, INTRATE, FVSCHEDULE (financial), PROB, PERMUTATIONA (statistical), EXPAND,
WRAPCOLS and WRAPROWS (arrays). Each is written from Microsoft's page on the function, cited in its docstring.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from . import natives
from .bonds import add_months, date_of

_MAX_DATE = 2_958_465  # 31 December 9999, the last day Excel shows
MAX_ARRAY_CELLS = 10_000_000
"""The most cells an array these functions build may have (SEQUENCE, EXPAND): about 0.5 GB of Python values; a
larger one is ``#NUM!`` rather than memory exhausted (``=SUM(SEQUENCE(20000,20000))`` would take 3.2 GB)."""


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(value: Any, what: str) -> float | dict:
    """A numeric argument as Excel reads one: a number, TRUE 1, FALSE and empty 0, text of a number."""
    if type(value) is dict:
        return value
    if value is None:
        return 0.0
    if isinstance(value, (bool, int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return natives.error("#VALUE!", f"{what} must be a number, got {value!r}")


def _numbers(name: str, *pairs: tuple[Any, str]) -> list[float] | dict:
    out = []
    for value, what in pairs:
        v = _number(value, f"{name}'s {what}")
        if not isinstance(v, float):
            return v
        out.append(v)
    return out


def _grid(arg: Any) -> list[list[Any]]:
    if type(arg) is list:
        return [row if type(row) is list else [row] for row in arg]
    return [[arg]]


def _year_fraction(name: str, settlement: float, maturity: float, basis: float) -> float | dict:
    """The years from settlement to maturity in the day-count ``basis``, by the engine's YEARFRAC (which matches
    Excel on the corpus); ``#NUM!`` for settlement not before maturity or a basis outside 0 to 4."""
    s, m, b = math.floor(settlement), math.floor(maturity), math.floor(basis)
    if s >= m:
        return natives.error("#NUM!", f"{name}'s settlement must be before maturity")
    if not 0 <= b <= 4:
        return natives.error("#NUM!", f"{name}'s basis must be 0 to 4, got {b}")
    years = natives.scalar("YEARFRAC", (float(s), float(m), float(b)))
    return float(years) if isinstance(years, (int, float)) else years


def disc(settlement: Any, maturity: Any, pr: Any, redemption: Any, basis: Any = 0) -> Any:
    """Excel's DISC: the discount rate of a security, ``(redemption - pr) / redemption / YEARFRAC(settlement,
    maturity, basis)`` (Microsoft, "DISC function": ``DISC = (redemption - pr) / redemption * B / DSM``), per year.
    ``#NUM!`` for a price or redemption not above 0."""
    v = _numbers("DISC", (settlement, "settlement"), (maturity, "maturity"), (pr, "pr"), (redemption, "redemption"))
    b = _number(basis, "DISC's basis")
    if not isinstance(v, list):
        return v
    if not isinstance(b, float):
        return b
    if v[2] <= 0 or v[3] <= 0:
        return natives.error("#NUM!", "DISC's pr and redemption must be above 0")
    years = _year_fraction("DISC", v[0], v[1], b)
    return years if not isinstance(years, float) else (v[3] - v[2]) / v[3] / years


def intrate(settlement: Any, maturity: Any, investment: Any, redemption: Any, basis: Any = 0) -> Any:
    """Excel's INTRATE: the interest rate of a fully invested security, ``(redemption - investment) / investment /
    YEARFRAC(settlement, maturity, basis)`` per year (Microsoft, "INTRATE function"). ``#NUM!`` for an investment or
    redemption not above 0."""
    v = _numbers(
        "INTRATE",
        (settlement, "settlement"),
        (maturity, "maturity"),
        (investment, "investment"),
        (redemption, "redemption"),
    )
    b = _number(basis, "INTRATE's basis")
    if not isinstance(v, list):
        return v
    if not isinstance(b, float):
        return b
    if v[2] <= 0 or v[3] <= 0:
        return natives.error("#NUM!", "INTRATE's investment and redemption must be above 0")
    years = _year_fraction("INTRATE", v[0], v[1], b)
    return years if not isinstance(years, float) else (v[3] - v[2]) / v[2] / years


def fvschedule(principal: Any, schedule: Any) -> Any:
    """Excel's FVSCHEDULE: ``principal`` compounded by each rate of ``schedule`` in turn, ``principal * (1 + r1) *
    (1 + r2) ...`` (Microsoft, "FVSCHEDULE function": an empty cell counts 0; text not a number is ``#VALUE!``)."""
    p = _number(principal, "FVSCHEDULE's principal")
    if not isinstance(p, float):
        return p
    for row in _grid(schedule):
        for rate in row:
            r = _number(rate, "FVSCHEDULE's rates")
            if not isinstance(r, float):
                return r
            p *= 1 + r
    return p


def prob(x_range: Any, prob_range: Any, lower_limit: Any, upper_limit: Any = None) -> Any:
    """Excel's PROB: the sum of the probabilities of the values of ``x_range`` from ``lower_limit`` to
    ``upper_limit`` (only those equal to ``lower_limit`` when it is omitted) (Microsoft, "PROB function"). ``#N/A``
    for ranges of different sizes; ``#NUM!`` for a probability not above 0 or above 1, or probabilities not summing
    to 1; ``#DIV/0!`` when no probability is a number."""
    xs = [v for row in _grid(x_range) for v in row]
    ps = [v for row in _grid(prob_range) for v in row]
    if len(xs) != len(ps):
        return natives.error("#N/A", "PROB's x_range and prob_range must be the same size")
    limits = _numbers(
        "PROB", (lower_limit, "lower_limit"), (upper_limit if upper_limit is not None else lower_limit, "upper_limit")
    )
    if not isinstance(limits, list):
        return limits
    low, high = limits
    total, inside = 0.0, 0.0
    for x, p in zip(xs, ps, strict=True):
        if type(x) is dict:
            return x
        if type(p) is dict:
            return p
        if not isinstance(p, (int, float)) or isinstance(p, bool):
            continue
        if not 0 < p <= 1:
            return natives.error("#NUM!", f"PROB's probabilities must be above 0 and at most 1, got {p:g}")
        total += p
        if isinstance(x, (int, float)) and not isinstance(x, bool) and low <= x <= high:
            inside += p
    if total == 0:
        return natives.error("#DIV/0!", "PROB: no probability is a number")
    if abs(total - 1) > 1e-6:
        return natives.error("#NUM!", f"PROB's probabilities sum to {total:g}, not 1")
    return inside


def permutationa(number: Any, number_chosen: Any) -> Any:
    """Excel's PERMUTATIONA: the permutations, repetitions allowed, of ``number_chosen`` objects out of ``number``,
    ``number ^ number_chosen``, both truncated (Microsoft, "PERMUTATIONA function"); ``#NUM!`` below 0."""
    v = _numbers("PERMUTATIONA", (number, "number"), (number_chosen, "number_chosen"))
    if not isinstance(v, list):
        return v
    n, k = math.floor(v[0]), math.floor(v[1])
    if n < 0 or k < 0:
        return natives.error("#NUM!", "PERMUTATIONA's number and number_chosen must be 0 or more")
    try:
        result = float(n) ** k
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        return natives.error("#NUM!", "PERMUTATIONA: the result is too large for a number")
    return result


_NA = {"type": "Error", "kind": "#N/A", "message": "padding"}


def expand(array: Any, rows: Any, columns: Any = None, pad_with: Any = None) -> Any:
    """Excel's EXPAND: ``array`` grown to ``rows`` by ``columns`` (each omitted: the array's own), padded with
    ``pad_with`` (``#N/A`` if omitted) (Microsoft, "EXPAND function"); ``#VALUE!`` for fewer rows or columns than
    the array has."""
    grid = _grid(array)
    height, width = len(grid), max(len(r) for r in grid)
    v = _numbers(
        "EXPAND", (rows if rows is not None else height, "rows"), (columns if columns is not None else width, "columns")
    )
    if not isinstance(v, list):
        return v
    r, c = math.floor(v[0]), math.floor(v[1])
    if r < height or c < width:
        return natives.error("#VALUE!", f"EXPAND's rows and columns must be at least the array's {height} by {width}")
    if r > 1_048_576 or c > 16_384 or r * c > MAX_ARRAY_CELLS:
        return natives.error("#NUM!", f"EXPAND to {r:,} by {c:,} is larger than {MAX_ARRAY_CELLS:,} cells")
    pad = _NA if pad_with is None else pad_with
    return [[(grid[i][j] if i < height and j < len(grid[i]) else pad) for j in range(c)] for i in range(r)]


def _wrap(name: str, by_rows: bool) -> Callable[..., Any]:
    def call(vector: Any, wrap_count: Any, pad_with: Any = None) -> Any:
        grid = _grid(vector)
        if len(grid) > 1 and any(len(row) > 1 for row in grid):
            return natives.error("#VALUE!", f"{name}'s vector must be one row or one column")
        items = [v for row in grid for v in row]
        n = _number(wrap_count, f"{name}'s wrap_count")
        if not isinstance(n, float):
            return n
        size = math.floor(n)
        if size < 1:
            return natives.error("#NUM!", f"{name}'s wrap_count must be 1 or more, got {size}")
        pad = _NA if pad_with is None else pad_with
        lines = [items[i : i + size] for i in range(0, len(items), size)]
        lines = [line + [pad] * (size - len(line)) for line in lines]
        if len(lines) == 1 and size == 1:
            return lines[0][0]
        return lines if by_rows else [list(col) for col in zip(*lines, strict=True)]

    call.__name__ = name.lower()
    call.__doc__ = (
        f"Excel's {name}: the one-row or one-column ``vector`` wrapped into {'rows' if by_rows else 'columns'} of "
        f'``wrap_count`` values, the last padded with ``pad_with`` (``#N/A`` if omitted) (Microsoft, "{name} '
        'function"); ``#NUM!`` for a wrap_count below 1.'
    )
    return call


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None, bool]] = {
    "DISC": (disc, 4, 5, True),
    "INTRATE": (intrate, 4, 5, True),
    "FVSCHEDULE": (fvschedule, 2, 2, False),
    "PROB": (prob, 3, 4, False),
    "PERMUTATIONA": (permutationa, 2, 2, False),
    "EXPAND": (expand, 2, 4, False),
    "WRAPCOLS": (_wrap("WRAPCOLS", False), 2, 3, False),
    "WRAPROWS": (_wrap("WRAPROWS", True), 2, 3, False),
}
"""The functions the engine lacks, as :data:`.engine.CORRECTED`."""


_ABSENT = object()
"""An argument not given (an empty cell given is None)."""
_BASES = {"BIN": 2, "OCT": 8, "DEC": 10, "HEX": 16}
_DIGITS = "0123456789ABCDEF"


def _from_base(name: str, value: Any, base: int) -> int | dict:
    """A BIN2*/OCT2*/HEX2* argument read as Excel reads it: at most 10 digits of ``base`` (a number is read as its
    digits; empty is 0), 10 digits with the top bit set a negative number in two's complement."""
    if type(value) is dict:
        return value
    if isinstance(value, bool):
        return natives.error("#VALUE!", f"{name} takes digits, not TRUE or FALSE")
    if value is None:
        return 0
    if isinstance(value, float):
        if value != int(value) or value < 0:
            return natives.error("#NUM!", f"{name}: {value:g} is not a number of base {base}")
        text = str(int(value))
    else:
        text = str(value).strip().upper()
    if not text:
        return 0
    if len(text) > 10 or any(ch not in _DIGITS[:base] for ch in text):
        return natives.error("#NUM!", f"{name}: {text!r} is not a number of at most 10 base-{base} digits")
    n = int(text, base)
    return n - base**10 if len(text) == 10 and n >= base**10 // 2 else n


def _to_base(name: str, n: int, base: int, places: Any) -> str | dict:
    """``n`` in ``base``: a negative number as 10 digits of two's complement (``places`` ignored), otherwise padded
    with zeros to ``places`` (1 to 10 and at least the digits needed); ``#NUM!`` outside the 10 digits' range."""
    half = base**10 // 2
    if not -half <= n < half:
        return natives.error("#NUM!", f"{name}: {n} is outside what 10 base-{base} digits hold")
    width = None
    if places is not _ABSENT:  # an empty cell given as places is 0, too few
        if isinstance(places, bool):
            return natives.error("#VALUE!", f"{name}'s places must be a number, not TRUE or FALSE")
        p = _number(places, f"{name}'s places")
        if not isinstance(p, float):
            return p
        width = math.floor(p)
    if n < 0:
        if width is not None and not 1 <= width <= 10:
            return natives.error("#NUM!", f"{name}'s places must be from 1 to 10, got {width}")
        n += base**10
        width = 10
    digits = ""
    while True:
        n, r = divmod(n, base)
        digits = _DIGITS[r] + digits
        if n == 0:
            break
    if width is not None:
        if not len(digits) <= width <= 10:
            return natives.error("#NUM!", f"{name}'s places must be from {len(digits)} to 10, got {width}")
        digits = digits.rjust(width, "0")
    return digits


def _convert_base(source: str, target: str) -> Callable[..., Any]:
    name = f"{source}2{target}"

    def call(number: Any, places: Any = _ABSENT) -> Any:
        if source == "DEC":
            if isinstance(number, bool):
                return natives.error("#VALUE!", f"{name} takes a number, not TRUE or FALSE")
            v = _number(number, f"{name}'s number")
            if not isinstance(v, float):
                return v
            n: int | dict = math.trunc(v)
        else:
            n = _from_base(name, number, _BASES[source])
        if not isinstance(n, int):
            return n
        return float(n) if target == "DEC" else _to_base(name, n, _BASES[target], places)

    call.__name__ = name.lower()
    call.__doc__ = (
        f"Excel's {name}: a number from base {_BASES[source]} to base {_BASES[target]} (Microsoft, \"{name} "
        'function"): binary, octal and hexadecimal numbers have at most 10 digits, a negative one written as 10 '
        "digits of two's complement whatever ``places`` says; ``#NUM!`` for digits of another base or a number "
        "outside the 10 digits' range, ``#VALUE!`` for TRUE or FALSE."
    )
    return call


FUNCTIONS.update(
    {f"{a}2{b}": (_convert_base(a, b), 1, 1 if b == "DEC" else 2, False) for a in _BASES for b in _BASES if a != b}
)


def _text_of(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return f"{value:.15g}" if value != int(value) else str(int(value))
    return "" if value is None else str(value)


def _text_part(name: str, before: bool) -> Callable[..., Any]:
    def call(
        text: Any,
        delimiter: Any,
        instance_num: Any = _ABSENT,
        match_mode: Any = 0.0,
        match_end: Any = 0.0,
        if_not_found: Any = _ABSENT,
    ) -> Any:
        given = instance_num is not _ABSENT and instance_num is not None  # None: omitted within the call
        if not given:
            instance_num = 1.0
        for value in (text, delimiter, instance_num, match_mode, match_end):
            if type(value) is dict:
                return value
            if type(value) is list and value is not delimiter:
                return natives.error("#VALUE!", f"{name} takes one text at a time here")
        whole = _text_of(text)
        delimiters = (
            [_text_of(d) for d in _grid(delimiter)[0]]
            if type(delimiter) is not list
            else [_text_of(d) for row in _grid(delimiter) for d in row]
        )
        v = _numbers(name, (instance_num, "instance_num"), (match_mode, "match_mode"), (match_end, "match_end"))
        if not isinstance(v, list):
            return v
        n, mode, end = math.trunc(v[0]), math.trunc(v[1]), math.trunc(v[2])
        longest = max((len(d) for d in delimiters), default=0)
        reach = len(whole) - longest + 1 if given else max(len(whole), 1)  # Excel's bound, as it behaves
        if n == 0 or abs(n) > reach or mode not in (0, 1) or end not in (0, 1):
            return natives.error("#VALUE!", f"{name}: instance_num must not be 0 or longer than the text; modes 0 or 1")
        haystack = whole.lower() if mode else whole
        needles = [d.lower() if mode else d for d in delimiters]
        found: list[tuple[int, int]] = []  # (start, length) of each delimiter, left to right, not overlapping
        if n > 0:
            i = 0
            while i <= len(haystack):
                hit = next((d for d in needles if haystack.startswith(d, i)), None)
                if hit is None:
                    i += 1
                    continue
                found.append((i, len(hit)))
                if len(found) == n:
                    break
                i += max(len(hit), 1)
            if end and len(found) == n - 1:
                found.append((len(whole), 0))  # the end of the text counts as a delimiter
            at = found[n - 1] if len(found) >= n else None
        else:
            j = len(haystack)
            while j >= 0:
                hit = next((d for d in needles if haystack.endswith(d, 0, j)), None)
                if hit is None:
                    j -= 1
                    continue
                found.append((j - len(hit), len(hit)))
                if len(found) == -n:
                    break
                j -= max(len(hit), 1)
            if end and len(found) == -n - 1:
                found.append((0, 0))  # the start of the text counts as a delimiter
            at = found[-n - 1] if len(found) >= -n else None
        if at is None:
            if if_not_found is _ABSENT:
                return natives.error("#N/A", f"{name}: the delimiter is not there")
            return "" if if_not_found is None else if_not_found
        start, length = at
        return whole[:start] if before else whole[start + length :]

    call.__name__ = name.lower()
    call.__doc__ = (
        f"Excel's {name}: the text {'before' if before else 'after'} the ``instance_num``-th delimiter (counted "
        "from the end when negative; any of several delimiters given as an array), ``match_mode`` 1 ignoring "
        "case, ``match_end`` 1 counting the text's end (start, from the end) as a delimiter; ``if_not_found`` "
        f"(``#N/A`` if omitted) when there is none; ``#VALUE!`` for an instance_num of 0 or past the text's length "
        f'(Microsoft, "{name} function").'
    )
    return call


FUNCTIONS.update(
    {
        "TEXTBEFORE": (_text_part("TEXTBEFORE", True), 2, 6, False),
        "TEXTAFTER": (_text_part("TEXTAFTER", False), 2, 6, False),
    }
)


def text(value: Any, format_text: Any) -> Any:
    """Excel's TEXT: ``value`` shown in the number format ``format_text`` (Microsoft, "TEXT function"), by
    :func:`.numfmt.format_value` (sections, conditions, digit placeholders, scientific notation, fractions, dates
    and times, literal text); text that reads as a number is formatted as that number, other text through the
    format's text section. formualizer 0.13 knows a few formats and shows the others' number unformatted."""
    from .numfmt import format_value, is_date_format

    for v in (value, format_text):
        if type(v) is dict:
            return v
    if isinstance(value, str):
        read = _number(value, "TEXT's value")
        if isinstance(read, float):
            value = read
    code = _text_of(format_text) or "General"
    x = 0.0 if value is None else value
    if _is_number(x):
        if is_date_format(code):
            bare = re.sub(r'"[^"]*"|\\.', "", code)
            if not 0 <= x <= _MAX_DATE or "#" in bare or "?" in bare:
                return natives.error("#VALUE!", f"TEXT: {x:g} in the date format {code!r} is not a date Excel shows")
        elif code.lower() == "general" and x != 0 and abs(x) < 1e-4:
            plain = f"{Decimal(f'{abs(x):.15g}'):f}"  # TEXT's General writes a small number out while it fits
            if len(plain) <= 11:
                return ("-" if x < 0 else "") + plain
    shown = format_value(x, code)
    if shown.startswith("-") and not any(ch in "123456789" for ch in shown):
        return shown[1:]  # a negative number shown as zero has no sign in TEXT's result (a cell shows "-0")
    return shown


FUNCTIONS["TEXT"] = (text, 2, 2, True)


def _tbill_args(name: str, settlement: Any, maturity: Any, third: Any, what: str) -> tuple[int, float, int] | dict:
    """A Treasury bill's days to maturity, its third argument, and the days in the year from settlement: dates
    truncated, TRUE or FALSE ``#VALUE!``, text of a number read; ``#NUM!`` for settlement not before maturity, a
    maturity more than a year after settlement, or a third argument not above 0."""
    values = []
    for value, label in ((settlement, "settlement"), (maturity, "maturity"), (third, what)):
        if isinstance(value, bool):
            return natives.error("#VALUE!", f"{name}'s {label} must be a number, not TRUE or FALSE")
        v = _number(value, f"{name}'s {label}")
        if not isinstance(v, float):
            return v
        values.append(v)
    s, m = date_of(values[0]), date_of(values[1])
    if s is None or m is None:
        return natives.error("#NUM!", f"{name}'s dates must be from 1900 to 9999")
    year_later = add_months(s, 12, False)
    if not s < m <= year_later or values[2] <= 0:
        return natives.error("#NUM!", f"{name} needs settlement < maturity <= a year later and {what} above 0")
    return (m - s).days, values[2], (year_later - s).days


def tbillprice(settlement: Any, maturity: Any, discount: Any) -> Any:
    """Excel's TBILLPRICE: a Treasury bill's price per 100 face value, ``100 (1 - discount DSM / 360)`` (Microsoft,
    "TBILLPRICE function"); ``#NUM!`` when it is not above 0."""
    args = _tbill_args("TBILLPRICE", settlement, maturity, discount, "discount")
    if isinstance(args, dict):
        return args
    dsm, rate, _ = args
    price = 100 * (1 - rate * dsm / 360)
    return price if price > 0 else natives.error("#NUM!", "TBILLPRICE: the discount leaves no price")


def tbillyield(settlement: Any, maturity: Any, pr: Any) -> Any:
    """Excel's TBILLYIELD: a Treasury bill's yield, ``(100 - pr) / pr * 360 / DSM`` (Microsoft, "TBILLYIELD
    function")."""
    args = _tbill_args("TBILLYIELD", settlement, maturity, pr, "pr")
    if isinstance(args, dict):
        return args
    dsm, price, _ = args
    return (100 - price) / price * 360 / dsm


def tbilleq(settlement: Any, maturity: Any, discount: Any) -> Any:
    """Excel's TBILLEQ: a Treasury bill's bond-equivalent yield, ``365 rate / (360 - rate DSM)`` up to 182 days
    (Microsoft, "TBILLEQ function"), and past a half year the semiannual equivalent, ``(-2t + 2 sqrt(t^2 - (2t - 1)
    (1 - 1/P))) / (2t - 1)`` with ``t = DSM / 365`` (366 for a bill of 366 days, as Excel computes it) and ``P``
    the price per 1 of face value; ``#NUM!`` when the price is not above 0."""
    args = _tbill_args("TBILLEQ", settlement, maturity, discount, "discount")
    if isinstance(args, dict):
        return args
    dsm, rate, _ = args
    price = 1 - rate * dsm / 360
    if price <= 0:
        return natives.error("#NUM!", "TBILLEQ: the discount leaves no price")
    if dsm <= 182:
        return 365 * rate / (360 - rate * dsm)
    t = dsm / (366 if dsm == 366 else 365)  # Excel's year: 366 days only for a bill of 366 days
    root = t * t - (2 * t - 1) * (1 - 1 / price)
    if root < 0:
        return natives.error("#NUM!", "TBILLEQ: no equivalent yield")
    return (-2 * t + 2 * math.sqrt(root)) / (2 * t - 1)


def sequence(rows: Any = None, columns: Any = None, start: Any = None, step: Any = None) -> Any:
    """Excel's SEQUENCE: ``rows`` by ``columns`` numbers from ``start`` by ``step``, along each row first (Microsoft,
    "SEQUENCE function"); an omitted argument is 1, text of a number is read; ``#VALUE!`` for fewer than 1 row or
    column."""
    v = _numbers(
        "SEQUENCE",
        (1.0 if rows is None else rows, "rows"),
        (1.0 if columns is None else columns, "columns"),
        (1.0 if start is None else start, "start"),
        (1.0 if step is None else step, "step"),
    )
    if not isinstance(v, list):
        return v
    r, c = math.trunc(v[0]), math.trunc(v[1])
    if r < 1 or c < 1:
        return natives.error("#VALUE!", "SEQUENCE's rows and columns must be 1 or more")
    if r > 1_048_576 or c > 16_384 or r * c > MAX_ARRAY_CELLS:
        return natives.error("#NUM!", f"SEQUENCE of {r:,} by {c:,} is larger than {MAX_ARRAY_CELLS:,} cells")
    first, by = v[2], v[3]
    if r == c == 1:
        return first
    return [[first + (i * c + j) * by for j in range(c)] for i in range(r)]


FUNCTIONS.update(
    {
        "TBILLPRICE": (tbillprice, 3, 3, True),
        "TBILLYIELD": (tbillyield, 3, 3, True),
        "TBILLEQ": (tbilleq, 3, 3, True),
        "SEQUENCE": (sequence, 1, 4, False),
    }
)


def _flag(value: Any, what: str) -> bool | dict:
    """A logical argument: TRUE or FALSE, a number (0 is FALSE), or the text TRUE or FALSE in any case."""
    if type(value) is dict:
        return value
    if isinstance(value, str):
        if value.upper() in ("TRUE", "FALSE"):
            return value.upper() == "TRUE"
        return natives.error("#VALUE!", f"{what} must be TRUE or FALSE, got {value!r}")
    return bool(value)


def _engine(name: str, *args: Any) -> Any:
    """The engine's own ``name`` (as its ``_xlfn.`` form, which nothing here replaces) on one value per argument."""
    return natives.scalar("_XLFN." + name, args)


def binom_dist(number_s: Any, trials: Any, probability_s: Any, cumulative: Any) -> Any:
    """Excel's BINOM.DIST: the probability of ``number_s`` successes in ``trials`` (at most that many when
    ``cumulative``) with success probability ``probability_s`` from 0 to 1 (Microsoft, "BINOM.DIST function"): a
    probability of 0 or 1 is certain (formualizer 0.13 refuses it), the cumulative flag may be the text TRUE or
    FALSE; the rest is the engine's; ``#NUM!`` for successes below 0 or past the trials."""
    v = _numbers("BINOM.DIST", (number_s, "number_s"), (trials, "trials"), (probability_s, "probability_s"))
    flag = _flag(cumulative, "BINOM.DIST's cumulative")
    if not isinstance(v, list):
        return v
    if isinstance(flag, dict):
        return flag
    k, n, p = math.trunc(v[0]), math.trunc(v[1]), v[2]
    if not (0 <= k <= n and 0 <= p <= 1):
        return natives.error("#NUM!", "BINOM.DIST needs 0 <= number_s <= trials and a probability from 0 to 1")
    if p in (0.0, 1.0):
        sure = 0 if p == 0 else n  # every trial fails, or every one succeeds
        return float(k >= sure) if flag else float(k == sure)
    return _engine("BINOM.DIST", float(k), float(n), p, flag)


def binom_dist_range(trials: Any, probability_s: Any, number_s: Any, number_s2: Any = _ABSENT) -> Any:
    """Excel's BINOM.DIST.RANGE: the probability of ``number_s`` to ``number_s2`` successes (just ``number_s`` if
    omitted) in ``trials`` (Microsoft, "BINOM.DIST.RANGE function"), a probability of 0 or 1 certain; ``#NUM!``
    outside 0 <= s <= s2 <= trials or a probability outside 0 to 1."""
    v = _numbers(
        "BINOM.DIST.RANGE",
        (trials, "trials"),
        (probability_s, "probability_s"),
        (number_s, "number_s"),
        (number_s if number_s2 is _ABSENT else number_s2, "number_s2"),  # an empty cell given is 0
    )
    if not isinstance(v, list):
        return v
    n, p, s, s2 = math.trunc(v[0]), v[1], math.trunc(v[2]), math.trunc(v[3])
    if not (0 <= s <= s2 <= n and 0 <= p <= 1):
        return natives.error("#NUM!", "BINOM.DIST.RANGE needs 0 <= number_s <= number_s2 <= trials, probability 0 to 1")
    if p in (0.0, 1.0):
        sure = 0 if p == 0 else n
        return float(s <= sure <= s2)
    return _engine("BINOM.DIST.RANGE", float(n), p, float(s), float(s2))


def binom_inv(trials: Any, probability_s: Any, alpha: Any) -> Any:
    """Excel's BINOM.INV: the least number of successes whose cumulative binomial probability is at least
    ``alpha`` (Microsoft, "BINOM.INV function"), the engine's; ``#NUM!`` for trials below 0, or a probability or
    alpha not strictly between 0 and 1 (formualizer 0.13 answers 0 or the trials)."""
    v = _numbers("BINOM.INV", (trials, "trials"), (probability_s, "probability_s"), (alpha, "alpha"))
    if not isinstance(v, list):
        return v
    n, p, a = math.trunc(v[0]), v[1], v[2]
    if n < 0 or not 0 < p < 1 or not 0 < a < 1:
        return natives.error("#NUM!", "BINOM.INV needs trials >= 0, probability and alpha strictly between 0 and 1")
    return _engine("BINOM.INV", float(n), p, a)


def negbinom_dist(number_f: Any, number_s: Any, probability_s: Any, cumulative: Any) -> Any:
    """Excel's NEGBINOM.DIST: the probability of ``number_f`` failures before the ``number_s``-th success (at most
    that many when ``cumulative``) (Microsoft, "NEGBINOM.DIST function"), the engine's, with the cumulative flag
    also the text TRUE or FALSE."""
    flag = _flag(cumulative, "NEGBINOM.DIST's cumulative")
    if isinstance(flag, dict):
        return flag
    return _engine("NEGBINOM.DIST", number_f, number_s, probability_s, flag)


FUNCTIONS.update(
    {
        "BINOM.DIST": (binom_dist, 4, 4, False),
        "BINOM.DIST.RANGE": (binom_dist_range, 3, 4, False),
        "BINOM.INV": (binom_inv, 3, 3, False),
        "NEGBINOM.DIST": (negbinom_dist, 4, 4, False),
    }
)


def _dollar(name: str, to_decimal: bool) -> Callable[..., Any]:
    def call(dollar: Any, fraction: Any) -> Any:
        for value in (dollar, fraction):
            if isinstance(value, bool):
                return natives.error("#VALUE!", f"{name} takes numbers, not TRUE or FALSE")
        v = _numbers(name, (dollar, "dollar"), (fraction, "fraction"))
        if not isinstance(v, list):
            return v
        x, f = v[0], math.trunc(v[1])
        if f < 0:
            return natives.error("#NUM!", f"{name}'s fraction must be 0 or more")
        if f == 0:
            return natives.error("#DIV/0!", f"{name}'s fraction must be 1 or more")
        whole = math.trunc(x)
        scale = 10.0 ** math.ceil(math.log10(f))
        part = x - whole
        return whole + (part * scale / f if to_decimal else part * f / scale)

    call.__name__ = name.lower()
    call.__doc__ = (
        f'Excel\'s {name} (Microsoft, "{name} function"): a price written as a whole part and a fraction in '
        "``fraction``-ths read as a decimal number "
        f"({'the digits after the point a count of fraction-ths' if to_decimal else 'the inverse'}); "
        "the fraction truncated; ``#DIV/0!`` below 1, ``#NUM!`` below 0, ``#VALUE!`` for TRUE or FALSE."
    )
    return call


FUNCTIONS.update(
    {"DOLLARDE": (_dollar("DOLLARDE", True), 2, 2, False), "DOLLARFR": (_dollar("DOLLARFR", False), 2, 2, False)}
)


def _rate_conversion(name: str, to_nominal: bool) -> Callable[..., Any]:
    def call(rate: Any, npery: Any) -> Any:
        for value in (rate, npery):
            if isinstance(value, bool):
                return natives.error("#VALUE!", f"{name} takes numbers, not TRUE or FALSE")
        v = _numbers(name, (rate, "rate"), (npery, "npery"))
        if not isinstance(v, list):
            return v
        r, n = v[0], math.trunc(v[1])
        if r <= 0 or n < 1:
            return natives.error("#NUM!", f"{name} needs a rate above 0 and npery of 1 or more")
        return n * ((1 + r) ** (1 / n) - 1) if to_nominal else (1 + r / n) ** n - 1

    call.__name__ = name.lower()
    call.__doc__ = (
        f'Excel\'s {name} (Microsoft, "{name} function"): '
        + (
            "the nominal annual rate of an effective one, ``npery ((1 + rate)^(1/npery) - 1)``"
            if to_nominal
            else "the effective annual rate of a nominal one, ``(1 + rate/npery)^npery - 1``"
        )
        + ", npery truncated; ``#VALUE!`` for TRUE or FALSE (formualizer 0.13 reads them as 1 and 0)."
    )
    return call


FUNCTIONS.update(
    {
        "NOMINAL": (_rate_conversion("NOMINAL", True), 2, 2, False),
        "EFFECT": (_rate_conversion("EFFECT", False), 2, 2, False),
    }
)


def mround(number: Any, multiple: Any) -> Any:
    """Excel's MROUND: ``number`` rounded to the nearest multiple of ``multiple``, half away from zero (Microsoft,
    "MROUND function"); 0 for a multiple of 0, ``#NUM!`` for signs that differ, ``#VALUE!`` for TRUE or FALSE; a
    number written as text (a date too, "2024-01-10") is read as VALUE reads it."""
    for value in (number, multiple):
        if isinstance(value, bool):
            return natives.error("#VALUE!", "MROUND takes numbers, not TRUE or FALSE")
    n, m = natives.number_arg(number, "MROUND's number"), natives.number_arg(multiple, "MROUND's multiple")
    if not isinstance(n, float):
        return n
    if not isinstance(m, float):
        return m
    if m == 0:
        return 0.0
    if n * m < 0:
        return natives.error("#NUM!", "MROUND's number and multiple must have the same sign")
    q = natives.approx(abs(n / m))
    return math.copysign(math.floor(q + 0.5), n / m) * m + 0.0


FUNCTIONS["MROUND"] = (mround, 2, 2, False)


def value(text: Any) -> Any:
    """Excel's VALUE: the number ``text`` writes (Microsoft, "VALUE function"), by the engine's own VALUE; an empty
    cell is 0 (formualizer 0.13 gives #VALUE!), a number is itself."""
    if text is None:
        return 0.0
    if _is_number(text):
        return float(text)
    return _engine("VALUE", text)


FUNCTIONS["VALUE"] = (value, 1, 1, False)
