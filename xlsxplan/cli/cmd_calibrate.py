"""``xlsxplan calibrate``: measure this machine; ``xlsxplan calibrate --fit``: refit the calibrated efficiencies."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
from pathlib import Path
from typing import Any

from .common import EXIT_OK, EXIT_USAGE, human_number

ORDER = 65


def source_checkout(path: Path) -> bool:
    """Whether ``path`` (the shipped factors file) belongs to a source checkout that may be rewritten: a git work tree,
    or a writable folder outside any site-packages. An installed package (a wheel in site-packages) is not."""
    path = Path(path).resolve()
    for folder in path.parents:
        if (folder / ".git").exists():
            return True
        if folder.name in ("site-packages", "dist-packages"):
            return False
    return os.access(path.parent, os.W_OK)


def _fit(args: argparse.Namespace) -> int:
    from .. import calibration
    from ..calibration import measurements
    from ..infra.fileio import atomic_write_text, ensure_folder

    shipped = calibration.measurements_path()
    data = Path(args.data) if args.data else shipped
    is_shipped_data = data.resolve() == shipped.resolve()
    if args.shipped and args.out:
        print("xlsxplan: error: --shipped and --out are two destinations; give one", file=sys.stderr)
        return EXIT_USAGE
    if args.shipped:
        if not is_shipped_data:
            print(
                "xlsxplan: error: --shipped refits the shipped factors on the shipped measurements "
                f"({shipped}); copy FILE there to change them, or leave out --shipped to fit FILE for yourself",
                file=sys.stderr,
            )
            return EXIT_USAGE
        if not source_checkout(calibration.factors_path()):
            print(
                "xlsxplan: error: --shipped rewrites the shipped factors, which belong to the installed package "
                f"({calibration.factors_path()}); leave out --shipped to write your own, or run it from a source "
                "checkout",
                file=sys.stderr,
            )
            return EXIT_USAGE
        out, where = calibration.factors_path(), "the shipped factors"
    elif args.out:
        out, where = Path(args.out), f"{calibration.FACTORS_ENV}={args.out} to use it"
    else:
        out, where = calibration.user_factors_path(), "your factors, used by EFFICIENCY, validate and the templates"
    rows = measurements.read_measurements(data)
    recorded = None if (args.shipped or is_shipped_data) else str(data.resolve())
    report = measurements.fit_report(rows, data.name, calibration.sha256(data), recorded)
    ensure_folder(out.parent)
    atomic_write_text(out, json.dumps(report, indent=2) + "\n")
    calibration.refresh()
    print(f"fitted {sum(report[k]['rows_used'] for k in calibration.KINDS)} of {len(rows)} rows of {data}")
    for kind in calibration.KINDS:
        k = report[kind]
        params = {
            key: k[key] for key in ("ceiling", "overhead_bytes", "routed_bytes", "base", "class", "format") if key in k
        }
        print(
            f"  {kind}: {params}; {k['rows_used']} rows, median error {k['median_abs_error']}, "
            f"leave-one-source-out {k['leave_one_source_out_median_abs_error']}"
        )
        for assumed in k.get("assumed", ()):
            print(f"    {assumed} (assumed)")
    print(f"wrote {out} ({where})")
    if args.shipped:
        from ..calibration import figures

        root = calibration.factors_path().resolve().parents[3]
        fig = figures.regenerate(root)
        loo = fig["leave_one_source_out"]
        print(
            f"wrote {figures.figures_path()} and the figures in {', '.join(figures.DOCUMENTS)}: leave one source out, "
            f"median error {loo['median_abs_error']:.1%}, inside their own P10-P90 range {loo['band_coverage']:.1%}"
        )
    if out == calibration.user_factors_path():
        print(f"  {calibration.FACTORS_ENV}=shipped uses the shipped factors instead; delete the file to go back")
    return EXIT_OK


def _compare(figures: Any, gpu: str) -> tuple[list[str], dict[str, Any]]:
    """Measured figures against an accelerator's datasheet: printed lines and the same as data."""
    from ..catalog import load_catalog

    preset = load_catalog().accelerators.get(gpu)  # UnknownPresetError: the CLI prints it and exits 2
    lines = [f"against the datasheet of {preset.id}:"]
    data: dict[str, Any] = {"gpu": preset.id}
    pairs = [
        ("bandwidth_tb_s", "memory bandwidth", figures.bandwidth_tb_s, preset.bandwidth_tb_s, "TB/s"),
        ("matmul_tflops", f"matmul ({figures.matmul_dtype})", figures.matmul_tflops, preset.bf16_tflops, "TFLOP/s"),
        ("train_6n_tflops", "6N training rate", figures.train_6n_flops / 1e12, preset.bf16_tflops, "TFLOP/s"),
    ]
    for key, label, measured, sheet, unit in pairs:
        data[key] = {"measured": measured, "datasheet": sheet, "share": measured / sheet if sheet else None}
        if sheet is None:
            lines.append(f"  {label:<22} {human_number(measured):>10} {unit}   datasheet: not published")
        else:
            lines.append(
                f"  {label:<22} {human_number(measured):>10} {unit}   datasheet {human_number(sheet)} "
                f"{unit}: {measured / sheet:.1%} of it"
            )
    lines.append("  (the 6N rate over the dense 16-bit peak is this step's model FLOPs utilisation)")
    return lines, data


def _save(figures: Any, name: str, replace: bool) -> Path:
    from ..catalog import save_user_preset

    today = _dt.date.today().isoformat()
    from ..calibration import MEASURED_SOURCE

    source = (
        f"{MEASURED_SOURCE} on {today}: {figures.device}, {figures.backend}; matmul in "
        f"{figures.matmul_dtype}, array copy counting bytes read and written"
    )
    figures_out = {
        "memory_gb": round(figures.memory_gb, 3) or None,
        "bandwidth_tb_s": float(f"{figures.bandwidth_tb_s:.4g}"),
        "bf16_tflops": float(f"{figures.matmul_tflops:.4g}"),
    }
    unavailable = {field: "not measured by xlsxplan calibrate" for field in ("fp8_tflops", "fp4_tflops", "power_w")}
    if figures_out["memory_gb"] is None:
        unavailable["memory_gb"] = "the platform did not report its memory"
    note = (
        f"6N-equivalent training rate {figures.train_6n_flops:.4g} FLOP/s ({figures.train_model}); "
        f"bf16_tflops holds the measured {figures.matmul_dtype} matmul rate"
    )
    return save_user_preset(
        "accelerator", name, figures_out, source, unavailable=unavailable, note=note, replace=replace
    )


def _check_free(name: str, replace: bool) -> None:
    """Refuse, before measuring, a preset name that is shipped, or the user's unless ``replace``."""
    from ..catalog import load_catalog, user_catalog_dir, user_preset_ids
    from ..errors import CatalogError, UnknownPresetError

    try:
        existing = load_catalog().accelerators.get(name).id
    except UnknownPresetError:
        return
    user_file = user_catalog_dir() / "accelerators.toml"
    if existing not in user_preset_ids("accelerator"):
        raise CatalogError(f"--save {name!r} takes the name of the shipped preset {existing!r}; choose another name")
    if not replace:
        raise CatalogError(f"{user_file}: a user preset {existing!r} exists already; add --replace to overwrite it")


def _measure(args: argparse.Namespace) -> int:
    from ..calibration import machine
    from ..catalog import load_catalog
    from ..core import training

    if args.gpu:
        load_catalog().accelerators.get(args.gpu)  # an unknown name fails before the benchmark runs
    if args.save:
        _check_free(args.save, args.replace)
    figures = machine.measure(quick=args.quick, backend=args.backend, device=args.device)
    ten_minutes = training.optimal_params_b(figures.train_6n_flops, 600)
    lines = [
        f"device: {figures.device} ({figures.backend}), {figures.seconds:.1f} s",
        f"  matmul ({figures.matmul_dtype})      {human_number(figures.matmul_tflops):>10} TFLOP/s",
        f"  memory bandwidth       {human_number(figures.bandwidth_tb_s):>10} TB/s (array copy, read + write)",
        f"  6N training rate       {human_number(figures.train_6n_flops / 1e12):>10} TFLOP/s "
        f"({human_number(figures.train_tokens_per_s)} tokens/s x 6 x {figures.train_params:,} parameters)",
        f"    step: {figures.train_model}",
        *(
            ["    (no attention: a transformer's 6N rate is lower by about attention's share, T / (6 d))"]
            if "no attention" in figures.train_model
            else []
        ),
        f"  memory                 {human_number(figures.memory_gb):>10} GB",
    ]
    if figures.warning():
        lines.append(f"warning: {figures.warning()}")
    comparison: dict[str, Any] = {}
    if args.gpu:
        more, comparison = _compare(figures, args.gpu)
        lines += more
    saved = _save(figures, args.save, args.replace) if args.save else None
    if saved and figures.train_6n_flops > figures.matmul_tflops * 1e12:
        # the preset's train_mfu is the 6N rate over the matmul rate (calibration, class "measured"), held to 100%
        print(
            f"xlsxplan: warning: the 6N training rate ({figures.train_6n_flops / 1e12:.4g} TFLOP/s) exceeds the "
            f"matmul rate ({figures.matmul_tflops:.4g} TFLOP/s), so {args.save!r} gets a training MFU of 100%; "
            "measure again on an idle machine and save with --replace",
            file=sys.stderr,
        )
    if args.json:
        out = figures.as_dict()
        out["optimal_params_b_10_minutes"] = ten_minutes
        if comparison:
            out["datasheet"] = comparison
        if saved:
            out["saved"] = {"name": args.save, "file": str(saved)}
        json.dump(out, sys.stdout, indent=2)
        print()
    else:
        print("\n".join(lines))
        print(
            f"a compute-optimal model for a 10-minute run here: {human_number(ten_minutes * 1e3)}M parameters "
            f'(=OPTIMAL_PARAMS_B({figures.train_6n_flops:.3g},600) billion; N = sqrt(C t / 120), from "Estimating '
            'the Compute and Memory Needed for Language Models")'
        )
        if saved:
            print(
                f"saved as accelerator {args.save!r} in {saved}: use it by name, e.g. "
                f'=GPU_SPEC("{args.save}","bandwidth_tb_s")'
            )
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    if args.fit:
        return _fit(args)
    if args.data or args.out or args.shipped:
        print("xlsxplan: error: --data, --out and --shipped go with --fit", file=sys.stderr)
        return EXIT_USAGE
    return _measure(args)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure this machine (matmul FLOP/s, bandwidth, 6N training rate); --fit refits the efficiencies",
        description="Without --fit: a short microbenchmark of this machine (numpy on the CPU, or PyTorch on a GPU "
        "when installed): matrix-multiply FLOP/s, memory bandwidth, and the 6N-equivalent rate of a timed training "
        'step, as "Estimating the Compute and Memory Needed for Language Models" recommends for sizing a run; --gpu '
        "compares them with a catalog datasheet and --save keeps them as an accelerator preset usable by name in "
        "formulas. With --fit: refit the calibrated "
        "efficiencies on the measurements (default: the shipped copy) and write your factors file, calibration.json "
        "in the user catalog folder, which EFFICIENCY, validate and the templates then use "
        "(XLSXPLAN_CALIBRATION=shipped|user|FILE chooses); --shipped rewrites the shipped one instead.",
    )
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats: a few seconds")
    p.add_argument("--gpu", metavar="NAME", help="compare with this accelerator's datasheet figures")
    p.add_argument("--save", metavar="NAME", help="save the figures as a user accelerator preset called NAME")
    p.add_argument("--replace", action="store_true", help="with --save, replace a user preset of that name")
    p.add_argument(
        "--backend", choices=("auto", "numpy", "torch"), default="auto", help="auto: PyTorch if installed, else numpy"
    )
    p.add_argument("--device", default="auto", help="PyTorch device: auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--fit", action="store_true", help="refit the calibrated efficiencies instead of measuring")
    p.add_argument("--data", metavar="FILE.csv", help="with --fit: measurements to fit (default: the shipped copy)")
    p.add_argument(
        "--out", metavar="FILE.json", help="with --fit: write here instead (use it with XLSXPLAN_CALIBRATION=FILE.json)"
    )
    p.add_argument(
        "--shipped",
        action="store_true",
        help="with --fit: rewrite the shipped factors from the shipped measurements (a source checkout only)",
    )
    p.set_defaults(handler=run)
