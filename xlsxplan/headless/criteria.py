"""Excel's conditional aggregates, COUNTIF, COUNTIFS, SUMIF, SUMIFS, AVERAGEIF and AVERAGEIFS, and the database
functions (DSUM, DCOUNT, DGET and the others), registered in place of formualizer 0.13's, which reads criteria
otherwise: an error value as a criterion is its result rather than the error cells it matches, ``"<>23"`` skips the
text "23", ``"<="`` with nothing after it counts numbers, and a matched error in the sum range is skipped rather
than the result.

A criterion is read as Microsoft documents it ("COUNTIF function", "SUMIFS function"): a number, TRUE or FALSE, or an
error value matches cells equal to it (a number also the text of that number); a text is an optional operator (``=``,
``<>``, ``<``, ``<=``, ``>``, ``>=``) and an operand: a number (``">=10"``, ``"<1/1/2024"`` as a date), TRUE or FALSE,
an error value, or text compared without regard to case, ``*`` and ``?`` wildcards and ``~`` escapes working with
``=`` and ``<>``. ``"="`` (or the empty text) matches empty cells and empty text, ``"<>"`` cells that are not
empty (a formula's empty text included), ``"<"``, ``">"`` and their like nothing; an empty cell given as the
criterion is 0. ``<>`` matches every cell the same criterion with ``=`` would not, empty cells
included; ``<`` and the other orderings compare numbers with numbers and text with text only. A criterion given as a
range or an array gives one result per element.

The ranges reach the callbacks as values, so a whole column counts its rows in use (Excel counts all 1,048,576 rows,
which matters only to ``"<>"`` of a whole column).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any

from . import natives

_OPERATORS = ("<=", ">=", "<>", "<", ">", "=")
_ERRORS = frozenset("#NULL! #DIV/0! #VALUE! #REF! #NAME? #NUM! #N/A #GETTING_DATA #SPILL! #CALC!".split())


def _kind(error: dict) -> str:
    """An engine error's Excel code (``#N/A``) whatever the engine's spelling (``NA``, ``Na``)."""
    return natives.error_code(error)


def _cells(arg: Any) -> list[Any]:
    """A range's or array's values in row-major order; one value alone as a list of one."""
    if type(arg) is list:
        return [v for row in arg for v in (row if type(row) is list else [row])]
    return [arg]


def _shape(arg: Any) -> tuple[int, int]:
    if type(arg) is list:
        rows = [row if type(row) is list else [row] for row in arg]
        return len(rows), max((len(r) for r in rows), default=0)
    return 1, 1


def _as_number(text: str) -> float | None:
    """The number a criterion's operand or a cell's text reads as (``10``, ``1e3``, ``50%``, a date), or None."""
    try:
        return float(text)
    except ValueError:
        pass
    if not text or text != text.strip() or not any(ch.isdigit() for ch in text):
        return None
    read = natives.scalar("VALUE", (text,))
    return float(read) if isinstance(read, (int, float)) and not isinstance(read, bool) else None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _wildcard(pattern: str) -> re.Pattern[str] | None:
    """The pattern as a regular expression when it holds a wildcard (``*``, ``?``, ``~``); None otherwise."""
    return natives.wildcard(pattern) if any(ch in pattern for ch in "*?~") else None


def _equal_to(criterion: Any) -> Callable[[Any], bool]:
    """The test of a cell against a criterion that is a value (not text): equal number (or the text of one),
    boolean, or error."""
    if type(criterion) is dict:
        code = _kind(criterion)
        return lambda v: type(v) is dict and _kind(v) == code
    if isinstance(criterion, bool):
        return lambda v: isinstance(v, bool) and v == criterion
    number = float(criterion)

    def test(v: Any) -> bool:
        if _is_number(v):
            return float(v) == number
        return isinstance(v, str) and _as_number(v) == number

    return test


@functools.lru_cache(maxsize=4096)
def _text_test(criterion: str) -> Callable[[Any], bool]:
    """The test of a cell against a criterion written as text (cached: a sheet repeats its criteria)."""
    op = next((o for o in _OPERATORS if criterion.startswith(o)), "")
    operand = criterion[len(op) :]
    negate = op == "<>"
    if operand == "":
        if op in ("", "="):
            return lambda v: v is None or v == ""
        if op == "<>":
            return lambda v: v is not None  # a formula's empty text is not an empty cell here
        return lambda v: False
    equal: Callable[[Any], bool]
    number = _as_number(operand)
    upper = operand.upper()
    if number is not None:
        if op in ("", "=", "<>"):
            equal = _equal_to(number)
            if op == "<>":
                return lambda v: not (_is_number(v) and float(v) == number)
            return equal
        return _ordered(op, lambda v: float(v) if _is_number(v) else None, number)
    if upper in ("TRUE", "FALSE"):
        flag = upper == "TRUE"
        if op in ("", "=", "<>"):
            equal = _equal_to(flag)
            return (lambda v: not equal(v)) if negate else equal
        return _ordered(op, lambda v: v if isinstance(v, bool) else None, flag)
    if upper in _ERRORS:
        if op in ("", "=", "<>"):

            def is_error(v: Any) -> bool:
                return type(v) is dict and _kind(v) == upper

            return (lambda v: not is_error(v)) if negate else is_error
        return lambda v: False
    folded = operand.lower()
    if op in ("", "=", "<>"):
        pattern = _wildcard(operand)
        if pattern is not None:
            equal = lambda v: isinstance(v, str) and pattern.fullmatch(v) is not None  # noqa: E731
        else:
            equal = lambda v: isinstance(v, str) and v.lower() == folded  # noqa: E731
        return (lambda v: not equal(v)) if negate else equal
    return _ordered(op, lambda v: v.lower() if isinstance(v, str) else None, folded)


def _ordered(op: str, key: Callable[[Any], Any], operand: Any) -> Callable[[Any], bool]:
    compare = {
        "<": lambda a: a < operand,
        "<=": lambda a: a <= operand,
        ">": lambda a: a > operand,
        ">=": lambda a: a >= operand,
    }[op]

    def test(v: Any) -> bool:
        k = key(v)
        return k is not None and compare(k)

    return test


def _test(criterion: Any) -> Callable[[Any], bool]:
    if criterion is None:
        return _equal_to(0.0)  # an empty cell as the criterion is 0 (Excel: COUNTIF(A:A, C1) with C1 empty)
    if isinstance(criterion, str):
        return _text_test(criterion)
    return _equal_to(criterion)


def _each(criteria: list[Any], compute: Callable[[list[Any]], Any]) -> Any:
    """``compute`` of the criteria, once per element where one criterion is a range or an array (Excel's result is
    then an array of that shape)."""
    shaped = [c for c in criteria if type(c) is list]
    if not shaped:
        return compute(criteria)
    rows, cols = max(_shape(c)[0] for c in shaped), max(_shape(c)[1] for c in shaped)

    def at(c: Any, i: int, j: int) -> Any:
        if type(c) is not list:
            return c
        grid = [row if type(row) is list else [row] for row in c]
        r, k = _shape(c)
        if (r > 1 and i >= r) or (k > 1 and j >= k):
            return natives.error("#N/A", "the criteria arrays differ in size")
        return grid[i if r > 1 else 0][j if k > 1 else 0]

    return [[compute([at(c, i, j) for c in criteria]) for j in range(cols)] for i in range(rows)]


def _matches(ranges: list[Any], criteria: list[Any]) -> list[bool] | dict:
    """Which positions meet every (range, criterion) pair; ``#VALUE!`` for ranges of different sizes."""
    cells = [_cells(r) for r in ranges]
    size = len(cells[0])
    if any(len(c) != size for c in cells) or (len(ranges) > 1 and any(_shape(r) != _shape(ranges[0]) for r in ranges)):
        return natives.error("#VALUE!", "the criteria ranges must all be the same size")
    hits = [True] * size
    for values, criterion in zip(cells, criteria, strict=True):
        test = _test(criterion)
        for i, v in enumerate(values):
            if hits[i] and not test(v):
                hits[i] = False
    return hits


def _aggregate(values: list[Any], hits: list[bool], average: bool) -> Any:
    """The sum (or mean) of the numbers at the matched positions; a matched error value is the result."""
    total, count = 0.0, 0
    for i, hit in enumerate(hits):
        if not hit or i >= len(values):
            continue
        v = values[i]
        if type(v) is dict:
            return v
        if _is_number(v):
            total += v
            count += 1
    if average:
        return total / count if count else natives.error("#DIV/0!", "no cell meets the criteria")
    return total


def countif(range_: Any, criteria: Any) -> Any:
    """Excel's COUNTIF: how many cells of ``range_`` meet ``criteria`` (Microsoft, "COUNTIF function")."""
    return countifs(range_, criteria)


def countifs(*pairs: Any) -> Any:
    """Excel's COUNTIFS: how many positions meet every (range, criteria) pair (Microsoft, "COUNTIFS function");
    ``#VALUE!`` for ranges of different sizes."""
    ranges, criteria = list(pairs[0::2]), list(pairs[1::2])
    if len(ranges) != len(criteria):
        return natives.error("#VALUE!", "COUNTIFS takes pairs of a range and a criterion")

    def compute(cs: list[Any]) -> Any:
        if len(ranges) == 1:  # COUNTIF, the usual case: one pass, no list of hits
            test = _test(cs[0])
            return float(sum(1 for v in _cells(ranges[0]) if test(v)))
        hits = _matches(ranges, cs)
        return hits if type(hits) is dict else float(sum(hits))

    return _each(criteria, compute)


def _sum_like(name: str, average: bool) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def single(range_: Any, criteria: Any, sum_range: Any = None) -> Any:
        values = _cells(range_ if sum_range is None else sum_range)

        def compute(cs: list[Any]) -> Any:
            hits = _matches([range_], cs)
            return hits if isinstance(hits, dict) else _aggregate(values, hits, average)

        return _each([criteria], compute)

    def multi(sum_range: Any, *pairs: Any) -> Any:
        ranges, criteria = list(pairs[0::2]), list(pairs[1::2])
        if len(ranges) != len(criteria) or not ranges:
            return natives.error("#VALUE!", f"{name}S takes a sum range and pairs of a range and a criterion")
        if _shape(sum_range) != _shape(ranges[0]):
            return natives.error("#VALUE!", f"{name}S's ranges must all be the size of its sum range")
        values = _cells(sum_range)

        def compute(cs: list[Any]) -> Any:
            hits = _matches(ranges, cs)
            return hits if isinstance(hits, dict) else _aggregate(values, hits, average)

        return _each(criteria, compute)

    what = "mean" if average else "sum"
    single.__name__, multi.__name__ = name.lower(), name.lower() + "s"
    single.__doc__ = (
        f"Excel's {name}: the {what} of the numbers of ``sum_range`` (``range_`` if omitted) where ``range_`` meets "
        f'``criteria`` (Microsoft, "{name} function"); a matched error value is the result'
        + ("; ``#DIV/0!`` when no number matches." if average else ".")
    )
    multi.__doc__ = (
        f"Excel's {name}S: the {what} of the numbers of ``sum_range`` where every (range, criteria) pair is met "
        f'(Microsoft, "{name}S function"); a matched error value is the result; ``#VALUE!`` for ranges of '
        "different sizes" + ("; ``#DIV/0!`` when no number matches." if average else ".")
    )
    return single, multi


sumif, sumifs = _sum_like("SUMIF", False)
averageif, averageifs = _sum_like("AVERAGEIF", True)

FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None, bool]] = {
    "COUNTIF": (countif, 2, 2, False),
    "COUNTIFS": (countifs, 2, 254, False),
    "SUMIF": (sumif, 2, 3, False),
    "SUMIFS": (sumifs, 3, 255, False),
    "AVERAGEIF": (averageif, 2, 3, False),
    "AVERAGEIFS": (averageifs, 3, 255, False),
}
"""The conditional aggregates registered in place of the engine's, as :data:`.engine.CORRECTED`."""


# ---------------------------------------------------------------------------------------------------------------
# Database functions: DSUM, DCOUNT and the others, over a list with a header row and a criteria range


def _rows(arg: Any) -> list[list[Any]]:
    return [row if type(row) is list else [row] for row in arg] if type(arg) is list else [[arg]]


def _label(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return "" if value is None else str(value).lower()


def _column(name: str, header: list[Any], field: Any) -> int | None | dict:
    """The index of ``field`` (a header's text, any case, or a 1-based position) in ``header``; None when it is
    omitted (the whole record); ``#VALUE!`` when there is no such column."""
    if field is _ABSENT:
        return None
    if type(field) is dict:
        return field
    if isinstance(field, bool) or _is_number(field):  # TRUE is position 1
        n = int(field)
        if not 1 <= n <= len(header):
            return natives.error("#VALUE!", f"{name}'s field {field:g} is not a column of the database")
        return n - 1
    wanted = _label(field).lower()
    for i, h in enumerate(header):
        if _label(h).lower() == wanted and h is not None:
            return i
    return natives.error("#VALUE!", f"{name}'s field {field!r} is not a header of the database")


def _database_test(criterion: Any) -> Callable[[Any], bool]:
    """A criteria range's cell as a test: as COUNTIF's criterion, except that text with no operator matches text
    that begins with it (Microsoft, "Examples of criteria": "East" finds "Eastern")."""
    if isinstance(criterion, str) and criterion and not criterion.startswith(_OPERATORS):
        if (
            _as_number(criterion) is None
            and criterion.upper() not in ("TRUE", "FALSE")
            and criterion.upper() not in _ERRORS
        ):
            return _text_test("=" + criterion + "*")
    return _test(criterion)


_ABSENT = object()


def _records(name: str, database: Any, field: Any, criteria: Any) -> list[Any] | dict:
    """The values in ``field`` of the records of ``database`` that meet ``criteria`` (each criteria row a set of
    conditions that must all hold; a record meets the criteria when it meets any row; a blank condition holds)."""
    for v in (database, criteria):
        if type(v) is dict:
            return v
    table, conditions = _rows(database), _rows(criteria)
    if len(table) < 2 or len(conditions) < 2:
        return natives.error("#VALUE!", f"{name} needs a database and criteria of a header row and at least one more")
    header, records = table[0], table[1:]
    column = _column(name, header, field)
    if isinstance(column, dict):
        return column
    labels = [_label(h).lower() for h in header]
    rows = []
    for row in conditions[1:]:
        tests = []
        for label, cell in zip(conditions[0], row, strict=False):
            if cell is None:
                continue
            key = _label(label).lower()
            if key not in labels:
                tests.append((-1, _database_test(cell)))
            else:
                tests.append((labels.index(key), _database_test(cell)))
        rows.append(tests)
    out = []
    for record in records:
        for tests in rows:
            if all(i >= 0 and i < len(record) and test(record[i]) for i, test in tests):
                out.append(record if column is None else (record[column] if column < len(record) else None))
                break
    return out


def _database(name: str, reduce: Callable[[list[Any]], Any], what: str) -> Callable[..., Any]:
    def call(database: Any, field: Any = _ABSENT, criteria: Any = _ABSENT) -> Any:
        if criteria is _ABSENT:
            return natives.error("#VALUE!", f"{name} takes a database, a field and a criteria range")
        found = _records(name, database, field, criteria)
        return found if isinstance(found, dict) else reduce(found)

    call.__name__ = name.lower()
    call.__doc__ = (
        f"Excel's {name}: {what} of the values in ``field`` (a header, any case, or a position from 1) of the "
        "records of ``database`` (a header row, then one record a row) that meet ``criteria`` (a header row, then "
        "rows of conditions: a record meets a row when it meets each of the row's non-blank conditions, and the "
        "criteria when it meets any row; a condition is read as COUNTIF's, plain text matching text that begins "
        f'with it) (Microsoft, "{name} function").'
    )
    return call


def _numbers_of(values: list[Any]) -> list[float]:
    return [float(v) for v in values if _is_number(v)]


def _variance(values: list[Any], sample: bool) -> float | dict:
    xs = _numbers_of(values)
    n = len(xs)
    if n < (2 if sample else 1):
        return natives.error("#DIV/0!", "too few numbers for a variance")
    mean = sum(xs) / n
    return sum((x - mean) ** 2 for x in xs) / (n - 1 if sample else n)


def _dget(values: list[Any]) -> Any:
    if not values:
        return natives.error("#VALUE!", "DGET: no record meets the criteria")
    if len(values) > 1:
        return natives.error("#NUM!", "DGET: more than one record meets the criteria")
    return values[0]


def _product(values: list[Any]) -> float:
    xs = _numbers_of(values)
    return math.prod(xs) if xs else 0.0


def _sqrt(v: float | dict) -> float | dict:
    return v if isinstance(v, dict) else math.sqrt(v)


_DATABASE_WHAT = {
    "DCOUNT": "the count of the numbers (of the records, field omitted)",
    "DCOUNTA": "the count of the non-empty cells",
    "DSUM": "the sum of the numbers",
    "DPRODUCT": "the product of the numbers (0 if none)",
    "DMIN": "the least number (0 if none)",
    "DMAX": "the greatest number (0 if none)",
    "DAVERAGE": "the mean of the numbers (#DIV/0! if none)",
    "DGET": "the single value (#VALUE! if none, #NUM! if several)",
    "DVAR": "the sample variance of the numbers",
    "DVARP": "the population variance of the numbers",
    "DSTDEV": "the sample standard deviation of the numbers",
    "DSTDEVP": "the population standard deviation of the numbers",
}

FUNCTIONS.update(
    {
        name: (_database(name, reduce, _DATABASE_WHAT[name]), 2, 3, False)
        for name, reduce in (
            ("DCOUNT", lambda vs: float(len(_numbers_of(vs))) if vs and type(vs[0]) is not list else float(len(vs))),
            ("DCOUNTA", lambda vs: float(sum(1 for v in vs if v is not None and v != ""))),
            ("DSUM", lambda vs: sum(_numbers_of(vs))),
            ("DPRODUCT", _product),
            ("DMIN", lambda vs: min(_numbers_of(vs), default=0.0)),
            ("DMAX", lambda vs: max(_numbers_of(vs), default=0.0)),
            (
                "DAVERAGE",
                lambda vs: (
                    sum(_numbers_of(vs)) / len(_numbers_of(vs))
                    if _numbers_of(vs)
                    else natives.error("#DIV/0!", "DAVERAGE: no number meets the criteria")
                ),
            ),
            ("DGET", _dget),
            ("DVAR", lambda vs: _variance(vs, True)),
            ("DVARP", lambda vs: _variance(vs, False)),
            ("DSTDEV", lambda vs: _sqrt(_variance(vs, True))),
            ("DSTDEVP", lambda vs: _sqrt(_variance(vs, False))),
        )
    }
)
