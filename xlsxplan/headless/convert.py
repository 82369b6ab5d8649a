"""Excel's CONVERT, registered in place of formualizer's (which knows few units and no prefixes) by
:func:`.engine.register_functions`.

The units, their abbreviations and the prefixes are Microsoft's ("CONVERT function"): a number in ``from_unit`` is
given in ``to_unit`` of the same kind; a metric unit takes a decimal prefix (``k``, ``m``, ``da``...), squared for an
area and cubed for a volume written with ``2`` or ``3``; ``bit`` and ``byte`` take binary prefixes too (``ki`` 2^10 to
``Yi`` 2^80). Unit names are case-sensitive. Each factor is the unit in the kind's base unit (gram, metre, second,
pascal, newton, joule, watt, tesla, cubic metre, square metre, bit, metre per second), from its definition (the
international yard and pound of 1959, the US survey foot of 1200/3937 m, the standard gravity 9.80665 m/s^2) or,
for the physical constants, the value Excel uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

_IN = 0.0254
_FT = 12 * _IN
_YD = 3 * _FT
_MI = 5280 * _FT
_NMI = 1852.0
_LY = 9_460_730_472_580_800.0
_PICA_POINT = _IN / 72
_PICA = _IN / 6
_SURVEY_FT = 1200 / 3937
_LBM = 453.59237  # grams
_LBF = _LBM / 1000 * 9.80665  # newtons
_US_GAL = 231 * _IN**3  # cubic metres
_UK_GAL = 4.54609e-3

_KINDS: dict[str, dict[str, float]] = {
    "mass": {
        "g": 1.0,
        "sg": _LBF / _FT * 1000,
        "lbm": _LBM,
        "u": 1.660538782e-24,
        "ozm": _LBM / 16,
        "grain": _LBM / 7000,
        "cwt": 100 * _LBM,
        "shweight": 100 * _LBM,
        "uk_cwt": 112 * _LBM,
        "lcwt": 112 * _LBM,
        "stone": 14 * _LBM,
        "ton": 2000 * _LBM,
        "brton": 2240 * _LBM,
        "LTON": 2240 * _LBM,
        "uk_ton": 2240 * _LBM,
    },
    "distance": {
        "m": 1.0,
        "mi": _MI,
        "Nmi": _NMI,
        "in": _IN,
        "ft": _FT,
        "yd": _YD,
        "ang": 1e-10,
        "ell": 45 * _IN,
        "ly": _LY,
        "parsec": 30_856_775_812_815_500.0,
        "pc": 30_856_775_812_815_500.0,
        "Picapt": _PICA_POINT,
        "Pica": _PICA_POINT,
        "pica": _PICA,
        "survey_mi": 5280 * _SURVEY_FT,
    },
    "time": {"yr": 365.25 * 86400, "day": 86400.0, "d": 86400.0, "hr": 3600.0, "mn": 60.0, "min": 60.0},
    "pressure": {
        "Pa": 1.0,
        "p": 1.0,
        "atm": 101_325.0,
        "at": 101_325.0,
        "mmHg": 133.322,
        "psi": _LBF / _IN**2,
        "Torr": 101_325 / 760,
    },
    "force": {"N": 1.0, "dyn": 1e-5, "dy": 1e-5, "lbf": _LBF, "pond": 9.80665e-3},
    "energy": {
        "J": 1.0,
        "e": 1e-7,
        "c": 4.184,
        "cal": 4.1868,
        "eV": 1.602176487e-19,
        "ev": 1.602176487e-19,
        "HPh": 550 * _FT * _LBF * 3600,
        "hh": 550 * _FT * _LBF * 3600,
        "Wh": 3600.0,
        "wh": 3600.0,
        "flb": _FT * _LBF,
        "BTU": 1055.05585262,
        "btu": 1055.05585262,
    },
    "power": {"HP": 550 * _FT * _LBF, "h": 550 * _FT * _LBF, "PS": 735.49875, "W": 1.0, "w": 1.0},
    "magnetism": {"T": 1.0, "ga": 1e-4},
    "temperature": {"C": 1.0, "cel": 1.0, "F": 1.0, "fah": 1.0, "K": 1.0, "kel": 1.0, "Rank": 1.0, "Reau": 1.0},
    "volume": {
        "tsp": _US_GAL / 768,
        "tspm": 5e-6,
        "tbs": _US_GAL / 256,
        "oz": _US_GAL / 128,
        "cup": _US_GAL / 16,
        "pt": _US_GAL / 8,
        "us_pt": _US_GAL / 8,
        "uk_pt": _UK_GAL / 8,
        "qt": _US_GAL / 4,
        "uk_qt": _UK_GAL / 4,
        "gal": _US_GAL,
        "uk_gal": _UK_GAL,
        "l": 1e-3,
        "L": 1e-3,
        "lt": 1e-3,
        "barrel": 42 * _US_GAL,
        "bushel": 2150.42 * _IN**3,
        "GRT": 100 * _FT**3,
        "regton": 100 * _FT**3,
        "MTON": 40 * _FT**3,
    },
    "area": {
        "uk_acre": 4840 * _YD**2,
        "us_acre": 43560 * _SURVEY_FT**2,
        "ar": 100.0,
        "ha": 10_000.0,
        "Morgen": 2500.0,
    },
    "information": {"bit": 1.0, "byte": 8.0},
    "speed": {
        "admkn": 6080 * _FT / 3600,
        "kn": _NMI / 3600,
        "m/h": 1 / 3600,
        "m/hr": 1 / 3600,
        "m/s": 1.0,
        "m/sec": 1.0,
        "mph": _MI / 3600,
    },
}
_KINDS["time"].update({"sec": 1.0, "s": 1.0})
for _name, _length in (("ang", 1e-10), ("ft", _FT), ("in", _IN), ("ly", _LY), ("m", 1.0), ("mi", _MI), ("Nmi", _NMI)):
    for _power, _kind in ((2, "area"), (3, "volume")):
        _KINDS[_kind][f"{_name}{_power}"] = _KINDS[_kind][f"{_name}^{_power}"] = _length**_power
for _name, _length in (("Picapt", _PICA_POINT), ("Pica", _PICA_POINT), ("yd", _YD)):
    for _power, _kind in ((2, "area"), (3, "volume")):
        _KINDS[_kind][f"{_name}{_power}"] = _KINDS[_kind][f"{_name}^{_power}"] = _length**_power

_UNITS: dict[str, tuple[str, float]] = {
    unit: (kind, factor) for kind, units in _KINDS.items() for unit, factor in units.items()
}
"""Every unit without a prefix: {abbreviation: (kind, factor to the kind's base unit)}."""

_METRIC = frozenset(
    "g u m ang ly parsec pc sec s Pa p atm at mmHg N dyn dy pond J e c cal eV ev Wh wh W w T ga K kel "
    "l L lt uk_pt m/h m/hr m/s m/sec bit byte ang2 ang^2 m2 m^2 ar ang3 ang^3 m3 m^3 mph".split()
)
"""The units that take a decimal prefix (Microsoft lists them as metric)."""

_PREFIXES = {
    "Y": 1e24,
    "Z": 1e21,
    "E": 1e18,
    "P": 1e15,
    "T": 1e12,
    "G": 1e9,
    "M": 1e6,
    "k": 1e3,
    "h": 1e2,
    "da": 1e1,
    "e": 1e1,
    "d": 1e-1,
    "c": 1e-2,
    "m": 1e-3,
    "u": 1e-6,
    "n": 1e-9,
    "p": 1e-12,
    "f": 1e-15,
    "a": 1e-18,
    "z": 1e-21,
    "y": 1e-24,
}
_BINARY = {"ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}
_BINARY.update({"Zi": 2.0**70, "Yi": 2.0**80})


def _unit(text: str) -> tuple[str, str, float] | None:
    """``(kind, unit without its prefix, factor to the kind's base unit)`` for a unit as written, or ``None``."""
    found = _UNITS.get(text)
    if found is not None:
        return found[0], text, found[1]
    for size in (2, 1):
        prefix, rest = text[:size], text[size:]
        scale = _PREFIXES.get(prefix)
        if scale is None and rest in ("bit", "byte"):
            scale = _BINARY.get(prefix)
        if scale is None or rest not in _METRIC:
            continue
        kind, factor = _UNITS[rest]
        if rest[-1] in "23" and kind in ("area", "volume"):
            scale **= int(rest[-1])  # km2 is (1000 m)^2
        return kind, rest, scale * factor
    return None


_TO_KELVIN: dict[str, Callable[[float], float]] = {
    "K": lambda t: t,
    "kel": lambda t: t,
    "C": lambda t: t + 273.15,
    "cel": lambda t: t + 273.15,
    "F": lambda t: (t - 32) * 5 / 9 + 273.15,
    "fah": lambda t: (t - 32) * 5 / 9 + 273.15,
    "Rank": lambda t: t * 5 / 9,
    "Reau": lambda t: t * 5 / 4 + 273.15,
}
_FROM_KELVIN: dict[str, Callable[[float], float]] = {
    "K": lambda t: t,
    "kel": lambda t: t,
    "C": lambda t: t - 273.15,
    "cel": lambda t: t - 273.15,
    "F": lambda t: (t - 273.15) * 9 / 5 + 32,
    "fah": lambda t: (t - 273.15) * 9 / 5 + 32,
    "Rank": lambda t: t * 9 / 5,
    "Reau": lambda t: (t - 273.15) * 4 / 5,
}


def convert(number: Any, from_unit: Any, to_unit: Any) -> Any:
    """Excel's CONVERT: ``number`` in ``from_unit`` given in ``to_unit`` (Microsoft, "CONVERT function":
    ``CONVERT(1,"lbm","kg")`` is 0.4535924, ``CONVERT(68,"F","C")`` 20). A temperature is converted through kelvin
    (a prefixed kelvin scaled first); other kinds by the ratio of the two units' factors. ``#N/A`` for a unit Excel
    does not know or two units of different kinds; ``#VALUE!`` for a number that is not one."""
    for value in (number, from_unit, to_unit):
        if type(value) is dict:
            return value
    if isinstance(number, str):
        try:
            number = float(number)
        except ValueError:
            return {"type": "Error", "kind": "#VALUE!", "message": f"CONVERT's number must be a number, got {number!r}"}
    if isinstance(number, bool):
        return {"type": "Error", "kind": "#VALUE!", "message": "CONVERT's number must be a number, not TRUE or FALSE"}
    x = float(number or 0)
    source = _unit(from_unit) if isinstance(from_unit, str) else None
    target = _unit(to_unit) if isinstance(to_unit, str) else None
    if source is None or target is None or source[0] != target[0]:
        bad = from_unit if source is None else to_unit
        why = f"unknown unit {bad!r}" if source is None or target is None else "units of different kinds"
        return {"type": "Error", "kind": "#N/A", "message": f"CONVERT: {why}"}
    if source[0] == "temperature":
        kelvin = _TO_KELVIN[source[1]](x * source[2])
        result = _FROM_KELVIN[target[1]](kelvin) / target[2]
    else:
        result = x * source[2] / target[2]
    if not math.isfinite(result):
        return {"type": "Error", "kind": "#NUM!", "message": "CONVERT: the result is too large for a number"}
    return result


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None, bool]] = {"CONVERT": (convert, 3, 3, False)}
"""CONVERT registered in place of the engine's, as :data:`.engine.CORRECTED`."""
