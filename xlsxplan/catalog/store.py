"""Loading the catalog: the shipped TOML files, the user's own presets beside them, re-read when they change.

The rules are the package's (see :mod:`xlsxplan.catalog`): strict figures with sources, user presets that may not
take a shipped name, a broken user preset left out with its reason while every other preset keeps working.
"""

from __future__ import annotations

import contextlib
import datetime
import difflib
import hashlib
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

from pydantic import ValidationError

from ..errors import CatalogError, NotAvailableError, UnknownPresetError
from ..infra.fileio import atomic_write_text, ensure_folder
from .schema import AcceleratorPreset, Kind, ModelPreset, Preset, PricePreset

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_P = TypeVar("_P", bound=Preset)

__all__ = [
    "Catalog",
    "Prices",
    "PRICES_FILE",
    "PRICE_BASES",
    "STALE_AFTER_DAYS",
    "TITLE_CHARS",
    "check_titles",
    "load_catalog",
    "load_prices",
    "parse_prices",
    "refresh",
    "user_catalog_dir",
    "user_preset_ids",
    "catalog_problems",
    "figure_unit",
    "save_user_preset",
    "USER_SOURCE_PREFIX",
    "preset_key",
    "read_toml",
    "shipped_presets",
    "validate_presets",
]


def preset_key(name: str) -> str:
    """A preset name as lookups compare it: case-folded, runs of spaces and underscores as one dash."""
    return re.sub(r"[\s_]+", "-", name.strip().casefold())


class _Table(Generic[_P]):
    """Presets of one kind, found by id or alias; ``user`` holds the ids that come from the user's own file.

    ``refused`` maps a name (as :func:`_key` spells it) of a user preset that could not be loaded to the one-line
    reason, which a lookup of that name raises; ``unread`` is why the user's file could not be used at all ("" if
    it could); ``problems`` lists both, for the command line's warnings.
    """

    def __init__(
        self,
        kind: Kind,
        presets: dict[str, _P],
        sources: dict[str, str],
        user: frozenset[str] = frozenset(),
        refused: dict[str, str] | None = None,
        unread: str = "",
    ) -> None:
        self.kind = kind
        self.presets = presets
        self.sources = sources
        self.user = user
        self._index: dict[str, str] = {}
        for pid, preset in presets.items():
            for name in (pid, *preset.aliases):
                self._index.setdefault(preset_key(name), pid)
        self.refused = {k: v for k, v in (refused or {}).items() if k not in self._index}  # shipped names win
        self.unread = unread
        self.problems = list(dict.fromkeys(([unread] if unread else []) + list((refused or {}).values())))
        self._suggested: dict[str, list[str]] = {}  # name -> _suggest's answer: a sheet asks the same name often

    def names(self) -> list[str]:
        return list(self.presets)

    def get(self, name: str) -> _P:
        key = preset_key(name)
        tail = key.rsplit("/", 1)[-1]
        pid = self._index.get(key) or self._index.get(tail)
        if pid is not None:
            return self.presets[pid]
        arg = "model" if self.kind == "model" else "gpu"
        reason = self.refused.get(key) or self.refused.get(tail)
        if reason is not None:
            raise CatalogError(f"{self.kind} preset {name!r} cannot be used: {reason}", arg)
        close = self._suggest(name)
        hint = f"did you mean {', '.join(close)}?" if close else f"see {arg.upper()}S() for the list"
        if self.unread:
            hint += f" (and the user's presets are not loaded: {self.unread})"
        raise UnknownPresetError(f"{arg} {name!r} is not in the catalog; {hint}", arg)

    def _suggest(self, name: str) -> list[str]:
        """Up to three preset ids whose id or alias is close to ``name``; remembered by name for this table (which
        never changes: a changed user file makes a new one), since a workbook with an unknown model asks the same
        name in every cell that reads it (difflib's ratio over every name of the catalog each time)."""
        key = preset_key(name)
        found = self._suggested.get(key)
        if found is None:
            matches = difflib.get_close_matches(key, list(self._index), n=6, cutoff=0.6)
            found = self._suggested[key] = list(dict.fromkeys(self._index[m] for m in matches))[:3]
            while len(self._suggested) > 256:  # unknown names typed by hand: a few; never unbounded
                del self._suggested[next(iter(self._suggested))]
        return list(found)

    def field(self, preset: Preset, field: str) -> str:
        key = field.strip().lower()
        if key in preset.FIGURES:
            return key
        close = difflib.get_close_matches(key, preset.FIGURES, n=2, cutoff=0.6)
        shown = preset.FIGURES[:12]  # one line: a model has 40 figures
        more = f" and {len(preset.FIGURES) - len(shown)} more" if len(preset.FIGURES) > len(shown) else ""
        hint = f"did you mean {', '.join(close)}?" if close else f"fields: {', '.join(shown)}{more}"
        article = "an" if self.kind == "accelerator" else "a"
        raise UnknownPresetError(f"field {field!r} is not {article} {self.kind} figure; {hint}", "field")

    def figure(self, name: str, field: str) -> float | int:
        preset = self.get(name)
        key = self.field(preset, field)
        value = preset.figure(key)
        if value is None:
            reason = preset.unavailable.get(key)
            if reason:
                why = self.sources.get(reason, reason)
            else:
                why = "not part of this architecture" if self.kind == "model" else "not given for this preset"
            raise NotAvailableError(f"{preset.id} has no {key}: {why}", "field")
        return value

    def citation(self, name: str, field: str) -> str:
        preset = self.get(name)
        key = self.field(preset, field)
        if preset.figure(key) is None and key in preset.unavailable:
            return self.sources[preset.unavailable[key]]
        return self.sources[preset.source_key(key)]


class Catalog:
    """The models and accelerators xlsxplan knows, with the sources of their figures."""

    def __init__(self, models: _Table[ModelPreset], accelerators: _Table[AcceleratorPreset]) -> None:
        self.models = models
        self.accelerators = accelerators

    @property
    def problems(self) -> list[str]:
        """Why some of the user's presets are not loaded, one line each (empty when all are)."""
        return self.models.problems + self.accelerators.problems


@dataclass
class _Loaded:
    """One catalog file as read: the presets that passed, their sources, and the ones refused with the reason."""

    presets: dict[str, Preset]
    sources: dict[str, str]
    refused: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    """preset id -> (its names, the one-line reason)"""
    unread: str = ""
    """why the whole file could not be used ("" when it could)"""

    def first_problem(self) -> str | None:
        if self.unread:
            return self.unread
        return next((reason for _, reason in self.refused.values()), None)


MAX_TOML_DEPTH = 64
"""The deepest nesting of arrays and inline tables a catalog file may hold [count]: the shipped files nest one deep (a
table header's brackets). Python's TOML reader recurses once a level, so a user file nested 100,000 deep made
every command end in a RecursionError; the nesting is counted first, in one pass, and the file refused past this."""

_TOML_TOKEN = re.compile(
    r'''"""[\s\S]*?(?:"""|\Z)|\'\'\'[\s\S]*?(?:\'\'\'|\Z)|"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?|#[^\n]*|[\[\]{}]'''
)
"""A TOML string (multi-line, basic or literal), a comment, or a bracket or brace outside them. No alternative fails
once it has started (each closing quote is optional: an unterminated string runs to its line's or the text's end)
and no character can be read by two of its parts, so the scan is linear in the text."""


def _toml_depth(text: str) -> int:
    """The deepest nesting of arrays, inline tables and table headers in a TOML text (brackets inside strings and
    comments aside), without parsing it; one pass of :data:`_TOML_TOKEN` over the text [count]."""
    deepest = depth = 0
    for m in _TOML_TOKEN.finditer(text):
        first = text[m.start()]
        if first in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif first in "]}":
            depth -= 1
    return deepest


def read_toml(text: str, filename: str) -> dict[str, Any]:
    """A catalog file's TOML as read: CatalogError, one line naming the file, if it nests deeper than
    :data:`MAX_TOML_DEPTH` or is not valid TOML."""
    depth = _toml_depth(text)
    if depth > MAX_TOML_DEPTH:
        raise CatalogError(f"{filename}: nests {depth:,} deep; a catalog file nests at most {MAX_TOML_DEPTH} deep")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise CatalogError(f"{filename}: not valid TOML: {err}") from None


def _parse(text: str, filename: str, table: str, cls: type[Preset]) -> tuple[dict[str, Preset], dict[str, str]]:
    return validate_presets(read_toml(text, filename), filename, table, cls)


def validate_presets(
    raw: dict[str, Any], filename: str, table: str, cls: type[Preset]
) -> tuple[dict[str, Preset], dict[str, str]]:
    """The presets and sources of a file that must be right throughout (the shipped ones): CatalogError, one line
    naming the file, the preset and the field, at the first problem."""
    loaded = _collect(raw, filename, table, cls)
    problem = loaded.first_problem()
    if problem:
        raise CatalogError(problem)
    return loaded.presets, loaded.sources


def _got(error: Any) -> str:
    """``, got true`` for a value of the wrong kind, as the TOML file spells it; "" for other errors."""
    if not error["type"].endswith(("_type", "finite_number")) or "input" not in error:
        return ""
    value = error["input"]
    if isinstance(value, bool):
        return f", got {str(value).lower()}"
    if isinstance(value, str):
        return f", got the text {value[:40]!r}"
    return f", got {value!r}"[:60] if isinstance(value, (int, float)) else ""


def _check_preset(pid: str, body: Any, filename: str, cls: type[Preset], sources: dict[str, str]) -> Preset:
    if not isinstance(body, dict):
        raise CatalogError(f"{filename}: {pid} must be a table")
    try:
        preset = cls.model_validate({"id": pid, **body})
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "preset"
        raise CatalogError(f"{filename}: {pid}.{where}: {first['msg']}{_got(first)}") from None
    for name in preset.FIGURES:
        if preset.figure(name) is None and name not in preset.unavailable:
            continue
        key = preset.unavailable.get(name) or preset.source_key(name)
        if key not in sources:
            raise CatalogError(f"{filename}: {pid}.{name}: source {key!r} is not in [sources]")
    return preset


def _names_of(pid: str, body: Any) -> tuple[str, ...]:
    """A preset's id and whatever of its aliases can be read, also when the preset is refused."""
    aliases = body.get("aliases") if isinstance(body, dict) else None
    if isinstance(aliases, list):
        return (pid, *(a for a in aliases if isinstance(a, str)))
    return (pid,)


def _collect(raw: dict[str, Any], filename: str, table: str, cls: type[Preset]) -> _Loaded:
    """Every preset of a file checked on its own: the good ones, and each bad one with its reason.

    A problem with the file as a whole (an unexpected top-level table, a malformed [sources]) raises
    CatalogError. Two presets sharing a name (an id or an alias, compared as lookups compare them:
    case-insensitively, spaces and underscores as hyphens) are both refused: neither may silently win.
    """
    unknown = set(raw) - {"sources", table}
    if unknown:
        raise CatalogError(f"{filename}: unexpected top-level table(s) {', '.join(sorted(unknown))}")
    sources = raw.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, str) and v.strip() for v in sources.values()):
        raise CatalogError(f"{filename}: [sources] must map keys to non-empty citations")
    bodies = raw.get(table, {})
    if not isinstance(bodies, dict):
        raise CatalogError(f"{filename}: [{table}] must be a table of presets")
    loaded = _Loaded({}, sources)
    for pid, body in bodies.items():
        try:
            loaded.presets[pid] = _check_preset(pid, body, filename, cls, sources)
        except CatalogError as err:
            loaded.refused[pid] = (_names_of(pid, body), err.message)
    owner: dict[str, tuple[str, str]] = {}  # name key -> (preset id, the name as written)
    for pid, preset in list(loaded.presets.items()):
        for field_name, name in [("id", pid)] + [("aliases", a) for a in preset.aliases]:
            first = owner.setdefault(preset_key(name), (pid, name))
            if first[0] == pid:
                continue
            reason = (
                f"{filename}: {pid}.{field_name}: the name {name!r} is also {first[1]!r} of the preset {first[0]!r} "
                "(names match case-insensitively, spaces and underscores as hyphens); give each preset its own names"
            )
            for clash in (first[0], pid):
                if clash in loaded.presets:
                    loaded.refused[clash] = (_names_of(clash, bodies[clash]), reason)
                    del loaded.presets[clash]
    return loaded


def _load_file(filename: str, table: str, cls: type[Preset]) -> tuple[dict[str, Preset], dict[str, str]]:
    text = resources.files(__package__).joinpath(filename).read_text(encoding="utf-8")
    return _parse(text, filename, table, cls)


_FILES: dict[Kind, tuple[str, str, type[Preset]]] = {
    "model": ("models.toml", "models", ModelPreset),
    "accelerator": ("accelerators.toml", "accelerators", AcceleratorPreset),
}


def user_catalog_dir() -> Path:
    """The folder holding the user's own presets: ``$XLSXPLAN_CATALOG_DIR``, else the platform config folder."""
    env = os.environ.get("XLSXPLAN_CATALOG_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_config_path("xlsxplan") / "catalog"


def _merge(kind: Kind, shipped: tuple[dict[str, Preset], dict[str, str]], user: _Loaded, origin: str) -> _Table[Preset]:
    """The shipped presets plus the user's good ones. A user preset is refused (the shipped ones never are) if it
    takes a shipped preset's name or alias, or cites a user source whose key is a shipped source's with another
    citation (the shipped citation would silently win)."""
    shipped_table = _Table(kind, *shipped)
    presets, sources = dict(shipped[0]), dict(shipped[1])
    refused = dict(user.refused)
    clashing = {}
    for key, citation in user.sources.items():
        if sources.get(key, citation) != citation:
            clashing[key] = (
                f"{origin}: source {key!r} is the key of a shipped source with another citation; rename it in "
                f"[sources] and where the presets name it (xlsxplan's own keys start with '{USER_SOURCE_PREFIX}')"
            )
        else:
            sources[key] = citation
    user_ids = []
    for pid, preset in user.presets.items():
        names = (pid, *preset.aliases)
        reason = next(
            (
                f"{origin}: user preset {pid!r} takes the name {name!r} of the shipped preset {hit!r}; "
                "rename it (a user preset may not shadow a shipped one)"
                for name in names
                if (hit := shipped_table._index.get(preset_key(name))) is not None
            ),
            None,
        )
        cited = {preset.source, *preset.sources.values(), *preset.unavailable.values()}
        reason = reason or next((clashing[k] for k in sorted(cited) if k in clashing), None)
        if reason:
            refused[pid] = (names, reason)
        else:
            presets[pid] = preset
            user_ids.append(pid)
    index = {preset_key(name): reason for names, reason in refused.values() for name in names}
    return _Table(kind, presets, sources, frozenset(user_ids), index, user.unread)


def _read_user_toml(kind: Kind, folder: Path) -> tuple[Path, dict[str, Any]]:
    """The user's file of this kind and its TOML as read (empty when there is none); CatalogError if unreadable."""
    path = folder / _FILES[kind][0]
    if not path.is_file():
        return path, {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CatalogError(f"{path}: cannot be read: {err}") from None
    return path, read_toml(text, str(path))


def _read_user(kind: Kind, folder: Path) -> _Loaded:
    """The user's file of this kind, never raising: what cannot be used is kept as the reason."""
    _, table, cls = _FILES[kind]
    try:
        path, raw = _read_user_toml(kind, folder)
        return _collect(raw, str(path), table, cls)
    except CatalogError as err:
        return _Loaded({}, {}, unread=err.message)


USER_SOURCE_PREFIX = "user:"
"""What the source keys :func:`save_user_preset` writes start with, so they never meet a shipped key."""

STAT_INTERVAL = 1.0
"""Seconds between two looks at the user's catalog files: a lookup (GPU_SPEC) would otherwise spend most of its time
asking the file system whether they changed. :func:`save_user_preset` makes the next lookup look at once."""

_cache: dict[str, Any] = {}


def shipped_presets(kind: Kind) -> dict[str, Preset]:
    """The shipped presets of one kind (``"accelerator"``, ``"model"``), by id, without the user's."""
    shipped = _cache.get("shipped") or {k: _load_file(*spec) for k, spec in _FILES.items()}
    presets: dict[str, Preset] = shipped[kind][0]
    return presets


def _stamp(folder: Path) -> tuple:
    stamp: list[object] = [str(folder)]
    for filename, _, _ in _FILES.values():
        try:
            st = (folder / filename).stat()
            stamp.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stamp.append(None)
    return tuple(stamp)


def _now() -> float:
    return time.monotonic()


def refresh() -> None:
    """Make the next lookup look at the user's files at once: after editing them by hand in the same process."""
    _cache.pop("looked", None)


def load_catalog() -> Catalog:
    """The shipped catalog merged with the user's presets; parsed once, re-read when a user file changes.

    Whether a user file changed is asked at most once every :data:`STAT_INTERVAL` seconds for the same folder.
    A bad user file never breaks the shipped presets: see :func:`catalog_problems`.
    """
    env = os.environ.get("XLSXPLAN_CATALOG_DIR")
    now = _now()
    if _cache.get("env", ()) == env and now - _cache.get("looked", -STAT_INTERVAL) < STAT_INTERVAL:
        return _cache["catalog"]
    if "shipped" not in _cache:
        _cache["shipped"] = {kind: _load_file(*spec) for kind, spec in _FILES.items()}
    folder = user_catalog_dir()
    stamp = _stamp(folder)
    if _cache.get("stamp") != stamp:
        shipped = _cache["shipped"]
        tables = {
            kind: _merge(kind, shipped[kind], _read_user(kind, folder), str(folder / _FILES[kind][0]))
            for kind in _FILES
        }
        # each kind's presets are of the class _FILES gives it
        models = cast("_Table[ModelPreset]", tables["model"])
        accelerators = cast("_Table[AcceleratorPreset]", tables["accelerator"])
        _cache["catalog"] = Catalog(models, accelerators)
        _cache["stamp"] = stamp
    _cache["env"], _cache["looked"] = env, now
    return _cache["catalog"]


PRICES_FILE = "prices.toml"
"""The shipped rental prices per GPU-hour: one table per basis, one entry per accelerator id (see :class:`Prices`)."""

PRICE_BASES: dict[str, str] = {"on_demand": "on demand", "committed": "committed"}
"""The price table's bases: its key in prices.toml -> how it reads in a sentence."""

STALE_AFTER_DAYS = 365
"""A price older than this on the day it is used is flagged beside the result [days]."""


class Prices:
    """The shipped rental price of each accelerator and basis that has one, found by any name of the accelerator.

    ``presets`` maps a basis (a key of :data:`PRICE_BASES`) to a map of accelerator id (as accelerators.toml spells
    it) -> :class:`PricePreset`; ``sources`` holds the citations and ``titles`` a short title of each (at most 35
    characters, for a sheet's Source column). A name is resolved through the accelerator catalog
    (``H100`` is ``H100-SXM``), so an accelerator's aliases price it too; a user's accelerator preset has no shipped
    price.
    """

    def __init__(
        self, presets: dict[str, dict[str, PricePreset]], sources: dict[str, str], titles: dict[str, str]
    ) -> None:
        self.presets = presets
        self.sources = sources
        self.titles = titles

    def ids(self, basis: str = "on_demand") -> list[str]:
        """The accelerator ids that have a price on ``basis``, in file order."""
        return list(self.presets[basis])

    def get(self, gpu: str, basis: str = "on_demand") -> PricePreset:
        """The price of an accelerator on ``basis`` by any of its names; UnknownPresetError for a name the catalog
        lacks, NotAvailableError (``#N/A``) for an accelerator without a shipped price on that basis."""
        preset = load_catalog().accelerators.get(gpu)
        table = self.presets[basis]
        price = table.get(preset.id)
        if price is None:
            raise NotAvailableError(
                f"{preset.id} has no {PRICE_BASES[basis]} rental price in the catalog ({PRICES_FILE} prices "
                f"{', '.join(table)}): give your own price per GPU-hour",
                "gpu",
            )
        return price

    def citation(self, gpu: str, basis: str = "on_demand") -> str:
        """Where the price comes from, with its date, basis, offer and region, in one line."""
        price = self.get(gpu, basis)
        return (
            f"{self.sources[price.source]}; as of {price.as_of.isoformat()}, {PRICE_BASES[basis]} "
            f"({price.offer}), {price.region}"
        )

    def stale(self, gpu: str, basis: str = "on_demand", today: datetime.date | None = None) -> bool:
        """Whether the price is older than :data:`STALE_AFTER_DAYS` on ``today`` (default: this day)."""
        day = today or datetime.date.today()
        return (day - self.get(gpu, basis).as_of).days > STALE_AFTER_DAYS


TITLE_CHARS = 35
"""The most characters of a source's short title ([titles] of costs.toml and prices.toml): a sheet's Source column."""


def check_titles(titles: Any, sources: dict[str, str], filename: str) -> dict[str, str]:
    """A file's [titles], checked: a short title of 1 to :data:`TITLE_CHARS` characters for every key of
    [sources], and no title for a key it lacks (CatalogError, one line naming the file and the key)."""
    if not isinstance(titles, dict):
        raise CatalogError(f"{filename}: [titles] must map the keys of [sources] to short titles")
    for key in sources:
        title = titles.get(key)
        if not isinstance(title, str) or not title.strip() or len(title) > TITLE_CHARS:
            raise CatalogError(
                f"{filename}: titles.{key}: give every source a short title of 1 to {TITLE_CHARS} characters"
            )
    stray = set(titles) - set(sources)
    if stray:
        raise CatalogError(f"{filename}: titles.{sorted(stray)[0]}: not a key of [sources]")
    return dict(titles)


def parse_prices(text: str, filename: str = PRICES_FILE) -> Prices:
    """A price table's text, validated: one table per basis of :data:`PRICE_BASES`, each entry's figure positive,
    its date a date, its source in [sources] with a short title in [titles], and its key the id of an accelerator of
    the shipped catalog, so that one accelerator has at most one price per basis (an alias as a key is refused, as
    a duplicate key is by TOML itself). CatalogError, one line naming the file and the entry, otherwise."""
    raw = read_toml(text, filename)
    unknown = set(raw) - {"sources", "titles", *PRICE_BASES}
    if unknown:
        raise CatalogError(f"{filename}: unexpected top-level table(s) {', '.join(sorted(unknown))}")
    shipped = _cache.get("shipped") or {kind: _load_file(*spec) for kind, spec in _FILES.items()}
    accelerators = shipped["accelerator"][0]
    tables: dict[str, dict[str, PricePreset]] = {}
    sources: dict[str, str] = {}
    for basis in PRICE_BASES:
        part = {"sources": raw.get("sources", {}), basis: raw.get(basis, {})}
        presets, sources = validate_presets(part, filename, basis, PricePreset)
        for pid in presets:
            if pid not in accelerators:
                close = difflib.get_close_matches(pid, list(accelerators), n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                raise CatalogError(f"{filename}: {basis}.{pid} is not an accelerator id of accelerators.toml{hint}")
        tables[basis] = {pid: p for pid, p in presets.items() if isinstance(p, PricePreset)}
    return Prices(tables, sources, check_titles(raw.get("titles", {}), sources, filename))


def load_prices() -> Prices:
    """The shipped rental prices (``prices.toml``), parsed and validated once (:func:`parse_prices`)."""
    if "prices" not in _cache:
        text = resources.files(__package__).joinpath(PRICES_FILE).read_text(encoding="utf-8")
        _cache["prices"] = parse_prices(text)
    prices: Prices = _cache["prices"]
    return prices


def catalog_problems() -> list[str]:
    """What in the user's catalog files cannot be used, one line each naming the file (empty when all is well).

    A user file that is not valid TOML, or a user preset that breaks the schema, shares a name with another preset
    or takes a shipped preset's name, is left out; everything else keeps working. A lookup of a name it holds
    raises CatalogError with the reason (``#VALUE!`` in a cell); the command line prints these lines as warnings.
    """
    return load_catalog().problems


def figure_unit(kind: Kind, field: str) -> tuple[str, bool]:
    """The unit of a figure of MODEL_SPEC (``kind="model"``) or GPU_SPEC (``"accelerator"``) and whether it is a
    whole number: ``("TB/s", False)`` for ``bandwidth_tb_s``, ``("count", True)`` for ``layers``. The field is
    matched as the lookups match it; KeyError if it is no figure."""
    cls = _FILES[kind][2]
    key = field.strip().lower()
    if key not in cls.FIGURES:
        raise KeyError(field)
    return cls.unit(key), cls.whole(key)


def user_preset_ids(kind: Kind) -> list[str]:
    """The ids of the user's own presets of one kind that are loaded, in file order (``xlsxplan model list``)."""
    catalog = load_catalog()
    table = catalog.models if kind == "model" else catalog.accelerators
    return [pid for pid in table.presets if pid in table.user]


def save_user_preset(
    kind: Kind,
    preset_id: str,
    figures: dict[str, Any],
    source: str,
    *,
    field_sources: dict[str, str] | None = None,
    aliases: tuple[str, ...] = (),
    unavailable: dict[str, str] | None = None,
    note: str = "",
    replace: bool = False,
) -> Path:
    """Add a preset to the user's catalog file, validated exactly as shipped presets are; return the file.

    ``source`` is the citation for every figure (a file name, a benchmark run), ``field_sources`` per-field ones,
    ``unavailable`` maps a figure that does not exist to its reason. Refuses a name a shipped preset holds, an
    existing user preset unless ``replace``, and to write a file any of whose presets would not load (CatalogError
    naming the file, the preset and the field): loading is lenient with a hand-edited file, saving is not.
    """
    folder = user_catalog_dir()
    ensure_folder(folder)
    with _locked(folder):  # read, change and write as one step: two writers never lose each other's preset
        return _save_locked(
            kind, folder, preset_id, figures, source, field_sources, aliases, unavailable, note, replace
        )


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold the user catalog's lock (``.lock`` in its folder) while the block runs: an exclusive ``flock`` on POSIX,
    ``msvcrt.locking`` on Windows; a second writer waits for the first."""
    with open(folder / ".lock", "a+b") as handle:
        if sys.platform == "win32":  # pragma: no cover - Windows
            import msvcrt

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _source_key(preset_id: str, data: dict[str, Any], table: str) -> str:
    """The [sources] key of a user preset's citation: its name in letters and digits, with a short hash of the whole
    name where that is empty (a name in another script) or another preset of the file holds the same key, so that
    two names never share one citation (``模型`` and ``模組`` reduce to the same nothing)."""
    clean = re.sub(r"[^A-Za-z0-9]+", "-", preset_id).strip("-").lower()
    slug = USER_SOURCE_PREFIX + clean
    others = {
        body.get("source") for pid, body in data.get(table, {}).items() if pid != preset_id and isinstance(body, dict)
    }
    if not clean or slug in others:
        digest = hashlib.sha256(preset_id.encode("utf-8")).hexdigest()[:10]
        slug = f"{USER_SOURCE_PREFIX}{clean + '-' if clean else ''}{digest}"
    return slug


def _save_locked(
    kind: Kind,
    folder: Path,
    preset_id: str,
    figures: dict[str, Any],
    source: str,
    field_sources: dict[str, str] | None,
    aliases: tuple[str, ...],
    unavailable: dict[str, str] | None,
    note: str,
    replace: bool,
) -> Path:
    import tomli_w

    filename, table, cls = _FILES[kind]
    path, data = _read_user_toml(kind, folder)  # a file that is not TOML: CatalogError, naming it
    data.setdefault("sources", {})
    data.setdefault(table, {})
    if not isinstance(data[table], dict) or not isinstance(data["sources"], dict):
        validate_presets(data, str(path), table, cls)  # the one-line reason
    if preset_id in data[table] and not replace:
        raise CatalogError(
            f"{path}: a user preset {preset_id!r} exists already; add --replace (replace=True) to overwrite it"
        )
    slug = _source_key(preset_id, data, table)
    data["sources"][slug] = source
    body: dict[str, Any] = {"source": slug}
    if aliases:
        body["aliases"] = list(aliases)
    if note:
        body["note"] = note
    body.update({k: v for k, v in figures.items() if v is not None})
    if field_sources:
        body["sources"] = {}
        for name, citation in field_sources.items():
            data["sources"][f"{slug}-{name}"] = citation
            body["sources"][name] = f"{slug}-{name}"
    if unavailable:
        body["unavailable"] = {}
        for name, reason in unavailable.items():
            data["sources"][f"{slug}-{name}-unavailable"] = reason
            body["unavailable"][name] = f"{slug}-{name}-unavailable"
    data[table][preset_id] = body
    text = tomli_w.dumps(data)
    # the file as it would be written, checked with the same rules as loading, before anything is written
    shipped = _load_file(filename, table, cls)
    problems = _merge(kind, shipped, _collect(read_toml(text, str(path)), str(path), table, cls), str(path)).problems
    if problems:
        raise CatalogError(problems[0])
    atomic_write_text(path, text)
    refresh()  # the next lookup sees the new preset
    return path
