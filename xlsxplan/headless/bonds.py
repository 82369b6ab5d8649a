"""Excel's coupon-bond and loan-payment functions where formualizer 0.13 has none or differs: COUPDAYBS, COUPDAYS,
COUPDAYSNC, COUPNCD, COUPNUM, COUPPCD, ACCRINT, IPMT, PPMT, CUMIPMT and CUMPRINC, registered in place of the engine's
by :func:`.engine.register_functions`.

Dates are serial numbers of the 1900 date system (truncated to whole days, as Excel truncates them); results are days,
serial numbers, counts, or money in the unit of ``par``.

The quasi-coupon schedule and the day counts are Excel's, as Microsoft documents them ("COUPDAYBS function" and the
other COUP pages, "ACCRINT function": ``par * rate / frequency * sum(A_i / NL_i)`` over the quasi-coupon periods of
the accrual; "YEARFRAC function" for the bases) with the details the documentation leaves out as the
ExcelFinancialFunctions library (F#, the reference reimplementation checked against Excel, bonds.fs and
daycountbasis.fs) establishes them: coupon dates are stepped from maturity (ACCRINT: from ``first_interest``) by
``12 / frequency`` months, each step from the last one, clamped to the month's end, and snapped to the month's end
throughout when the anchor date is one; basis 0 counts days US (NASD) 30/360, basis 4 European 30/360, the others
actual days.
"""

from __future__ import annotations

import calendar
import datetime
import math
from collections.abc import Callable
from typing import Any

from . import natives

_EPOCH = datetime.date(1899, 12, 31)
_MAX_SERIAL = 2_958_465  # 31 December 9999


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


def date_of(serial: float) -> datetime.date | None:
    """The day of a 1900-system serial number (truncated); ``None`` outside 1 to 31 December 9999. Serial 60, the
    Lotus leap day 29 February 1900, is read as 28 February."""
    n = math.floor(serial)
    if not 1 <= n <= _MAX_SERIAL:
        return None
    return _EPOCH + datetime.timedelta(days=n - 1 if n >= 60 else n)


def _serial(day: datetime.date) -> float:
    n = (day - _EPOCH).days
    return float(n + 1 if n >= 60 else n)


def _last_day(d: datetime.date) -> bool:
    return d.day == calendar.monthrange(d.year, d.month)[1]


def add_months(d: datetime.date, months: int, to_month_end: bool) -> datetime.date:
    """``d`` moved by ``months``, its day clamped to the month's length, or the month's last day if
    ``to_month_end``."""
    total = d.year * 12 + d.month - 1 + months
    year, month = divmod(total, 12)
    month += 1
    length = calendar.monthrange(year, month)[1]
    return datetime.date(year, month, length if to_month_end else min(d.day, length))


def _days_360(start: datetime.date, end: datetime.date, basis: int, both: bool = False) -> int:
    """30/360 days from ``start`` to ``end``: US (NASD, basis 0; ``both`` also moves an end date on the last day of
    February or the 31st whatever the start) or European (basis 4)."""
    sd, ed = start.day, end.day
    if basis == 4:
        sd, ed = min(sd, 30), min(ed, 30)
    else:
        start_feb = start.month == 2 and _last_day(start)
        if end.month == 2 and _last_day(end) and (start_feb or both):
            ed = 30
        if ed == 31 and (sd >= 30 or both):
            ed = 30
        if sd == 31 or start_feb:
            sd = 30
    return (end.year - start.year) * 360 + (end.month - start.month) * 30 + ed - sd


def _days(start: datetime.date, end: datetime.date, basis: int) -> int:
    """Days from ``start`` to ``end`` in ``basis``: 30/360 for 0 and 4, actual days for 1, 2 and 3."""
    return _days_360(start, end, basis) if basis in (0, 4) else (end - start).days


def _bracket(anchor: datetime.date, day: datetime.date, months: int) -> tuple[datetime.date, datetime.date, int]:
    """The coupon dates around ``day`` stepped back from ``anchor`` by ``months``: (previous coupon date <= day,
    next coupon date > day, coupons from the next one to ``anchor``)."""
    to_end = _last_day(anchor)
    after, count = anchor, 0
    before = add_months(after, -months, to_end)
    count = 1
    while before > day:
        after, before = before, add_months(before, -months, to_end)
        count += 1
    return before, after, count


def _period_days(pcd: datetime.date, ncd: datetime.date, frequency: int, basis: int) -> float:
    """The days of the coupon period from ``pcd`` to ``ncd`` (Microsoft, COUPDAYS)."""
    if basis == 1:
        return float((ncd - pcd).days)
    return (365.0 if basis == 3 else 360.0) / frequency


def _bond_args(
    name: str, settlement: Any, maturity: Any, frequency: Any, basis: Any
) -> tuple[datetime.date, datetime.date, int, int] | dict:
    """COUP*'s arguments checked as Excel checks them: dates from 1 to 2958465 with settlement before maturity,
    frequency 1, 2 or 4, basis 0 to 4 (truncated); otherwise ``#NUM!`` (``#VALUE!`` for text not a number)."""
    values = []
    for value, what in ((settlement, "settlement"), (maturity, "maturity"), (frequency, "frequency"), (basis, "basis")):
        v = _number(value, f"{name}'s {what}")
        if type(v) is dict:
            return v
        assert isinstance(v, float)
        values.append(math.floor(v))
    s, m = date_of(values[0]), date_of(values[1])
    f, b = values[2], values[3]
    if s is None or m is None:
        return natives.error("#NUM!", f"{name}'s settlement and maturity must be dates from 1900 to 9999")
    if s >= m:
        return natives.error("#NUM!", f"{name}'s settlement must be before maturity")
    if f not in (1, 2, 4):
        return natives.error("#NUM!", f"{name}'s frequency must be 1, 2 or 4, got {f}")
    if not 0 <= b <= 4:
        return natives.error("#NUM!", f"{name}'s basis must be 0 to 4, got {b}")
    return s, m, f, b


def _coup(name: str, compute: Callable[[datetime.date, datetime.date, int, int], float]) -> Callable[..., Any]:
    def call(settlement: Any, maturity: Any, frequency: Any, basis: Any = 0) -> Any:
        args = _bond_args(name, settlement, maturity, frequency, basis)
        return args if type(args) is dict else compute(*args)

    call.__name__ = name.lower()
    return call


def coupdaybs(s: datetime.date, m: datetime.date, f: int, b: int) -> float:
    """Excel's COUPDAYBS: days from the coupon period's start to settlement (Microsoft, "COUPDAYBS function")."""
    pcd, _, _ = _bracket(m, s, 12 // f)
    return float(_days(pcd, s, b))


def coupdays(s: datetime.date, m: datetime.date, f: int, b: int) -> float:
    """Excel's COUPDAYS: days in the coupon period that contains settlement: the actual days for basis 1, 365 /
    frequency for basis 3, 360 / frequency otherwise (Microsoft, "COUPDAYS function")."""
    pcd, ncd, _ = _bracket(m, s, 12 // f)
    return _period_days(pcd, ncd, f, b)


def coupdaysnc(s: datetime.date, m: datetime.date, f: int, b: int) -> float:
    """Excel's COUPDAYSNC: days from settlement to the next coupon date (Microsoft, "COUPDAYSNC function"); for
    basis 0 the period's 360 / frequency days less COUPDAYBS, as Excel computes it."""
    pcd, ncd, _ = _bracket(m, s, 12 // f)
    if b == 0:
        return _period_days(pcd, ncd, f, b) - _days(pcd, s, b)
    return float(_days(s, ncd, b))


def coupncd(s: datetime.date, m: datetime.date, f: int, b: int) -> float:
    """Excel's COUPNCD: the serial number of the next coupon date after settlement (Microsoft, "COUPNCD
    function")."""
    return _serial(_bracket(m, s, 12 // f)[1])


def couppcd(s: datetime.date, m: datetime.date, f: int, b: int) -> float:
    """Excel's COUPPCD: the serial number of the coupon date on or before settlement (Microsoft, "COUPPCD
    function")."""
    return _serial(_bracket(m, s, 12 // f)[0])


def coupnum(s: datetime.date, m: datetime.date, f: int, b: int) -> float:
    """Excel's COUPNUM: the number of coupons payable from settlement to maturity (Microsoft, "COUPNUM
    function")."""
    return float(_bracket(m, s, 12 // f)[2])


def accrint(
    issue: Any,
    first_interest: Any,
    settlement: Any,
    rate: Any,
    par: Any,
    frequency: Any,
    basis: Any = 0,
    calc_method: Any = True,
) -> Any:
    """Excel's ACCRINT: the interest accrued on a security that pays periodic interest, ``par * rate / frequency *
    sum(A_i / NL_i)`` over the quasi-coupon periods from ``issue`` (``calc_method`` FALSE: from ``first_interest``)
    to ``settlement``, A_i the days of the accrual in period i and NL_i the period's normal length (Microsoft,
    "ACCRINT function"). The periods are stepped back from ``first_interest``; a whole period inside the accrual
    counts 1 (0 with ``calc_method`` FALSE), the period holding settlement and the one holding the issue their
    fractions. ``#NUM!`` for a rate or par not above 0, a frequency other than 1, 2, 4, a basis outside 0 to 4, or
    an issue not before settlement."""
    values: list[float] = []
    for value, what in (
        (issue, "issue"),
        (first_interest, "first_interest"),
        (settlement, "settlement"),
        (rate, "rate"),
        (par, "par"),
        (frequency, "frequency"),
        (basis, "basis"),
    ):
        v = _number(value, f"ACCRINT's {what}")
        if not isinstance(v, float):
            return v
        values.append(v)
    method = 1.0 if calc_method is None else _number(calc_method, "ACCRINT's calc_method")
    if not isinstance(method, float):
        return method
    by_issue = method != 0
    r, p = values[3], values[4]
    f, b = math.floor(values[5]), math.floor(values[6])
    iss, first, settle = date_of(values[0]), date_of(values[1]), date_of(values[2])
    if iss is None or first is None or settle is None:
        return natives.error("#NUM!", "ACCRINT's dates must be from 1900 to 9999")
    if r <= 0 or p <= 0:
        return natives.error("#NUM!", "ACCRINT's rate and par must be above 0")
    if f not in (1, 2, 4):
        return natives.error("#NUM!", f"ACCRINT's frequency must be 1, 2 or 4, got {f}")
    if not 0 <= b <= 4:
        return natives.error("#NUM!", f"ACCRINT's basis must be 0 to 4, got {b}")
    if iss >= settle:
        return natives.error("#NUM!", "ACCRINT's issue must be before settlement")
    months = 12 // f
    to_end = _last_day(first)
    regular_start = add_months(first, -months, to_end)
    pcd = regular_start
    if settle > first and by_issue:
        pcd = first
        while True:
            following = add_months(pcd, months, to_end)
            if following >= settle:
                break
            pcd = following
    start = iss if iss > pcd else pcd
    total = _days(start, settle, b) / _period_days(regular_start, first, f, b)
    end = pcd
    while end > iss:
        begin = add_months(end, -months, to_end)
        if iss <= begin:
            total += 1.0 if by_issue else 0.0
        else:
            if b == 0:
                part, whole = float(_days_360(iss, end, 0)), float(_days_360(begin, end, 0, both=True))
            elif b == 4:
                part, whole = float(_days_360(iss, end, 4)), float(_days_360(begin, end, 4))
            elif b == 2:
                part, whole = float((end - iss).days), float(_days_360(begin, end, 0))
            elif b == 3:
                part, whole = float((end - iss).days), 365.0 / f
            else:
                part, whole = float((end - iss).days), float((end - begin).days)
            total += part / whole
        end = begin
    return p * r / f * total


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None, bool]] = {
    "COUPDAYBS": (_coup("COUPDAYBS", coupdaybs), 3, 4, True),
    "COUPDAYS": (_coup("COUPDAYS", coupdays), 3, 4, True),
    "COUPDAYSNC": (_coup("COUPDAYSNC", coupdaysnc), 3, 4, True),
    "COUPNCD": (_coup("COUPNCD", coupncd), 3, 4, True),
    "COUPNUM": (_coup("COUPNUM", coupnum), 3, 4, True),
    "COUPPCD": (_coup("COUPPCD", couppcd), 3, 4, True),
    "ACCRINT": (accrint, 6, 8, True),
}
"""The bond functions registered in place of the engine's: {name: (callback, least and most arguments, whether it
is the 1900 date system's)}, as :data:`.engine.CORRECTED`."""


# ---------------------------------------------------------------------------------------------------------------
# Loan payments: the interest and principal parts of an annuity's payments


def _fv(rate: float, periods: float, pmt: float, pv: float, due: bool) -> float:
    """Excel's FV: the value after ``periods`` of ``pv`` and a payment ``pmt`` each period (at its start when
    ``due``), ``-(pv (1+r)^n + pmt (1 + r due) ((1+r)^n - 1) / r)``."""
    if rate == 0:
        return -(pv + pmt * periods)
    growth = (1 + rate) ** periods
    return -(pv * growth + pmt * (1 + rate * due) * (growth - 1) / rate)


def _pmt(rate: float, nper: float, pv: float, fv: float, due: bool) -> float:
    """Excel's PMT: the payment each period that takes ``pv`` to ``fv`` in ``nper`` periods."""
    if rate == 0:
        return -(pv + fv) / nper
    growth = (1 + rate) ** nper
    return -rate * (fv + pv * growth) / ((1 + rate * due) * (growth - 1))


def _interest_part(rate: float, per: float, pmt: float, pv: float, due: bool) -> float:
    """The interest within the payment of period ``per``: the balance after the payments before it, times the rate
    (nothing in the first period when payments fall at its start)."""
    if per == 1:
        return 0.0 if due else -pv * rate
    if due:
        return (_fv(rate, per - 2, pmt, pv, True) - pmt) * rate
    return _fv(rate, per - 1, pmt, pv, False) * rate


def _payment_args(name: str, values: list[tuple[Any, str]]) -> list[float] | dict:
    out = []
    for value, what in values:
        if type(value) is dict:
            return value
        v = _number(value, f"{name}'s {what}")
        if not isinstance(v, float):
            return v
        out.append(v)
    return out


def _part_of_payment(name: str, principal: bool) -> Callable[..., Any]:
    def call(rate: Any, per: Any, nper: Any, pv: Any, fv: Any = 0.0, type_: Any = 0.0) -> Any:
        v = _payment_args(name, [(rate, "rate"), (per, "per"), (nper, "nper"), (pv, "pv"), (fv, "fv"), (type_, "type")])
        if not isinstance(v, list):
            return v
        r, p, n, present, future, kind = v
        if not 1 <= p < n + 1:
            return natives.error("#NUM!", f"{name}'s per must be from 1 to nper, got {p:g}")
        due = kind != 0
        try:
            pmt = _pmt(r, n, present, future, due)
            interest = _interest_part(r, p, pmt, present, due)
        except (OverflowError, ZeroDivisionError):
            return natives.error("#NUM!", f"{name}: the payment is too large for a number")
        result = pmt - interest if principal else interest
        return (
            result if math.isfinite(result) else natives.error("#NUM!", f"{name}: the result is too large for a number")
        )

    call.__name__ = name.lower()
    call.__doc__ = (
        f"Excel's {name}: the {'principal' if principal else 'interest'} part of period ``per``'s payment of a loan "
        "of ``pv`` at ``rate`` over ``nper`` periods to ``fv``, payments at the periods' ends (``type`` 0) or "
        f'starts (1) (Microsoft, "{name} function"): the interest is the balance after the earlier payments '
        "(FV) times the rate, none in the first period of payments at the start; the principal is PMT less it."
    )
    return call


_MAX_PERIODS = 10_000
"""Past this many periods CUMIPMT and CUMPRINC sum in closed form rather than period by period (a loan of 10^12
periods would otherwise take hours)."""


def _cumulative(name: str, principal: bool) -> Callable[..., Any]:
    def call(rate: Any, nper: Any, pv: Any, start_period: Any, end_period: Any, type_: Any) -> Any:
        for value in (start_period, end_period, type_):
            if isinstance(value, bool):
                return natives.error("#VALUE!", f"{name}'s periods and type must be numbers, not TRUE or FALSE")
        v = _payment_args(
            name,
            [(rate, "rate"), (nper, "nper"), (pv, "pv"), (start_period, "start_period"), (end_period, "end_period")],
        )
        if not isinstance(v, list):
            return v
        kind = _number(type_, f"{name}'s type")
        if not isinstance(kind, float):
            return kind
        r, n, present, start, end = v
        if not (r > 0 and n > 0 and present > 0 and 1 <= start <= end <= n and kind in (0.0, 1.0)):
            return natives.error(
                "#NUM!",
                f"{name} needs rate, nper and pv above 0, 1 <= start_period <= end_period <= nper and type 0 or 1",
            )
        due = kind == 1.0
        try:
            pmt = _pmt(r, n, present, 0.0, due)
            first, last = math.ceil(start), math.floor(end)  # the whole periods from start to end
            if last - first >= _MAX_PERIODS:  # in closed form: the principal parts are a geometric series
                lead = pmt if due and first == 1 else 0.0
                low = first + 1 if lead else first
                growth = 1 + r
                principal_sum = lead + pmt * growth ** (low - 1 - n) * (growth ** (last - low + 1) - 1) / r
                total = principal_sum if principal else (last - first + 1) * pmt - principal_sum
            else:
                total = 0.0
                for per in range(first, last + 1):
                    if not principal:
                        total += _interest_part(r, per, pmt, present, due)
                    elif due and per == 1:
                        total += pmt  # paid at the start: no interest yet
                    else:
                        total += pmt * (1 + r) ** (per - 1 - n)  # the principal part, not PMT less a near equal
        except (OverflowError, ZeroDivisionError):
            return natives.error("#NUM!", f"{name}: the result is too large for a number")
        return (
            total if math.isfinite(total) else natives.error("#NUM!", f"{name}: the result is too large for a number")
        )

    call.__name__ = name.lower()
    call.__doc__ = (
        f"Excel's {name}: the {'principal' if principal else 'interest'} paid on a loan from ``start_period`` to "
        f'``end_period`` (Microsoft, "{name} function"), the sum of {"PPMT" if principal else "IPMT"} over the '
        "whole periods from the start to the end (a fractional start rounded up, end down, as Excel does); "
        "``#NUM!`` for a rate, nper or pv not above 0, periods below 1, past nper or out of order, or a type "
        "other than 0 or 1."
    )
    return call


FUNCTIONS.update(
    {
        "IPMT": (_part_of_payment("IPMT", False), 4, 6, False),
        "PPMT": (_part_of_payment("PPMT", True), 4, 6, False),
        "CUMIPMT": (_cumulative("CUMIPMT", False), 6, 6, False),
        "CUMPRINC": (_cumulative("CUMPRINC", True), 6, 6, False),
    }
)


# ---------------------------------------------------------------------------------------------------------------
# Securities with an odd first or last period


def _odd_args(name: str, pairs: list[tuple[Any, str]]) -> list[float] | dict:
    out = []
    for value, what in pairs:
        v = _number(value, f"{name}'s {what}")
        if not isinstance(v, float):
            return v
        out.append(v)
    return out


def _oddf_price(
    s: datetime.date,
    m: datetime.date,
    issue: datetime.date,
    first: datetime.date,
    rate: float,
    yld: float,
    redemption: float,
    f: int,
    b: int,
) -> float:
    """ODDFPRICE's price per 100 face value (Microsoft, "ODDFPRICE function": the short and the long first period
    formulas), quasi-coupon periods stepped back from the first coupon."""
    months = 12 // f
    pcd, ncd, _ = _bracket(first, s, months)
    e = _period_days(pcd, ncd, f, b)
    n = int(coupnum(first, m, f, b)) + 1 if first < m else 1  # coupons from the first to maturity
    x = 1 + yld / f
    coupon = 100 * rate / f
    dfc = _days(issue, first, b)
    if dfc < e:  # a short first period
        dsc = float(_days(s, first, b))
        a = float(_days(issue, s, b))
        y = dsc / e
        price = redemption / x ** (n - 1 + y) + coupon * dfc / e / x**y
        price += sum(coupon / x ** (k - 1 + y) for k in range(2, n + 1))
        return price - coupon * a / e
    # a long first period: NC quasi-coupon periods from the issue to the first coupon
    to_end = _last_day(first)
    nc = int(coupnum(issue, first, f, b)) if issue < first else 0
    late = first
    dcnl = anl = 0.0
    for index in range(nc, 0, -1):
        early = add_months(late, -months, to_end)
        nl = float((late - early).days) if b == 1 else e
        dci = nl if index > 1 else float(_days(issue, late, b))
        start = issue if issue > early else early
        end = s if s < late else late
        a = float(_days(start, end, b)) if end > start else 0.0
        dcnl += dci / nl
        anl += a / nl
        late = early
    if b in (2, 3):
        dsc = float(_days(s, ncd, b))
    else:
        dsc = e - _days(pcd, s, b)
    nq = int(coupnum(s, first, f, b)) - 1 if s < first else 0  # whole quasi-coupon periods to the first coupon
    n -= 1
    y = dsc / e
    price = redemption / x ** (y + nq + n) + coupon * dcnl / x ** (nq + y)
    price += sum(coupon / x ** (k + nq + y) for k in range(1, n + 1))
    return price - coupon * anl


def _oddl(
    s: datetime.date,
    m: datetime.date,
    last: datetime.date,
    rate: float,
    given: float,
    redemption: float,
    f: int,
    b: int,
    price: bool,
) -> float:
    """ODDLPRICE's price (``price``) or ODDLYIELD's yield from the quasi-coupon periods from the last coupon to
    maturity (Microsoft, "ODDLPRICE function", "ODDLYIELD function")."""
    months = 12 // f
    nc = int(coupnum(last, m, f, b))
    early = last
    dcnl = anl = dscnl = 0.0
    for index in range(1, nc + 1):
        late = add_months(early, months, False)
        nl = float(_days(early, late, b))  # the period's own days: 30/360 for bases 0 and 4, actual otherwise
        dci = nl if index < nc else float(_days(early, m, b))
        if late < s:
            a = dci
        elif early < s:
            a = float(_days(early, s, b))
        else:
            a = 0.0
        start = s if s > early else early
        end = m if m < late else late
        dsc = float(_days(start, end, b))
        dcnl += dci / nl
        anl += a / nl
        dscnl += dsc / nl
        early = late
    coupon = 100 * rate / f
    term1 = dcnl * coupon + redemption
    if price:
        return term1 / (dscnl * given / f + 1) - anl * coupon
    term2 = anl * coupon + given
    return (term1 - term2) / term2 * (f / dscnl)


def _odd(name: str, kind: str) -> Callable[..., Any]:
    first_kind = kind in ("FPRICE", "FYIELD")

    def call(*args: Any) -> Any:
        labels = (
            ["settlement", "maturity", "issue", "first_coupon", "rate", "yld" if kind == "FPRICE" else "pr"]
            if first_kind
            else ["settlement", "maturity", "last_interest", "rate", "yld" if kind == "LPRICE" else "pr"]
        ) + ["redemption", "frequency", "basis"]
        values = list(args) + [0.0] * (len(labels) - len(args))
        v = _odd_args(name, list(zip(values, labels, strict=True)))
        if not isinstance(v, list):
            return v
        f, b = math.floor(v[-2]), math.floor(v[-1])
        dates = [date_of(x) for x in v[: 4 if first_kind else 3]]
        if any(d is None for d in dates):
            return natives.error("#NUM!", f"{name}'s dates must be from 1900 to 9999")
        if f not in (1, 2, 4) or not 0 <= b <= 4:
            return natives.error("#NUM!", f"{name}'s frequency must be 1, 2 or 4 and basis 0 to 4")
        rest = v[4:-2] if first_kind else v[3:-2]
        rate, given, redemption = rest
        if rate < 0 or given < 0 or redemption <= 0 or (kind.endswith("YIELD") and given <= 0):
            return natives.error(
                "#NUM!", f"{name}'s rate and yield must be 0 or more, the price and redemption above 0"
            )
        try:
            if first_kind:
                s, m, issue, first = dates
                assert s and m and issue and first
                if not issue < s < first < m:
                    return natives.error("#NUM!", f"{name} needs issue < settlement < first_coupon < maturity")
                if kind == "FPRICE":
                    return _oddf_price(s, m, issue, first, rate, given, redemption, f, b)
                dates_ = (s, m, issue, first)
                return _solve_yield(lambda y: _oddf_price(*dates_, rate, y, redemption, f, b), given)
            s, m, last = dates
            assert s and m and last
            if not (last < s < m):
                return natives.error("#NUM!", f"{name} needs last_interest < settlement < maturity")
            return _oddl(s, m, last, rate, given, redemption, f, b, kind == "LPRICE")
        except (OverflowError, ZeroDivisionError):
            return natives.error("#NUM!", f"{name}: the result is not a number")

    call.__name__ = name.lower()
    call.__doc__ = (
        f'Excel\'s {name} (Microsoft, "{name} function"): the '
        f"{'price per 100 face value' if 'PRICE' in kind else 'yield'} of a security with an odd "
        f"{'first' if first_kind else 'last'} period, summed over its quasi-coupon "
        "periods in the day-count ``basis``."
    )
    return call


def _solve_yield(price_at: Callable[[float], float], price: float) -> float | dict:
    """The yield at which ``price_at`` gives ``price``: Newton's method from 5%, bisection if it strays (Excel
    solves ODDFYIELD iteratively too)."""
    y = 0.05
    for _ in range(100):
        p = price_at(y) - price
        if abs(p) < 1e-12:
            return y
        h = 1e-7
        slope = (price_at(y + h) - price_at(y - h)) / (2 * h)
        if slope == 0 or not math.isfinite(slope):
            break
        step = p / slope
        y -= step
        if abs(step) < 1e-14:
            return y
    return natives.error("#NUM!", "the yield does not converge")


FUNCTIONS.update(
    {
        "ODDFPRICE": (_odd("ODDFPRICE", "FPRICE"), 8, 9, True),
        "ODDFYIELD": (_odd("ODDFYIELD", "FYIELD"), 8, 9, True),
        "ODDLPRICE": (_odd("ODDLPRICE", "LPRICE"), 7, 8, True),
        "ODDLYIELD": (_odd("ODDLYIELD", "LYIELD"), 7, 8, True),
    }
)


def mirr(values: Any, finance_rate: Any, reinvest_rate: Any) -> Any:
    """Excel's MIRR: the modified internal rate of return of the cash flows ``values`` (one a period; text, TRUE,
    FALSE and empty cells skipped), ``(FV(positive flows at reinvest_rate) / -PV(negative flows at finance_rate))
    ^ (1 / (n - 1)) - 1`` (Microsoft, "MIRR function"): -1 when no flow is positive, ``#DIV/0!`` when none is
    negative, ``#NUM!`` when the ratio is negative."""
    rates = _payment_args("MIRR", [(finance_rate, "finance_rate"), (reinvest_rate, "reinvest_rate")])
    if not isinstance(rates, list):
        return rates
    fr, rr = rates
    flows: list[float] = []
    for row in values if type(values) is list else [values]:
        for v in row if type(row) is list else [row]:
            if type(v) is dict:
                return v
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                flows.append(float(v))
    n = len(flows)
    if n < 2:
        return natives.error("#DIV/0!", "MIRR needs two cash flows or more")
    try:
        gained = sum(v * (1 + rr) ** (n - 1 - i) for i, v in enumerate(flows) if v > 0)
        spent = sum(v / (1 + fr) ** i for i, v in enumerate(flows) if v < 0)
    except ZeroDivisionError:
        return natives.error("#DIV/0!", "MIRR: a finance rate of -1")
    if spent == 0:
        return natives.error("#DIV/0!", "MIRR needs a negative cash flow")
    ratio = gained / -spent
    if ratio < 0:
        return natives.error("#NUM!", "MIRR: the reinvested flows are negative")
    return ratio ** (1 / (n - 1)) - 1


FUNCTIONS["MIRR"] = (mirr, 3, 3, False)
