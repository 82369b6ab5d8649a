"""Several workloads on one fleet: shared replicas, model routing and the bill split by team.

A fleet serves several products at once: a support assistant, a coding agent, a batch summariser, each with its own
model, traffic shape and targets. :func:`portfolio` plans each workload with the plan search (:func:`.search.plan`,
the one serving model), then the fleet:

* **Streams.** A workload sends all its requests to one model, or splits them between models (routing: a share of
  the requests to each). Each (workload, model) pair is a stream with its share of the requests, the workload's
  lengths, targets and hourly shape.
* **Alone.** Each stream planned by itself: the plan's cheapest feasible aggregated option, sized for its own peak
  hour (``peak factor = 24 x the busiest hour's share / the day's shares``) with its own spares and minimum replicas.
* **Shared.** Streams of the same model on the same deployment (accelerator, weight and KV-cache precisions, GPUs per
  replica) share its replicas. A stream's load at hour ``h`` is its requests a second that hour over what one
  replica serves of it (the plan's ``requests_per_s_per_replica``): replicas' worth of work. A pool runs
  ``FLEET_REPLICAS(max over h of the summed loads, 1, spare, min_replicas)`` replicas, so that peaks which do not
  coincide share capacity. A pool meets every member's targets: each member's capacity is planned at the strictest
  targets of the pool (the highest speed per user, the shortest first token). A workload given no shape peaks in
  every hour (its peak factor's hour), the safe reading: its peak coincides with every other's.
* **The assignment.** Every assignment of streams to deployments is priced (per model: streams of different models
  never share), over each stream's :data:`CANDIDATES` cheapest feasible deployments and those of the other streams of
  its model, at most :data:`MOST_ASSIGNMENTS` per model; the cheapest that meets every target is the fleet.
* **The bill split** (chargeback): each pool's monthly cost is shared by its streams in proportion to the GPU time
  they use, their load summed over the day (``gpu-time``, the default), or to their own peak load (``peak``, the
  alternative: each pays for the capacity its peak needs). Idle and spare replicas are shared the same way. Per
  million tokens: the allocated cost over the month's prompt, answer and reasoning tokens.
* **Routing.** A workload split between models is also priced unrouted, all its requests on its reference model
  (the split's ``reference``, else its largest model): the fleet's saving from routing, beside the quality the user
  gives each model (the share-weighted score of the split against the reference's). No score is assumed: without
  one the saving is reported alone.

Only aggregated serving is shared (prefill and decode on the same replicas); disaggregated pools and queueing
percentile targets stay with the single-workload plan.

References
----------
.. [1] "Back-of-the-Envelope Estimation for LLM Systems", sections 1, 6 ("at least two replicas"; "send easy requests
   to the small model").
.. [2] FinOps Foundation, "Allocation" capability (showback and chargeback: shared costs split by a stated rule).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import product
from pathlib import Path
from typing import Any

from .. import catalog
from ..catalog import finance
from ..catalog.store import read_toml
from ..core import serving, traffic
from ..domains import (
    Count,
    Flag,
    HoursPerPeriod,
    LongText,
    Name,
    PeakFactor,
    PerDay,
    SecondsOrZero,
    Spare,
    Tokens,
    TokensOrZero,
    TokensPerSOrZero,
    checked,
    domain_of,
)
from ..errors import ArgumentError, XlsxplanError
from .cells import Remembered, catalog_state
from .search import Assumptions, Option, Plan, Targets, Traffic, plan

__all__ = [
    "ALLOCATIONS",
    "CANDIDATES",
    "FIELDS",
    "MOST_ASSIGNMENTS",
    "Portfolio",
    "Route",
    "Workload",
    "load_workloads",
    "parse_workloads",
    "portfolio",
    "portfolio_table",
]

ALLOCATIONS = ("gpu-time", "peak")
"""How a shared pool's cost is split: by the GPU time each stream uses (its load summed over the day), or by each
stream's own peak load."""

ALLOCATION_RULES = {
    "gpu-time": "each shared deployment's monthly cost split by the GPU time each workload uses (its load in "
    "replicas summed over the 24 hours); idle and spare replicas shared the same way",
    "peak": "each shared deployment's monthly cost split by each workload's own peak load (the replicas its busiest "
    "hour needs); idle and spare replicas shared the same way",
}

CANDIDATES = 6
"""Deployments tried per stream: its cheapest feasible ones alone (then those of the other streams of its model)."""

MOST_ASSIGNMENTS = 4096
"""Most assignments priced per model; fewer candidates are kept per stream until the product fits."""

MAX_WORKLOADS = 200
"""Most workloads in one table."""

HOURS = 24

FIELDS: dict[str, str] = {
    "name": "the workload's name [text]",
    "team": "the team billed for it [text]",
    "model": "a preset model, or a routing split 'MODEL=SHARE|MODEL=SHARE' (shares of requests, summing to 1) [name]",
    "quality": "optional: the user's quality score of each model, '|'-separated in the split's order [score]",
    "reference": "optional, with a split: the model all requests would go to unrouted (default: its largest) [name]",
    "requests_per_day": "requests in a day [requests/day]",
    "shape": "optional: a demand profile of demand.toml (business-day, flat) or 24 hourly shares, space-separated, "
    "from midnight [shares]",
    "peak_factor": "optional, without a shape: the peak hour over the day's average, the peak taken to coincide "
    "with every other workload's (default 3) [ratio]",
    "prompt_tokens": "mean prompt [tokens]",
    "prompt_p95": "optional: 95th-percentile prompt (default: the mean) [tokens]",
    "output_tokens": "visible answer per request [tokens]",
    "reasoning_tokens": "optional: hidden reasoning per request (default 0) [tokens]",
    "tokens_per_s": "optional: slowest decode each user may see (default: none) [tokens/s]",
    "ttft_s": "optional: longest wait for the first token of the p95 prompt (default: none) [s]",
}
"""The columns of a workloads table (CSV header, TOML keys), each with its meaning and unit."""

_REQUIRED_FIELDS = ("name", "team", "model", "requests_per_day", "prompt_tokens", "output_tokens")

_NUMBERS: dict[str, Any] = {
    "requests_per_day": PerDay,
    "peak_factor": PeakFactor,
    "prompt_tokens": Tokens,
    "prompt_p95": TokensOrZero,
    "output_tokens": Tokens,
    "reasoning_tokens": TokensOrZero,
    "tokens_per_s": TokensPerSOrZero,
    "ttft_s": SecondsOrZero,
}


class WorkloadsError(ArgumentError):
    """A workloads table that cannot be read: one line naming the row, the field and what is allowed."""


# --- what is asked ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """A share of a workload's requests sent to one model."""

    model: str
    share: float
    """Share of the workload's requests [fraction]."""
    quality: float | None = None
    """The user's quality score for this model on this workload; None: not given (none is assumed)."""


@dataclass(frozen=True)
class Workload:
    """One product's traffic: its team, model or routing split, requests, hourly shape, lengths and targets."""

    name: str
    team: str
    routes: tuple[Route, ...]
    requests_per_day: float
    prompt_tokens: float
    output_tokens: float
    shape: tuple[float, ...] | None = None
    """24 hourly shares of the day's demand, any scale; None: the peak (``peak_factor``) in every hour."""
    shape_name: str = ""
    """The demand profile the shape comes from, or ``given``; empty without a shape."""
    peak_factor: float = 3.0
    prompt_p95: float | None = None
    reasoning_tokens: float = 0.0
    tokens_per_s: float | None = None
    ttft_s: float | None = None
    reference: str | None = None
    """With a split: the model every request would go to unrouted; None: one model, no split."""

    @property
    def peak(self) -> float:
        """The peak hour over the day's average [ratio]."""
        if self.shape is None:
            return self.peak_factor
        return HOURS * max(self.shape) / sum(self.shape)

    def hourly_shares(self) -> tuple[float, ...]:
        """Each hour's demand as a share of the peak hour's [fraction]."""
        if self.shape is None:
            return (1.0,) * HOURS
        top = max(self.shape)
        return tuple(s / top for s in self.shape)

    @property
    def tokens_per_request(self) -> float:
        return self.prompt_tokens + self.output_tokens + self.reasoning_tokens


# --- reading a workloads table ------------------------------------------------------------------------------------


def _where(row: int, name: str) -> str:
    return f"workloads row {row}" + (f" ({name})" if name else "")


def _fail(row: int, name: str, field_: str, message: str) -> WorkloadsError:
    return WorkloadsError(f"{_where(row, name)}: {field_} {message}", "workloads")


def _number(row: int, name: str, key: str, value: Any) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        try:
            value = float(value.replace("_", "").strip())
        except ValueError:
            domain = domain_of(_NUMBERS[key])
            raise _fail(row, name, key, f"must be {domain.describe()}, got {value.strip()!r}") from None  # type: ignore[union-attr]
    try:
        return float(domain_of(_NUMBERS[key]).check(key, value))  # type: ignore[union-attr]
    except XlsxplanError as err:
        raise WorkloadsError(f"{_where(row, name)}: {err.message}", "workloads") from None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        return str(value)
    return value.strip()


def _shape(row: int, name: str, value: Any) -> tuple[tuple[float, ...] | None, str]:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, ""
    if isinstance(value, str) and not any(c.isdigit() for c in value.split()[0][:1]):
        try:
            return tuple(finance.demand_profile(value.strip())), value.strip()
        except XlsxplanError as err:
            raise _fail(row, name, "shape", f"must be a demand profile or 24 hourly shares: {err.message}") from None
    items = value.split() if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else [value]
    allowed = "must be a demand profile name (business-day, flat) or 24 hourly shares of at least 0, not all 0"
    if len(items) != HOURS:
        raise _fail(row, name, "shape", f"{allowed}, got {len(items)} values")
    shares = []
    for item in items:
        try:
            x = float(item)
        except (TypeError, ValueError):
            raise _fail(row, name, "shape", f"{allowed}, got {item!r}") from None
        if isinstance(item, bool) or not math.isfinite(x) or x < 0:
            raise _fail(row, name, "shape", f"{allowed}, got {item!r}")
        shares.append(x)
    if not any(shares):
        raise _fail(row, name, "shape", f"{allowed}, got only zeros")
    return tuple(shares), "given"


def _routes(row: int, name: str, model: Any, quality: Any) -> tuple[Route, ...]:
    text = _text(model)
    if not text:
        raise _fail(row, name, "model", "is required: a preset model or a split 'MODEL=SHARE|MODEL=SHARE'")
    parts = [p.strip() for p in text.split("|")]
    scores: list[Any]
    if quality is None or (isinstance(quality, str) and not quality.strip()):
        scores = [None] * len(parts)
    elif isinstance(quality, (list, tuple)):
        scores = list(quality)
    else:
        scores = _text(quality).split("|")
    if len(scores) != len(parts):
        raise _fail(
            row, name, "quality", f"must give one score per model of the split ({len(parts)}), got {len(scores)}"
        )
    routes = []
    for part, score in zip(parts, scores, strict=True):
        model_name, sep, share_text = part.partition("=")
        model_name = model_name.strip()
        if not model_name:
            raise _fail(row, name, "model", f"must name a model before each '=', got {text!r}")
        if len(parts) > 1 and not sep:
            raise _fail(row, name, "model", f"must give each model of a split its share, 'MODEL=SHARE', got {part!r}")
        share = 1.0
        if sep:
            try:
                share = float(share_text)
            except ValueError:
                share = math.nan
            if not (0 < share <= 1):
                raise _fail(
                    row,
                    name,
                    "model",
                    f"share of {model_name} must be a fraction above 0 and at most 1, got {share_text.strip()!r}",
                )
        q: float | None = None
        if score is not None and _text(score):
            try:
                q = float(score) if not isinstance(score, str) else float(score.strip())
            except (TypeError, ValueError):
                q = math.nan
            if isinstance(score, bool) or not math.isfinite(q):
                raise _fail(row, name, "quality", f"must be a number for each model of the split, got {score!r}")
        try:
            model_id = catalog.load_catalog().models.get(model_name).id
        except XlsxplanError as err:
            raise _fail(row, name, "model", f"must be a preset model: {err.message}") from None
        routes.append(Route(model_id, share, q))
    total = sum(r.share for r in routes)
    if abs(total - 1) > 1e-9:
        raise _fail(row, name, "model", f"shares must sum to 1, got {total:g}")
    if len({r.model for r in routes}) != len(routes):
        raise _fail(row, name, "model", "must name each model of a split once")
    return tuple(routes)


def _params_b(model: str) -> float:
    return float(catalog.load_catalog().models.get(model).params_b)


def _workload(row: int, raw: Mapping[str, Any]) -> Workload:
    unknown = [k for k in raw if k not in FIELDS]
    name = _text(raw.get("name"))
    if unknown:
        raise _fail(row, name, unknown[0], f"is not a workloads column; the columns are {', '.join(FIELDS)}")
    for key in _REQUIRED_FIELDS:
        if not _text(raw.get(key)) and not isinstance(raw.get(key), (int, float)):
            raise _fail(row, name, key, f"is required: {FIELDS[key]}")
    routes = _routes(row, name, raw.get("model"), raw.get("quality"))
    nums = {k: _number(row, name, k, raw.get(k)) for k in _NUMBERS}
    shape, shape_name = _shape(row, name, raw.get("shape"))
    if shape is not None and nums["peak_factor"] is not None:
        raise _fail(row, name, "peak_factor", "must be left empty when shape is given (the shape sets the peak)")
    p95 = nums["prompt_p95"] or None
    if p95 is not None and p95 < nums["prompt_tokens"]:  # type: ignore[operator]
        raise _fail(row, name, "prompt_p95", f"must be at least prompt_tokens ({nums['prompt_tokens']:g}), got {p95:g}")
    reference = _text(raw.get("reference")) or None
    if reference is not None:
        if len(routes) == 1:
            raise _fail(row, name, "reference", "applies only to a routing split: leave it empty for one model")
        match = [r.model for r in routes if r.model.casefold() == reference.casefold()]
        if not match:
            models = ", ".join(r.model for r in routes)
            raise _fail(row, name, "reference", f"must be one of the split's models ({models}), got {reference!r}")
        reference = match[0]
    elif len(routes) > 1:
        reference = max(routes, key=lambda r: _params_b(r.model)).model
    return Workload(
        name=name,
        team=_text(raw.get("team")),
        routes=routes,
        requests_per_day=nums["requests_per_day"],  # type: ignore[arg-type]
        prompt_tokens=nums["prompt_tokens"],  # type: ignore[arg-type]
        output_tokens=nums["output_tokens"],  # type: ignore[arg-type]
        shape=shape,
        shape_name=shape_name,
        peak_factor=3.0 if nums["peak_factor"] is None else nums["peak_factor"],
        prompt_p95=p95,
        reasoning_tokens=nums["reasoning_tokens"] or 0.0,
        tokens_per_s=nums["tokens_per_s"] or None,
        ttft_s=nums["ttft_s"] or None,
        reference=reference,
    )


def parse_workloads(rows: Iterable[Mapping[str, Any]]) -> list[Workload]:
    """Workloads from rows of column -> value (:data:`FIELDS`), as a CSV's or a TOML's are read; numbers may be
    text. Raises :class:`WorkloadsError`, one line naming the row, the field and what is allowed."""
    out: list[Workload] = []
    for i, raw in enumerate(rows, 1):
        if len(out) >= MAX_WORKLOADS:
            raise WorkloadsError(f"workloads must hold at most {MAX_WORKLOADS} rows", "workloads")
        if all(not _text(v) for v in raw.values() if not isinstance(v, (int, float, list, tuple))) and not any(
            isinstance(v, (int, float, list, tuple)) for v in raw.values()
        ):
            continue  # an empty row
        out.append(_workload(i, raw))
    if not out:
        raise WorkloadsError("workloads must hold at least one workload row under its header", "workloads")
    names = [w.name.casefold() for w in out]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise _fail(i + 1, out[i].name, "name", "must be unique: another row has the same name")
    return out


def csv_rows(text: str) -> list[dict[str, Any]]:
    """The rows of a workloads CSV (a header row naming :data:`FIELDS`' columns, then one row per workload)."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    lines = [r for r in reader if any(c.strip() for c in r)]
    if not lines:
        raise WorkloadsError(
            "workloads must start with a header row naming its columns: " + ", ".join(FIELDS), "workloads"
        )
    header = [h.strip().lower() for h in lines[0]]
    for h in header:
        if h not in FIELDS:
            raise WorkloadsError(
                f"workloads header: {h!r} is not a workloads column; the columns are {', '.join(FIELDS)}", "workloads"
            )
    rows = []
    for k, line in enumerate(lines[1:], 1):
        if len(line) > len(header):
            raise WorkloadsError(
                f"workloads row {k}: {len(line)} values under a header of {len(header)} columns", "workloads"
            )
        rows.append(dict(zip(header, line)))
    return rows


def load_workloads(path: str | Path) -> list[Workload]:
    """Workloads from a file: ``.toml`` (``[[workload]]`` tables with :data:`FIELDS`' keys) or ``.csv`` (a header
    row, then one row per workload)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".toml", ".csv"):
        raise WorkloadsError(f"workloads: {p.name} must be a .toml or a .csv file", "workloads")
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise WorkloadsError(f"workloads: cannot read {p}: {err.strerror or err}", "workloads") from None
    except UnicodeDecodeError:
        raise WorkloadsError(f"workloads: {p} is not UTF-8 text", "workloads") from None
    if suffix == ".toml":
        data = read_toml(text, p.name)
        extra = [k for k in data if k != "workload"]
        items = data.get("workload")
        if extra or not isinstance(items, list) or not all(isinstance(r, dict) for r in items):
            raise WorkloadsError(
                f"workloads: {p.name} must hold [[workload]] tables only (keys: {', '.join(FIELDS)})", "workloads"
            )
        return parse_workloads(items)
    return parse_workloads(csv_rows(text))


# --- what comes back ----------------------------------------------------------------------------------------------


@dataclass
class Stream:
    """A workload's share of requests on one model, planned alone and placed in the fleet."""

    workload: Workload
    route: Route
    alone: Option | None = None
    """The cheapest feasible aggregated option planned alone; None when none is feasible."""
    alone_reason: str = ""
    pool: int | None = None
    load: tuple[float, ...] = ()
    """Replicas' worth of work each hour in its pool [replicas]."""
    usd_per_month: float = 0.0
    """Its share of its pool's cost [USD/month]."""

    @property
    def requests_per_day(self) -> float:
        return self.workload.requests_per_day * self.route.share

    def label(self) -> str:
        return self.workload.name if len(self.workload.routes) == 1 else f"{self.workload.name} -> {self.route.model}"


@dataclass
class Pool:
    """A deployment whose replicas its streams share."""

    model: str
    option: Option
    members: list[int]
    replicas: int
    peak_hour: int
    peak_load: float
    usd_per_month: float
    targets: Targets

    @property
    def gpus(self) -> int:
        return self.replicas * self.option.gpus_per_replica

    def label(self) -> str:
        o = self.option
        return f"{self.model} on {o.gpu} {o.weights}/{o.kv} x{o.gpus_per_replica}"


@dataclass
class Portfolio:
    """The fleet for several workloads: pools, the bill split, and against planning each alone."""

    workloads: list[Workload]
    streams: list[Stream]
    pools: list[Pool]
    allocation: str
    rank_by: str
    hours_per_month: float
    prices: dict[str, tuple[float, str]]
    routing: list[dict[str, Any]] = field(default_factory=list)
    assignments_tried: int = 0
    plans_run: int = 0

    @property
    def usd_per_month(self) -> float:
        return sum(p.usd_per_month for p in self.pools)

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    @property
    def alone_usd_per_month(self) -> float:
        return sum(s.alone.view(self.rank_by).usd_per_month for s in self.streams if s.alone)  # type: ignore[misc]

    @property
    def alone_gpus(self) -> int:
        return sum(s.alone.view(self.rank_by).gpus for s in self.streams if s.alone)  # type: ignore[misc]

    @property
    def saving_usd_per_month(self) -> float:
        return self.alone_usd_per_month - self.usd_per_month

    @property
    def rule(self) -> str:
        return ALLOCATION_RULES[self.allocation]

    def gpu_hours_per_day(self, s: Stream) -> float:
        """The GPU time the stream's work takes in a day, in its pool: its hourly loads summed, times GPUs per
        replica [GPU-hours/day]."""
        if s.pool is None:
            return 0.0
        return sum(s.load) * self.pools[s.pool].option.gpus_per_replica

    def tokens_m(self, s: Stream) -> float:
        """The stream's tokens a month (prompt, answer, reasoning) [millions]."""
        return s.requests_per_day * s.workload.tokens_per_request * self.hours_per_month / HOURS / 1e6

    def teams(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for s in self.streams:
            t = out.setdefault(s.workload.team, {"usd_per_month": 0.0, "alone_usd_per_month": 0.0, "tokens_m": 0.0})
            t["usd_per_month"] += s.usd_per_month
            t["alone_usd_per_month"] += s.alone.view(self.rank_by).usd_per_month if s.alone else 0.0  # type: ignore[operator]
            t["tokens_m"] += self.tokens_m(s)
        for t in out.values():
            t["usd_per_m_tokens"] = t["usd_per_month"] / t["tokens_m"]
        return out

    def rows(self) -> list[list[Any]]:
        """The chargeback table, header first: one row per stream, per team, per deployment, then the fleet."""
        out: list[list[Any]] = [list(TABLE_HEADER)]
        for s in self.streams:
            pool = self.pools[s.pool] if s.pool is not None else None
            alone = s.alone.view(self.rank_by) if s.alone else None
            out.append(
                [
                    "workload",
                    s.workload.name,
                    s.workload.team,
                    s.route.model,
                    s.route.share,
                    pool.label() if pool else "",
                    pool.replicas if pool else "",
                    pool.gpus if pool else "",
                    s.usd_per_month,
                    s.usd_per_month / self.tokens_m(s),
                    alone.usd_per_month if alone else "",
                    alone.usd_per_month - s.usd_per_month if alone else "",  # type: ignore[operator]
                    "" if s.route.quality is None else s.route.quality,
                ]
            )
        for team, t in self.teams().items():
            out.append(
                [
                    "team",
                    "",
                    team,
                    "",
                    "",
                    "",
                    "",
                    "",
                    t["usd_per_month"],
                    t["usd_per_m_tokens"],
                    t["alone_usd_per_month"],
                    t["alone_usd_per_month"] - t["usd_per_month"],
                    "",
                ]
            )
        for p in self.pools:
            names = ", ".join(self.streams[i].label() for i in p.members)
            out.append(
                ["deployment", names, "", p.model, "", p.label(), p.replicas, p.gpus, p.usd_per_month, "", "", "", ""]
            )
        tokens = sum(self.tokens_m(s) for s in self.streams)
        out.append(
            [
                "fleet",
                "",
                "",
                "",
                "",
                f"allocated by {self.allocation}: {self.rule}",
                sum(p.replicas for p in self.pools),
                self.gpus,
                self.usd_per_month,
                self.usd_per_month / tokens,
                self.alone_usd_per_month,
                self.saving_usd_per_month,
                "",
            ]
        )
        for r in self.routing:
            out.append(
                [
                    "routing",
                    r["workload"],
                    r["team"],
                    r["reference"],
                    "",
                    "unrouted: all requests on the reference",
                    "",
                    r["unrouted_gpus"],
                    r["unrouted_usd_per_month"],
                    "",
                    "",
                    r["saving_usd_per_month"],
                    "" if r["routed_quality"] is None else r["routed_quality"],
                ]
            )
        return out

    def to_json(self) -> dict[str, Any]:
        teams = self.teams()
        return {
            "allocation": {
                "rule": self.allocation,
                "text": self.rule,
                "alternative": [a for a in ALLOCATIONS if a != self.allocation],
            },
            "ranked_by": self.rank_by,
            "hours_per_month": self.hours_per_month,
            "gpus": {g: {"usd_per_gpu_hour": p, "source": src} for g, (p, src) in self.prices.items()},
            "workloads": [_stream_json(self, s) for s in self.streams],
            "deployments": [
                {
                    "model": p.model,
                    "gpu": p.option.gpu,
                    "weights": p.option.weights,
                    "kv": p.option.kv,
                    "gpus_per_replica": p.option.gpus_per_replica,
                    "workloads": [self.streams[i].label() for i in p.members],
                    "peak_hour": p.peak_hour,
                    "peak_load_replicas": p.peak_load,
                    "replicas": p.replicas,
                    "gpus": p.gpus,
                    "usd_per_month": p.usd_per_month,
                    "tokens_per_s_target": p.targets.tokens_per_s,
                    "ttft_target_s": p.targets.ttft_s,
                }
                for p in self.pools
            ],
            "teams": [{"team": k, **v} for k, v in teams.items()],
            "fleet": {
                "gpus": self.gpus,
                "usd_per_month": self.usd_per_month,
                "usd_per_m_tokens": self.usd_per_month / sum(self.tokens_m(s) for s in self.streams),
                "alone_gpus": self.alone_gpus,
                "alone_usd_per_month": self.alone_usd_per_month,
                "saving_usd_per_month": self.saving_usd_per_month,
            },
            "routing": self.routing,
            "search": {"assignments_tried": self.assignments_tried, "plans_run": self.plans_run},
        }


def _stream_json(p: Portfolio, s: Stream) -> dict[str, Any]:
    alone = s.alone.view(p.rank_by) if s.alone else None
    w = s.workload
    return {
        "workload": w.name,
        "team": w.team,
        "model": s.route.model,
        "share": s.route.share,
        "quality": s.route.quality,
        "requests_per_day": s.requests_per_day,
        "peak_factor": w.peak,
        "shape": w.shape_name or None,
        "deployment": p.pools[s.pool].label() if s.pool is not None else None,
        "gpu_hours_per_day": p.gpu_hours_per_day(s),
        "peak_load_replicas": max(s.load, default=0.0),
        "usd_per_month": s.usd_per_month,
        "tokens_per_month_m": p.tokens_m(s),
        "usd_per_m_tokens": s.usd_per_month / p.tokens_m(s),
        "alone": None
        if alone is None
        else {
            "option": s.alone.label(),  # type: ignore[union-attr]
            "replicas": alone.replicas,
            "gpus": alone.gpus,
            "usd_per_month": alone.usd_per_month,
        },
    }


TABLE_HEADER = (
    "row",
    "workload",
    "team",
    "model",
    "share",
    "deployment",
    "replicas",
    "gpus",
    "usd_per_month",
    "usd_per_m_tokens",
    "alone_usd_per_month",
    "saving_usd_per_month",
    "quality",
)
"""The columns of :meth:`Portfolio.rows`."""


# --- the search ---------------------------------------------------------------------------------------------------


def _key(o: Option) -> tuple[str, str, str, int]:
    return (o.gpu, o.weights, o.kv, o.gpus_per_replica)


def _strictest(targets: Iterable[Targets]) -> Targets:
    speeds = [t.tokens_per_s for t in targets if t.tokens_per_s is not None]
    ttfts = [t.ttft_s for t in targets if t.ttft_s is not None]
    return Targets(max(speeds) if speeds else None, min(ttfts) if ttfts else None)


class _Planner:
    """Each stream's plan at each set of targets, planned once."""

    def __init__(
        self, streams: list[Stream], gpus: Mapping[str, float | None] | None, a: Assumptions, rank_by: str
    ) -> None:
        self.streams, self.gpus, self.a, self.rank_by = streams, gpus, a, rank_by
        self.cache: dict[tuple[Workload, Route, Targets], Plan] = {}

    def plan(self, i: int, targets: Targets) -> Plan:
        s = self.streams[i]
        key = (s.workload, s.route, targets)
        if key not in self.cache:
            w = s.workload
            t = Traffic(
                s.requests_per_day,
                w.prompt_tokens,
                w.output_tokens,
                w.peak,
                w.prompt_p95,
                None,
                w.reasoning_tokens,
            )
            self.cache[key] = plan(s.route.model, t, targets, self.gpus, self.a, self.rank_by)
        return self.cache[key]

    def feasible(self, i: int, targets: Targets) -> dict[tuple[str, str, str, int], Option]:
        """The feasible options of stream ``i`` at ``targets``, by deployment, cheapest first."""
        p = self.plan(i, targets)
        out: dict[tuple[str, str, str, int], Option] = {}
        for o in p.feasible:
            if not o.speculative:
                out.setdefault(_key(o), o)
        return out


def _own_targets(w: Workload) -> Targets:
    return Targets(w.tokens_per_s, w.ttft_s)


def _pool_cost(
    planner: _Planner, members: list[int], key: tuple[str, str, str, int], price: float
) -> tuple[float, int, list[tuple[float, ...]], int, float, Targets, Option] | None:
    """A pool of ``members`` on deployment ``key``: (USD a month, replicas, each member's hourly load, peak hour, peak
    load, the pool's targets, the option it runs), or None when a member cannot meet the pool's targets there."""
    streams, a = planner.streams, planner.a
    targets = _strictest(_own_targets(streams[i].workload) for i in members)
    loads: list[tuple[float, ...]] = []
    option: Option | None = None
    for i in members:
        o = planner.feasible(i, targets).get(key)
        if o is None:
            return None
        option = option or o
        rps = o.view(planner.rank_by).extra["requests_per_s_per_replica"]
        s = streams[i]
        peak_rps = serving.peak_requests_per_s(s.requests_per_day, s.workload.peak)  # the plan's peak, exactly
        loads.append(tuple(peak_rps * share / rps for share in s.workload.hourly_shares()))
    hourly = [sum(load[h] for load in loads) for h in range(HOURS)]
    peak = max(hourly)
    hour = hourly.index(peak)
    replicas = int(traffic.fleet_replicas(peak, 1.0, a.spare, a.min_replicas))
    usd = replicas * key[3] * price * a.hours_per_month
    return usd, replicas, loads, hour, peak, targets, option  # type: ignore[return-value]


_Key = tuple[str, str, str, int]
"""A deployment: accelerator, weight and KV-cache precisions, GPUs per replica."""


def _search_model(
    planner: _Planner, members: list[int], prices: dict[str, tuple[float, str]]
) -> tuple[float, list[tuple[list[int], _Key]], int]:
    """The cheapest assignment of a model's streams to deployments: (USD a month, [(streams, deployment)], tried).

    Each stream takes a deployment, shared with the model's other streams there or kept to itself (a pool of its
    own on the same deployment: sharing at the strictest target can cost more than two pools)."""
    own = {i: planner.feasible(i, _own_targets(planner.streams[i].workload)) for i in members}
    solo = (False, True) if len(members) > 1 else (False,)
    k = CANDIDATES
    while True:
        tops = {i: list(own[i])[:k] for i in members}
        pooled = list(dict.fromkeys(key for i in members for key in tops[i]))
        cands = {i: [(key, x) for key in pooled if key in own[i] for x in solo] for i in members}
        if math.prod(len(c) for c in cands.values()) <= MOST_ASSIGNMENTS or k == 1:
            break
        k -= 1
    if math.prod(len(c) for c in cands.values()) > MOST_ASSIGNMENTS:  # each stream's cheapest, shared or not
        cands = {i: [(tops[i][0], False)] for i in members}
    memo: dict[tuple[tuple[int, ...], _Key], float | None] = {}
    best: tuple[float, list[tuple[list[int], _Key]]] | None = None
    tried = 0
    for choice in product(*(cands[i] for i in members)):
        tried += 1
        groups: dict[tuple[_Key, int], list[int]] = {}
        for i, (key, alone) in zip(members, choice, strict=True):
            groups.setdefault((key, i if alone else -1), []).append(i)
        total = 0.0
        for (key, _), group in groups.items():
            mk = (tuple(group), key)
            if mk not in memo:
                r = _pool_cost(planner, group, key, prices[key[0]][0])
                memo[mk] = None if r is None else r[0]
            cost = memo[mk]
            if cost is None:
                total = math.inf
                break
            total += cost
        if total < math.inf and (best is None or total < best[0] - 1e-9):
            best = (total, [(g, key) for (key, _), g in groups.items()])
    if best is None:
        return math.inf, [], tried
    return best[0], best[1], tried


def _fleet(planner: _Planner, prices: dict[str, tuple[float, str]], allocation: str) -> tuple[list[Pool], int]:
    streams = planner.streams
    pools: list[Pool] = []
    tried = 0
    by_model: dict[str, list[int]] = {}
    for i, s in enumerate(streams):
        s.pool, s.load, s.usd_per_month = None, (), 0.0
        if s.alone is not None:
            by_model.setdefault(s.route.model, []).append(i)
    for model, members in by_model.items():
        _, groups, n = _search_model(planner, members, prices)
        tried += n
        for group, key in groups:
            r = _pool_cost(planner, group, key, prices[key[0]][0])
            usd, replicas, loads, hour, peak, targets, option = r  # type: ignore[misc]
            pools.append(Pool(model, option, group, replicas, hour, peak, usd, targets))
            weights = [sum(load) if allocation == "gpu-time" else max(load) for load in loads]
            for i, load, wgt in zip(group, loads, weights, strict=True):
                streams[i].pool = len(pools) - 1
                streams[i].load = load
                streams[i].usd_per_month = usd if len(group) == 1 else usd * wgt / sum(weights)
    return pools, tried


def _streams(workloads: list[Workload]) -> list[Stream]:
    return [Stream(w, r) for w in workloads for r in w.routes]


def _alone(planner: _Planner) -> None:
    for i, s in enumerate(planner.streams):
        p = planner.plan(i, _own_targets(s.workload))
        feasible = [o for o in p.feasible if not o.speculative]
        if feasible:
            s.alone = feasible[0]
        else:
            s.alone = None
            first = p.rejected[0].view(p.rank_by).reason if p.rejected else "no option tried"
            s.alone_reason = f"no feasible option: {first}"


def portfolio(
    workloads: list[Workload],
    gpus: Mapping[str, float | None] | None = None,
    assumptions: Assumptions | None = None,
    rank_by: str = "calibrated",
    allocation: str = "gpu-time",
) -> Portfolio:
    """The fleet for ``workloads``: each stream planned alone (:func:`.search.plan`), then the cheapest assignment of
    streams to shared deployments that meets every target, the bill split by ``allocation`` (``gpu-time`` or
    ``peak``), and each routing split against all its requests on its reference model. ``gpus`` and
    ``assumptions`` are the plan's (aggregated serving only); ``rank_by`` the view priced (``calibrated`` or
    ``assumed``). Raises :class:`~xlsxplan.errors.XlsxplanError`, one line, for bad input or a workload no option
    serves."""
    if allocation not in ALLOCATIONS:
        raise ArgumentError(f"allocation must be {' or '.join(ALLOCATIONS)}, got {allocation!r}", "allocation")
    a = replace(assumptions or Assumptions(), servings=("aggregated",), speculative=None, owned=None)
    streams = _streams(workloads)
    planner = _Planner(streams, gpus, a, rank_by)
    _alone(planner)
    stuck = [s for s in streams if s.alone is None]
    if stuck:
        s = stuck[0]
        raise ArgumentError(f"workload {s.label()}: {s.alone_reason}", "workloads")
    prices = planner.plan(0, _own_targets(streams[0].workload)).prices
    pools, tried = _fleet(planner, prices, allocation)
    result = Portfolio(workloads, streams, pools, allocation, rank_by, a.hours_per_month, prices)
    result.routing = _routing(planner, result, gpus, allocation)
    result.assignments_tried = tried
    result.plans_run = len(planner.cache)
    return result


def _routing(
    planner: _Planner, routed: Portfolio, gpus: Mapping[str, float | None] | None, allocation: str
) -> list[dict[str, Any]]:
    """Each split workload sent whole to its reference model, the rest of the fleet as it is: the fleet's cost
    without that routing, and the saving; the quality the user gave, share-weighted, against the reference's."""
    out = []
    for w in routed.workloads:
        if len(w.routes) == 1 or w.reference is None:
            continue
        ref = next(r for r in w.routes if r.model == w.reference)
        whole = replace(w, routes=(Route(w.reference, 1.0, ref.quality),), reference=None)
        others = [x if x is not w else whole for x in routed.workloads]
        streams = _streams(others)
        p = _Planner(streams, gpus, planner.a, planner.rank_by)
        p.cache = planner.cache  # the plans already run, reused
        _alone(p)
        if any(s.alone is None for s in streams):
            continue
        pools, _ = _fleet(p, routed.prices, allocation)
        usd = sum(x.usd_per_month for x in pools)
        scores = [r.quality for r in w.routes]
        quality: float | None = None
        if all(q is not None for q in scores):
            quality = sum(r.share * (r.quality or 0.0) for r in w.routes)
        routed_usd = sum(s.usd_per_month for s in routed.streams if s.workload is w)
        unrouted_usd = sum(s.usd_per_month for s in streams if s.workload is whole)
        out.append(
            {
                "workload": w.name,
                "team": w.team,
                "reference": w.reference,
                "split": {r.model: r.share for r in w.routes},
                "fleet_usd_per_month": routed.usd_per_month,
                "unrouted_fleet_usd_per_month": usd,
                "unrouted_gpus": sum(x.gpus for x in pools),
                "unrouted_usd_per_month": usd,
                "saving_usd_per_month": usd - routed.usd_per_month,
                "workload_usd_per_month": routed_usd,
                "workload_unrouted_usd_per_month": unrouted_usd,
                "routed_quality": quality,
                "reference_quality": ref.quality,
                "quality_given": quality is not None,
            }
        )
    return out


# --- as a cell gives it -------------------------------------------------------------------------------------------


@checked
def portfolio_table(
    workloads: LongText,
    gpus: Name = "all",
    ideal: Flag = 0,
    spare: Spare = 1,
    min_replicas: Count = 2,
    allocation: Name = "gpu-time",
    weights: Name = "bf16,fp8",
    kv: Name = "bf16,fp8",
    gpus_per_replica: Name = "1,2,4,8",
    weights_as: Name = "published",
    hours_per_month: HoursPerPeriod = 730,
) -> list[list[Any]]:
    """Several workloads on one fleet: shared replicas, the saving against each alone, and the bill split by team.

    Parameters
    ----------
    workloads : str
        The workloads table as CSV text, rows on lines (CHAR(10)) or after a ';': a header naming its columns
        (name, team, model or split 'A=0.7|B=0.3', quality, requests_per_day, shape, prompt_tokens, output_tokens...),
        a row per workload [CSV text].
    gpus : str, default all
        Accelerators to try, each with an optional price, e.g. "H100=2.5"; all: every one the catalog prices [names].
    ideal : int, default 0
        1 prices at the source text's ideal efficiencies; 0 at the calibrated ones [flag].
    spare : int, default 1
        Replicas added to each deployment for a failure or a deployment [count].
    min_replicas : int, default 2
        Fewest replicas each deployment runs [count].
    allocation : str, default gpu-time
        How a shared deployment's cost is split: gpu-time (the GPU time each workload uses) or peak (its own peak
        load) [name].
    weights : str, default bf16,fp8
        Weight precisions to try [names].
    kv : str, default bf16,fp8
        KV-cache precisions to try [names].
    gpus_per_replica : str, default 1,2,4,8
        GPUs per replica to try [counts].
    weights_as : str, default published
        Weights memory: published (MODEL_WEIGHTS_GB) or params x bytes (the source text's N x b) [name].
    hours_per_month : float, default 730
        Hours a month GPUs are billed around the clock [hours].

    Returns
    -------
    list of list
        The chargeback table with a header row: per workload and model its deployment, USD a month allocated, USD
        per M tokens, alone cost and saving; per team; per deployment; the fleet with its rule; each routing split
        against its reference model [table].

    Notes
    -----
    Each workload is planned as PLAN_OPTIONS plans it (aggregated serving); workloads of one model on one
    deployment share replicas, sized by FLEET_REPLICAS on the hour-by-hour sum of their loads (each hour's requests
    a second over a replica's, from their 24-hour shapes), at the strictest of their targets; the cheapest
    assignment is chosen. Cost is split by GPU time used (or by peak), per M tokens over prompt, answer and
    reasoning tokens ("Back-of-the-Envelope Estimation for LLM Systems", sections 1 and 6; FinOps Foundation,
    Allocation). A routing split is priced against all requests on its reference model, beside the quality scores
    given (none assumed).
    """
    from .search import PARAMS_X_BYTES, PUBLISHED, name_list, parse_gpus, size_list

    key: tuple[Any, ...] = (workloads, gpus, ideal, spare, min_replicas, allocation, weights, kv, gpus_per_replica)
    key += (weights_as, hours_per_month)
    state = catalog_state()
    kept = _tables.get(key, state)
    if kept is not None:
        return [list(row) for row in kept]  # a copy: the caller may change its table
    rows = parse_workloads(csv_rows(workloads.replace(";", "\n")))
    basis = " ".join(weights_as.replace("-", " ").split()).lower()
    if basis not in (PUBLISHED, PARAMS_X_BYTES):
        raise ArgumentError(f"weights_as must be {PUBLISHED} or {PARAMS_X_BYTES}, got {weights_as!r}", "weights_as")
    a = Assumptions(
        spare=spare,
        min_replicas=min_replicas,
        weights=basis,
        hours_per_month=hours_per_month,
        weight_precisions=name_list(weights, "weights"),
        kv_precisions=name_list(kv, "kv"),
        gpus_per_replica=size_list(gpus_per_replica),
    )
    rank_by = "assumed" if ideal else "calibrated"
    table = _tables.put(key, state, portfolio(rows, parse_gpus(gpus), a, rank_by, allocation.strip().lower()).rows())
    return [list(row) for row in table]


_tables = Remembered(16)
"""PORTFOLIO's tables by their checked arguments, with the catalog, prices and calibration they were computed against
(:func:`xlsxplan.plan.cells.catalog_state`): a table whose cells each read INDEX of it (the portable serving plan's
Chargeback sheet, which ``xlsxplan recalc`` computes again) searches once, not once a cell."""
