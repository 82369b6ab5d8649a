"""The finance tables beside the price table: grid carbon intensity by region (``grid.toml``), hosted API prices
(``hosted.toml``) and daily demand profiles (``demand.toml``), every figure dated and sourced, and their lookups.

Each file holds ``[sources]`` (citations), ``[titles]`` (a short title of each, for a sheet's Source column) and one
table of entries. Loading fails with one line naming the file, the entry and the field when a figure is missing
(neither given nor listed under ``unavailable`` with a source of the reason), of the wrong kind (strict: a TOML
number, a TOML date), outside what the function taking it accepts (the same :mod:`xlsxplan.domains` domain: a grid
intensity above 5,000 g/kWh is refused here as GCO2_PER_M_TOKENS refuses it), or cites a source not in ``[sources]``;
a hosted price must name a model of ``models.toml`` by its id.

GRID_INTENSITY, HOSTED_PRICE and DEMAND_PROFILE read them (with GRID_SOURCE, HOSTED_SOURCE and DEMAND_SOURCE for the
citations); a figure is a default to replace with your own, never a quote.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import functools
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import domains
from ..domains import Name, checked, domain_of
from ..errors import CatalogError, NotAvailableError, UnknownPresetError, XlsxplanError
from .store import check_titles, load_catalog, read_toml

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - Python 3.10
    pass

__all__ = [
    "GRID_FILE",
    "HOSTED_FIELDS",
    "HOSTED_FILE",
    "PROFILE_FILE",
    "DemandProfilePreset",
    "FinanceTable",
    "GridRegion",
    "HostedPrice",
    "demand_profile",
    "demand_source",
    "grid_intensity",
    "grid_source",
    "hosted_price",
    "hosted_source",
    "load_grid",
    "load_hosted",
    "load_profiles",
    "parse_table",
]

GRID_FILE = "grid.toml"
HOSTED_FILE = "hosted.toml"
PROFILE_FILE = "demand.toml"
HOSTED_FIELDS = {"input": "usd_per_m_input", "cached_input": "usd_per_m_cached_input", "output": "usd_per_m_output"}
"""HOSTED_PRICE's field names -> the figures of hosted.toml."""

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class _Entry(BaseModel):
    model_config = _STRICT

    source: str = Field(min_length=1)
    as_of: _dt.date
    unavailable: dict[str, str] = Field(default_factory=dict)
    note: str = ""

    FIGURES: ClassVar[tuple[tuple[str, Any], ...]] = ()
    """Each figure with the domain alias of the function argument it feeds."""


class GridRegion(_Entry):
    """A region's grid carbon intensity over a year (grid.toml)."""

    aliases: tuple[str, ...] = Field((), strict=False)
    g_co2e_per_kwh: float
    basis: str = Field(min_length=1)

    FIGURES: ClassVar[tuple[tuple[str, Any], ...]] = (("g_co2e_per_kwh", domains.GramsPerKWh),)


class HostedPrice(_Entry):
    """What a provider bills per million tokens for one model (hosted.toml)."""

    model: str = Field(min_length=1)
    provider: str = Field(min_length=1)
    offer: str = Field(min_length=1)
    usd_per_m_input: float
    usd_per_m_output: float
    usd_per_m_cached_input: float | None = None

    FIGURES: ClassVar[tuple[tuple[str, Any], ...]] = (
        ("usd_per_m_input", domains.USDPerMTokens),
        ("usd_per_m_cached_input", domains.USDPerMTokens),
        ("usd_per_m_output", domains.USDPerMTokens),
    )


class DemandProfilePreset(_Entry):
    """A daily demand profile: 24 hourly shares of the peak (demand.toml)."""

    shares: tuple[float, ...] = Field(strict=False, min_length=24, max_length=24)


@dataclass(frozen=True)
class FinanceTable:
    """One of the finance files as loaded: its entries by id, the citations and their short titles."""

    filename: str
    entries: dict[str, Any]
    sources: dict[str, str]
    titles: dict[str, str]

    def citation(self, entry: _Entry) -> str:
        return f"{self.sources[entry.source]}; as of {entry.as_of.isoformat()}"


def _figure_checks(entry: _Entry, where: str, sources: dict[str, str]) -> None:
    for field, alias in entry.FIGURES:
        value = getattr(entry, field)
        if value is None:
            if field not in entry.unavailable:
                raise CatalogError(
                    f"{where}.{field} is missing: give it, or list it under 'unavailable' with the reason"
                )
            continue
        if field in entry.unavailable:
            raise CatalogError(f"{where}.{field}: both given and listed as unavailable")
        domain = domain_of(alias)
        assert domain is not None
        try:
            domain.check(field, value)
        except XlsxplanError as err:
            raise CatalogError(f"{where}.{field}: {err.message}") from None
    for field, key in entry.unavailable.items():
        if field not in dict(entry.FIGURES):
            raise CatalogError(f"{where}.unavailable.{field}: not a figure of this table")
        if key not in sources:
            raise CatalogError(f"{where}.unavailable.{field}: source {key!r} is not in [sources]")


def parse_table(text: str, filename: str, table: str, cls: type[_Entry]) -> FinanceTable:
    """One finance file's text, validated: CatalogError naming the file, the entry and the field at the first
    problem (see the module's description)."""
    raw = read_toml(text, filename)
    unknown = set(raw) - {"sources", "titles", table}
    if unknown:
        raise CatalogError(f"{filename}: unexpected top-level table(s) {', '.join(sorted(unknown))}")
    sources = raw.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, str) and v.strip() for v in sources.values()):
        raise CatalogError(f"{filename}: [sources] must map keys to non-empty citations")
    titles = check_titles(raw.get("titles", {}), sources, filename)
    entries: dict[str, Any] = {}
    for eid, body in raw.get(table, {}).items():
        where = f"{filename}: {table}.{eid}"
        if not isinstance(body, dict):
            raise CatalogError(f"{where}: must be a table")
        try:
            entry = cls.model_validate(body)
        except ValidationError as err:
            first = err.errors()[0]
            at = ".".join(str(p) for p in first["loc"]) or "entry"
            raise CatalogError(f"{where}.{at}: {first['msg']}") from None
        if entry.source not in sources:
            raise CatalogError(f"{where}: source {entry.source!r} is not in [sources]")
        _figure_checks(entry, where, sources)
        entries[eid] = entry
    return FinanceTable(filename, entries, sources, titles)


def _read(filename: str) -> str:
    return resources.files(__package__).joinpath(filename).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def load_grid() -> FinanceTable:
    """The shipped grid.toml, parsed and validated once."""
    return parse_table(_read(GRID_FILE), GRID_FILE, "regions", GridRegion)


@functools.lru_cache(maxsize=1)
def load_hosted() -> FinanceTable:
    """The shipped hosted.toml, parsed and validated once; every entry's model an id of models.toml."""
    table = parse_table(_read(HOSTED_FILE), HOSTED_FILE, "hosted", HostedPrice)
    models = load_catalog().models
    for eid, entry in table.entries.items():
        if entry.model not in models.presets or entry.model in models.user:
            raise CatalogError(f"{HOSTED_FILE}: hosted.{eid}.model: {entry.model!r} is not a model id of models.toml")
    return table


@functools.lru_cache(maxsize=1)
def load_profiles() -> FinanceTable:
    """The shipped demand.toml, parsed and validated once."""
    return parse_table(_read(PROFILE_FILE), PROFILE_FILE, "profiles", DemandProfilePreset)


def _key(name: str) -> str:
    return " ".join(name.replace("_", " ").replace("-", " ").lower().split())


def _find(table: FinanceTable, name: str, what: str, argument: str) -> Any:
    wanted = _key(name)
    for eid, entry in table.entries.items():
        if wanted in {_key(eid), *(_key(a) for a in getattr(entry, "aliases", ()))}:
            return entry
    close = difflib.get_close_matches(name, list(table.entries), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise UnknownPresetError(
        f"{argument} {name!r} is not a {what} of {table.filename} ({', '.join(table.entries)}){hint}", argument
    )


def _region(region: str) -> GridRegion:
    entry: GridRegion = _find(load_grid(), region, "region", "region")
    return entry


@checked
def grid_intensity(region: Name) -> float:
    """Default carbon intensity of a region's grid over a year, dated and sourced; replace it with your supplier's.

    Parameters
    ----------
    region : str
        A region of grid.toml by code or name: world, US, DE, France, ... [name].

    Returns
    -------
    float
        Average emissions per kWh generated [gCO2e/kWh].

    Notes
    -----
    From grid.toml: Ember's lifecycle figures for 2023 (Our World in Data; world 481, Germany 381, France 56) and the
    EIA's combustion-only figure for the US (366 g, 0.81 lb/kWh in 2023); GRID_SOURCE gives the basis and citation.
    """
    return _region(region).g_co2e_per_kwh


@checked
def grid_source(region: Name) -> str:
    """Where a region's default grid carbon intensity comes from, with its data year and basis.

    Parameters
    ----------
    region : str
        A region of grid.toml by code or name [name].

    Returns
    -------
    str
        The citation [text].
    """
    entry = _region(region)
    return f"{load_grid().citation(entry)} ({entry.basis})"


def hosted_entry(model: str, provider: str) -> HostedPrice:
    """The hosted.toml entry of ``model`` (any catalog name) on ``provider``; NotAvailableError naming ``model`` when
    no provider prices it, UnknownPresetError naming ``provider`` when that one does not."""
    model_id = load_catalog().models.get(model).id
    table = load_hosted()
    offers = [e for e in table.entries.values() if e.model == model_id]
    if not offers:
        raise NotAvailableError(
            f"{model_id} has no hosted price in {HOSTED_FILE} (it prices "
            f"{', '.join(sorted({e.model for e in table.entries.values()}))}): give the API's prices yourself",
            "model",
        )
    for entry in offers:
        if _key(entry.provider) == _key(provider):
            found: HostedPrice = entry
            return found
    raise UnknownPresetError(
        f"provider {provider!r} has no price for {model_id} in {HOSTED_FILE}: it lists "
        f"{', '.join(e.provider for e in offers)}",
        "provider",
    )


@checked
def hosted_price(model: Name, provider: Name, field: Name = "input") -> float:
    """A hosted API's published price per million tokens of a model: input, cached_input or output; dated, sourced.

    Parameters
    ----------
    model : str
        A model name or alias of the catalog, e.g. gpt-oss-120b [name].
    provider : str
        The provider, as hosted.toml names it: Groq, DeepSeek, DeepInfra, Together AI [name].
    field : str, default input
        input, cached_input or output [name].

    Returns
    -------
    float
        Price of a million tokens of that kind [USD/M tokens].

    Notes
    -----
    From hosted.toml, each price as read on its date (HOSTED_SOURCE gives it); a provider listing no cached-input
    price gives #N/A. gpt-oss-120b on Groq (June 2026): input $0.15, cached input $0.075, output $0.60.
    """
    key = HOSTED_FIELDS.get(_key(field).replace(" ", "_"))
    if key is None:
        raise UnknownPresetError(f"field must be one of {', '.join(HOSTED_FIELDS)}, got {field!r}", "field")
    entry = hosted_entry(model, provider)
    value = getattr(entry, key)
    if value is None:
        raise NotAvailableError(
            f"{entry.provider} lists no {field} price for {entry.model} (HOSTED_SOURCE gives the page read): give the "
            "input price for cached tokens, or your own",
            "field",
        )
    return float(value)


@checked
def hosted_source(model: Name, provider: Name) -> str:
    """Where a hosted API's prices for a model come from, with the date and the offer priced.

    Parameters
    ----------
    model : str
        A model name or alias of the catalog [name].
    provider : str
        The provider, as hosted.toml names it [name].

    Returns
    -------
    str
        The citation [text].
    """
    entry = hosted_entry(model, provider)
    return f"{load_hosted().citation(entry)} ({entry.provider}, {entry.offer})"


@checked
def demand_profile(profile: Name = "business-day") -> list[float]:
    """A daily demand profile: 24 hourly shares of the peak, from midnight, to spill down a column.

    Parameters
    ----------
    profile : str, default business-day
        A profile of demand.toml: business-day or flat [name].

    Returns
    -------
    list of float
        Shares of the peak hour's demand, hour 0 to 23 [fraction].

    Notes
    -----
    business-day is a shape, not a measurement: ``0.625 - 0.375 cos(2 pi (h - 2) / 24)``, a trough of 25% of the
    peak at 02:00 (an assumption) and the peak at 14:00 (the daily rhythm of US-hosted LLM endpoints, Tian Pan 2026).
    DEMAND_SOURCE gives the citation; paste your own traffic's hourly counts instead.
    """
    entry: DemandProfilePreset = _find(load_profiles(), profile, "profile", "profile")
    return list(entry.shares)


@checked
def demand_source(profile: Name = "business-day") -> str:
    """Where a daily demand profile comes from, and what it assumes.

    Parameters
    ----------
    profile : str, default business-day
        A profile of demand.toml [name].

    Returns
    -------
    str
        The citation [text].
    """
    table = load_profiles()
    entry: DemandProfilePreset = _find(table, profile, "profile", "profile")
    return f"{table.citation(entry)}: {entry.note}" if entry.note else table.citation(entry)
