"""The owned-case cost assumptions: ``costs.toml``, every figure with its source and as-of date, and its lookups.

A figure of ``[site]`` (life, resale, cost of capital, PUE, electricity, hosting) holds for any accelerator; one of
``[accelerators.<id>]`` (capital cost, server power per GPU, lead time, rents) belongs to one, found by its name or
any alias in ``accelerators.toml``. Loading fails with one line naming the file, the table and the field when a
figure is missing (neither given nor listed under ``unavailable`` with a reason), of the wrong kind (strict: a TOML
number, a TOML date), outside what the function taking it accepts (the same :mod:`xlsxplan.domains` domain: a PUE
below 1 is refused here as GPU_HOUR_OWNED refuses it), or cites a source not in ``[sources]``.

:func:`owned_case` gathers one accelerator's figures into a :class:`xlsxplan.core.cost.OwnedCase` for the plan search
and the command line; COST_SPEC and COST_SOURCE show them in a cell, and the serving template writes them, with their
sources and dates, as the Costs block's defaults.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import functools
import sys
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import domains
from ..core.cost import OwnedCase
from ..domains import Domain, Name, checked, domain_of
from ..errors import CatalogError, NotAvailableError, UnknownPresetError, XlsxplanError
from .store import PRICE_BASES, check_titles, load_catalog, load_prices, read_toml

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - Python 3.10
    pass

__all__ = [
    "COSTS_FILE",
    "COST_FIELDS",
    "PRICE_FIELDS",
    "PRICE_SOURCE_PREFIX",
    "CostField",
    "CostFigure",
    "Costs",
    "cost_figure",
    "cost_source",
    "cost_spec",
    "load_costs",
    "owned_case",
]

COSTS_FILE = "costs.toml"
NOTE_CHARS = 55
"""The longest note: the serving template's Comment column shows it beside the input."""


@dataclass(frozen=True)
class CostField:
    """A figure of costs.toml: where it lives, its unit, what it may hold and what it is."""

    scope: str  # "site" or "accelerator"
    unit: str
    domain: Domain
    label: str


def _dom(alias: Any) -> Domain:
    found = domain_of(alias)
    if found is None:  # pragma: no cover - every alias below carries a Domain
        raise TypeError(f"{alias} carries no Domain")
    return found


COST_FIELDS: dict[str, CostField] = {
    "capex_usd": CostField("accelerator", "USD", _dom(domains.CapexUSD),
                           "Capital cost per GPU, with its share of the server and network"),
    "server_kw_per_gpu": CostField("accelerator", "kW", _dom(domains.KWOrZero),
                                   "Power per GPU, with its share of the server"),
    "lead_time_months": CostField("accelerator", "months", Domain("number", 0, 120),
                                  "Lead time from order to servers in service"),
    "rent_on_demand_usd_per_gpu_hour": CostField("price", "USD/GPU-h", _dom(domains.Price),
                                                 "Rental price on demand"),
    "rent_committed_usd_per_gpu_hour": CostField("price", "USD/GPU-h", _dom(domains.Price),
                                                 "Rental price committed (reserved)"),
    "years": CostField("site", "years", _dom(domains.Years), "Life the capital is recovered over"),
    "residual_fraction": CostField("site", "fraction", _dom(domains.FractionOrZero),
                                   "Resale value at the end of the life"),
    "annual_rate": CostField("site", "fraction/year", _dom(domains.AnnualRate), "Cost of capital"),
    "pue": CostField("site", "ratio", _dom(domains.PUE), "Power usage effectiveness of the data centre"),
    "usd_per_kwh": CostField("site", "USD/kWh", _dom(domains.USDPerKWh), "Price of electricity"),
    "usd_per_kw_month": CostField("site", "USD/kW-month", _dom(domains.USDPerKWMonth),
                                  "Hosting (colocation) per kW of IT load per month"),
}  # fmt: skip
"""Every figure COST_SPEC gives, in the order the Costs block shows them. Those of scope "site" and "accelerator" live
in costs.toml; the two rental prices (scope "price") are read from the one price table, prices.toml, so that a
rented GPU-hour has one price per basis everywhere (:data:`PRICE_FIELDS`)."""

PRICE_FIELDS: dict[str, str] = {
    "rent_on_demand_usd_per_gpu_hour": "on_demand",
    "rent_committed_usd_per_gpu_hour": "committed",
}
"""The rental-price fields of COST_SPEC -> their basis in prices.toml."""

PRICE_SOURCE_PREFIX = "prices.toml:"
"""Marks a figure's source key as one of prices.toml's [sources], not costs.toml's."""


class CostFigure(BaseModel):
    """One figure: its value, the key of its source in [sources], the date the source gives and how it was read."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    value: float
    source: str = Field(min_length=1)
    as_of: _dt.date
    note: str = Field("", max_length=NOTE_CHARS)


@dataclass(frozen=True)
class Costs:
    """costs.toml as loaded: the citations and their short titles, the site figures, and each accelerator's figures
    and unavailable ones."""

    sources: dict[str, str]
    titles: dict[str, str]
    site: dict[str, CostFigure]
    accelerators: dict[str, dict[str, CostFigure]]
    unavailable: dict[str, dict[str, str]]  # accelerator id -> field -> source key of the reason

    def citation(self, figure: CostFigure) -> str:
        """The figure's citation, from costs.toml or, for a rental price, prices.toml."""
        if figure.source.startswith(PRICE_SOURCE_PREFIX):
            return load_prices().sources[figure.source.removeprefix(PRICE_SOURCE_PREFIX)]
        return self.sources[figure.source]

    def title(self, figure: CostFigure) -> str:
        """The figure's source in at most :data:`~.store.TITLE_CHARS` characters (costs.toml's or prices.toml's
        [titles]: the serving template's Source column shows ``Catalog: <title>``)."""
        if figure.source.startswith(PRICE_SOURCE_PREFIX):
            return load_prices().titles[figure.source.removeprefix(PRICE_SOURCE_PREFIX)]
        return self.titles[figure.source]


def _figure(raw: Any, where: str, field: str, sources: dict[str, str]) -> CostFigure:
    spec = COST_FIELDS[field]
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}.{field}: must be a table {{ value, source, as_of, note }}")
    try:
        figure = CostFigure.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        at = ".".join(str(p) for p in first["loc"]) or "figure"
        raise CatalogError(f"{where}.{field}.{at}: {first['msg']}") from None
    if figure.source not in sources:
        raise CatalogError(f"{where}.{field}: source {figure.source!r} is not in [sources]")
    try:
        spec.domain.check(field, figure.value)
    except XlsxplanError as err:  # the value the function taking it would refuse
        raise CatalogError(f"{where}.{field}.value: {err.message} ({spec.unit})") from None
    return figure


def _check_fields(table: dict[str, Any], where: str, scope: str) -> None:
    unknown = [k for k in table if k not in COST_FIELDS or COST_FIELDS[k].scope != scope]
    if unknown:
        allowed = ", ".join(k for k, f in COST_FIELDS.items() if f.scope == scope)
        raise CatalogError(f"{where}: {unknown[0]!r} is not a figure of this table (figures: {allowed})")


def parse_costs(text: str, filename: str = COSTS_FILE) -> Costs:
    """costs.toml's text, validated: CatalogError naming the file, the table and the field at the first problem."""
    raw = read_toml(text, filename)
    unknown = set(raw) - {"sources", "titles", "site", "accelerators"}
    if unknown:
        raise CatalogError(f"{filename}: unexpected top-level table(s) {', '.join(sorted(unknown))}")
    sources = raw.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, str) and v.strip() for v in sources.values()):
        raise CatalogError(f"{filename}: [sources] must map keys to non-empty citations")
    titles = check_titles(raw.get("titles", {}), sources, filename)
    site_raw = raw.get("site", {})
    _check_fields(site_raw, f"{filename}: site", "site")
    site = {}
    for field, spec in COST_FIELDS.items():
        if spec.scope != "site":
            continue
        if field not in site_raw:
            raise CatalogError(f"{filename}: site.{field} is missing: every site figure needs a value and a source")
        site[field] = _figure(site_raw[field], f"{filename}: site", field, sources)
    known = load_catalog().accelerators
    accelerators: dict[str, dict[str, CostFigure]] = {}
    unavailable: dict[str, dict[str, str]] = {}
    for pid, body in raw.get("accelerators", {}).items():
        where = f"{filename}: accelerators.{pid}"
        if pid not in known.presets or pid in known.user:
            raise CatalogError(f"{where}: not an accelerator id of accelerators.toml")
        if not isinstance(body, dict):
            raise CatalogError(f"{where}: must be a table")
        body = dict(body)
        missing = body.pop("unavailable", {}) if isinstance(body.get("unavailable", {}), dict) else None
        if missing is None:
            raise CatalogError(f"{where}.unavailable: must map figures to source keys of the reason")
        _check_fields(body, where, "accelerator")
        _check_fields(missing, f"{where}.unavailable", "accelerator")
        for field, key in missing.items():
            if field in body:
                raise CatalogError(f"{where}.{field}: both given and listed as unavailable")
            if key not in sources:
                raise CatalogError(f"{where}.unavailable.{field}: source {key!r} is not in [sources]")
        for field, spec in COST_FIELDS.items():
            if spec.scope == "accelerator" and field not in body and field not in missing:
                raise CatalogError(
                    f"{where}.{field} is missing: give it, or list it under 'unavailable' with the reason"
                )
        accelerators[pid] = {field: _figure(value, where, field, sources) for field, value in body.items()}
        unavailable[pid] = dict(missing)
    return Costs(sources, titles, site, accelerators, unavailable)


@functools.lru_cache(maxsize=1)
def load_costs() -> Costs:
    """The shipped costs.toml, parsed and validated once."""
    text = resources.files(__package__).joinpath(COSTS_FILE).read_text(encoding="utf-8")
    return parse_costs(text)


def _field(field: str) -> str:
    key = field.strip().lower()
    if key in COST_FIELDS:
        return key
    close = difflib.get_close_matches(key, list(COST_FIELDS), n=2, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else f"fields: {', '.join(COST_FIELDS)}"
    raise UnknownPresetError(f"field {field!r} is not a cost figure; {hint}", "field")


def cost_figure(gpu: str, field: str) -> CostFigure:
    """One figure of costs.toml for an accelerator (a site figure for any); UnknownPresetError for a name or field
    that is not known, NotAvailableError with the reason for a figure no source gives."""
    key = _field(field)
    pid = load_catalog().accelerators.get(gpu).id  # by name or alias, as GPU_SPEC finds it
    if key in PRICE_FIELDS:  # the one price table
        basis = PRICE_FIELDS[key]
        price = load_prices().get(pid, basis)
        note = f"{PRICE_BASES[basis]}: {price.offer}"
        note = note if len(note) <= NOTE_CHARS else note[: NOTE_CHARS - 3] + "..."
        return CostFigure(
            value=price.usd_per_gpu_hour, source=PRICE_SOURCE_PREFIX + price.source, as_of=price.as_of, note=note
        )
    costs = load_costs()
    if COST_FIELDS[key].scope == "site":
        return costs.site[key]
    found = costs.accelerators.get(pid, {}).get(key)
    if found is not None:
        return found
    reason = costs.unavailable.get(pid, {}).get(key)
    if reason is not None:
        raise NotAvailableError(f"{pid} has no {key} in costs.toml: {costs.sources[reason]}", "field")
    raise NotAvailableError(
        f"costs.toml has no figures for {pid}: type your own {key} ({COST_FIELDS[key].unit})", "gpu"
    )


@checked
def cost_spec(gpu: Name, field: Name) -> float:
    """One default of the owned-case cost: an accelerator's capital cost, power and lead time, or a site figure.

    Parameters
    ----------
    gpu : str
        An accelerator name or alias, e.g. H100 or B200; the site figures are the same for every one [name].
    field : str
        capex_usd, server_kw_per_gpu, lead_time_months, rent_on_demand_usd_per_gpu_hour,
        rent_committed_usd_per_gpu_hour, years, residual_fraction, annual_rate, pue, usd_per_kwh or
        usd_per_kw_month [name].

    Returns
    -------
    float
        The figure in its unit: USD, kW, months, USD/GPU-h, years, fraction, ratio, USD/kWh, USD/kW-month [field unit].

    Notes
    -----
    Public figures with their dates (catalog/costs.toml), defaults to overwrite with your own quotes; COST_SOURCE gives
    each one's citation and as-of date. A figure no source gives is #N/A with the reason.
    """
    return cost_figure(gpu, field).value


@checked
def cost_source(gpu: Name, field: Name) -> str:
    """Where a default of the owned-case cost comes from, and the date the source gives for it.

    Parameters
    ----------
    gpu : str
        An accelerator name or alias [name].
    field : str
        A field of COST_SPEC [name].

    Returns
    -------
    str
        The citation, its as-of date and how the value was read [text].
    """
    costs = load_costs()
    figure = cost_figure(gpu, field)
    note = f"; {figure.note}" if figure.note else ""
    return f"{costs.citation(figure)} (as of {figure.as_of.isoformat()}{note})"


def owned_case(gpu: str, **overrides: float) -> OwnedCase:
    """The owned-case assumptions for ``gpu`` from costs.toml, any of them replaced by ``overrides`` (a field of
    :class:`~xlsxplan.core.cost.OwnedCase`: ``capex_usd``, ``kw``, ...): what the plan search prices an owned GPU-hour
    with, through :func:`xlsxplan.core.cost.owned_cost_per_gpu_hour`.

    ``kw`` defaults to the server's power per GPU (``server_kw_per_gpu``); pass the board power instead
    (``GPU_SPEC(gpu, "power_w") / 1000``) to leave the server's share out. A figure costs.toml lacks for this
    accelerator must be given (NotAvailableError naming it otherwise); an unknown override is a TypeError.
    """
    fields = {
        "capex_usd": "capex_usd",
        "years": "years",
        "residual_fraction": "residual_fraction",
        "annual_rate": "annual_rate",
        "kw": "server_kw_per_gpu",
        "pue": "pue",
        "usd_per_kwh": "usd_per_kwh",
        "usd_per_kw_month": "usd_per_kw_month",
    }
    unknown = set(overrides) - set(fields)
    if unknown:
        raise TypeError(f"owned_case() got unknown assumption(s) {', '.join(sorted(unknown))}")
    values = {
        name: overrides[name] if name in overrides else cost_figure(gpu, key).value for name, key in fields.items()
    }
    return replace(OwnedCase(values["capex_usd"], values["years"]), **values)


def server_kw(gpu: str) -> tuple[float, str, _dt.date | None]:
    """Power one GPU draws at full load with its share of the server [kW], where the figure comes from and its date:
    costs.toml's ``server_kw_per_gpu`` where it has one, else the board power (GPU_SPEC ``power_w`` / 1000, no date);
    NotAvailableError naming ``gpu`` when neither is known."""
    try:
        figure = cost_figure(gpu, "server_kw_per_gpu")
    except NotAvailableError as err:
        board = load_catalog().accelerators.get(gpu).figure("power_w")
        if board is None:
            raise err from None
        return float(board) / 1000, "the board power, GPU_SPEC power_w (no server share in costs.toml)", None
    return figure.value, load_costs().titles[figure.source], figure.as_of
