"""``xlsxplan model add|list|show``: import a model from its Hugging Face config.json, list and inspect presets."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_OK, human_number

ORDER = 40


def _default_name(config: dict, path: Path) -> tuple[str | None, str]:
    """The preset's name when ``--name`` gives none, and where it came from, in words."""
    name = config.get("_name_or_path")
    if isinstance(name, str) and name.strip() and not name.startswith(("/", ".")):
        return name.strip().rsplit("/", 1)[-1], "the config's _name_or_path"
    if path.stem.lower() != "config":  # gemma-2-9b.json
        return path.stem, "the file's name"
    return path.resolve().parent.name or None, "its folder's name"  # models/gemma-2-9b/config.json


def add(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..catalog import load_catalog, models, save_user_preset
    from ..catalog.hfconfig import check_name, figures_from_config, read_config_and_digest
    from ..errors import ArgumentError

    path = Path(args.config)
    config, digest = read_config_and_digest(path)
    name, named_after = (args.name, "") if args.name else _default_name(config, path)
    if not name:
        raise ArgumentError("give the preset a name with --name", "name")
    check_name(name)
    figures = figures_from_config(config, str(path))
    source = (
        f"{path.name} (sha256 {digest[:12]}...), a Hugging Face config.json, imported by xlsxplan {__version__}: "
        "architecture fields as given; params_b and active_params_b counted from the shape "
        "(embeddings, attention, gated MLPs, experts and router, norms)"
    )
    saved = save_user_preset("model", name, figures, source, replace=args.replace)
    preset = load_catalog().models.get(name)
    total, active = preset.params_b, preset.figure("active_params_b")
    print(f"added {name} to {saved}")
    if named_after:
        print(
            f"  named after {named_after}; `xlsxplan model add {args.config} --name NAME` saves it under another name"
        )
    print(f"  parameters  {human_number(total)}B total, {human_number(active)}B active per token")  # type: ignore[arg-type]
    kv = models.model_kv_bytes_per_token(name)
    attention = getattr(preset, "attention_layer_count", preset.layers)
    where = "" if attention == preset.layers else f" in its {attention} attention layers"
    print(f"  KV cache    {human_number(kv)} bytes per token in BF16{where} (before any window)")
    state = models.model_state_bytes(name)
    if state:
        print(
            f"  state       {human_number(state)} bytes per sequence in BF16, whatever its length "
            "(linear-attention and Mamba layers)"
        )
    quoted = '"' + name.replace('"', '""') + '"'  # a text literal in a formula doubles its quotes
    print(f'  use it as   =MODEL_SPEC({quoted}, "layers"), =MODEL_KV_GB({quoted}, 8192)')
    return EXIT_OK


def list_models(args: argparse.Namespace) -> int:
    from ..catalog import load_catalog, user_preset_ids

    table = load_catalog().models
    mine = set(user_preset_ids("model"))
    for name in table.names():
        preset = table.get(name)
        mark = "  (user)" if name in mine else ""
        active = f"{human_number(preset.active_params_b)}B active" if preset.active_params_b is not None else ""
        cited = preset.source_key("params_b")
        source = preset.source if cited == preset.source else f"{preset.source}; params_b {cited}"
        print(f"{name:24s} {human_number(preset.params_b):>10}B {active:>16}  {source}{mark}")
    print("sources: the keys of the catalog's [sources]; `xlsxplan model show NAME` prints each figure's citation")
    return EXIT_OK


def show(args: argparse.Namespace) -> int:
    from ..catalog import load_catalog
    from ..catalog.models import preset_figures

    table = load_catalog().models
    preset = table.get(args.name)  # a user preset left out: CatalogError with the reason, exit 2
    print(preset.id)
    cited: dict[str, list[str]] = {}
    for field, value in preset_figures(preset).items():
        print(f"  {field:22s} {value}")
        cited.setdefault(table.citation(preset.id, field), []).append(field)
    print("sources")
    for citation, fields in cited.items():
        print(f"  {', '.join(fields)}: {citation}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("model", help="import a model from its config.json; list and show model presets")
    models = p.add_subparsers(dest="model_command", metavar="ACTION")
    models.required = True
    a = models.add_parser(
        "add",
        help="add a model preset from a Hugging Face config.json you have (nothing is downloaded)",
        description="Derive the architecture fields and the parameter count from a Hugging Face config.json and save "
        "them as a preset in your own catalog folder ($XLSXPLAN_CATALOG_DIR, else the platform config folder). "
        "The preset is then usable by name in every formula and template.",
    )
    a.add_argument("config", help="path to the model's config.json")
    a.add_argument("--name", help="preset name (default: the config's _name_or_path, else its folder name)")
    a.add_argument("--replace", action="store_true", help="replace a user preset of the same name")
    a.set_defaults(handler=add)
    ls = models.add_parser("list", help="list the model presets, shipped and yours")
    ls.set_defaults(handler=list_models)
    s = models.add_parser("show", help="show a model preset's figures and their sources")
    s.add_argument("name", help="a model name or alias")
    s.set_defaults(handler=show)
