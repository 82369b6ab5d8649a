"""System presets: the topology a replica of a serving plan is laid out on.

A system (``systems.toml``) is built of one accelerator preset and says how many accelerators share a node
(``gpus_per_node``) and a scale-up domain (``scale_up_gpus``: 8 in an HGX server, 72 in an NVL72 rack), how fast each
reaches the network (``scale_out_gb_s``), and the latencies of the two fabrics where a vendor publishes them. The
scale-up bandwidth is the accelerator's ``link_gb_s`` (NVLink, Infinity Fabric, per direction), read through the
system, so the figure lives once. Every figure has a citation (:func:`system_source`); one that is not published
raises :class:`~xlsxplan.errors.NotAvailableError` with the reason, as the other catalog lookups do.

The serving plan reads them (:func:`xlsxplan.plan.search.replica_sizes`): a replica larger than one scale-up domain
is laid out as tensor-parallel groups within a domain and pipeline stages or expert-parallel groups across domains,
its communication over these links; PLAN_OPTIONS imports the module, so the Lite bundle carries it and its data file.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from importlib import resources
from typing import ClassVar

from pydantic import Field, model_validator

from ..errors import CatalogError, NotAvailableError, UnknownPresetError
from .schema import Preset
from .store import load_catalog, preset_key, read_toml, shipped_presets, validate_presets

__all__ = [
    "SYSTEMS_FILE",
    "SYSTEM_FIGURES",
    "SystemPreset",
    "Systems",
    "Topology",
    "load_systems",
    "parse_systems",
    "system_names",
    "system_source",
    "system_spec",
    "topology",
    "topology_of",
]


class SystemPreset(Preset):
    """A system built of one accelerator (systems.toml): how many accelerators share a node and a scale-up domain,
    and the scale-out network each one has, from the vendor's system datasheet or reference architecture.

    The scale-up link bandwidth is the accelerator's own ``link_gb_s`` (accelerators.toml), not repeated here: one
    figure per fact. A node is what one operating system runs on (a DGX or HGX server, a rack's compute tray); the
    scale-up domain the accelerators that reach each other over NVLink or Infinity Fabric without the network (8 in
    an HGX server, 72 in an NVL72 rack); it holds whole nodes, or a node holds whole domains.
    """

    accelerator: str = Field(min_length=1, description="the id of the accelerators.toml preset the system is built of")
    fabric: str = Field("", description="the scale-up fabric in words (NVLink 5 through NVSwitch trays)")
    gpus_per_node: int = Field(gt=0, description="accelerators in one node: a server, or a rack's compute tray [count]")
    scale_up_gpus: int = Field(
        gt=0, description="accelerators in one scale-up domain (NVLink, Infinity Fabric), the network not used [count]"
    )
    scale_out_gb_s: float | None = Field(
        None, gt=0, description="scale-out network bandwidth of one accelerator (its NIC), per direction [GB/s]"
    )
    scale_up_latency_us: float | None = Field(
        None, gt=0, description="latency of one transfer between two accelerators of a scale-up domain [us]"
    )
    scale_out_latency_us: float | None = Field(
        None, gt=0, description="latency of one transfer between two accelerators over the network [us]"
    )

    FIGURES: ClassVar[tuple[str, ...]] = (
        "gpus_per_node",
        "scale_up_gpus",
        "scale_out_gb_s",
        "scale_up_latency_us",
        "scale_out_latency_us",
    )
    REQUIRED: ClassVar[tuple[str, ...]] = FIGURES
    """Given, or listed under ``unavailable`` with the reason, by every system."""

    @model_validator(mode="after")
    def _domain_holds_whole_nodes(self) -> SystemPreset:
        up, node = self.scale_up_gpus, self.gpus_per_node
        if up % node and node % up:
            raise ValueError(
                f"scale_up_gpus ({up}) must hold whole nodes of gpus_per_node ({node}), or a node whole domains"
            )
        return self


SYSTEMS_FILE = "systems.toml"
"""The shipped system presets: accelerators per node and per scale-up domain, the network per accelerator."""


class Systems:
    """The shipped system presets (:class:`SystemPreset`), found by id or alias as the other presets are (case
    aside, spaces and underscores as hyphens); ``sources`` holds the citations. Scale-up bandwidth is the system's
    accelerator's ``link_gb_s``, looked up in the accelerator catalog."""

    DERIVED = ("scale_up_gb_s",)
    """Figures a system gives through its accelerator rather than its own file."""

    def __init__(self, presets: dict[str, SystemPreset], sources: dict[str, str]) -> None:
        self.presets = presets
        self.sources = sources
        self._index: dict[str, str] = {}
        for pid, preset in presets.items():
            for name in (pid, *preset.aliases):
                self._index.setdefault(preset_key(name), pid)

    def names(self) -> list[str]:
        """The system ids, in file order."""
        return list(self.presets)

    def get(self, name: str) -> SystemPreset:
        """A system by id or alias; UnknownPresetError naming close matches otherwise."""
        key = preset_key(name)
        pid = self._index.get(key)
        if pid is not None:
            return self.presets[pid]
        close = difflib.get_close_matches(key, list(self._index), n=6, cutoff=0.6)
        ids = list(dict.fromkeys(self._index[m] for m in close))[:3]
        hint = f"did you mean {', '.join(ids)}?" if ids else f"systems: {', '.join(self.presets)}"
        raise UnknownPresetError(f"system {name!r} is not in the catalog; {hint}", "system")

    def field(self, field: str) -> str:
        """A field name as the lookups match it; UnknownPresetError naming the fields otherwise."""
        key = field.strip().lower()
        known = (*SystemPreset.FIGURES, *self.DERIVED)
        if key in known:
            return key
        close = difflib.get_close_matches(key, known, n=2, cutoff=0.6)
        hint = f"did you mean {', '.join(close)}?" if close else f"fields: {', '.join(known)}"
        raise UnknownPresetError(f"field {field!r} is not a system figure; {hint}", "field")

    def figure(self, name: str, field: str) -> float | int:
        """One figure of a system; NotAvailableError with the reason for one that is not published."""
        preset, key = self.get(name), self.field(field)
        if key == "scale_up_gb_s":
            return load_catalog().accelerators.figure(preset.accelerator, "link_gb_s")
        value = preset.figure(key)
        if value is None:
            reason = preset.unavailable.get(key, "")
            raise NotAvailableError(f"{preset.id} has no {key}: {self.sources.get(reason, reason)}", "field")
        return value

    def citation(self, name: str, field: str) -> str:
        """Where a system's figure comes from (the accelerator's link citation for ``scale_up_gb_s``)."""
        preset, key = self.get(name), self.field(field)
        if key == "scale_up_gb_s":
            return load_catalog().accelerators.citation(preset.accelerator, "link_gb_s")
        if preset.figure(key) is None and key in preset.unavailable:
            return self.sources[preset.unavailable[key]]
        return self.sources[preset.source_key(key)]


def parse_systems(text: str, filename: str = SYSTEMS_FILE) -> Systems:
    """A systems file's text, validated as the shipped catalog files are (one line naming the file, the preset and
    the field at the first problem), and each system's ``accelerator`` the exact id of a shipped accelerator."""
    raw = read_toml(text, filename)
    presets, sources = validate_presets(raw, filename, "systems", SystemPreset)
    accelerators = shipped_presets("accelerator")
    for pid, preset in presets.items():
        assert isinstance(preset, SystemPreset)
        if preset.accelerator not in accelerators:
            close = difflib.get_close_matches(preset.accelerator, list(accelerators), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise CatalogError(
                f"{filename}: {pid}.accelerator: {preset.accelerator!r} is not an accelerator id of "
                f"accelerators.toml{hint}"
            )
    return Systems({pid: p for pid, p in presets.items() if isinstance(p, SystemPreset)}, sources)


_loaded: dict[str, Systems] = {}


def load_systems() -> Systems:
    """The shipped system presets (``systems.toml``), parsed and validated once (:func:`parse_systems`)."""
    if "systems" not in _loaded:
        text = resources.files(__package__).joinpath(SYSTEMS_FILE).read_text(encoding="utf-8")
        _loaded["systems"] = parse_systems(text)
    return _loaded["systems"]


SYSTEM_FIGURES: tuple[str, ...] = (
    "gpus_per_node",
    "scale_up_gpus",
    "scale_up_gb_s",
    "scale_out_gb_s",
    "scale_up_latency_us",
    "scale_out_latency_us",
)
"""The figures :func:`system_spec` gives: the file's own and ``scale_up_gb_s`` through the accelerator."""


def _systems() -> Systems:
    return load_systems()


def system_names() -> list[str]:
    """The system preset ids, in catalog order.

    Returns
    -------
    list of str
        System ids, e.g. DGX-H100, GB200-NVL72, MI300X-Platform [names].
    """
    return _systems().names()


def system_spec(system: str, field: str) -> float:
    """One figure of a system preset.

    Parameters
    ----------
    system : str
        A system id or alias, e.g. DGX-H100, HGX H200, GB300 NVL72 or MI300X-Platform [name].
    field : str
        gpus_per_node, scale_up_gpus, scale_up_gb_s, scale_out_gb_s, scale_up_latency_us or scale_out_latency_us
        [name].

    Returns
    -------
    float
        The figure: accelerators as counts, bandwidth per accelerator per direction in GB/s (a 400 Gb/s NIC is
        50 GB/s), latency in microseconds [field unit].

    Notes
    -----
    From the vendor's system datasheet or reference architecture (:func:`system_source` gives each citation);
    ``scale_up_gb_s`` is the system's accelerator's ``link_gb_s`` (GPU_SPEC), NVLink 4's 900 GB/s bidirectional
    being 450 per direction. A figure that is not published raises NotAvailableError with the reason.
    """
    return float(_systems().figure(system, field))


def system_source(system: str, field: str) -> str:
    """Where a system preset's figure comes from.

    Parameters
    ----------
    system : str
        A system id or alias [name].
    field : str
        A field of :func:`system_spec` [name].

    Returns
    -------
    str
        The citation; for a figure that is not published, the reason [text].
    """
    return _systems().citation(system, field)


@dataclass(frozen=True)
class Topology:
    """A system's topology with every figure resolved: ``None`` where the figure is not published.

    Attributes: ``system`` and ``accelerator`` (preset ids), ``gpus_per_node`` and ``scale_up_gpus`` [count],
    ``scale_up_gb_s`` and ``scale_out_gb_s`` (per accelerator, per direction) [GB/s], ``scale_up_latency_us`` and
    ``scale_out_latency_us`` [us].
    """

    system: str
    accelerator: str
    gpus_per_node: int
    scale_up_gpus: int
    scale_up_gb_s: float | None
    scale_out_gb_s: float | None
    scale_up_latency_us: float | None
    scale_out_latency_us: float | None

    @property
    def nodes_per_domain(self) -> int:
        """Nodes one scale-up domain spans: 1 for an HGX server, 18 compute trays for an NVL72 rack [count]."""
        return max(1, self.scale_up_gpus // self.gpus_per_node)


def topology(system: str) -> Topology:
    """A system preset's topology, each figure as :func:`system_spec` gives it or ``None`` where it is not published.

    Parameters
    ----------
    system : str
        A system id or alias [name].

    Returns
    -------
    Topology
        The system's accelerator, node and scale-up domain sizes, bandwidths and latencies [record].
    """
    systems = _systems()
    preset = systems.get(system)

    def maybe(field: str) -> float | None:
        try:
            return float(systems.figure(preset.id, field))
        except NotAvailableError:
            return None

    return Topology(
        system=preset.id,
        accelerator=preset.accelerator,
        gpus_per_node=preset.gpus_per_node,
        scale_up_gpus=preset.scale_up_gpus,
        scale_up_gb_s=maybe("scale_up_gb_s"),
        scale_out_gb_s=maybe("scale_out_gb_s"),
        scale_up_latency_us=maybe("scale_up_latency_us"),
        scale_out_latency_us=maybe("scale_out_latency_us"),
    )


def topology_of(accelerator: str) -> Topology | None:
    """The topology of the first system preset built of ``accelerator`` (an accelerators.toml id), or None when no
    system preset is (:func:`topology`).

    Parameters
    ----------
    accelerator : str
        An accelerator id, e.g. H100-SXM or GB200 [name].

    Returns
    -------
    Topology or None
        The system's topology, figures as :func:`system_spec` gives them [record].
    """
    systems = _systems()
    for sid in systems.names():
        if systems.get(sid).accelerator == accelerator:
            return topology(sid)
    return None
