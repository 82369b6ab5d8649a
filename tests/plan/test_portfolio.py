"""Several workloads on one fleet (`xlsxplan plan --workloads`, PORTFOLIO): shared replicas where hourly peaks
differ, the saving against planning each alone, the bill per team, and model routing.

Every expected figure is computed by hand below from "Back-of-the-Envelope Estimation for LLM Systems" (its support
assistant: 2,000-token prompts and 300-token answers, H100s at $2.50 an hour; section 6's code and its printout):

* Qwen2.5-72B, FP8 weights on two H100s: batch 94 and 4,387 tokens/s at full load; its prefill, 2 FLOPs per parameter
  per prompt token at half the dense BF16 peak (989 TFLOP/s), 2 x 72.7e9 x 2,000 / (2 x 989e12 x 0.5) = 0.294 s.
* Qwen2.5-7B, BF16 on one H100: batch 430 and 20,031 tokens/s; prefill 2 x 7.6e9 x 2,000 / (989e12 x 0.5) = 0.061 s.

The text reads capacity off the tokens/s alone ("4,387 tokens/s is about twice the 2,083 needed") and leaves the
prefill's compute out; a replica that chunks its prompts into the decode steps serves at most one request per
``max(prefill_s x (prompt + answer) / prompt, answer / tokens_per_s)`` seconds (Sarathi-Serve's overlap ceiling, the
plan's REPLICA_RPS_CHUNKED, whose docstring gives the same 2.96 requests/s for this case), and the fleet is
``max(ceil(peak / capacity) + spare, 2)`` replicas (section 6: "at least two replicas"). 730 hours a month.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from xlsxplan import registry
from xlsxplan.cli import main
from xlsxplan.errors import XlsxplanError
from xlsxplan.headless import Workbook
from xlsxplan.plan.portfolio import (
    CANDIDATES,
    MOST_ASSIGNMENTS,
    WorkloadsError,
    load_workloads,
    parse_workloads,
    portfolio,
)
from xlsxplan.plan.search import Assumptions

PRICE, HOURS = 2.50, 730
DATA = Path(__file__).parents[1] / "data"
H100_BF16_PEAK = 989e12


def _prefill_s(params_b: float, prompt: float, gpus: int) -> float:
    return 2 * params_b * 1e9 * prompt / (gpus * H100_BF16_PEAK * 0.5)


def _capacity(params_b: float, gpus: int, tokens_per_s: float, prompt: float = 2000, answer: float = 300) -> float:
    """Requests a second one replica serves (the chunked-prefill ceiling)."""
    return 1 / max(_prefill_s(params_b, prompt, gpus) * (prompt + answer) / prompt, answer / tokens_per_s)


CAP_72B = _capacity(72.7, 2, 4387)  # 2.957 requests/s a replica of two GPUs
CAP_7B = _capacity(7.6, 1, 20031)  # 14.14 requests/s a replica of one GPU


def _replicas(peak_rps: float, capacity: float, spare: int) -> int:
    return max(math.ceil(peak_rps / capacity) + spare, 2)


def _usd(gpus: int) -> float:
    return gpus * PRICE * HOURS


# the source text's counting (parameters x bytes), its BF16 KV cache, one or two GPUs a replica
TEXT = dict(weights="params x bytes", kv_precisions=("bf16",), gpus_per_replica=(1, 2))
GPUS = {"H100": PRICE}


# --- routing, the source text's closing point ---------------------------------------------------------------------


def _support(requests_per_day: float, model: str = "Qwen2.5-7B=0.7|Qwen2.5-72B=0.3", quality: str = "") -> dict:
    row = dict(name="support", team="care", model=model, requests_per_day=requests_per_day, peak_factor=3)
    return row | dict(prompt_tokens=2000, output_tokens=300, quality=quality)


@pytest.mark.parametrize("requests_per_day", [200_000, 2_000_000])
def test_routing_70_percent_to_the_7b_against_all_on_the_72b(requests_per_day):
    # section 1: peak = requests / 86,400 x 3 (6.94 a second at 200,000 a day); section 6 reads the fleet at ten times
    # that traffic too. Section 6: "at least two replicas" and no spare beyond them
    peak = requests_per_day / 86_400 * 3
    all_72b = _replicas(peak, CAP_72B, 0) * 2
    routed_7b = _replicas(0.7 * peak, CAP_7B, 0) * 1
    routed_72b = _replicas(0.3 * peak, CAP_72B, 0) * 2
    tokens_m = requests_per_day * 2300 * HOURS / 24 / 1e6
    if requests_per_day == 200_000:
        # 3 replicas for the whole peak; routed, each model's minimum of two replicas binds: 2 + 4 GPUs
        assert (all_72b, routed_7b, routed_72b) == (6, 2, 4)
    else:
        # 23.5 replicas' worth for the whole peak; routed, 3.4 and 7.0
        assert (all_72b, routed_7b, routed_72b) == (48, 4, 16)

    a = Assumptions(spare=0, **TEXT)
    result = portfolio(parse_workloads([_support(requests_per_day)]), GPUS, a, "assumed")
    by_model = {p.model: p for p in result.pools}
    assert by_model["Qwen2.5-72B"].label() == "Qwen2.5-72B on H100-SXM fp8/bf16 x2"
    assert by_model["Qwen2.5-7B"].label() == "Qwen2.5-7B on H100-SXM bf16/bf16 x1"
    assert (by_model["Qwen2.5-7B"].gpus, by_model["Qwen2.5-72B"].gpus) == (routed_7b, routed_72b)
    assert result.usd_per_month == pytest.approx(_usd(routed_7b + routed_72b))
    fleet = result.to_json()["fleet"]
    assert fleet["usd_per_m_tokens"] == pytest.approx(_usd(routed_7b + routed_72b) / tokens_m)
    (routing,) = result.routing
    assert routing["reference"] == "Qwen2.5-72B"  # the split's largest model, none named
    assert routing["unrouted_gpus"] == all_72b
    assert routing["unrouted_usd_per_month"] == pytest.approx(_usd(all_72b))
    assert routing["saving_usd_per_month"] == pytest.approx(_usd(all_72b) - _usd(routed_7b + routed_72b))
    # no quality score given, none invented
    assert routing["routed_quality"] is None and routing["quality_given"] is False
    if requests_per_day == 200_000:
        assert routing["saving_usd_per_month"] == pytest.approx(0)  # $10,950 either way
        assert _usd(all_72b) / tokens_m == pytest.approx(0.7826, abs=1e-4)  # per M tokens, prompt and answer
    else:
        assert routing["saving_usd_per_month"] == pytest.approx(51_100)  # $87,600 against $36,500


def test_routing_reports_the_quality_the_user_gives():
    a = Assumptions(spare=0, **TEXT)
    result = portfolio(parse_workloads([_support(2_000_000, quality="0.80|0.90")]), GPUS, a, "assumed")
    (routing,) = result.routing
    assert routing["routed_quality"] == pytest.approx(0.7 * 0.80 + 0.3 * 0.90)
    assert routing["reference_quality"] == pytest.approx(0.90)


# --- three workloads, two of them sharing -------------------------------------------------------------------------

# support: 216,000 a day, busy from 08:00 to 20:00 (share 1), a quarter of that the rest of the day;
# coding: 86,400 a day, busiest from midnight to 06:00 (share 1), a fifth of that the rest;
# summaries: 432,000 a day on the 7B, flat
SUPPORT_SHAPE = [0.25] * 8 + [1.0] * 12 + [0.25] * 4
CODING_SHAPE = [1.0] * 6 + [0.2] * 18
WORKLOADS_CSV = (
    "name,team,model,requests_per_day,shape,prompt_tokens,output_tokens\n"
    f"support,care,Qwen2.5-72B,216000,{' '.join(map(str, SUPPORT_SHAPE))},2000,300\n"
    f"coding,eng,Qwen2.5-72B,86400,{' '.join(map(str, CODING_SHAPE))},2000,300\n"
    "summaries,eng,Qwen2.5-7B,432000,flat,2000,300\n"
)


def _hourly_rps(per_day: float, shape: list[float]) -> list[float]:
    return [per_day * s / sum(shape) / 3600 for s in shape]


def _three_by_hand(allocation: str) -> dict:
    support = _hourly_rps(216_000, SUPPORT_SHAPE)  # 4 a second by day, 1 at night
    coding = _hourly_rps(86_400, CODING_SHAPE)  # 2.5 a second after midnight, 0.5 the rest
    assert (max(support), min(support), max(coding), min(coding)) == pytest.approx((4, 1, 2.5, 0.5))
    spare = 1
    alone = {
        "support": _replicas(4, CAP_72B, spare) * 2,  # ceil(1.35) + 1 = 3 replicas
        "coding": _replicas(2.5, CAP_72B, spare) * 2,  # ceil(0.85) + 1 = 2
        "summaries": _replicas(5, CAP_7B, spare) * 1,  # ceil(0.35) + 1 = 2
    }
    both = [s + c for s, c in zip(support, coding)]  # 4.5 a second at 08:00, not 4 + 2.5
    assert max(both) == pytest.approx(4.5) and both.index(max(both)) == 8
    shared = _replicas(max(both), CAP_72B, spare) * 2  # ceil(1.52) + 1 = 3 replicas
    pool = _usd(shared)
    if allocation == "gpu-time":  # the work each does over the day: 60 and 24 request-hours a second
        w_support, w_coding = sum(support), sum(coding)
    else:  # each one's own peak: 4 and 2.5
        w_support, w_coding = max(support), max(coding)
    cost = {
        "support": pool * w_support / (w_support + w_coding),
        "coding": pool * w_coding / (w_support + w_coding),
        "summaries": _usd(alone["summaries"]),
    }
    tokens_m = {
        n: r * 2300 * HOURS / 24 / 1e6 for n, r in (("support", 216_000), ("coding", 86_400), ("summaries", 432_000))
    }
    return {
        "alone_gpus": alone,
        "fleet_gpus": shared + alone["summaries"],
        "fleet_usd": pool + _usd(alone["summaries"]),
        "alone_usd": _usd(sum(alone.values())),
        "cost": cost,
        "per_m": {n: cost[n] / tokens_m[n] for n in cost},
        "teams": {"care": cost["support"], "eng": cost["coding"] + cost["summaries"]},
        "team_per_m": {
            "care": cost["support"] / tokens_m["support"],
            "eng": (cost["coding"] + cost["summaries"]) / (tokens_m["coding"] + tokens_m["summaries"]),
        },
    }


def test_the_three_workload_case_by_hand_has_the_figures_the_docs_quote():
    hand = _three_by_hand("gpu-time")
    assert hand["alone_gpus"] == {"support": 6, "coding": 4, "summaries": 2}
    assert (hand["fleet_gpus"], hand["fleet_usd"], hand["alone_usd"]) == (8, 14_600, 21_900)
    assert hand["cost"]["support"] == pytest.approx(10_950 * 60 / 84)  # $7,821
    assert hand["teams"]["eng"] == pytest.approx(10_950 * 24 / 84 + 3_650)  # $6,779
    peak = _three_by_hand("peak")
    assert peak["cost"]["support"] == pytest.approx(10_950 * 4 / 6.5)  # $6,738


CLI_FLAGS = ["--gpu", "H100=2.5", "--rank", "assumed", "--kv", "bf16", "--gpus-per-replica", "1,2"]
CLI_FLAGS += ["--weights-as", "params-x-bytes"]


@pytest.mark.parametrize("allocation", ["gpu-time", "peak"])
def test_three_workloads_from_plan_workloads_json(tmp_path, capsys, allocation):
    hand = _three_by_hand(allocation)
    path = tmp_path / "workloads.csv"
    path.write_text(WORKLOADS_CSV, encoding="utf-8")
    argv = ["plan", "--workloads", str(path), *CLI_FLAGS, "--json"]
    assert main(argv + (["--allocation", "peak"] if allocation == "peak" else [])) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["allocation"]["rule"] == allocation and out["allocation"]["alternative"]
    fleet = out["fleet"]
    assert (fleet["gpus"], fleet["alone_gpus"]) == (hand["fleet_gpus"], sum(hand["alone_gpus"].values()))
    assert fleet["usd_per_month"] == pytest.approx(hand["fleet_usd"])
    assert fleet["saving_usd_per_month"] == pytest.approx(hand["alone_usd"] - hand["fleet_usd"])  # $7,300
    (shared,) = [d for d in out["deployments"] if len(d["workloads"]) == 2]
    assert sorted(shared["workloads"]) == ["coding", "support"] and shared["peak_hour"] == 8
    for w in out["workloads"]:
        assert w["alone"]["gpus"] == hand["alone_gpus"][w["workload"]]
        assert w["usd_per_month"] == pytest.approx(hand["cost"][w["workload"]])
        assert w["usd_per_m_tokens"] == pytest.approx(hand["per_m"][w["workload"]])
    teams = {t["team"]: t for t in out["teams"]}
    for team, usd in hand["teams"].items():
        assert teams[team]["usd_per_month"] == pytest.approx(usd)
        assert teams[team]["usd_per_m_tokens"] == pytest.approx(hand["team_per_m"][team])
    assert out["routing"] == []  # no split


def _portfolio_args(text: str) -> tuple:
    return (text, "H100=2.5", 1, 1, 2, "gpu-time", "bf16,fp8", "bf16", "1,2", "params x bytes")


def _table(rows) -> dict:
    rows = [list(r) for r in rows]
    header = rows[0]
    return {(r[0], r[1] or r[2]): dict(zip(header, r)) for r in rows[1:]}


def test_three_workloads_from_the_portfolio_function():
    hand = _three_by_hand("gpu-time")
    table = _table(registry.get("PORTFOLIO")(*_portfolio_args(WORKLOADS_CSV)))
    for name, usd in hand["cost"].items():
        assert table["workload", name]["usd_per_month"] == pytest.approx(usd)
        assert table["workload", name]["usd_per_m_tokens"] == pytest.approx(hand["per_m"][name])
    for team, usd in hand["teams"].items():
        assert table["team", team]["usd_per_month"] == pytest.approx(usd)
    fleet = table["fleet", ""]
    assert (fleet["gpus"], fleet["usd_per_month"]) == (hand["fleet_gpus"], pytest.approx(hand["fleet_usd"]))
    assert fleet["saving_usd_per_month"] == pytest.approx(hand["alone_usd"] - hand["fleet_usd"])
    assert "GPU time" in fleet["deployment"]  # the rule, stated


def test_three_workloads_recalculated_headless_from_a_sheet_table(tmp_path):
    # a Workloads sheet, one row per workload, each row joined into CSV and the rows into PORTFOLIO's text
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Workloads"
    lines = WORKLOADS_CSV.strip().splitlines()
    for r, line in enumerate(lines, 1):
        for c, value in enumerate(line.split(","), 1):
            ws.cell(r, c, value)
        ws.cell(r, 9, f'=TEXTJOIN(",",FALSE,A{r}:G{r})')
    args = '"H100=2.5",1,1,2,"gpu-time","bf16,fp8","bf16","1,2","params x bytes"'
    # header, 3 workloads, 2 teams, 2 deployments, the fleet: 9 rows of 13 columns, entered as an array formula
    ws["K1"] = ArrayFormula("K1:W9", f'=PORTFOLIO(TEXTJOIN(";",FALSE,I1:I{len(lines)}),{args})')
    path = tmp_path / "portfolio.xlsx"
    wb.save(path)
    book = Workbook.load(path).calculate()
    hand = _three_by_hand("gpu-time")
    header = [book.get(f"Workloads!{c}1") for c in "KLMNOPQRSTUVW"]
    assert header[0] == "row" and "usd_per_month" in header
    col = "KLMNOPQRSTUVW"[header.index("usd_per_month")]
    rows = {book.get(f"Workloads!L{r}") or book.get(f"Workloads!M{r}"): r for r in range(2, 10)}
    for name, usd in hand["cost"].items():
        assert book.get(f"Workloads!{col}{rows[name]}") == pytest.approx(usd)


def test_the_shipped_workloads_file_is_the_three_workload_case(tmp_path):
    # docs/planning.md walks through tests/data/workloads.toml: the case computed by hand above, as TOML
    csv = tmp_path / "w.csv"
    csv.write_text(WORKLOADS_CSV, encoding="utf-8")
    assert load_workloads(DATA / "workloads.toml") == load_workloads(csv)
    (routed,) = load_workloads(DATA / "routing.csv")
    assert routed == parse_workloads([_support(2_000_000)])[0]


def test_a_shared_deployment_meets_the_strictest_target_of_its_workloads():
    # long answers to short prompts, so that decode binds a replica: coding asks 60 tokens/s a user, which caps the
    # batch; sharing runs support's requests at that batch too, so support's load is planned at coding's target
    prompt, answer, context = 100, 2000, 2100
    rows = [
        dict(name="support", team="care", model="Qwen2.5-72B", requests_per_day=216_000, shape=SUPPORT_SHAPE),
        dict(name="coding", team="eng", model="Qwen2.5-72B", requests_per_day=86_400, shape=CODING_SHAPE),
    ]
    rows = [r | dict(prompt_tokens=prompt, output_tokens=answer) for r in rows]
    rows[1]["tokens_per_s"] = 60
    a = Assumptions(
        weights="params x bytes", kv_precisions=("bf16",), weight_precisions=("fp8",), gpus_per_replica=(2,)
    )
    result = portfolio(parse_workloads(rows), GPUS, a, "assumed")
    # section 4's step: the FP8 weights and every sequence's KV cache read from 6.7 TB/s; section 2's 144 GB usable
    weights, kv_seq, bandwidth = 72.7e9, 327_680 * context, 2 * 3.35e12

    def capacity(batch: int) -> float:
        tokens_per_s = batch / ((weights + batch * kv_seq) / bandwidth)
        return _capacity(72.7, 2, tokens_per_s, prompt, answer)

    memory_batch = math.floor((144e9 - weights) / kv_seq)  # 103
    speed_batch = math.floor((bandwidth / 60 - weights) / kv_seq)  # 56: a step of at most 1/60 s
    assert (memory_batch, speed_batch) == (103, 56)
    fast, slow = capacity(memory_batch), capacity(speed_batch)  # 2.40 and 1.68 requests/s a replica
    alone = _replicas(4, fast, 1) + _replicas(2.5, slow, 1)  # 3 + 3
    shared = _replicas(4 / slow + 0.5 / slow, 1, 1)  # at 08:00, both at 60 tokens/s: ceil(2.68) + 1 = 4
    assert (alone, shared, _replicas(4 / fast + 0.5 / slow, 1, 1)) == (6, 4, 3)
    (pool,) = result.pools
    assert pool.targets.tokens_per_s == 60 and sorted(pool.members) == [0, 1]
    assert pool.option.assumed.batch == speed_batch and pool.replicas == shared
    assert result.alone_gpus == 2 * alone


def test_the_search_counts_its_work_and_stays_within_its_bound():
    rows = [
        dict(name=f"w{i}", team="t", model="Qwen2.5-7B", requests_per_day=10_000 * (i + 1), prompt_tokens=2000)
        | dict(output_tokens=300)
        for i in range(6)
    ]
    a = Assumptions(weights="params x bytes", gpus_per_replica=(1, 2, 4))
    result = portfolio(parse_workloads(rows), GPUS, a, "assumed")
    assert result.assignments_tried <= MOST_ASSIGNMENTS and CANDIDATES**6 > MOST_ASSIGNMENTS
    # one plan per workload at its own targets (none: all alike), no more
    assert result.plans_run == 6
    # six small workloads on one model share one deployment: its minimum of two replicas once, not six times
    assert len(result.pools) == 1 and result.saving_usd_per_month > 0


# --- bad input: one line naming the row, the field and what is allowed ----------------------------------------------

GOOD = dict(name="a", team="t", model="Qwen2.5-7B", requests_per_day=1000, prompt_tokens=100, output_tokens=10)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(requests_per_day=-5), r"^workloads row 1 \(a\): requests_per_day must be a positive number"),
        (dict(requests_per_day="lots"), r"^workloads row 1 \(a\): requests_per_day must be a positive number .*'lots'"),
        (dict(model="No-Such-Model"), r"^workloads row 1 \(a\): model must be a preset model: "),
        (
            dict(model="Qwen2.5-7B=0.6|Qwen2.5-72B=0.3"),
            r"^workloads row 1 \(a\): model shares must sum to 1, got 0\.9$",
        ),
        (dict(model="Qwen2.5-7B|Qwen2.5-72B"), r"model must give each model of a split its share, 'MODEL=SHARE'"),
        (dict(model="Qwen2.5-7B=1.5"), r"model share of Qwen2.5-7B must be a fraction above 0 and at most 1"),
        (dict(quality="0.8|0.9"), r"quality must give one score per model of the split \(1\), got 2$"),
        (
            dict(shape="1 2 3"),
            r"shape must be a demand profile name \(business-day, flat\) or 24 hourly shares.*3 values",
        ),
        (dict(shape="weekend"), r"^workloads row 1 \(a\): shape must be a demand profile or 24 hourly shares: "),
        (dict(shape="0 " * 24), r"shape must be .* got only zeros$"),
        (dict(shape="flat", peak_factor=2), r"peak_factor must be left empty when shape is given"),
        (dict(peak_factor=0.5), r"^workloads row 1 \(a\): peak_factor must be a number from 1 to 10,000, got 0\.5$"),
        (dict(prompt_p95=50), r"prompt_p95 must be at least prompt_tokens \(100\), got 50$"),
        (dict(reference="Qwen2.5-72B"), r"reference applies only to a routing split"),
        (dict(team=""), r"^workloads row 1 \(a\): team is required: the team billed for it \[text\]$"),
        (dict(colour="red"), r"colour is not a workloads column; the columns are name, team, model"),
    ],
)
def test_a_bad_field_is_one_line_naming_it(change, message):
    with pytest.raises(WorkloadsError, match=message):
        parse_workloads([GOOD | change])


def test_bad_files_are_one_line(tmp_path):
    dup = tmp_path / "dup.csv"
    dup.write_text(
        "name,team,model,requests_per_day,prompt_tokens,output_tokens\na,t,Qwen2.5-7B,1,1,1\nA,t,Qwen2.5-7B,1,1,1\n"
    )
    with pytest.raises(WorkloadsError, match=r"^workloads row 2 \(A\): name must be unique"):
        load_workloads(dup)
    header = tmp_path / "h.csv"
    header.write_text("name,team,flavour\n")
    with pytest.raises(WorkloadsError, match=r"^workloads header: 'flavour' is not a workloads column"):
        load_workloads(header)
    empty = tmp_path / "e.csv"
    empty.write_text("name,team,model,requests_per_day,prompt_tokens,output_tokens\n")
    with pytest.raises(WorkloadsError, match=r"^workloads must hold at least one workload row under its header$"):
        load_workloads(empty)
    toml = tmp_path / "w.toml"
    toml.write_text('[workload]\nname = "a"\n')
    with pytest.raises(WorkloadsError, match=r"must hold \[\[workload\]\] tables only"):
        load_workloads(toml)
    with pytest.raises(WorkloadsError, match=r"must be a \.toml or a \.csv file$"):
        load_workloads(tmp_path / "w.xlsx")


def test_the_command_line_refuses_per_workload_flags_and_bad_files(tmp_path, capsys):
    path = tmp_path / "w.csv"
    path.write_text(WORKLOADS_CSV, encoding="utf-8")
    assert main(["plan", "--workloads", str(path), "--model", "Qwen2.5-72B"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err == "xlsxplan plan: error: --model is set per workload in the workloads file: leave it out with --workloads"
    )
    assert main(["plan", "--workloads", str(tmp_path / "missing.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("xlsxplan plan: error: workloads: cannot read ") and "\n" not in err
    assert main(["plan", "--allocation", "peak"]) == 2
    assert "give --workloads FILE too" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flag", [["--region", "US"], ["--spot-discount", "0.6"], ["--max-gpus-per-replica", "16"], ["--own"]]
)
def test_the_command_line_refuses_what_a_portfolio_does_not_price(tmp_path, capsys, flag):
    # the finance lines and replicas beyond one server belong to the single plan: silently ignoring them would
    # print a fleet that does not answer the flag the user gave
    path = tmp_path / "w.csv"
    path.write_text(WORKLOADS_CSV, encoding="utf-8")
    assert main(["plan", "--workloads", str(path), *flag]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"xlsxplan plan: error: {flag[0]} is not shared: leave it out with --workloads"


def test_the_portfolio_function_says_what_is_wrong_in_one_line():
    with pytest.raises(XlsxplanError, match=r"^allocation must be gpu-time or peak, got 'share'$"):
        registry.get("PORTFOLIO")(GOOD_TEXT, "H100=2.5", 1, 1, 2, "share")


GOOD_TEXT = "name,team,model,requests_per_day,prompt_tokens,output_tokens;a,t,Qwen2.5-7B,1000,100,10"
