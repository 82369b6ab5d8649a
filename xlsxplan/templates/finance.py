"""The serving plan's bill as finance reads it: a fleet that follows the day, committed capacity for the base with
on demand or spot above it, energy and carbon per million tokens, and a hosted API beside self-hosting.

Three pieces, each added to the serving template by :mod:`.serving` and nothing else:

* the **Finance** block at the end of Inputs (:func:`inputs`): spot's discount, the idle power share, the grid
  region, a hosted API's provider and, where you have a quote, its prices;
  the day's shape is a profile of demand.toml by name, as ``xlsxplan plan --demand-profile`` takes it
  (business-day, a shape and not a measurement, or flat);
* the **Finance** sheet (:func:`finance_sheet`) for the active scenario's fleet, and the same GPUs owned instead
  (the Costs block's capital, life, residual and cost of capital), with its row on Checks
  (:func:`checks`) and its block on the Cover (:data:`COVER_BLOCK`).

Every figure is a registry function's, the ones ``xlsxplan plan`` prints in its "Finance, rank 1" block
(:mod:`xlsxplan.plan.finance`): PROFILE_GPUS, TIER_MIX_BASE, TIER_MIX_COST and TIER_MIX_SHARE, KWH_PER_M_TOKENS,
GRID_INTENSITY and GCO2_PER_M_TOKENS, HOSTED_PRICE, API_COST_MONTH and API_CROSSOVER_RPD, DEPRECIATION_SL, OWNED_NPV
and CAPITAL_RECOVERY (:func:`xlsxplan.plan.finance.owned`), with the same arguments:
the peak-sized fleet's GPUs and price, the Costs block's committed price, power and PUE, and the month's tokens at
the fleet's average utilisation (FLEET_UTILISATION).
"""

from __future__ import annotations

from openpyxl.worksheet.datavalidation import DataValidation

from .. import domains
from ..catalog.finance import load_profiles
from ..core.cost import HOURS_PER_YEAR, MONTHS_PER_YEAR
from ..domains import domain_of
from ..plan.finance import FinanceInputs
from .book import Book, Line, Sheet, validation_for
from .common import Result, error_check

__all__ = ["COVER_BLOCK", "SHEET", "checks", "finance_sheet", "inputs"]

SHEET = "Finance"
PROFILE = FinanceInputs().profile
"""The demand profile Inputs ships with (demand.toml), the one ``xlsxplan plan`` takes by default."""
NO_PRICE = "no hosted price"
"""What the API lines show where neither Inputs nor hosted.toml gives the model a price."""
TIER_HOURS = round(HOURS_PER_YEAR / MONTHS_PER_YEAR)
"""The month TIER_MIX_COST bills, in hours (8,760 / 12), as ``xlsxplan plan`` prices the mix (the note says so)."""


def inputs(book: Book, sh: Sheet) -> None:
    """The Finance block at the end of Inputs: what the tier mix, the energy and the hosted API lines read beyond the
    Costs block."""
    sh.section("Finance: the day, spot, energy and a hosted API", "The Finance sheet: the day, tiers, energy, an API")
    sh.input(
        "Demand profile",
        PROFILE,
        "name",
        "Catalog: demand.toml (DEMAND_SOURCE)",
        "The day's shape by the hour: business-day or flat",
        "text",
        DataValidation(type="list", formula1='"' + ",".join(load_profiles().entries) + '"', allow_blank=False),
    )
    sh.input(
        "Spot discount",
        0,
        "fraction",
        "Example: none, spot left out",
        "0.6 for 60% off on demand; 0 leaves spot out of the mix",
        "pct1",
        validation_for(domain_of(domains.Discount), "Spot discount"),
    )
    sh.input(
        "Idle power share",
        0,
        "fraction",
        "Example: busy hours only",
        "An idle GPU's power over its full-load power",
        "pct1",
        validation_for(domain_of(domains.FractionOrZero), "Idle power share"),
    )
    sh.input(
        "Grid region",
        "world",
        "name",
        "Catalog: grid.toml (GRID_SOURCE)",
        "world, US, DE, France, ...: or your supplier's figure",
        "text",
    )
    sh.input(
        "Hosted API provider",
        None,
        "name",
        "Catalog: hosted.toml (HOSTED_SOURCE)",
        "Groq, DeepSeek, DeepInfra or Together AI",
        "text",
    )
    for label in ("Hosted price per M input tokens", "Hosted price per M output tokens"):
        sh.input(
            label,
            None,
            "USD/M tokens",
            "Example: empty, the provider's price",
            "Your quote; empty: hosted.toml's for the model",
            "usd",
            validation_for(domain_of(domains.USDPerMTokens), label),
        )


def _fits(formula: str) -> str:
    """``formula`` where the active scenario has a fleet; its reason ("does not fit") where it has none."""
    return f"=IF(ISNUMBER({{gpus_peak}}),{formula},{{gpus_peak}})"


_MIX = "DEMAND_PROFILE(Demand_Profile),{gpus_peak},Committed_Price_Per_GPU_Hour,{price},Spot_Discount"
_PRICED = "AND(ISNUMBER({fin_api_in}),ISNUMBER({fin_api_out}))"

SECTIONS: tuple[tuple[str, str, tuple[Line, ...]], ...] = (
    (
        "A fleet that follows the day",
        "The demand profile on Inputs against the one peak the plan sizes for",
        (
            Line("fin_gpus", "GPUs sized for the peak", "={gpus_peak}", "GPUs", "From Calculations", "int"),
            Line(
                "fin_peak_month",
                "Peak-sized, rented around the clock",
                "={monthly}",
                "USD/month",
                "GPUs x price x Hours per month",
                "usd0",
            ),
            Line(
                "fin_gpu_hours",
                "GPU-hours a day, following the day",
                _fits("SUM(PROFILE_GPUS(DEMAND_PROFILE(Demand_Profile),{gpus_peak}))"),
                "GPU-h/day",
                "PROFILE_GPUS: ceil(peak GPUs x hour's demand / busiest hour's), summed",
                "int",
            ),
            Line(
                "fin_follow_month",
                "On demand for the hours used",
                _fits("{fin_gpu_hours}/24*{price}*Hours_Per_Month"),
                "USD/month",
                "Average GPUs an hour x price x Hours per month; no provisioning delay",
                "usd0",
                True,
            ),
        ),
    ),
    (
        "Committed for the base, on demand or spot above it",
        "The cheapest mix for the day's shape",
        (
            Line(
                "fin_committed_price",
                "Committed price per GPU-hour",
                "=Committed_Price_Per_GPU_Hour",
                "USD/GPU-h",
                "From the Costs block on Inputs, billed every hour of the term",
                "usd",
            ),
            Line(
                "fin_base",
                "GPUs committed for the base",
                _fits("TIER_MIX_BASE(" + _MIX + ")"),
                "GPUs",
                "TIER_MIX_BASE: the level of the day's GPUs that makes the bill cheapest",
                "int",
            ),
            Line(
                "fin_mix_month",
                "Tier mix, a month",
                _fits("TIER_MIX_COST(" + _MIX + ")"),
                "USD/month",
                f"TIER_MIX_COST: committed every hour, the rest as the day needs; {TIER_HOURS} hours",
                "usd0",
                True,
            ),
            Line(
                "fin_share_committed",
                "GPU-hours committed",
                _fits('TIER_MIX_SHARE("committed",' + _MIX + ")"),
                "fraction",
                "TIER_MIX_SHARE: the tier's GPU-hours over the day's",
                "pct1",
            ),
            Line(
                "fin_share_on_demand",
                "GPU-hours on demand",
                _fits('TIER_MIX_SHARE("on_demand",' + _MIX + ")"),
                "fraction",
                "Above the base, where on demand is the cheaper",
                "pct1",
            ),
            Line(
                "fin_share_spot",
                "GPU-hours on spot",
                _fits('TIER_MIX_SHARE("spot",' + _MIX + ")"),
                "fraction",
                "Above the base, where spot is the cheaper (Spot discount on Inputs)",
                "pct1",
            ),
        ),
    ),
    (
        "Energy and carbon",
        "Power, PUE and idle share from Inputs",
        (
            Line(
                "fin_util",
                "Average utilisation of the fleet",
                "={fleet_util}",
                "fraction",
                "FLEET_UTILISATION, from Calculations",
                "pct1",
            ),
            Line(
                "fin_tokens_month",
                "Tokens a month, prompt and output",
                "=Requests_Per_Day*({prompt_mean}+{decode_tokens})*Hours_Per_Month/24",
                "tokens",
                "Requests per day x (mean prompt + tokens generated) x days a month",
                "billions",
            ),
            Line(
                "fin_full_tps",
                "Tokens a GPU makes per second at full load",
                _fits("{fin_tokens_month}/({gpus_peak}*Hours_Per_Month*3600*{fin_util})"),
                "tokens/s",
                "The month's tokens over the GPU-seconds busy",
                "int",
            ),
            Line(
                "fin_kwh_m",
                "Energy per million tokens",
                _fits(
                    "KWH_PER_M_TOKENS(Power_Per_GPU,{fin_full_tps},MIN({fin_util},1),Power_Usage_Effectiveness,"
                    "Idle_Power_Share)"
                ),
                "kWh/M tokens",
                "KWH_PER_M_TOKENS: kW x PUE x (u + idle share x (1 - u)) / tokens an hour at u",
                "dec3",
                True,
            ),
            Line(
                "fin_kwh_month",
                "Energy a month",
                _fits("{fin_kwh_m}*{fin_tokens_month}/1000/1000"),
                "kWh",
                "Per million tokens x the month's tokens",
                "int",
            ),
            Line(
                "fin_grid",
                "Grid carbon intensity",
                "=GRID_INTENSITY(Grid_Region)",
                "gCO2e/kWh",
                '="GRID_INTENSITY of "&Grid_Region&" (grid.toml): replace with your supplier\'s"',
                "int",
            ),
            Line(
                "fin_gco2_m",
                "Carbon per million tokens",
                _fits("GCO2_PER_M_TOKENS({fin_kwh_m},{fin_grid})"),
                "gCO2e/M tokens",
                "GCO2_PER_M_TOKENS: kWh per million x grams per kWh",
                "dec1",
                True,
            ),
        ),
    ),
    (
        "A hosted API instead",
        "Buying the tokens: a provider's price per million",
        (
            Line(
                "fin_catalog_in",
                "Catalog price per M input tokens",
                '=IF(ISNUMBER(HOSTED_PRICE({model},Hosted_API_Provider,"input")),'
                'HOSTED_PRICE({model},Hosted_API_Provider,"input"),"' + NO_PRICE + '")',
                "USD/M tokens",
                "HOSTED_PRICE of the model and provider (hosted.toml)",
                "usd",
            ),
            Line(
                "fin_catalog_out",
                "Catalog price per M output tokens",
                '=IF(ISNUMBER(HOSTED_PRICE({model},Hosted_API_Provider,"output")),'
                'HOSTED_PRICE({model},Hosted_API_Provider,"output"),"' + NO_PRICE + '")',
                "USD/M tokens",
                "Reasoning tokens are billed as output",
                "usd",
            ),
            Line(
                "fin_api_in",
                "Hosted price per M input tokens",
                "=IF(ISNUMBER(Hosted_Price_Per_M_Input_Tokens),Hosted_Price_Per_M_Input_Tokens,{fin_catalog_in})",
                "USD/M tokens",
                "Yours on Inputs, else the catalog's",
                "usd",
                bad=(NO_PRICE,),
            ),
            Line(
                "fin_api_out",
                "Hosted price per M output tokens",
                "=IF(ISNUMBER(Hosted_Price_Per_M_Output_Tokens),Hosted_Price_Per_M_Output_Tokens,{fin_catalog_out})",
                "USD/M tokens",
                "Yours on Inputs, else the catalog's",
                "usd",
                bad=(NO_PRICE,),
            ),
            Line(
                "fin_api_month",
                "Hosted API, a month for this traffic",
                f"=IF({_PRICED},API_COST_MONTH(Requests_Per_Day,{{prompt_mean}},{{decode_tokens}},{{fin_api_in}},"
                f'{{fin_api_out}}),"{NO_PRICE}")',
                "USD/month",
                "API_COST_MONTH: requests a month x (prompt x input price + output x output price)",
                "usd0",
                True,
                bad=(NO_PRICE,),
            ),
            Line(
                "fin_api_crossover",
                "Traffic where the bills meet",
                f"=IF(AND({_PRICED},ISNUMBER({{monthly}})),API_CROSSOVER_RPD({{monthly}},{{prompt_mean}},"
                f'{{decode_tokens}},{{fin_api_in}},{{fin_api_out}}),"{NO_PRICE}")',
                "requests/day",
                "API_CROSSOVER_RPD: the peak-sized bill over what a request costs on the API",
                "int",
                bad=(NO_PRICE,),
            ),
            Line(
                "fin_api_verdict",
                "The cheaper at this traffic",
                f'=IF(AND(ISNUMBER({{fin_api_month}}),ISNUMBER({{monthly}})),INDEX({{"self-hosting, peak-sized",'
                f'"the hosted API"}},1+({{fin_api_month}}<{{monthly}})),"{NO_PRICE}")',
                "text",
                "Against the peak-sized bill; the tier mix above lowers it",
                "text",
            ),
        ),
    ),
    (
        "Owning the fleet instead",
        "The same GPUs bought: the Costs block on Inputs, as the Timeline reads it",
        (
            Line(
                "fin_own_capital",
                "Capital cost of the fleet, owned",
                _fits("{gpus_peak}*Capital_Cost_Per_GPU"),
                "USD",
                "GPUs x capital cost per GPU (Inputs)",
                "usd0",
            ),
            Line(
                "fin_own_depreciation",
                "Straight-line depreciation a year",
                _fits(
                    "{gpus_peak}*DEPRECIATION_SL(Capital_Cost_Per_GPU,Capital_Cost_Per_GPU*Residual_Value,"
                    "Capital_Recovery_Life)"
                ),
                "USD/year",
                "GPUs x DEPRECIATION_SL: (capital - residual) / life",
                "usd0",
            ),
            Line(
                "fin_own_running",
                "Power and hosting a year",
                _fits("{Timeline:running_hour}*{gpus_peak}*Hours_Per_Month*12"),
                "USD/year",
                "Timeline's running cost per GPU-hour x GPUs x a year's hours",
                "usd0",
            ),
            Line(
                "fin_own_npv",
                "Present cost of owning over its life",
                _fits(
                    "{gpus_peak}*OWNED_NPV(Capital_Cost_Per_GPU,Capital_Recovery_Life,Residual_Value,"
                    "Cost_Of_Capital,{fin_own_running}/{gpus_peak})"
                ),
                "USD",
                "GPUs x OWNED_NPV: purchase, running / CRF, resale less",
                "usd0",
            ),
            Line(
                "fin_rent_npv",
                "Present cost of renting it as long",
                _fits("{monthly}*12/CAPITAL_RECOVERY(Cost_Of_Capital,Capital_Recovery_Life)"),
                "USD",
                "The peak-sized bill a year over CAPITAL_RECOVERY",
                "usd0",
            ),
            Line(
                "fin_own_saving",
                "Owning saves, present value",
                _fits("{fin_rent_npv}-{fin_own_npv}"),
                "USD",
                "Renting less owning; below 0 renting is cheaper",
                "usd0",
                True,
            ),
        ),
    ),
)
"""The Finance sheet's line items by section: (title, note, lines)."""


def finance_sheet(book: Book) -> Sheet:
    """The Finance sheet: the active scenario's fleet following the day, on a tier mix, in energy and carbon, and
    against a hosted API."""
    sh = book.sheet(
        SHEET,
        "The active scenario's fleet as finance reads it: following the day (the demand profile), committed for the "
        "base with on demand or spot above it, energy and carbon per million tokens, and a hosted API's bill.",
        ["Line item", "Value", "Unit", "Equation and source"],
    )
    for title, note, lines in SECTIONS:
        sh.section(title, note)
        for line in lines:
            sh.line(line)
    sh.finish()
    return sh


def checks(book: Book, sh: Sheet) -> None:
    """The Finance sheet's row on Checks: an error value on it."""
    sh.section("Finance", "The Finance sheet")
    first = book.ref(SECTIONS[0][2][0].key).row
    last = book.ref(SECTIONS[-1][2][-1].key).row
    error_check(sh, SHEET, f"{SHEET}!$B${first}:$B${last}")


COVER_BLOCK: tuple[str, tuple[Result, ...]] = (
    "The bill as finance reads it (Finance)",
    (
        Result(
            "fin_follow_month",
            "Following the day, on demand",
            "USD/month",
            "usd0",
            "A fleet scaled by the hour to the demand profile",
        ),
        Result(
            "fin_mix_month",
            "Committed base, on demand or spot above",
            "USD/month",
            "usd0",
            "The cheapest tier mix for the day's shape",
        ),
        Result("fin_kwh_m", "Energy per million tokens", "kWh/M tokens", "dec3", "At the fleet's average load"),
        Result(
            "fin_api_month",
            "A hosted API for this traffic",
            "USD/month",
            "usd0",
            "Yours or hosted.toml's price per million tokens",
        ),
    ),
)
"""The Cover's Finance block: the bills beside the peak-sized one, and the energy."""
