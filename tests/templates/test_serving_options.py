"""The serving template's Options sheet and price table: PLAN_OPTIONS for the template's inputs, recalculated
headlessly, is what `xlsxplan plan --json` prints for the same inputs; every accelerator is priced from one table
on Lists (GPU_PRICE's dated, sourced defaults), so options and cases on different accelerators are priced apart.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from openpyxl.utils import get_column_letter

from tests.helpers.books import built_templates, case_refs, changed
from xlsxplan import catalog
from xlsxplan.cli import main
from xlsxplan.cli.cmd_plan import SPEC_FLAGS
from xlsxplan.plan import search as plan_search
from xlsxplan.plan.cells import NONE_SHOWN
from xlsxplan.plan.inputs import PLAN_INPUTS
from xlsxplan.plan.search import TABLE_HEADER, TOPOLOGY_COLUMNS
from xlsxplan.templates import serving as serving_book
from xlsxplan.templates.book import name_from_label
from xlsxplan.templates.build import Built
from xlsxplan.templates.common import price_label
from xlsxplan.templates.styles import SIDE_COLUMNS


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> Built:
    # the functions edition as shipped (tests/e2e/test_generated.py holds it to be what build writes), recalculated
    return built_templates(tmp_path_factory)[serving_book.FILENAME]


def price_name(gpu: str) -> str:
    return name_from_label(price_label(gpu))


def line(b: Built, key: str) -> Any:
    return b.get(b.book.address(key))


def _none(value: Any) -> Any:
    return "" if value == NONE_SHOWN else value


def options(b: Built) -> list[dict[str, Any]]:
    """The Options sheet's table, a dict per option (keyed by PLAN_OPTIONS's header), with the marked column."""
    ref = b.book.ref("Options:table")
    first = ref.row
    extra = ["ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "replicas_binding"]  # with a percentile target
    header = list(TABLE_HEADER) + extra + list(TOPOLOGY_COLUMNS)  # then with a replica beyond one server
    cols = [get_column_letter(i + 2) for i in range(len(header))]
    assert [b.get(f"Options!{c}{first}") for c in cols] == header
    rows = []
    r = first + 1
    # the rows after the options searched are errors (rows the table lacks)
    while isinstance(b.get(f"Options!C{r}"), str) and b.get(f"Options!C{r}") != "":
        # a figure the option has none of shows "-" (PLAN_OPTIONS_AT), the table's empty text
        row = {key: _none(b.get(f"Options!{c}{r}")) for key, c in zip(header, cols)}
        row["active"] = b.get(f"Options!A{r}")
        rows.append(row)
        r += 1
    return rows


def cli_plan(b: Built, capsys) -> dict[str, Any]:
    """`xlsxplan plan --json` for the inputs the workbook holds now: its active model, its traffic and targets
    (an empty target is none) and every accelerator priced on Lists at its price there."""
    argv = [
        "plan",
        "--model",
        b.get("Model"),
        "--requests-per-day",
        str(b.get("Requests_Per_Day")),
        "--prompt-tokens",
        repr(line(b, "prompt_mean")),
        "--prompt-p95",
        repr(line(b, "prompt_tail")),
        "--max-prompt-tokens",
        repr(b.get("Longest_Prompt_Accepted")),
        "--output-tokens",
        repr(b.get("Output_Tokens_Per_Request")),
        "--reasoning-tokens",
        repr(b.get("Hidden_Reasoning_Tokens_Per_Request")),
        "--peak-factor",
        repr(b.get("Peak_Hour_Factor")),
        "--spare",
        str(b.get("Spare_Replicas")),
        "--min-replicas",
        str(b.get("Minimum_Replicas")),
        "--json",
    ]
    for p in PLAN_INPUTS:  # the inputs whose flag the specification makes, as the sheet passes them from Inputs
        if p.name in SPEC_FLAGS and p.sheet.isidentifier():
            argv += [p.cli_flag, repr(b.get(p.sheet))]
    percentile = b.get("First_Token_Target_At_The_Percentile")
    if isinstance(percentile, (int, float)) and percentile > 0:  # that target, at its percentile
        first_token = ("--ttft-s", "First_Token_Target_At_The_Percentile")
        argv += ["--ttft-percentile", repr(b.get("First_Token_Percentile"))]
    else:
        first_token = ("--ttft-s", "Time_To_First_Token_Target")
    for flag, name in (("--tokens-per-s", "Latency_Target"), first_token):
        if isinstance(b.get(name), (int, float)) and b.get(name) > 0:
            argv += [flag, repr(b.get(name))]
    for i in range(1, len(serving_book.OPTIONS_ACCELERATORS) + 1):  # the accelerators the sheet searches
        gpu = b.get(f"Options_Accelerator_{i}")
        price = b.get(price_name(gpu)) if gpu else None
        if isinstance(price, (int, float)):
            argv += ["--gpu", f"{gpu}={price!r}"]
    capsys.readouterr()
    code = main(argv)
    printed = capsys.readouterr()
    assert code in (0, 1), (printed.err, " ".join(argv))  # 1: no option is feasible, the table printed all the same
    return json.loads(printed.out)


def _same(sheet: Any, cli: Any, where: str) -> None:
    if isinstance(cli, float) and isinstance(sheet, (int, float)):
        assert sheet == pytest.approx(cli, rel=1e-12), where
    else:
        assert sheet == cli, where


def assert_matches_the_cli(b: Built, capsys) -> list[dict[str, Any]]:
    rows, data = options(b), cli_plan(b, capsys)
    assert len(rows) == min(len(data["options"]), serving_book.options_last_row() - b.book.ref("Options:table").row) > 0
    # the plan has a layout column where a replica is laid out beyond one server (tp8 pp2, ep16 dp-attention)
    multi = any(o["layout"] != f"tp{o['gpus_per_replica']}" for o in data["options"])
    assert b.get(b.book.address("options_multi")) == ("yes" if multi else "no")
    feasible = sum(o["feasible"] for o in data["options"])
    for i, (row, o) in enumerate(zip(rows, data["options"])):
        where = f"option {i + 1}: {row['gpu']} {row['weights']}/{row['kv']} x{row['gpus_per_replica']} {row['serving']}"
        _same(row["rank"], i + 1 if i < feasible else "", where + " rank")
        for key in (
            "gpu",
            "gpus_per_replica",
            "weights",
            "kv",
            "serving",
            "batch",
            "binding",
            "tokens_per_s_per_user",
            "ttft_s",
            "replicas",
            "gpus",
            "usd_per_month",
            "usd_per_m_input",
            "usd_per_m_output",
        ):
            _same(row[key], "" if o[key] is None else o[key], f"{where} {key}")
        assert row["feasible"] == ("yes" if o["feasible"] else "no"), where
        assert row["frontier"] == ("yes" if o["frontier"] else ""), where
        assert row["reason"] == (o["reason"] or ""), where
        at = o.get("ttft_percentiles_s")  # the percentile target's columns, "-" on the sheet without one
        for q in ("p50", "p90", "p99"):
            _same(row[f"ttft_{q}_s"], "" if at is None or at.get(q) is None else at[q], f"{where} {q}")
        _same(row["replicas_binding"], o.get("replicas_binding") or "", f"{where} replicas set by")
        c = o["assumed"]  # ranked at the calibrated efficiencies, the ideal (assumed) view beside them
        _same(row["other_view_gpus"], c["gpus"] if c["feasible"] else "", where + " ideal GPUs")
        _same(row["other_view_usd_per_month"], c["usd_per_month"] if c["feasible"] else "", where + " ideal $")
        assert row["other_view_reason"] == (c["reason"] or ""), where
        ends = o.get("range", {}).get("gpus", ("", ""))  # the calibrated fleet at the P10 and P90 published speeds
        _same([row["gpus_p10"], row["gpus_p90"]], list(ends), where + " GPU range")
        # the layout, step and communication columns: "-" unless the search laid a replica out beyond one server
        assert row["layout"] == (o["layout"] if multi else ""), where
        if o["feasible"]:  # the JSON carries the calibrated step of a feasible option
            for key in ("step_s", "comm_s"):
                _same(row[key], o[key] if multi else "", f"{where} {key}")
    return rows


@pytest.mark.slow
def test_the_options_sheet_is_what_xlsxplan_plan_prints_for_the_same_inputs(plan, capsys):
    rows = assert_matches_the_cli(plan, capsys)
    # the three accelerators chosen on Inputs are searched at their prices on Lists, 32 options each; rejected ones
    # say why
    priced = serving_book.priced_accelerators()
    assert {r["gpu"] for r in rows} == set(priced) and len(rows) == 32 * len(priced)
    assert all(r["reason"] for r in rows if r["feasible"] == "no")


@pytest.mark.slow
@pytest.mark.parametrize(
    "values",
    [
        {"Requests_Per_Day": 1_000_000, "Output_Tokens_Per_Request": 800, "Tail_Prompt_Tokens": 6_000},
        {"Active_Scenario": "7B BF16, 1 GPU", "Hidden_Reasoning_Tokens_Per_Request": 500, "Spare_Replicas": 2},
    ],
)
def test_the_options_follow_the_inputs_as_the_cli_does(plan, capsys, values):
    with changed(plan, values):
        assert_matches_the_cli(plan, capsys)


@pytest.mark.slow
def test_the_options_follow_a_percentile_first_token_target_as_the_cli_does(plan, capsys):
    # a P99 target of 1 s at the peak, the wait for a slot included: the search adds replicas until it holds, and
    # shows the P50, P90 and P99 at the fleet it plans, as `xlsxplan plan --ttft-percentile` does
    before = options(plan)
    assert {r["ttft_p99_s"] for r in before} == {""}  # none without a percentile target
    with changed(plan, {"First_Token_Target_At_The_Percentile": 1.0}):
        assert plan.get(plan.book.address("options_ttft")) == 1.0
        assert plan.get(plan.book.address("options_percentile")) == 0.99
        rows = assert_matches_the_cli(plan, capsys)
        assert rows != before
        feasible = [r for r in rows if r["feasible"] == "yes"]
        assert feasible and all(r["ttft_p99_s"] <= 1.0 for r in feasible if r["serving"] == "aggregated")
        assert any(r["replicas_binding"] == "P99 first-token target" for r in feasible)
        with changed(plan, {"First_Token_Percentile": 0.9, "Time_To_First_Token_Target": 3}):
            assert plan.get(plan.book.address("options_percentile")) == 0.9
            assert_matches_the_cli(plan, capsys)


@pytest.mark.slow
def test_a_model_too_big_for_a_server_shows_each_options_layout_step_and_communication(plan, capsys):
    # DeepSeek-V3 (671B, FP8 weights 680 GB) fits no server of 8 H100s: the search lays replicas of 16 GPUs and more
    # out as pipeline stages or wide expert parallel across servers, and the sheet shows each option's layout, its
    # calibrated step and the communication in it, as the plan itself computes them
    with changed(
        plan,
        case_refs(plan, {"model@2": "DeepSeek-V3", "Options_Accelerator_2": None, "Options_Accelerator_3": None}),
    ):
        assert plan.get("Model") == "DeepSeek-V3"
        rows = assert_matches_the_cli(plan, capsys)
        assert plan.get(plan.book.address("options_multi")) == "yes"
        wide = [r for r in rows if r["feasible"] == "yes" and r["gpus_per_replica"] == 16 and "ep16" in r["layout"]]
        assert wide, [(r["gpus_per_replica"], r["layout"], r["feasible"]) for r in rows]
        traffic = plan_search.Traffic(
            plan.get("Requests_Per_Day"),
            line(plan, "prompt_mean"),
            plan.get("Output_Tokens_Per_Request"),
            plan.get("Peak_Hour_Factor"),
            line(plan, "prompt_tail"),
            max(line(plan, "prompt_tail"), plan.get("Longest_Prompt_Accepted")),
            plan.get("Hidden_Reasoning_Tokens_Per_Request"),
        )
        price = plan.get(price_name("H100-SXM"))
        own = plan_search.plan(
            "DeepSeek-V3", traffic, plan_search.Targets(), {"H100-SXM": price}, plan_search.Assumptions()
        )
        for r in wide:
            (o,) = [
                o
                for o in own.options
                if (o.gpu, o.gpus_per_replica, o.layout, o.weights, o.kv, o.serving)
                == (r["gpu"], 16, r["layout"], r["weights"], r["kv"], r["serving"])
            ]
            assert r["comm_s"] > 0 and r["comm_s"] == pytest.approx(o.calibrated.extra["comm_s"], rel=1e-12)
            assert r["step_s"] > r["comm_s"] and r["step_s"] == pytest.approx(o.calibrated.extra["step_s"], rel=1e-12)


def test_plan_options_at_checks_its_arguments_once_per_search_and_gives_what_plan_options_does():
    from xlsxplan.errors import OutOfRangeError, XlsxplanError
    from xlsxplan.plan.cells import plan_options_at
    from xlsxplan.plan.search import plan_options

    args = ("Qwen2.5-72B", 200_000, 2_000, 300, 3, 0, 1.0, 1, "H100-SXM=2.5", 2_000, 0, 0, 2, 0.99)
    table = plan_options(*args)
    for r in (1, 2, len(table)):
        for c in (1, 2, 13, len(table[0])):
            assert plan_options_at(r, c, *args) == (table[r - 1][c - 1] if table[r - 1][c - 1] != "" else NONE_SHOWN)
    assert len(table[0]) == len(TABLE_HEADER) + 4  # the percentile target's columns
    # every argument is still checked: a bad one is a clear error, the first time and after a good call
    for bad, argument in (
        ((*args[:4], 0.5), "peak_factor"),
        ((*args[:13], 1.5), "ttft_percentile"),
        ((*args, 0, 0, 16, "none", 0, 1, 2), "own"),
    ):
        for _ in range(2):
            with pytest.raises(XlsxplanError) as err:
                plan_options_at(2, 2, *bad)
            assert err.value.argument == argument
    with pytest.raises(OutOfRangeError, match="row must be at most"):
        plan_options_at(len(table) + 1, 1, *args)
    with pytest.raises(OutOfRangeError, match="column must be at most"):
        plan_options_at(1, len(table[0]) + 1, *args)
    # an Excel TRUE equals 1, but is remembered apart from it: it is checked as what it is, as PLAN_OPTIONS does
    assert plan_options_at(2, 2, *args[:7], 1, *args[8:]) == table[1][1]
    with_true = (*args[:7], True, *args[8:])
    try:
        expected: Any = plan_options(*with_true)[1][1]
    except XlsxplanError as err:
        with pytest.raises(type(err), match=err.message):
            plan_options_at(2, 2, *with_true)
    else:
        assert plan_options_at(2, 2, *with_true) == expected


def test_prices_on_lists_price_each_option_at_its_own_accelerator(plan, capsys):
    before = options(plan)
    assert before[0]["gpu"] == "H100-SXM"  # $2.50 an hour, the source's example, is the cheapest per GPU
    with changed(plan, {price_name("H100-SXM"): 9.0, price_name("H200"): 1.0}):
        rows = assert_matches_the_cli(plan, capsys)
        for r in rows:
            if r["feasible"] == "yes":  # GPUs x the accelerator's own price x 730 hours
                assert r["usd_per_month"] == pytest.approx(r["gpus"] * plan.get(price_name(r["gpu"])) * 730)
        assert rows[0]["gpu"] == "H200" and rows != before
    # another accelerator chosen on Inputs is searched at its price on Lists (the catalog's, MI300X $1.99)
    with changed(plan, {"Options_Accelerator_3": "MI300X"}):
        rows = assert_matches_the_cli(plan, capsys)
        assert {r["gpu"] for r in rows} == {"H100-SXM", "H200", "MI300X"}


def test_the_search_plans_at_the_usable_memory_efficiencies_and_hours_on_inputs(plan, capsys):
    # the Options sheet searched at 90% usable memory and 730 hours whatever Inputs said; it now passes Inputs'
    # usable memory, ideal-view efficiencies, KV overflow, prefill-to-decode link and hours (PLAN_INPUTS' sheet)
    before = options(plan)
    given = {"Usable_Memory_Fraction": 0.7, "Decode_Bandwidth_Efficiency": 0.8, "Hours_Per_Month": 700}
    with changed(plan, given):
        rows = assert_matches_the_cli(plan, capsys)
        assert rows != before
        for r in rows:
            if r["feasible"] == "yes":  # GPUs x the accelerator's own price x Inputs' hours
                assert r["usd_per_month"] == pytest.approx(r["gpus"] * plan.get(price_name(r["gpu"])) * 700)


def test_the_active_scenario_is_marked(plan):
    marked = [r for r in options(plan) if r["active"] == "yes"]
    assert [(r["gpu"], r["gpus_per_replica"], r["weights"], r["kv"], r["serving"]) for r in marked] == [
        ("H100-SXM", 2, "fp8", "bf16", "aggregated")
    ]  # 72B FP8, 2 GPUs
    with changed(plan, {"Active_Scenario": "72B BF16, 4 GPUs"}):
        marked = [r for r in options(plan) if r["active"] == "yes"]
        assert [(r["gpus_per_replica"], r["weights"]) for r in marked] == [(4, "bf16")]


def test_the_price_table_holds_the_catalogs_dated_sourced_prices(plan):
    prices = catalog.load_prices()
    for gpu in catalog.gpu_names():
        ref = plan.book.ref(price_name(gpu))
        value, source, as_of = (plan.get(f"Lists!{c}{ref.row}") for c in "BDE")
        if gpu in serving_book.PRICE_EXAMPLES:  # the source document's own figure, marked as an example
            assert value == serving_book.PRICE_EXAMPLES[gpu].usd_per_gpu_hour and "example" in source
        elif gpu in prices.ids():
            entry = prices.get(gpu)
            assert value == catalog.gpu_price(gpu) and entry.source in source
            assert dt.date(1899, 12, 30) + dt.timedelta(days=as_of) == entry.as_of
        else:
            assert value is None and "no price" in source


def test_every_cost_figure_reads_its_accelerators_price(plan):
    # case 4 on an H200: its price is the H200's row on Lists, not the active case's
    ref = plan.book.ref("gpu@3")
    price_row = plan.book.ref("Scenarios:price").row
    cost_row = plan.book.ref("Scenarios:cost_full").row
    before = plan.get(f"Scenarios!{SIDE_COLUMNS[3]}{cost_row}")
    with changed(
        plan, {f"Inputs!{ref.col}{ref.row}": "H200", "Inputs!J" + str(plan.book.ref("tflops_override@3").row): None}
    ):
        assert plan.get(f"Scenarios!{SIDE_COLUMNS[3]}{price_row}") == catalog.gpu_price("H200") == 3.99
        assert plan.get(f"Scenarios!{SIDE_COLUMNS[2]}{price_row}") == 2.5  # the H100 cases keep theirs
        assert plan.get(f"Scenarios!{SIDE_COLUMNS[3]}{cost_row}") != before
    with changed(plan, {price_name("H100-SXM"): 5.0}):  # the active case's fleet is billed at the new price
        assert line(plan, "monthly") == pytest.approx(line(plan, "gpus_peak") * 5.0 * 730)
        assert plan.get(plan.book.address("basis:price")) == 5.0


# -- a planner that cannot be silently misled ------------------------------------------------------------------------
def test_no_target_is_shipped_and_a_target_not_given_does_not_apply(plan):
    # The shipped 2-second first-token target, unreachable for a long tail prompt, used to cut the batch to 1 unseen.
    assert plan.get("Latency_Target") is None and plan.get("Time_To_First_Token_Target") is None
    assert (line(plan, "batch_latency"), line(plan, "batch_ttft")) == ("no target", "no target")
    with changed(plan, {"Tail_Prompt_Tokens": 12_000}):
        assert line(plan, "batch") == line(plan, "batch_mem") == 17 and line(plan, "binding") == "memory"
        assert plan.get(plan.book.address("master_check")) == 0
        with changed(plan, {"Time_To_First_Token_Target": 2}):  # given, it binds, and the sheets say so
            assert line(plan, "batch") == line(plan, "batch_ttft") < 17
            assert line(plan, "binding") == "the first-token target"


def test_the_sheets_say_beside_the_batch_which_target_set_it(plan):
    def beside() -> str:
        calc = plan.book.ref("batch")
        out = plan.book.ref("Outputs:batch")
        return plan.get(f"Calculations!D{calc.row}"), plan.get(f"Outputs!D{out.row}")

    rest = "; the smallest of the three, at least 1 if one fits"
    assert beside() == ("Set by memory" + rest, "Set by memory")
    with changed(plan, {"Latency_Target": 80}):  # Back-of-the-Envelope §7: 80 tokens/s caps the batch at 14
        by = "Set by the decode-speed target"
        assert line(plan, "batch") == 14 and beside() == (by + rest, by)
    with changed(plan, {"Time_To_First_Token_Target": 0.4}):
        by = "Set by the first-token target"
        assert line(plan, "batch") == 24 and beside() == (by + rest, by)


def test_a_tail_no_log_normal_fits_says_what_was_assumed_and_how_to_do_better(plan):
    # 9,000 tokens at the p95 over a 2,000 mean: 4.5 times, above the 3.87 any log-normal reaches. The plan sizes every
    # slot at the tail, and says so in words beside the batch's basis, with the two ways to give a better tail.
    assert line(plan, "spread_basis") == "a log-normal through the mean and tail"
    with changed(plan, {"Tail_Prompt_Tokens": 9_000}):
        said = line(plan, "spread_basis")
        assert said.startswith("none fits: every slot sized at the tail") and "paste lengths or type a spread" in said
        assert line(plan, "batch_basis") == "every slot at the tail"
        assert plan.get(plan.book.address("Outputs:spread_basis")) == said
        with changed(plan, {"Prompt_Length_Spread": 3_000}):  # a spread given: a paged batch, and it says why
            assert line(plan, "spread_basis") == "the spread typed on Inputs"
            assert line(plan, "batch_basis") == "paged KV cache"


def test_a_case_carries_no_other_models_overrides(plan):
    # Case 4 ships the source's 7.6B parameters for Qwen2.5-7B (catalog: 7.61) and its 989 TFLOP/s for the H100.
    # Another model in that case drops them: every figure of the case is the new model's.
    def case4(key: str) -> Any:
        return plan.get(f"Scenarios!{SIDE_COLUMNS[3]}{plan.book.ref(f'Scenarios:{key}').row}")

    assert case4("params") == 7.6 and case4("tflops") == 989
    model, gpu = plan.book.ref("model@3"), plan.book.ref("gpu@3")
    with changed(plan, {f"Inputs!{model.col}{model.row}": "Llama-3.1-8B"}):
        assert case4("params") == catalog.model_spec("Llama-3.1-8B", "params_b") and case4("model_overrides") == "no"
        assert case4("described") == "Llama-3.1-8B, bf16 weights, 1 x H100-SXM"
        assert case4("tflops") == 989  # the accelerator is still the one its override was typed for
    with changed(plan, {f"Inputs!{gpu.col}{gpu.row}": "H200"}):
        assert case4("tflops") == catalog.gpu_spec("H200", "bf16_tflops") and case4("gpu_overrides") == "no"
        assert case4("params") == 7.6


# -- latency under load: a percentile first-token target sizes the fleet ---------------------------------------------
@pytest.mark.slow
def test_a_tighter_p99_first_token_target_grows_the_fleet_as_python_says(plan):
    from xlsxplan.core import queueing

    # As shipped no percentile target applies: the fleet is the load's, and P50/P90/P99 at the peak are shown.
    assert line(plan, "replicas_ttft_pct") == "no target"
    assert line(plan, "replicas_needed") == line(plan, "replicas_load") == 4
    p50, p90, p99 = (line(plan, k) for k in ("ttft_p50", "ttft_p90", "ttft_p99"))
    assert line(plan, "prefill_chunked") <= p50 <= p90 <= p99
    fleets = []
    for target in (5.0, 1.0, 0.9):
        with changed(plan, {"First_Token_Target_At_The_Percentile": target}):
            args = (
                [line(plan, k) for k in ("peak_rps",)]
                + [target, 0.99]
                + [line(plan, k) for k in ("batch", "prefill_chunked", "decode_s", "replica_rps_chunked")]
            )
            expected = queueing.replicas_for_ttft(*args) + 1  # and the spare
            assert line(plan, "replicas_ttft_pct") == expected
            assert line(plan, "replicas_needed") == max(expected, line(plan, "replicas_load"))
            fleets.append(line(plan, "gpus_peak"))
            # at the fleet planned, the P99 meets the target (all replicas serving)
            assert line(plan, "ttft_p99") <= target
    assert fleets[0] <= fleets[1] <= fleets[2] and fleets[2] > fleets[0]  # tighter targets, more GPUs


# -- memory as serving engines allocate it ---------------------------------------------------------------------------
def test_the_engines_memory_fraction_reserve_and_blocks_give_its_true_concurrency(plan):
    from xlsxplan.core import engine

    # The active case, Qwen2.5-72B in FP8 on two H100s: 80 GB x 0.9 - 36.35 GB of weights per GPU leaves each GPU's
    # pool; KV of 327,680 bytes a token over two GPUs, in blocks of 16 tokens.
    pool = 80 * 0.9 - line(plan, "weights_gpu")
    assert line(plan, "engine_pool") == pytest.approx(pool)
    tokens = int(pool * 1e9 // (327_680 / 2) // 16 * 16)
    assert line(plan, "engine_tokens") == tokens == engine.engine_kv_tokens(pool, 327_680 / 2, 16)
    # the longest request accepted, 32,768 + 300 tokens, rounded up to blocks: vLLM's "Maximum concurrency"
    per_request = 327_680 / 2 * (-(-(32_768 + 300) // 16) * 16)
    assert line(plan, "engine_concurrency") == pytest.approx(pool * 1e9 / per_request)
    before = line(plan, "engine_concurrency")
    with changed(plan, {"Engine_Memory_Fraction": 0.95, "Engine_Activation_And_Graph_Reserve": 3}):
        assert line(plan, "engine_pool") == pytest.approx(80 * 0.95 - line(plan, "weights_gpu") - 3)
        assert line(plan, "engine_concurrency") != before
    with changed(plan, {"Engine_Activation_And_Graph_Reserve": 60}):  # no pool left: nothing runs
        assert line(plan, "engine_tokens") == 0 and line(plan, "engine_concurrency") == 0


def test_speculative_decoding_speeds_decode_and_cuts_its_cost_as_the_hand_says(plan):
    from xlsxplan.core import serving, speculative

    assert line(plan, "spec_tps_user") == "off"  # no draft tokens given
    with changed(plan, {"Draft_Tokens_Per_Step": 4}):
        # alpha 0.8, gamma 4: (1 - 0.8^5) / 0.2 = 3.36 tokens a step (Leviathan et al. 2023, equation 1)
        assert line(plan, "spec_tokens") == pytest.approx((1 - 0.8**5) / 0.2)
        batch = line(plan, "batch")
        step = speculative.spec_step_seconds(
            line(plan, "params_read"), 1, batch, 327_680, 2_300, 2, 3.35, line(plan, "tflops_weights"), 4, 1, 2, 1, 0.5
        )
        assert line(plan, "spec_step") == pytest.approx(step)
        tokens = (1 - 0.8**5) / 0.2
        assert line(plan, "spec_tps_user") == pytest.approx(tokens / step)
        assert line(plan, "spec_cost_full") == pytest.approx(serving.cost_per_m_tokens(2, 2.5, batch * tokens / step))
        faster = line(plan, "spec_tps_user") / line(plan, "tps_user")
        with changed(plan, {"Draft_Acceptance_Rate": 0.5}):  # a poorer draft: fewer tokens a step, slower
            assert line(plan, "spec_tps_user") / line(plan, "tps_user") < faster


def test_each_view_shows_one_cost_per_m_input_and_one_per_m_output_labelled(plan):
    # Outputs: the plan's costs, the calibrated view's, and the source's own method, each in a section of its own
    # whose heading says what it assumes; no section quotes two output prices side by side.
    ws = plan.book.ws("Outputs")
    sections: dict[str, list[str]] = {}
    current = ""
    for r in range(6, ws.max_row + 1):
        label = ws[f"A{r}"].value
        if ws[f"A{r}"].style == "Heading 2":
            current = label
        elif isinstance(label, str):
            sections.setdefault(current, []).append(label)
    for heading, labels in sections.items():
        assert sum("per M input" in x for x in labels) <= 1, heading
        assert sum("per M output" in x for x in labels) <= 1 or "method" in heading, heading
    plan_costs = sections[serving_book.OUTPUT_COST_SECTION]
    assert sum("per M input" in x for x in plan_costs) == sum("per M output" in x for x in plan_costs) == 1
    calibrated = sections[serving_book.CALIBRATED_SECTION]
    assert sum("per M input" in x for x in calibrated) == sum("per M output" in x for x in calibrated) == 1


# -- one weights figure per plan --------------------------------------------------------------------------------------
def test_the_weights_are_model_weights_gb_for_the_preset_and_precision(plan):
    from xlsxplan.catalog import models

    # As shipped, the embeddings and output head are counted at the weights' width, the source's N x b: the weights
    # are MODEL_WEIGHTS_GB with that width for the embeddings, and the worked example's batch of 94 stands.
    assert plan.get("Embedding_Precision") == serving_book.EMBEDDING_AS_WEIGHTS
    assert line(plan, "bytes_embedding") == 1
    assert line(plan, "weights") == pytest.approx(models.model_weights_gb("Qwen2.5-72B", "fp8", "fp8"), rel=1e-12)
    assert line(plan, "batch") == 94
    # As published (16-bit embeddings beside 8-bit weights), the weights are MODEL_WEIGHTS_GB's default, the figure
    # `xlsxplan plan` and the Options sheet use; memory left, the batch that fits and the batch follow them.
    with changed(plan, {"Embedding_Precision": serving_book.EMBEDDING_AS_PUBLISHED}):
        weights = models.model_weights_gb("Qwen2.5-72B", "fp8")
        assert line(plan, "bytes_embedding") == 2
        assert line(plan, "weights") == pytest.approx(weights, rel=1e-12)
        assert weights > models.model_weights_gb("Qwen2.5-72B", "fp8", "fp8") + 1  # 1.09B embedding parameters
        assert line(plan, "free") == pytest.approx(2 * 80 * 0.9 - weights, rel=1e-12)
        assert line(plan, "weights_gpu") == pytest.approx(weights / 2, rel=1e-12)
        assert line(plan, "batch") < 94
        marked = [r for r in options(plan) if r["active"] == "yes"]
        assert [r["batch"] for r in marked] == [line(plan, "batch")]  # the same batch as the search plans
    with changed(plan, {"Embedding_Precision": "bf16"}):  # a format name: that width for the embeddings
        assert line(plan, "weights") == pytest.approx(models.model_weights_gb("Qwen2.5-72B", "fp8", "bf16"))


def test_the_weights_of_every_case_are_model_weights_gb(plan):
    from xlsxplan.catalog import models

    def case(i: int, key: str) -> Any:
        return plan.get(f"Scenarios!{SIDE_COLUMNS[i]}{plan.book.ref(f'Scenarios:{key}').row}")

    with changed(plan, {"Embedding_Precision": serving_book.EMBEDDING_AS_PUBLISHED}):
        for i, precision in enumerate(("bf16", "fp8", "bf16")):  # the 72B cases, no override
            assert case(i, "weights") == pytest.approx(models.model_weights_gb("Qwen2.5-72B", precision), rel=1e-12)
        # case 4's 7.6B parameters override (catalog: 7.61B) moves the weights by its difference at 2 bytes
        expected = (
            models.model_weights_gb("Qwen2.5-7B", "bf16") + (7.6 - catalog.model_spec("Qwen2.5-7B", "params_b")) * 2
        )
        assert case(3, "weights") == pytest.approx(expected, rel=1e-12)


# -- a case's name follows its inputs or says it is the user's own ---------------------------------------------------
def test_a_case_name_follows_its_inputs_or_says_it_is_your_own(plan):
    def case(i: int, key: str) -> Any:
        return plan.get(f"Scenarios!{SIDE_COLUMNS[i]}{plan.book.ref(f'Scenarios:{key}').row}")

    # The source's four names are the names their inputs give: each says so, with the accelerator it runs on.
    for i, name in enumerate(serving_book.CASES):
        assert case(i, "scenario_name") == name == case(i, "name_inputs")
        assert case(i, "name_follows") == "yes, on H100-SXM"
    model, prec = plan.book.ref("model@3"), plan.book.ref("weight_precision@1")
    # Another model in case 4: every figure is the new model's, and the name "7B BF16, 1 GPU" no longer passes
    # for its inputs: the case says the name is your own and gives the one its inputs give.
    with changed(plan, {f"Inputs!{model.col}{model.row}": "Llama-3.1-8B"}):
        assert case(3, "scenario_name") == "7B BF16, 1 GPU"
        assert case(3, "name_inputs") == "8B BF16, 1 GPU"
        assert case(3, "name_follows") == "no, your own name: the inputs give 8B BF16, 1 GPU on H100-SXM"
        assert case(0, "name_follows") == "yes, on H100-SXM"  # the other cases are as they were
    # The active case in BF16 where its name says FP8: the Calculations and Outputs say so too.
    with changed(plan, {f"Inputs!{prec.col}{prec.row}": "bf16"}):
        said = "no, your own name: the inputs give 72B BF16, 2 GPUs on H100-SXM"
        assert line(plan, "name_follows") == said
        assert plan.get(plan.book.address("Outputs:name_follows")) == said
    name = plan.book.ref("scenario_name@0")
    with changed(plan, {f"Inputs!{name.col}{name.row}": "Our pilot"}):  # a name of your own says so
        assert case(0, "name_follows") == "no, your own name: the inputs give 72B BF16, 2 GPUs on H100-SXM"


# The scenarios of the test below: models of every kind the step handles (dense, mixture of experts, latent
# attention, hybrid state-space), precisions down to mixed and 4-bit, replica sizes and targets on and off, drawn
# with a fixed seed. XLSXPLAN_SCENARIOS=500 runs that many (the suite runs a dozen).
_MODELS = (
    "Qwen2.5-72B",
    "Llama-3.1-8B",
    "Mixtral-8x7B",
    "Qwen3-30B-A3B",
    "gpt-oss-120b",
    "DeepSeek-V3",
    "Nemotron-H-56B",
    "Gemma-3-27B",
)


def _scenarios(n: int) -> list[dict[str, Any]]:
    import random

    rng = random.Random(26)
    out = []
    for i in range(n):
        model = _MODELS[i % len(_MODELS)]
        weights = rng.choice(("bf16", "fp8", "fp8", "awq") + (("bf16+mxfp4",) if model.startswith("gpt-oss") else ()))
        out.append(
            {
                "model@2": model,
                "gpu@2": rng.choice(serving_book.OPTIONS_ACCELERATORS),
                "tflops_override@2": None,
                "n_gpus@2": rng.choice((1, 2, 4, 8)),
                "weight_precision@2": weights,
                "kv_precision@2": rng.choice(("bf16", "fp8")),
                "Requests_Per_Day": rng.choice((20_000, 200_000, 2_000_000)),
                "Prompt_Tokens_Per_Request": (p := rng.choice((500, 2_000, 6_000))),
                "Tail_Prompt_Tokens": p * rng.choice((1, 2, 3)),
                "Output_Tokens_Per_Request": rng.choice((100, 300, 1_000)),
                "Latency_Target": rng.choice((None, 10, 30, 60)),
                "Time_To_First_Token_Target": rng.choice((None, 1, 3)),
                "Spare_Replicas": rng.choice((0, 1)),
            }
        )
    return out


@pytest.mark.slow
def test_the_cover_s_calibrated_fleet_is_xlsxplan_plan_s_for_the_active_option(plan, capsys):
    """The calibrated view the Cover and Outputs show (the Options sheet's marked row) is the figure `xlsxplan plan
    --json` prints for the same option, and the Cover's rank 1 is its rank 1, scenario by scenario."""
    import os

    shown = 0
    for values in _scenarios(int(os.environ.get("XLSXPLAN_SCENARIOS", "12"))):
        with changed(plan, case_refs(plan, values)):
            data = cli_plan(plan, capsys)
            setup = [plan.get(n) for n in ("Accelerator", "GPUs_Per_Replica", "Weight_Precision", "KV_Cache_Precision")]
            key = (*setup, "aggregated")
            active = [
                o
                for o in data["options"]
                if (o["gpu"], o["gpus_per_replica"], o["weights"], o["kv"], o["serving"]) == key
            ]
            where = f"{values}"
            step_gpus = line(plan, "step_gpus")
            if not active:  # not searched (a precision the search does not try): said, never a number
                assert step_gpus == serving_book.NOT_SEARCHED, where
                continue
            (o,) = active
            for key, field in (
                ("step_batch", "batch"),
                ("step_tps_user", "tokens_per_s_per_user"),
                ("step_ttft", "ttft_s"),
                ("step_replicas", "replicas"),
                ("step_gpus", "gpus"),
                ("step_monthly", "usd_per_month"),
                ("step_cost_in", "usd_per_m_input"),
                ("step_cost_out", "usd_per_m_output"),
            ):
                _same(_none(line(plan, key)), "" if o[field] is None else o[field], f"{where} {key}")
            assert line(plan, "step_reason") in (o["reason"] or "", NONE_SHOWN), where
            if o["feasible"]:
                shown += 1
                low, high = o["range"]["gpus"]
                _same([line(plan, "step_gpus:low"), line(plan, "step_gpus:high")], [low, high], where)
                cover = plan.get(plan.book.address("step_gpus_range"))
                assert cover.startswith(f"{o['gpus']:,} GPUs, likely {low:,} to {high:,}"), (where, cover)
            top = data["options"][0]
            if top["feasible"]:
                assert line(plan, "step_rank1") == (
                    f"{top['gpu']}, {top['gpus_per_replica']} a replica, {top['weights']} weights, {top['serving']}"
                ), where
                _same(line(plan, "step_rank1_gpus"), top["gpus"], where)
                _same(line(plan, "step_rank1_monthly"), top["usd_per_month"], where)
            else:
                assert line(plan, "step_rank1") == "no feasible option", where
                assert line(plan, "step_rank1_gpus") == "none feasible", where
    assert shown >= 3  # the scenarios reach feasible options, where the figures are numbers
