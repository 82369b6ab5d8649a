"""System presets (systems.toml): node and scale-up domain sizes and network per accelerator, each sourced and
validated like the other catalog files; and the accelerators of 2026 they need (GB300, TPU7x)."""

from __future__ import annotations

import pytest

import xlsxplan as x
from xlsxplan.catalog import load_catalog
from xlsxplan.catalog.systems import (
    SYSTEM_FIGURES,
    load_systems,
    parse_systems,
    system_names,
    system_source,
    system_spec,
    topology,
)
from xlsxplan.errors import CatalogError, NotAvailableError, UnknownPresetError

SYSTEMS_BRIEF = [  # the presets the brief names: DGX/HGX H100, H200, B200, B300; GB200 and GB300 NVL72; AMD platforms
    "DGX-H100",
    "DGX-H200",
    "DGX-B200",
    "DGX-B300",
    "GB200-NVL72",
    "GB300-NVL72",
    "MI300X-Platform",
    "MI325X-Platform",
    "MI355X-Platform",
]


def test_every_system_the_brief_names_is_a_preset_and_its_accelerator_resolves():
    assert system_names() == SYSTEMS_BRIEF
    for name in SYSTEMS_BRIEF:
        accelerator = load_systems().get(name).accelerator
        assert load_catalog().accelerators.get(accelerator).id == accelerator, name


@pytest.mark.parametrize(
    "system, node, domain, out_gb_s",
    [
        # HGX boards: 8 GPUs on NVSwitch, one 400 Gb/s ConnectX-7 per GPU (DGX H100 User Guide, Table 6); HGX B300: one
        # 800 Gb/s ConnectX-8 per GPU; NVL72: 18 compute trays of 4 GPUs, one NVLink domain of 72 (NVIDIA NVL72
        # reference architecture), a ConnectX-7 (GB200) or ConnectX-8 (GB300) per GPU; AMD: 8 GPUs on Infinity Fabric
        ("HGX H100", 8, 8, 50),
        ("DGX-H200", 8, 8, 50),
        ("HGX-B200", 8, 8, 50),
        ("DGX B300", 8, 8, 100),
        ("GB200 NVL72", 4, 72, 50),
        ("GB300-NVL72", 4, 72, 100),
        ("MI300X-8", 8, 8, None),
    ],
)
def test_node_domain_and_network_as_the_datasheets_give_them(system, node, domain, out_gb_s):
    assert (system_spec(system, "gpus_per_node"), system_spec(system, "scale_up_gpus")) == (node, domain)
    if out_gb_s is None:
        with pytest.raises(NotAvailableError, match=r"no scale_out_gb_s: the vendor's platform carries no network"):
            system_spec(system, "scale_out_gb_s")
    else:
        assert system_spec(system, "scale_out_gb_s") == out_gb_s  # Gb/s / 8, per direction


def test_scale_up_bandwidth_is_the_accelerators_link_figure_and_citation():
    # one figure per fact: NVLink 4's 900 GB/s bidirectional is H100's link_gb_s of 450, read through the system
    assert system_spec("DGX-H100", "scale_up_gb_s") == x.gpu_spec("H100-SXM", "link_gb_s") == 450
    assert system_spec("GB300-NVL72", "scale_up_gb_s") == x.gpu_spec("GB300", "link_gb_s") == 900
    assert system_source("DGX-H100", "scale_up_gb_s") == x.gpu_source("H100-SXM", "link_gb_s")
    assert system_spec("MI300X-Platform", "scale_up_gb_s") == 448  # seven Infinity Fabric links, 64 GB/s each way
    with pytest.raises(NotAvailableError, match=r"^MI355X has no link_gb_s: "):
        system_spec("MI355X-Platform", "scale_up_gb_s")


def test_every_system_figure_has_a_citation_or_a_reason():
    systems = load_systems()
    for name in system_names():
        for field in SYSTEM_FIGURES:
            citation = system_source(name, field)
            assert len(citation) > 20, (name, field)
            try:
                system_spec(name, field)
            except NotAvailableError as err:
                assert citation in err.message, (name, field)  # the reason is the citation shown
        assert systems.get(name).source in systems.sources


def test_topology_resolves_every_figure_or_none():
    nvl = topology("gb300 nvl72")
    assert (nvl.system, nvl.accelerator, nvl.nodes_per_domain) == ("GB300-NVL72", "GB300", 18)
    assert (nvl.scale_up_gb_s, nvl.scale_out_gb_s, nvl.scale_up_latency_us) == (900, 100, None)
    amd = topology("MI300X-Platform")
    assert (amd.nodes_per_domain, amd.scale_out_gb_s, amd.scale_up_gb_s) == (1, None, 448)


def test_unknown_systems_and_fields_are_one_line_with_close_matches():
    with pytest.raises(UnknownPresetError, match=r"^system 'DGX-H10' is not in the catalog; did you mean DGX-H100"):
        system_spec("DGX-H10", "gpus_per_node")
    with pytest.raises(UnknownPresetError, match=r"^field 'gpus_per_nod' is not a system figure; did you mean "):
        system_spec("DGX-H100", "gpus_per_nod")


GOOD = """
[sources]
ds = "A system datasheet, 2026"
why = "not published"

[systems.S1]
source = "ds"
accelerator = "H100-SXM"
gpus_per_node = 8
scale_up_gpus = 8
scale_out_gb_s = 50
[systems.S1.unavailable]
scale_up_latency_us = "why"
scale_out_latency_us = "why"
"""


def test_a_valid_systems_file_parses():
    systems = parse_systems(GOOD, "s.toml")
    assert systems.figure("S1", "scale_out_gb_s") == 50 and systems.figure("S1", "scale_up_gb_s") == 450


@pytest.mark.parametrize(
    "old, new, match",
    [
        ("scale_up_gpus = 8", "scale_up_gpus = 12", r"^s\.toml: S1\.preset: Value error, scale_up_gpus \(12\) must "),
        (
            'accelerator = "H100-SXM"',
            'accelerator = "H100"',
            r"^s\.toml: S1\.accelerator: 'H100' is not an accelerator",
        ),
        ("scale_out_gb_s = 50\n", "", r"scale_out_gb_s is missing: give it, or list it under 'unavailable'"),
        ("gpus_per_node = 8", "gpus_per_node = 8.0", r"^s\.toml: S1\.gpus_per_node: Input should be a valid integer"),
        (
            "scale_out_gb_s = 50",
            "scale_out_gb_s = -50",
            r"^s\.toml: S1\.scale_out_gb_s: Input should be greater than 0",
        ),
        ('source = "ds"', 'source = "nowhere"', r"^s\.toml: S1\.gpus_per_node: source 'nowhere' is not in \[sources\]"),
        ("[systems.S1]", "[system.S1]", r"^s\.toml: unexpected top-level table\(s\) system$"),
    ],
)
def test_malformed_systems_files_fail_in_one_line(old, new, match):
    assert old in GOOD
    with pytest.raises(CatalogError, match=match) as err:
        parse_systems(GOOD.replace(old, new, 1), "s.toml")
    assert "\n" not in err.value.message


def test_the_accelerators_of_2026_as_their_datasheets_give_them():
    # GB300 (Verda's table of NVIDIA's per-GPU figures, dense): FP4 15, FP8 5, BF16 2.5 PFLOPS, 279 GB, 8 TB/s,
    # 1,400 W, NVLink 5 900 GB/s each way; TPU7x (Google Cloud TPU7x page): BF16 2,307 and FP8 4,614 TFLOPs, 192 GiB;
    # Hot Chips 2025: 7.3 TB/s, 1.2 TBps ICI (600 each way)
    gb300 = [x.gpu_spec("GB300", f) for f in ("fp4_tflops", "fp8_tflops", "bf16_tflops", "memory_gb", "power_w")]
    assert gb300 == [15000, 5000, 2500, 279, 1400]
    assert x.gpu_spec("Ironwood", "memory_gb") == pytest.approx(192 * 2**30 / 1e9, abs=0.01)
    assert (
        x.gpu_spec("TPU7x", "bf16_tflops"),
        x.gpu_spec("TPU7x", "fp8_tflops"),
        x.gpu_spec("TPU7x", "link_gb_s"),
    ) == (
        2307,
        4614,
        600,
    )
    with pytest.raises(NotAvailableError, match=r"^TPU-v7 has no fp4_tflops: Google lists no peak"):
        x.gpu_spec("TPU-v7", "fp4_tflops")
    # Blackwell Ultra's FP4 over B200's: NVIDIA's "1.5x more dense FP4" (15 / 10 PFLOPS for the GB parts)
    assert x.gpu_spec("GB300", "fp4_tflops") / x.gpu_spec("GB200", "fp4_tflops") == 1.5
