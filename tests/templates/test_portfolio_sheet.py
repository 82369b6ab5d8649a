"""The serving template's Portfolio sheet (both editions) and Chargeback sheet (the add-in edition): three workloads
on one fleet, computed by hand here from the example's numbers (the source text's $2.50 H100 and 2.96 requests a
second a replica of Qwen2.5-72B in FP8 on two, 14.13 for Qwen2.5-7B on one), by the portable edition's native
formulas (headlessly and in LibreOffice), and by PORTFOLIO as `xlsxplan plan --workloads` prints it."""

from __future__ import annotations

import json
import math
from typing import Any

import openpyxl
import pytest

from tests.helpers import REPO
from tests.helpers.books import changed, saved_values
from tests.helpers.office import SOFFICE, shipped_recalculated
from xlsxplan.cli import main
from xlsxplan.headless import Workbook
from xlsxplan.templates import portfolio_sheet as pf
from xlsxplan.templates import serving
from xlsxplan.templates.build import Built, edition_filename
from xlsxplan.templates.portable import registry_calls

COLS = pf.WORKLOAD_COLUMNS
DAY = [0.25] * 8 + [1.0] * 12 + [0.25] * 4  # tests/data/workloads.toml's support assistant
NIGHT = [1.0] * 6 + [0.2] * 18  # and its coding assistant


def by_hand(requests: tuple[float, float, float] = (216_000, 86_400, 432_000)) -> dict[str, Any]:
    """The example's figures from its numbers: each hour's load in replicas, replicas for the peak plus one spare and
    at least two (Back-of-the-Envelope section 6), the 72B workloads sharing one deployment, the bill by GPU time."""
    shapes, caps, gpus = (DAY, NIGHT, [1.0] * 24), (2.96, 2.96, 14.13), (2, 2, 1)
    models, teams = ("72B", "72B", "7B"), ("care", "eng", "eng")
    month = 2.5 * 730  # a GPU's month at $2.50 an hour
    load = [[n * s / sum(shape) / 3600 / cap for s in shape] for n, shape, cap in zip(requests, shapes, caps)]
    alone = [
        max(math.ceil(n * max(sh) / sum(sh) / 3600 / c) + 1, 2) * g for n, sh, c, g in zip(requests, shapes, caps, gpus)
    ]
    out: dict[str, Any] = {"alone_gpus": alone, "alone_usd": [g * month for g in alone]}
    peak = {m: max(sum(load[i][h] for i in range(3) if models[i] == m) for h in range(24)) for m in models}
    shared = [max(math.ceil(peak[m]) + 1, 2) * g for m, g in zip(models, gpus)]
    time = [sum(row) * g for row, g in zip(load, gpus)]
    share = [t / sum(time[j] for j in range(3) if models[j] == m) for t, m in zip(time, models)]
    out["shared_gpus"], out["gpu_time"] = shared, time
    out["monthly"] = [s * g * month for s, g in zip(share, shared)]
    out["team"] = [sum(out["monthly"][j] for j in range(3) if teams[j] == t) for t in teams]
    out["fleet_usd"] = sum(out["monthly"])
    out["fleet_gpus"] = sum({m: g for m, g in zip(models, shared)}.values())
    out["saving"] = sum(out["alone_usd"]) - out["fleet_usd"]
    return out


def _row(get: Any, key: str) -> list[Any]:
    r = serving_row(key)
    return [get(f"{pf.PORTFOLIO}!{c}{r}") for c in COLS]


_ROWS: dict[str, int] = {}


def serving_row(key: str) -> int:
    if not _ROWS:
        book = serving.build()
        _ROWS.update({k: ref.row for k, ref in book.refs.items() if k.startswith("pf_")})
    return _ROWS[key]


def assert_by_hand(get: Any, hand: dict[str, Any]) -> None:
    assert _row(get, "pf_alone_gpus") == hand["alone_gpus"]
    assert _row(get, "pf_shared_gpus") == hand["shared_gpus"]
    for key, want in (("pf_gpu_time", "gpu_time"), ("pf_monthly", "monthly"), ("pf_team_monthly", "team")):
        assert _row(get, key) == pytest.approx(hand[want], rel=1e-9), key
    fleet = {k: get(f"{pf.PORTFOLIO}!C{serving_row(k)}") for k in ("pf_fleet_gpus", "pf_fleet_monthly", "pf_saving")}
    assert fleet["pf_fleet_gpus"] == pytest.approx(hand["fleet_gpus"], rel=1e-12)
    assert fleet["pf_fleet_monthly"] == pytest.approx(hand["fleet_usd"], rel=1e-12)
    assert fleet["pf_saving"] == pytest.approx(hand["saving"], rel=1e-12)


def test_the_hand_computation_is_the_walk_through_of_docs_planning():
    hand = by_hand()  # docs/planning.md: 8 GPUs and $14,600 shared against 12 and $21,900; care pays 5/7 of $10,950
    assert hand["alone_gpus"] == [6, 4, 2] and hand["shared_gpus"] == [6, 6, 2] and hand["fleet_gpus"] == 8
    assert (hand["fleet_usd"], sum(hand["alone_usd"]), hand["saving"]) == pytest.approx((14_600, 21_900, 7_300))
    assert hand["team"][:2] == pytest.approx([10_950 * 5 / 7, 10_950 * 2 / 7 + 3_650])


@pytest.fixture(scope="module")
def editions() -> dict[str, Any]:
    # the shipped files, which tests/e2e/test_generated.py holds to be what build writes: loaded, never saved
    book = serving.build()
    out = {}
    for edition in ("functions", "portable"):
        path = REPO / "workbooks" / edition_filename(serving.FILENAME, edition)
        out[edition] = Built(path, book, Workbook.load(path).calculate())
    return out


@pytest.mark.slow
def test_both_editions_compute_the_shared_fleet_and_the_bill_by_team_as_the_hand_does(editions):
    for built in editions.values():
        assert_by_hand(built.get, by_hand())
    # the portable edition computes them with native formulas only: FLEET_REPLICAS written out, no add-in call
    ws = openpyxl.load_workbook(editions["portable"].path)[pf.PORTFOLIO]
    formulas = [c.value for row in ws.iter_rows() for c in row if isinstance(c.value, str) and c.value.startswith("=")]
    assert formulas and not [f for f in formulas if registry_calls(f)]


def _chargeback(built: Built, get: Any) -> list[list[Any]]:
    ref = built.book.ref("chargeback")
    return [
        [get(f"{pf.CHARGEBACK}!{c}{r}") for c in "ABCDEFGHIJKLM"] for r in range(ref.row, ref.row + pf.CHARGEBACK_ROWS)
    ]


def _same_table(got: list[list[Any]], want: list[list[Any]]) -> bool:
    def same(g: Any, w: Any) -> bool:
        if isinstance(w, float) and isinstance(g, (int, float)):
            return g == pytest.approx(w, rel=1e-12)
        return g == w or (g in (None, "") and w in (None, ""))

    return all(same(g, w) for gs, ws in zip(got, want, strict=True) for g, w in zip(gs, ws, strict=True))


@pytest.mark.slow
def test_the_portable_chargeback_keeps_the_add_ins_values_and_recalc_computes_them_again(editions):
    port, addin = editions["portable"], editions["functions"]
    # kept as values, not formulas: a spreadsheet application shows the add-in's table
    ws = openpyxl.load_workbook(port.path)[pf.CHARGEBACK]
    ref = port.book.ref("chargeback")
    assert not [
        c.coordinate
        for row in ws[f"A{ref.row}:M{ref.row + pf.CHARGEBACK_ROWS - 1}"]
        for c in row
        if isinstance(c.value, str) and c.value.startswith("=")
    ]
    assert _same_table(_chargeback(port, port.get), _chargeback(addin, addin.get))
    # twice the support assistant's traffic: flagged stale, and recalc computes what the add-in does (4 replicas)
    cell = f"{pf.PORTFOLIO}!{COLS[0]}{serving_row('pf_requests')}"
    fresh = Workbook.load(port.path).set(cell, 432_000).calculate()
    assert fresh.get("Master_Check") == 1
    assert [b.group for b in fresh.refresh_frozen()] == [pf.CHARGEBACK]
    with changed(addin, {cell: 432_000}):
        want = _chargeback(addin, addin.get)
    got = _chargeback(port, fresh.get)
    assert _same_table(got, want) and fresh.get("Master_Check") == 0
    (fleet,) = [r for r in got if r[0] == "fleet"]
    assert fleet[7] == 10  # the shared 72B deployment: 4 replicas of 2 GPUs, then the 7B's 2


@pytest.mark.slow
def test_the_sheet_follows_its_inputs(editions):
    # twice the coding assistant's traffic: its night peak of 5 requests a second now needs 3 replicas alone, and the
    # shared deployment's busiest hour moves; the portable edition's native formulas follow as the hand does
    for built in editions.values():
        cell = f"{pf.PORTFOLIO}!{COLS[1]}{serving_row('pf_requests')}"
        with changed(built, {cell: 172_800}):
            assert_by_hand(built.get, by_hand((216_000, 172_800, 432_000)))


@pytest.mark.slow
def test_workloads_of_one_model_on_unlike_replicas_are_a_problem_on_checks(editions):
    for built in editions.values():
        check = f"Checks!B{next(r for r in range(6, 400) if str(built.get(f'Checks!A{r}')).startswith('Portfolio:'))}"
        assert built.get(check) == 0
        with changed(built, {f"{pf.PORTFOLIO}!{COLS[1]}{serving_row('pf_rps')}": 3.5}):
            assert built.get(check) == 1 and built.get("Master_Check") == 1


@pytest.mark.slow
def test_the_add_in_editions_portfolio_is_what_plan_workloads_prints(editions, capsys):
    argv = ["plan", "--workloads", str(REPO / "tests/data/workloads.toml"), "--gpu", "H100=2.5", "--rank", "assumed"]
    argv += ["--kv", "bf16", "--gpus-per-replica", "1,2", "--weights-as", "params-x-bytes", "--json"]
    capsys.readouterr()
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    built = editions["functions"]
    ref = built.book.ref("chargeback")
    rows = [
        [built.get(f"{pf.CHARGEBACK}!{c}{r}") for c in "ABCDEFGHIJKLM"]
        for r in range(ref.row, ref.row + pf.CHARGEBACK_ROWS)
    ]
    assert rows[0][:3] == ["row", "workload", "team"]
    (fleet,) = [r for r in rows if r[0] == "fleet"]
    assert fleet[7] == data["fleet"]["gpus"] == 8
    assert fleet[8] == pytest.approx(data["fleet"]["usd_per_month"], rel=1e-12) and fleet[8] == 14_600
    assert fleet[11] == pytest.approx(data["fleet"]["saving_usd_per_month"], rel=1e-12)
    teams = {r[2]: r[8] for r in rows if r[0] == "team"}
    assert teams == pytest.approx({t["team"]: t["usd_per_month"] for t in data["teams"]}, rel=1e-12)
    # and the native figures on Portfolio, from the typed capacities, agree with the search's
    assert teams == pytest.approx(dict(zip(("care", "eng"), by_hand()["team"][:2])), rel=1e-9)


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_computes_the_portable_portfolio_as_the_hand_does(editions):
    assert_by_hand(saved_values(shipped_recalculated() / editions["portable"].path.name), by_hand())
