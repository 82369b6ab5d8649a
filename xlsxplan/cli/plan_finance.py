"""``xlsxplan plan``'s finance lines: rank 1 over a day of demand on price tiers, its energy and carbon, and a hosted
API beside it (:mod:`xlsxplan.plan.finance`), with the flags that replace each default."""

from __future__ import annotations

import argparse
from typing import Any

from .common import flag_number

FLAGS = (
    ("--demand-profile", "profile", "NAME", "the day's shape, a profile of demand.toml (default business-day)"),
    ("--committed-price", "usd_committed", "USD", "committed price per GPU-hour (default: the catalog's one-year)"),
    ("--spot-discount", "spot_discount", "FRACTION", "spot's discount off on demand, 0.6 for 60%% (default 0: none)"),
    ("--region", "region", "CODE", "grid region for the carbon figure, as grid.toml names it (default: none)"),
    ("--idle-share", "idle_share", "FRACTION", "idle GPU power over busy power (default 0: busy hours only)"),
    ("--api", "api_provider", "PROVIDER", "hosted API provider of hosted.toml (default: the first for the model)"),
)
NUMBERS = {"usd_committed", "spot_discount", "idle_share"}


def add_flags(p: argparse.ArgumentParser) -> None:
    """One flag per default the finance lines name."""
    group = p.add_argument_group(
        "finance (rank 1 following a day of demand on committed, on-demand or spot capacity; energy and carbon; a "
        "hosted API beside it: docs/finance.md)"
    )
    for flag, dest, metavar, text in FLAGS:
        group.add_argument(flag, dest=f"fin_{dest}", metavar=metavar, help=text)


def inputs(args: argparse.Namespace) -> Any:
    """The finance inputs the flags give, each a default where absent; UsageError naming a flag whose number is not
    one."""
    from ..plan.finance import FinanceInputs

    given: dict[str, Any] = {}
    for flag, dest, _, _ in FLAGS:
        text = getattr(args, f"fin_{dest}", None)
        if text is None:
            continue
        given[dest] = flag_number(text, flag) if dest in NUMBERS else text
    return FinanceInputs(**given)
