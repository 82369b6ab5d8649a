"""The headless engine: every registry function evaluates through `formualizer` to what Python computes, and where
the engine differs from Excel the adapter makes up for it (each such test says so)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.examples import EXAMPLES, formula
from xlsxplan import registry
from xlsxplan.errors import CellError
from xlsxplan.headless.engine import add_in_names, evaluate_formula, normalise_formula


def test_every_registry_function_has_an_example():
    assert set(EXAMPLES) == set(registry.FUNCTIONS)


@pytest.mark.parametrize("name", list(registry.FUNCTIONS))
def test_every_function_evaluates_to_the_python_value(name):
    fn = registry.FUNCTIONS[name]
    expected = fn(*EXAMPLES[name])
    result = evaluate_formula(formula(name, EXAMPLES[name]))
    assert result.error is None, result.error
    if fn.table:  # a table spills down and across, cell for cell
        assert result.value.tolist() == expected.tolist()
    elif fn.spills:
        assert [row[0] for row in result.value] == expected
    elif isinstance(expected, str):
        assert result.value == expected
    else:
        assert result.value == pytest.approx(expected, rel=1e-12)


def test_nesting_and_native_functions():
    # `xlsxplan eval "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)"` prints 92
    assert evaluate_formula("=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)").value == 92
    nested = '=MAX_BATCH(72.7,1,KV_BYTES_PER_TOKEN(MODEL_SPEC("Qwen2.5-72B","layers"),8,128),2300,2,GPU_SPEC("H100","memory_gb"))'
    assert evaluate_formula(nested).value == 94
    assert evaluate_formula('=IF(MAX_BATCH(72.7,2,327680,2300,2,80)=0,"does not fit","fits")').value == "does not fit"
    assert evaluate_formula('=IFERROR(GPU_SPEC("A100","fp8_tflops"),0)').value == 0


def test_array_arguments_broadcast():
    result = evaluate_formula("=KV_BYTES_PER_TOKEN({80;28},{8;4},128)")
    assert result.value.tolist() == [[327680], [57344]]
    grid = evaluate_formula("=WEIGHTS_GB({7;70},{2,1})")
    assert grid.value.tolist() == [[14, 7], [140, 70]]


def test_a_bad_element_does_not_spoil_the_array():
    result = evaluate_formula("=KV_BYTES_PER_TOKEN({80;-1},8,128)")
    assert result.value[0, 0] == 327680
    assert isinstance(result.value[1, 0], CellError) and result.value[1, 0].code == "#NUM!"


def test_spilling_functions_give_a_column():
    result = evaluate_formula("=GPUS()")
    assert result.value.shape[1] == 1 and "H100-SXM" in result.value[:, 0]


@pytest.mark.parametrize(
    "text, code, message",
    [
        ("=KV_BYTES_PER_TOKEN(80,-1,128)", "#NUM!", "kv_heads must be a whole number from 1 to 1,000,000, got -1"),
        ('=KV_BYTES_PER_TOKEN(80,"x",128)', "#VALUE!", "kv_heads must be a number, got text 'x'"),
        ("=KV_BYTES_PER_TOKEN(80,TRUE,128)", "#VALUE!", "kv_heads must be a number, got TRUE"),
        (
            "=DECODE_TOKS(72.7,1,2)",
            "#VALUE!",
            "DECODE_TOKS needs bandwidth_tb_s (argument 4): Memory bandwidth of one accelerator.",
        ),
        ("=WEIGHTS_GB(1,2,3)", "#VALUE!", "WEIGHTS_GB takes at most 2 arguments, got 3"),
        ('=MODEL_SPEC("gpt5","layers")', "#N/A", "model 'gpt5' is not in the catalog; see MODELS() for the list"),
        (
            '=GPU_SPEC("A100","fp8_tflops")',
            "#N/A",
            "A100-80GB has no fp8_tflops: the chip has no tensor cores for this precision",
        ),
        ("=PREFILL_S(72.7,2000,2,0)", "#NUM!", "tflops must be a positive number up to 1,000,000,000, got 0"),
        ("=KV_BYTES_PER_TOKEN(80,NA(),128)", "#N/A", "kv_heads is #N/A, passed on from its cell"),
        ("=KV_BYTE_PER_TOKEN(1,2,3)", "#NAME?", "unknown function KV_BYTE_PER_TOKEN; did you mean KV_BYTES_PER_TOKEN"),
        ("=1/0", "#DIV/0!", "division by zero"),
        ("=A1+1", "#REF!", "eval takes constants only, not references (A1)"),
    ],
)
def test_errors_carry_their_value_and_message(text, code, message):
    result = evaluate_formula(text)
    assert result.value is None
    assert result.error.code == code
    assert result.error.message.startswith(message)


def test_numbers_as_people_type_them():
    assert normalise_formula("TRAIN_FLOPS(7,140e9)") == "=TRAIN_FLOPS(7,140E+9)"
    assert normalise_formula('=MODEL_SPEC("x1e5","layers")+1.5e-3') == '=MODEL_SPEC("x1e5","layers")+1.5E-3'
    assert evaluate_formula("=TRAIN_FLOPS(7,140e9)").value == pytest.approx(5.88e21)


def test_result_is_plain_python():
    value = evaluate_formula("=KV_BYTES_PER_TOKEN(80,8,128)").value
    assert type(value) in (int, float) and not isinstance(value, np.generic)


def test_the_reason_is_the_one_of_the_call_whose_error_reached_the_result():
    # Review finding 5: the first message with the right code was taken, here the one IFERROR swallowed
    result = evaluate_formula("=IFERROR(WEIGHTS_GB(-1),0)+WEIGHTS_GB(1,-1)")
    assert result.error == CellError(
        "#NUM!",
        "bytes_per_param must be a positive number of bytes up to 64 or a precision name such as bf16, fp8 or int4, got -1",
    )


PARAMS_B = "params_b must be a positive number up to 1,000,000, got {}"
BYTES_PER_PARAM = (
    "bytes_per_param must be a positive number of bytes up to 64 or a precision name such as bf16, fp8 or int4, got -1"
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("=WEIGHTS_GB({-1;-2},2)", [[("#NUM!", PARAMS_B.format(-1))], [("#NUM!", PARAMS_B.format(-2))]]),
        ("=WEIGHTS_GB({7;70},{2,-1})", [[14, ("#NUM!", BYTES_PER_PARAM)], [140, ("#NUM!", BYTES_PER_PARAM)]]),
        # a call that failed as a whole, spread over the array by an operator
        ("=WEIGHTS_GB(-1)*{1;2}", [[("#NUM!", PARAMS_B.format(-1))], [("#NUM!", PARAMS_B.format(-1))]]),
        # an element no registry call failed at gets what its error value means, not a neighbour's reason
        (
            "=WEIGHTS_GB({-1;2},2)+1/{1;0}",
            [[("#NUM!", PARAMS_B.format(-1))], [("#DIV/0!", "division by zero")]],
        ),
    ],
)
def test_errors_inside_an_array_result_carry_their_reasons(text, expected):
    # Review finding 13: eval printed a bare #NUM! for each failed element of an array result
    result = evaluate_formula(text)
    assert result.error is None
    got = [[(v.code, v.message) if isinstance(v, CellError) else v for v in row] for row in result.value.tolist()]
    assert got == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("={1,2;3}", "the formula cannot be parsed: array rows must have equal length"),
        ("=1+", "the formula cannot be parsed: unexpected end of tokens"),
        ("=SUM(", "the formula cannot be parsed: unmatched opening parenthesis or bracket"),
        ("=WEIGHTS_GB(1 2)", "the formula cannot be parsed: expected ',' or ')' in function arguments, got '2'"),
    ],
)
def test_parse_errors_read_as_one_plain_line(text, message):
    # Review finding 12: the parser's messages came out raw (a format with its blank, the engine's token structs)
    assert evaluate_formula(text).error == CellError("#NAME?", message)


def test_engine_difference_native_functions_of_one_value_are_computed_over_each_element_of_an_array():
    # Excel lifts SQRT, ABS, ROUND, ISERROR, LEN ... over an array, element by element; formualizer 0.13 gives
    # #VALUE! for SQRT({4;-1}) and the first element's result alone for ISERROR({1;#N/A}), so the adapter gives such
    # calls to an element-by-element version of the same native function
    sqrt = evaluate_formula("=SQRT({4;-1})").value.tolist()
    assert sqrt == [[2], [CellError("#NUM!", "a number outside the function's domain")]]
    assert evaluate_formula("=SUMPRODUCT(1*ISERROR({1;#N/A;3;#DIV/0!}))").value == 2
    assert evaluate_formula('=LEN(UPPER({"ab","c"}))').value.tolist() == [[2, 1]]
    assert evaluate_formula("=ROUND({1.25,2.675},{1;2})").value.tolist() == [[1.3, 2.7], [1.25, 2.68]]
    assert evaluate_formula("=SUM(ABS({1;-2}))").value == 3  # and aggregates see the array
    assert evaluate_formula("=ABS(SUM({1;-2}))").value == 1  # an aggregate's one value stays one value
    assert evaluate_formula("=1/{1;0}").value.tolist() == [[1], [CellError("#DIV/0!", "division by zero")]]
    assert evaluate_formula("=WEIGHTS_GB({7;-1},2)").value[0, 0] == 14


# ---------------------------------------------------------------------------------------------------------------
# Omitted arguments (=F(1,,3), =F(1,2,)): empty, as in Excel and xlwings, not 0


@pytest.mark.parametrize(
    "formula_text, value, error",
    [
        ("=KV_BYTES_PER_TOKEN(80,8,128,)", 327680, None),  # the default, 2 bytes
        ("=KV_BYTES_PER_TOKEN(80,8,128)", 327680, None),
        ("=KV_BYTES_PER_TOKEN(80,,128)", None, ("#VALUE!", "kv_heads is required but the cell is empty")),
        ("=KV_BYTES_PER_TOKEN(80,8,,)", None, ("#VALUE!", "head_dim is required but the cell is empty")),
        ('=MODEL_SPEC(,"layers")', None, ("#VALUE!", "model is required but the cell is empty")),
        ("=SUM(KV_BYTES_PER_TOKEN(80,8,128,),)", 327680, None),
        # a 0 that is typed, or that a native function returns, stays 0
        ("=KV_BYTES_PER_TOKEN(80,8,128,0)", None, ("#NUM!", "bytes_per_value must be a positive number")),
        ("=KV_BYTES_PER_TOKEN(80,8,128,IF(TRUE,,1))", None, ("#NUM!", "bytes_per_value must be a positive number")),
        # Excel's own functions still see 0 for what is omitted
        ("=IF(TRUE,,1)", 0, None),
        ("=SUM(1,,2)", 3, None),
        ("=ROUND(1.55,)", 2, None),
    ],
)
def test_an_omitted_argument_is_empty_for_registry_functions(formula_text, value, error):
    result = evaluate_formula(formula_text)
    if error is None:
        assert result.error is None and result.value == value
    else:
        assert result.error is not None and result.error.code == error[0]
        assert result.error.message.startswith(error[1])


def test_an_omitted_argument_in_a_workbook_and_through_eval(tmp_path, capsys):
    import openpyxl

    from xlsxplan.cli import main
    from xlsxplan.headless import Workbook

    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "=KV_BYTES_PER_TOKEN(80,8,128,)"
    ws["A2"] = "=KV_BYTES_PER_TOKEN(80,,128)"
    ws["A3"] = '=MODEL_SPEC(,"layers")'
    ws["A4"] = "=IF(TRUE,,1)"
    wb.save(tmp_path / "omitted.xlsx")
    book = Workbook.load(tmp_path / "omitted.xlsx")
    assert book.get("Sheet!A1") == 327680
    assert book.get("Sheet!A2") == CellError("#VALUE!", "kv_heads is required but the cell is empty")
    assert book.get("Sheet!A3") == CellError("#VALUE!", "model is required but the cell is empty")
    assert book.get("Sheet!A4") == 0
    assert main(["eval", "=KV_BYTES_PER_TOKEN(80,8,128,)"]) == 0
    assert capsys.readouterr().out.strip() == "327680"
    assert main(["eval", '=MODEL_SPEC(,"layers")']) == 1
    assert capsys.readouterr().out.strip() == "#VALUE! model is required but the cell is empty"


def test_office_add_in_names_are_the_registry_s():
    # Excel stores a call to an Office add-in's custom function (xlwings Lite's functions are such) as "_xldudf_"
    # and the namespaced name; the engine reads the registry function behind it, and nothing else
    assert evaluate_formula("=_xldudf_XLWINGS_KV_BYTES_PER_TOKEN(80,8,128)").value == 327_680
    assert evaluate_formula("=_XLDUDF_kv_bytes_per_token(28,4,128)+1").value == 57_345
    assert evaluate_formula('=LEN("_xldudf_KV_GB(1)")').value == 16  # text in quotes is text
    unknown = evaluate_formula("=_xldudf_CONTOSO_ADD(1,2)")
    assert unknown.error is not None and unknown.error.code == "#NAME?"
    assert add_in_names("=_xldudf_XLWINGS.MAX_BATCH(1)+_xldudf_X_Y_REPLICAS(2,3)") == "=MAX_BATCH(1)+REPLICAS(2,3)"


def test_semicolons_between_arguments_get_a_hint():
    # Excel in many European locales shows ";" between arguments; files and this engine use ","
    result = evaluate_formula("=KV_BYTES_PER_TOKEN(80;8;128)")
    assert result.error is not None and result.error.code == "#NAME?"
    assert result.error.message.endswith("; separate arguments with commas, not semicolons")
    assert evaluate_formula("=SUM({1;2})").value == 3  # a row separator in an array constant is no slip
    assert "semicolons" not in evaluate_formula('=LEN("a;b")+').error.message  # nor one inside text


@pytest.mark.parametrize(
    ("formula", "registry_call", "lifted_call"),
    [
        ("=MFU(1,2,3,4)", True, False),
        ("=mfu (1,2,3,4)", True, False),  # any case, a space before the parenthesis
        ("=Inputs!A1+KV_GB(1,2)", True, False),
        ("=_xlfn.MFU(1)", False, False),  # a name inside another (after a dot) is not the registry's
        ("=x_MFU(1)+MFUX(2)+A1MFU(3)", False, False),
        ('="MFU(1)"&ABS(2)', False, True),  # text literals are not calls
        ("=MFU", False, False),  # a name, not a call
        ("=_xlfn.NORM.S.DIST(1,TRUE)", False, True),
        ("=CEILING.MATH(A1:A3)", False, True),
        ("=FLOOR.X(1)+ABSX(2)", False, False),
        ("=IF(ISNUMBER(MAX_BATCH(72.7,1,327680,2300,2,80)),1,0)", True, True),
    ],
)
def test_the_call_search_finds_whole_called_names_outside_text(formula, registry_call, lifted_call):
    from xlsxplan.headless.engine import calls_registry, lifts

    assert calls_registry(formula) is registry_call
    assert lifts(formula) is lifted_call


def test_numbers_reach_the_registry_as_they_came_and_errors_and_ranges_are_read(monkeypatch):
    from xlsxplan.headless import engine

    read = []
    from_engine = engine.from_engine
    monkeypatch.setattr(engine, "from_engine", lambda value: read.append(value) or from_engine(value))
    assert evaluate_formula("=DECODE_TOKS_TOTAL(72.7,1,2,3.35,94,327680,2300)").value == pytest.approx(
        registry.FUNCTIONS["DECODE_TOKS_TOTAL"](72.7, 1, 2, 3.35, 94, 327680, 2300), rel=1e-12
    )
    assert read == []  # seven numbers: no argument converted
    assert evaluate_formula("=DECODE_TOKS_TOTAL(1/0,1,2,3.35,94,327680,2300)").error.code == "#DIV/0!"
    assert len(read) == 7  # an error among them: each argument read as cells read them
    assert evaluate_formula("=DECODE_TOKS({72.7;70},1,2,3.35)").value.shape == (2, 1)


@pytest.mark.slow
def test_a_sheet_of_numbers_recalculates_without_loading_numpy(tmp_path):
    """numpy is imported where an array is made (0.1 s of a process that needs none): a sweep of registry calls
    loads, calculates and saves without it, and an array formula still computes."""
    import subprocess
    import sys

    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    for r in range(1, 21):
        ws.cell(r, 1, 60 + r)
        ws.cell(r, 2, f"=DECODE_TOKS_TOTAL(A{r},1,2,3.35,94,327680,2300)")
    wb.save(tmp_path / "sweep.xlsx")
    code = (
        "import sys\n"
        "from xlsxplan.headless.workbook import Workbook\n"
        f"wb = Workbook.load({str(tmp_path / 'sweep.xlsx')!r}).calculate()\n"
        f"wb.save({str(tmp_path / 'out.xlsx')!r})\n"
        "print('numpy' in sys.modules, wb.get('Sheet!B20'))\n"
        "wb.set('Sheet!C1', 1)\n"
        "print(wb._evaluate('=SUM(MMULT({1,2;3,4},{1;1}))')[0], 'numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    first, second = out.stdout.split("\n")[:2]
    expected = registry.FUNCTIONS["DECODE_TOKS_TOTAL"](80, 1, 2, 3.35, 94, 327680, 2300)
    assert first.split()[0] == "False" and float(first.split()[1]) == pytest.approx(expected, rel=1e-12)
    assert second == "10.0 True"  # an array: numpy loaded where it was needed
