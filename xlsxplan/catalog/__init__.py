"""Preset models and accelerators: TOML data files validated with pydantic, every figure with its source.

The package has three parts: :mod:`.schema` (what a preset carries), :mod:`.store` (loading the
shipped files and the user's own), and the lookups here. The shipped files sit beside this module (``models.toml``,
``accelerators.toml``; ``systems.toml``, the node and scale-up domain each accelerator is built into, is read by
:mod:`.systems`). A figure is a number under its field name; its source is the preset's ``source`` unless
``sources`` names another for that field; both name an entry of the file's ``[sources]`` table, where the full citation
lives once. A figure that does not exist (FP8 on an A100) or was never published (an Apple GPU's FLOP/s) is listed under
``unavailable`` with the reason, so a missing number is always a decision, never an accident. Loading fails with one
line naming the file, the preset and the field if a figure is missing, negative, infinite, of the wrong kind (strict: a
TOML boolean or string is never a number; a TOML integer is a float figure, and a count must be a TOML integer) or
without a source, and when two presets share a name as lookups compare names (case-insensitively, spaces and underscores
as hyphens).

User presets (``xlsxplan model add``, ``xlsxplan calibrate --save``) live in the user's own catalog folder, never
inside the installed package: ``$XLSXPLAN_CATALOG_DIR`` if set, else the platform's config folder
(``~/.config/xlsxplan/catalog`` on Linux). They use the same two file names and schema, are re-read when they change
(looked at no more than once a second; a preset saved through :func:`save_user_preset` at once), and may not take
the name or alias of a shipped preset: a user preset silently shadowing ``H100`` would change every plan that names
it. Nor may a user source reuse a shipped source's key for another citation; the keys xlsxplan writes start with
``user:``. A hand-edited user file is loud but local: a user preset that breaks a rule is left out (a file that is
not TOML, all of it), a lookup of one of its names raises :class:`CatalogError` with the reason, naming the file,
:func:`catalog_problems` lists the reasons (the command line prints them as warnings), and every other preset keeps
working. :func:`save_user_preset` is strict: it writes nothing that would be left out.

Names are matched case-insensitively, spaces and underscores counting as hyphens, with or without a Hugging Face
organisation prefix (``Qwen/Qwen2.5-72B-Instruct``), and through each preset's aliases (``H100`` is ``H100-SXM``).
"""

from __future__ import annotations

from ..domains import Name, checked
from .schema import GPU_FIELDS, MODEL_FIELDS, AcceleratorPreset, Kind, ModelPreset, Preset, PricePreset
from .store import (
    PRICE_BASES,
    PRICES_FILE,
    STALE_AFTER_DAYS,
    USER_SOURCE_PREFIX,
    Catalog,
    Prices,
    catalog_problems,
    figure_unit,
    load_catalog,
    load_prices,
    refresh,
    save_user_preset,
    user_catalog_dir,
    user_preset_ids,
)

__all__ = [
    "AcceleratorPreset",
    "Catalog",
    "GPU_FIELDS",
    "Kind",
    "MODEL_FIELDS",
    "ModelPreset",
    "Preset",
    "PRICES_FILE",
    "PRICE_BASES",
    "STALE_AFTER_DAYS",
    "PricePreset",
    "Prices",
    "USER_SOURCE_PREFIX",
    "catalog_problems",
    "figure_unit",
    "gpu_names",
    "gpu_price",
    "gpu_price_source",
    "gpu_source",
    "gpu_spec",
    "load_catalog",
    "load_prices",
    "model_names",
    "model_source",
    "model_spec",
    "refresh",
    "save_user_preset",
    "user_catalog_dir",
    "user_preset_ids",
]


@checked
def model_spec(model: Name, field: Name) -> float:
    """One figure of a preset model.

    Parameters
    ----------
    model : str
        A model name or alias, e.g. Qwen2.5-72B or meta-llama/Llama-3.1-8B [name].
    field : str
        params_b, active_params_b, layers, hidden, heads, kv_heads, head_dim, vocab, context, or an architecture
        field such as experts or sliding_window [name].

    Returns
    -------
    float
        The figure, in the field's unit (params_b in billions, counts as counts) [field unit].

    Notes
    -----
    Values from the model's published config.json and card; MODEL_SOURCE gives the citation. For a dense model
    active_params_b equals params_b.
    """
    return load_catalog().models.figure(model, field)


@checked
def gpu_spec(gpu: Name, field: Name) -> float:
    """One figure of a preset accelerator.

    Parameters
    ----------
    gpu : str
        An accelerator name or alias, e.g. H100-SXM, H100 or H200 [name].
    field : str
        memory_gb, bandwidth_tb_s, bf16_tflops, fp8_tflops, fp4_tflops, power_w or link_gb_s [name].

    Returns
    -------
    float
        The figure: memory in GB, bandwidth in TB/s, dense throughput in TFLOP/s, power in W, link in GB/s [field unit].

    Notes
    -----
    Datasheet values; compute is the dense figure, never the sparse headline; link_gb_s is per direction (NVLink's
    bidirectional 900 GB/s is 450). A precision without a peak (FP4 on a Hopper) is #N/A with the reason. GPU_SOURCE
    gives the citation.
    """
    return load_catalog().accelerators.figure(gpu, field)


@checked
def model_source(model: Name, field: Name) -> str:
    """Where a preset model's figure comes from.

    Parameters
    ----------
    model : str
        A model name or alias [name].
    field : str
        A field of MODEL_SPEC [name].

    Returns
    -------
    str
        The citation [text].
    """
    return load_catalog().models.citation(model, field)


@checked
def gpu_source(gpu: Name, field: Name) -> str:
    """Where a preset accelerator's figure comes from.

    Parameters
    ----------
    gpu : str
        An accelerator name or alias [name].
    field : str
        A field of GPU_SPEC [name].

    Returns
    -------
    str
        The citation [text].
    """
    return load_catalog().accelerators.citation(gpu, field)


@checked
def gpu_price(gpu: Name) -> float:
    """Default on-demand rental price of one accelerator for an hour, dated and sourced; replace it with your own.

    Parameters
    ----------
    gpu : str
        An accelerator name or alias, e.g. H100, H200 or MI300X [name].

    Returns
    -------
    float
        Price of one GPU for an hour, on demand [USD/GPU-h].

    Notes
    -----
    From the catalog's one price table, prices.toml (keyed by accelerator and basis, every entry dated and sourced;
    NVIDIA's HGX parts from one price card so that they are priced alike: Hyperstack, August 2026, H100 SXM $3.20,
    H200 $3.99, B200 $6.00). GPU_PRICE_SOURCE gives the citation with its date; an accelerator without a price is
    #N/A. A price older than 12 months is flagged where it is used.
    """
    return load_prices().get(gpu).usd_per_gpu_hour


@checked
def gpu_price_source(gpu: Name) -> str:
    """Where an accelerator's default on-demand rental price comes from, with its date, offer and region.

    Parameters
    ----------
    gpu : str
        An accelerator name or alias [name].

    Returns
    -------
    str
        The citation [text].
    """
    return load_prices().citation(gpu)


def model_names() -> list[str]:
    """The preset model names, in catalog order (for a data-validation list).

    Returns
    -------
    list of str
        Model names [names].
    """
    return load_catalog().models.names()


def gpu_names() -> list[str]:
    """The preset accelerator names, in catalog order (for a data-validation list).

    Returns
    -------
    list of str
        Accelerator names [names].
    """
    return load_catalog().accelerators.names()
