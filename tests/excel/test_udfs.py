"""The Excel functions through xlwings, checked without Excel.

On Linux xlwings' decorators do nothing, so importing xlsxplan.excel.udfs proves little. These tests go through xlwings'
own classic machinery instead: with empty stand-ins for the Windows-only modules (pythoncom, pywintypes, win32com)
they import ``xlwings.udfs``, decorate the registry with its real ``xlfunc``/``xlarg`` exactly as xlsxplan.excel.udfs
does (:func:`xlsxplan.excel.udfs.build`), read the metadata Excel's function wizard gets (``__xlfunc__``), generate the
VBA module that Import Functions writes into a workbook, and call every function the way ``xlwings.udfs.call_udf``
does: each argument through ``xlwings.conversion.read`` with its options, the result through
``conversion.write``. Lite mode is checked the same way at the end of this file: the metadata and calls of Lite's
own machinery (``xlwings.pro.udfs_officejs``, where an xlwings licence key lets it load) and, everywhere, calls
following Lite's protocol through xlwings' open-source conversion pipeline.
"""

from __future__ import annotations

import importlib
import inspect
import io
import math
import re
import sys
import types
from collections.abc import Iterator

import numpy as np
import pytest
import xlwings
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.helpers.examples import EXAMPLES
from tests.test_registry import VBA_RESERVED
from xlsxplan.errors import XlsxplanError
from xlsxplan.excel import udfs
from xlsxplan.registry import EXCEL_TEXT_LIMIT, FUNCTIONS

MISSING = -2147352572  # what VBA hands xlwings for an omitted optional argument (xlwings.udfs.call_udf)

# Excel's COM error numbers for the seven classic error values, as xlwings' Windows engine maps them
# (xlwings/_xlwindows.py, cell_errors, 0.37.8); newer error values arrive as the bare number.
_COM_CELL_ERRORS = {
    -2146826281: "#DIV/0!",
    -2146826246: "#N/A",
    -2146826259: "#NAME?",
    -2146826288: "#NULL!",
    -2146826252: "#NUM!",
    -2146826265: "#REF!",
    -2146826273: "#VALUE!",
}


class _ExcelEngineStandIn:
    """The value cleaning of xlwings' Windows engine (xlwings/_xlwindows.py, ``Engine``, 0.37.8), which imports
    ctypes.windll and cannot load here; everything else in ``conversion.read``/``write`` is xlwings' own code."""

    name = "excel"
    type = "desktop"

    @staticmethod
    def clean_value_data(data, datetime_builder, empty_as, number_builder, err_to_str):
        def clean(value):
            if value in ("", None):
                return empty_as
            if number_builder is not None and isinstance(value, float):
                return number_builder(value)
            if isinstance(value, int) and value in _COM_CELL_ERRORS:
                return _COM_CELL_ERRORS[value] if err_to_str else None
            return value

        return [[clean(c) for c in row] for row in data]

    @staticmethod
    def prepare_xl_data_element(x, date_format):
        if isinstance(x, (float, np.floating)) and np.isnan(x):
            return ""
        if isinstance(x, np.number):
            return float(x)
        return "" if x is None else x


@pytest.fixture(scope="module")
def classic() -> Iterator[types.ModuleType]:
    """``xlwings.udfs`` (classic UDFs), importable here thanks to empty stand-ins for the Windows modules."""
    stand_ins = {name: types.ModuleType(name) for name in ("pythoncom", "pywintypes", "win32com", "win32com.client")}
    stand_ins["pythoncom"].CoInitialize = lambda: None  # the initializer of xlwings.udfs' COM thread pool
    stand_ins["pywintypes"].com_error = type("com_error", (Exception,), {})
    stand_ins["win32com.client"].Dispatch = lambda *args, **kwargs: None
    stand_ins["win32com"].client = stand_ins["win32com.client"]
    assert not set(stand_ins) & set(sys.modules), "a real pywin32 is loaded: these tests assume Linux or macOS"
    engine = xlwings.Engine(impl=_ExcelEngineStandIn())
    sys.modules.update(stand_ins)
    xlwings.engines.add(engine)
    try:
        yield importlib.import_module("xlwings.udfs")
    finally:
        for name in [*stand_ins, "xlwings.udfs"]:
            sys.modules.pop(name, None)
        if "udfs" in vars(xlwings):
            delattr(xlwings, "udfs")
        xlwings.engines.engines.remove(engine)
        del xlwings.engines.engines_by_name["excel"]


@pytest.fixture(scope="module")
def classic_module(classic) -> types.ModuleType:
    """What Excel imports under "UDF Modules": xlsxplan.excel.udfs with xlwings' real classic decorators applied."""
    module = types.ModuleType("xlsxplan.excel.udfs")
    for name, udf in udfs.build(classic.xlfunc, classic.xlarg, lite=False).items():
        setattr(module, name, udf)
    return module


def call_like_classic(module: types.ModuleType, name: str, *args):
    """The argument and result handling of ``xlwings.udfs.call_udf`` (0.37.8) for a call from a cell."""
    from xlwings import conversion

    f = getattr(module, name)
    info = f.__xlfunc__
    args = list(args) + [MISSING] * (len(info["args"]) - len(args))  # VBA passes every parameter
    for i, value in enumerate(args):
        arg_info = info["args"][min(i, len(info["args"]) - 1)]
        if isinstance(value, int) and value == MISSING:
            args[i] = arg_info.get("optional", None)
        else:
            args[i] = conversion.read(None, value, arg_info["options"])
    return conversion.write(f(*args), None, info["ret"]["options"])


def core(name: str, *args):
    """What the Python core gives, as the cell would show it."""
    fn = FUNCTIONS[name]
    try:
        result = fn.func(*args)
    except XlsxplanError as err:
        return f"{err.excel_error} {err.message}"
    if isinstance(result, list):
        return [[v] for v in result]
    if fn.table:  # a 2-D array of cells, whole numbers as the doubles Excel holds
        return [[float(v) if isinstance(v, int) else v for v in row] for row in result.tolist()]
    return float(result) if isinstance(result, (int, float)) else result


# --- what Excel receives -----------------------------------------------------------------------------------------


def test_every_registry_function_is_a_module_attribute_named_as_in_excel():
    for name, fn in FUNCTIONS.items():
        f = getattr(udfs, name)
        assert f.__name__ == name and f.__doc__ == fn.description()
        assert f.__module__ == "xlsxplan.excel.udfs"
        params = inspect.signature(f).parameters
        assert list(params) == [a.name for a in fn.args]
        for a in fn.args:
            expected = a.default if a.optional else inspect.Parameter.empty
            assert params[a.name].default == expected
        assert f is not fn.func and not hasattr(fn.func, "__xlfunc__")  # the core function is untouched
    assert {n for n in udfs.__all__ if n.isupper() and n != "LITE" and n != "ERROR_CODES"} == set(FUNCTIONS)


def test_function_wizard_metadata_comes_from_the_registry(classic_module):
    for name, fn in FUNCTIONS.items():
        info = getattr(classic_module, name).__xlfunc__
        assert info["name"] == name
        assert info["category"] == fn.category == f"xlsxplan {fn.category.split()[-1]}"
        assert info["ret"]["doc"] == fn.description() and len(info["ret"]["doc"]) <= EXCEL_TEXT_LIMIT
        assert info["ret"]["options"] == {}
        assert [a["name"] for a in info["args"]] == [a.name for a in fn.args]
        for xa, a in zip(info["args"], fn.args):
            assert xa["doc"] == a.help() and len(xa["doc"]) <= EXCEL_TEXT_LIMIT
            assert f"[{a.unit}]" in xa["doc"]
            assert xa["options"] == {"ndim": 2, "err_to_str": True}
            assert xa["vba"] is None and not xa["vararg"]
            assert ("optional" in xa) == a.optional
            if a.optional:
                assert xa["optional"] == a.default
    kv = classic_module.KV_BYTES_PER_TOKEN.__xlfunc__
    assert (
        kv["args"][1]["doc"]
        == "Key-value heads per layer; fewer than query heads under grouped-query attention. [count]"
    )


def generated_vba(classic, module) -> str:
    out = io.StringIO()
    classic.generate_vba_wrapper("xlsxplan.excel.udfs", module, out, types.SimpleNamespace(Name="plan.xlsm"))
    return out.getvalue()


def test_the_vba_module_declares_every_function_with_its_parameters(classic, classic_module):
    vba = generated_vba(classic, classic_module)
    declared = dict(re.findall(r"^Function (\w+)\(([^)]*)\)$", vba, re.MULTILINE))
    assert set(declared) == set(FUNCTIONS)
    for name, fn in FUNCTIONS.items():
        expected = ", ".join(f"Optional {a.name}" if a.optional else a.name for a in fn.args)
        assert declared[name] == expected
        call = f'{name} = XLPy.CallUDF("xlsxplan.excel.udfs", "{name}", Array({", ".join(a.name for a in fn.args)}), '
        assert call + "ThisWorkbook, Application.Caller)" in vba
    kv = "Function KV_BYTES_PER_TOKEN(layers, kv_heads, head_dim, Optional bytes_per_value)"
    assert kv in vba.splitlines()


def test_the_vba_module_compiles_as_far_as_can_be_checked_without_excel(classic, classic_module):
    vba = generated_vba(classic, classic_module)
    lines = vba.splitlines()
    assert all(len(line) <= 1023 for line in lines)  # VBA's limit on a physical line
    assert vba.count("\nFunction ") + vba.startswith("Function ") == vba.count("End Function") == len(FUNCTIONS)
    names = [n.lower() for n in re.findall(r"^Function (\w+)\(", vba, re.MULTILINE)]
    assert len(names) == len(set(names))  # VBA names are case-insensitive
    for name, params in re.findall(r"^Function (\w+)\(([^)]*)\)$", vba, re.MULTILINE):
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,254}", name) and name.lower() not in VBA_RESERVED
        seen_optional = False
        for param in params.split(", ") if params else []:
            optional, _, ident = param.rpartition(" ")
            assert optional in ("", "Optional")
            assert not (seen_optional and not optional), f"{name}: a required parameter after an Optional one"
            seen_optional = seen_optional or bool(optional)
            assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,254}", ident) and ident.lower() not in VBA_RESERVED
            assert ident.lower() != name.lower()  # a parameter may not share its function's name
    for name in FUNCTIONS:  # the failure path exists in the wrapper; the UDFs never raise in classic (fuzz below)
        assert f"{name} = Err.Description" in vba


# --- calls, the way xlwings makes them ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_every_function_called_from_a_cell_equals_the_core(classic_module, name):
    args = EXAMPLES[name]
    result = call_like_classic(classic_module, name, *args)
    expected = core(name, *args)
    assert result == (expected if isinstance(expected, list) else [[expected]])


def test_kv_bytes_per_token_of_the_readme_shows_327680(classic_module):
    assert call_like_classic(classic_module, "KV_BYTES_PER_TOKEN", 80.0, 8.0, 128.0, 2.0) == [[327680.0]]
    assert call_like_classic(classic_module, "KV_BYTES_PER_TOKEN", 80.0, 8.0, 128.0) == [[327680.0]]
    assert call_like_classic(classic_module, "KV_BYTES_PER_TOKEN", 80.0, 8.0, 128.0, "fp8") == [[163840.0]]


def test_back_of_the_envelope_figures_through_the_udf_layer(classic_module):
    # Back-of-the-Envelope §4: Qwen2.5-72B in FP8 on two H100s decodes ~92 tokens/s at batch 1, 4,387 at batch 94
    assert round(call_like_classic(classic_module, "DECODE_TOKS", 72.7, 1.0, 2.0, 3.35)[0][0]) == 92
    total = call_like_classic(classic_module, "DECODE_TOKS_TOTAL", 72.7, 1.0, 2.0, 3.35, 94.0, 327680.0, 2300.0)
    assert round(total[0][0]) == 4387


@pytest.mark.parametrize("name", [n for n in FUNCTIONS if FUNCTIONS[n].args])
def test_a_bad_argument_gives_the_cores_one_line_message_naming_it(classic_module, name):
    fn = FUNCTIONS[name]
    for i, a in enumerate(fn.args):
        args = list(EXAMPLES[name]) + [None] * (len(fn.args) - len(EXAMPLES[name]))
        args[i] = -1.0 if a.domain.kind != "text" else "no such thing"
        ((result,),) = call_like_classic(classic_module, name, *[MISSING if v is None else v for v in args])
        values = [a2.default if v is None else v for a2, v in zip(fn.args, args)]
        if not isinstance(result, str):  # -1 is allowed here (none today): then it is simply the core's value
            assert result == core(name, *values)
            continue
        assert result == core(name, *values)
        assert re.match(r"#(VALUE!|NUM!|N/A) ", result) and "\n" not in result and a.name in result


@pytest.mark.parametrize(
    "raw, message",
    [
        ("1,000", "#VALUE! kv_heads must be a number, got text '1,000': type it without thousands separators"),
        ("8 heads", "#VALUE! kv_heads must be a number, got text '8 heads': give the number alone"),
        (True, "#VALUE! kv_heads must be a number, got TRUE"),
        (None, "#VALUE! kv_heads is required but the cell is empty"),
        (-1.0, "#NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1"),
        (2.5, "#NUM! kv_heads must be a whole number from 1 to 1,000,000, got 2.5"),
    ],
)
def test_cell_contents_are_read_as_in_every_face(classic_module, raw, message):
    assert call_like_classic(classic_module, "KV_BYTES_PER_TOKEN", 80.0, raw, 128.0) == [[message]]


def test_numbers_typed_as_text_and_empty_optional_cells(classic_module):
    assert call_like_classic(classic_module, "KV_BYTES_PER_TOKEN", "80", " 8 ", "1.28E+2", None) == [[327680.0]]
    assert call_like_classic(classic_module, "USABLE_GB", 2.0, 80.0, "90%") == [[pytest.approx(144.0)]]


def test_error_values_propagate(classic_module):
    for code in ("#N/A", "#REF!", "#DIV/0!"):
        assert call_like_classic(classic_module, "KV_GB", code, 2300.0) == [[code]]
    # a COM error number from a real error cell, as xlwings' engine hands over the seven it knows ...
    assert call_like_classic(classic_module, "KV_GB", -2146826246, 2300.0) == [["#N/A"]]
    # ... and as it hands over the newer ones (#SPILL! is CVErr 2045)
    assert call_like_classic(classic_module, "KV_GB", -2146828288 + 2045, 2300.0) == [["#SPILL!"]]
    # the first error in argument order wins, as in cells.evaluate
    assert call_like_classic(classic_module, "KV_GB", "#REF!", "#N/A") == [["#REF!"]]


def test_an_error_from_another_xlsxplan_cell_goes_on_with_its_reason(classic_module):
    ((first,),) = call_like_classic(classic_module, "KV_BYTES_PER_TOKEN", 80.0, -1.0, 128.0)
    assert first == "#NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1"
    assert call_like_classic(classic_module, "KV_GB", first, 2300.0) == [[first]]
    assert call_like_classic(classic_module, "KV_GB", "#NUMBERS are fun", 2300.0)[0][0].startswith("#VALUE!")


def test_presets_in_cells_and_lists_that_spill(classic_module):
    models = call_like_classic(classic_module, "MODELS")
    assert models == [[m] for m in FUNCTIONS["MODELS"].func()] and len(models) > 10
    layers = call_like_classic(classic_module, "MODEL_SPEC", "Qwen2.5-72B", "layers")
    assert layers == [[80.0]]
    heads = call_like_classic(classic_module, "MODEL_SPEC", "Qwen2.5-72B", "kv_heads")
    assert call_like_classic(classic_module, "KV_BYTES_PER_TOKEN", layers, heads, 128.0) == [[327680.0]]
    assert call_like_classic(classic_module, "GPU_SPEC", "H1000", "memory_gb") == [
        ["#N/A gpu 'H1000' is not in the catalog; did you mean H100-SXM, V100, H800?"]
    ]


# --- arrays ------------------------------------------------------------------------------------------------------


def test_a_column_of_scenarios_is_one_call_equal_to_scalar_calls(classic_module):
    batches = tuple((float(b),) for b in [1, 8, 94, 512, 0, -3, 2.5]) + (("#N/A",), (None,), ("x",))
    column = call_like_classic(classic_module, "DECODE_TOKS_TOTAL", 72.7, 1.0, 2.0, 3.35, batches, 327680.0, 2300.0)
    assert len(column) == len(batches) and all(len(row) == 1 for row in column)
    for (batch,), (got,) in zip(batches, column):
        one = call_like_classic(classic_module, "DECODE_TOKS_TOTAL", 72.7, 1.0, 2.0, 3.35, batch, 327680.0, 2300.0)
        assert got == one[0][0]
    assert round(column[2][0]) == 4387  # Back-of-the-Envelope §4
    assert column[4][0] == "#NUM! batch must be a whole number from 1 to 1,000,000,000, got 0"
    assert column[7][0] == "#N/A"
    assert column[8][0] == column[0][0]  # an empty cell takes the default batch of 1
    assert column[9][0] == "#VALUE! batch must be a number, got text 'x'"


def test_a_column_against_a_row_makes_a_grid(classic_module):
    grid = call_like_classic(classic_module, "WEIGHTS_GB", ((7.0,), (70.0,)), ((2.0, 1.0, "fp8"),))
    assert grid == [[14.0, 7.0, 7.0], [140.0, 70.0, 70.0]]
    mismatch = call_like_classic(classic_module, "WEIGHTS_GB", ((7.0,), (70.0,), (8.0,)), ((2.0,), (1.0,)))
    assert mismatch == [["#VALUE! WEIGHTS_GB: ranges of 3x1 and 2x1 cells cannot be matched up element by element"]]


@pytest.mark.parametrize("lite", [False, True])
def test_numpy_arrays_and_plain_lists_are_accepted(lite):
    f = udfs.build(lite=lite)["KV_BYTES_PER_TOKEN"]
    expected = [[327680.0], [57344.0]]  # Qwen2.5-72B; Qwen2.5-7B: 2 x 28 layers x 4 KV heads x 128 x 2 bytes
    assert f(np.array([[80], [28]]), np.array([[8], [4]]), 128, None) == expected
    assert f(np.array([[80], [28]], dtype=object), [[8], [4]], np.float64(128)) == expected
    assert f([80, 28], [8, 4], 128) == expected  # a 1-D list counts as a column
    assert f(np.array(80), np.int64(8), 128) == 327680.0
    assert f(layers=80, kv_heads=8, head_dim=128) == 327680.0


# --- errors, never a traceback -----------------------------------------------------------------------------------


def test_lite_raises_a_one_line_error_for_a_scalar_and_keeps_arrays_whole():
    lite = udfs.build(lite=True)
    with pytest.raises(udfs.ExcelError, match=r"^#NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1$"):
        lite["KV_BYTES_PER_TOKEN"](80, -1, 128)
    with pytest.raises(udfs.ExcelError, match=r"^#N/A gpu 'H1000' is not in the catalog; did you mean"):
        lite["GPU_SPEC"]("H1000", "memory_gb")
    assert lite["KV_BYTES_PER_TOKEN"]([[80], [-1]], 8, 128) == [
        [327680.0],
        ["#NUM! layers must be a whole number from 1 to 1,000,000, got -1"],
    ]
    # an error value passed in comes back as its bare code, which Lite writes as a real error value
    assert lite["KV_GB"]("#N/A", 2300) == "#N/A"
    assert lite["KV_GB"]("#NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1", 2300) == "#NUM!"
    assert lite["KV_GB"]([["#N/A"], [327680]], 2300) == [["#N/A"], [pytest.approx(0.753664)]]


@pytest.mark.parametrize("lite", [False, True])
def test_office_js_error_cells_reaching_a_function_unconverted_are_errors_passed_in(lite):
    kv_gb = udfs.build(lite=lite)["KV_GB"]
    na = {"type": "Error", "basicValue": "#N/A", "errorType": "NotAvailable"}
    assert kv_gb(na, 2300) == "#N/A"
    assert kv_gb({"type": "Error", "errorType": "Div0"}, 2300) == "#DIV/0!"  # no basicValue: by its type
    assert kv_gb({"type": "Error"}, 2300) == "#VALUE!"
    assert kv_gb(np.array([[na, 327680.0]], dtype=object), 2300) == [["#N/A", pytest.approx(0.753664)]]
    assert kv_gb({"type": "FormattedNumber", "basicValue": 327680.0}, 2300) == pytest.approx(0.753664)
    failed = "#VALUE! kv_bytes_per_token must be a number, got a dict"
    if lite:
        with pytest.raises(udfs.ExcelError, match=rf"^{re.escape(failed)}$"):
            kv_gb({}, 2300)
    else:
        assert kv_gb({}, 2300) == failed


def test_an_unexpected_failure_is_still_one_line(monkeypatch):
    def broken(fn, args, read_cell=None, floats=False):
        raise KeyError("a bug\nover two lines")

    monkeypatch.setattr(udfs, "evaluate_broadcast", broken)
    assert udfs.KV_GB(1, 2) == "#VALUE! KV_GB: KeyError: 'a bug\\nover two lines'"
    with pytest.raises(udfs.ExcelError, match=r"^#VALUE! KV_GB: KeyError: 'a bug\\nover two lines'$"):
        udfs.build(lite=True)["KV_GB"](1, 2)


_errors = st.sampled_from(["#N/A", "#REF!", "#VALUE!", "#DIV/0!", "#NUM! x must be 1", "#SPILL!"])
_scalars = st.one_of(
    st.sampled_from([0.0, -1.0, 1.0, 2.5, 1e308, -1e308, 5e-324, math.nan, math.inf, -math.inf, 80.0, 7.0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.none(),
    st.sampled_from(["", "1,000", "80 GB", "fp8", "H100", "Qwen2.5-72B", "layers", "memory_gb", "90%", "1E+6"]),
    st.text(max_size=12),  # unicode, digits of other scripts, control characters
    _errors,
    st.sampled_from([-2146826246, -2146826243]),  # COM error numbers: #N/A, #SPILL!
)
_lite_errors = st.builds(
    lambda code, kind: {"type": "Error", "basicValue": code, "errorType": kind},
    st.sampled_from(["#N/A", "#DIV/0!", "#VALUE!", "#BUSY!", "", "#NUM! x"]),
    st.sampled_from(["NotAvailable", "Div0", "Value", "Busy", "Nonsense"]),
) | st.sampled_from([{"type": "Error"}, {"type": "FormattedNumber", "basicValue": 80.0}, {"type": "Entity"}, {}])
_cells = st.one_of(_scalars, _lite_errors)  # a Lite error cell, in case one ever reaches a function unconverted
_ranges = st.integers(1, 3).flatmap(
    lambda cols: st.lists(st.lists(_cells, min_size=cols, max_size=cols), min_size=1, max_size=3)
)
_numeric_arrays = st.integers(0, 2).flatmap(
    lambda ndim: st.lists(
        st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**40), 2**40), min_size=1, max_size=6
    ).map(lambda v: np.array(v).reshape((-1,) + (1,) * (ndim - 1)) if ndim else np.array(v[0]))
)
_object_arrays = _ranges.map(lambda rows: np.array(rows, dtype=object))
_args = st.one_of(_scalars, _lite_errors, _ranges, _numeric_arrays, _object_arrays)


def _assert_one_line_cell(value):
    assert value is None or isinstance(value, (float, bool, str)), repr(value)
    if isinstance(value, str):
        assert "\n" not in value and "Traceback" not in value and "Error:" not in value.split(" ", 1)[0]


def _com_value(value):
    if isinstance(value, list):
        return [[_com_value(v) for v in row] for row in value]
    return None if isinstance(value, (dict, np.ndarray)) else value


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(list(FUNCTIONS)), data=st.data())
def test_fuzz_no_input_makes_a_udf_raise_or_show_a_traceback(classic_module, name, data):
    fn = FUNCTIONS[name]
    args = data.draw(st.lists(_args, min_size=len(fn.args), max_size=len(fn.args)), label="args")
    # classic: never raises. Through xlwings' conversion go only what COM can send (numbers, text, booleans,
    # empties, error numbers, 2-D lists of them): a numpy array or a Lite error dict becomes an empty cell there,
    # and goes to the function directly below, as Lite or another caller of the module would pass it
    rows = call_like_classic(classic_module, name, *[_com_value(a) for a in args])
    direct = getattr(udfs, name)(*args)  # numpy arrays, object arrays and dicts, straight to the UDF
    for row in direct if isinstance(direct, list) else [[direct]]:
        for value in row:
            _assert_one_line_cell(value)
    assert all(len(row) == len(rows[0]) for row in rows)
    for row in rows:
        for value in row:
            _assert_one_line_cell(value)
    try:
        lite_result = _LITE_UDFS[name](*args)
    except udfs.ExcelError as err:  # the only exception Lite ever sees, and always one line
        assert "\n" not in str(err) and "Traceback" not in str(err)
        assert re.match(r"#[A-Z/0!?]+ ", str(err))
    else:
        for row in lite_result if isinstance(lite_result, list) else [[lite_result]]:
            for value in row:
                _assert_one_line_cell(value)


_LITE_UDFS = udfs.build(lite=True)


def test_a_table_given_a_column_refuses_it_cell_by_cell():
    # a table fills a block by itself: a column in place of one argument is one clean error per element
    args = list(EXAMPLES["PLAN_OPTIONS"])
    args[1] = [[200000.0], [100000.0]]
    result = udfs.PLAN_OPTIONS(*args)
    assert [row[0] for row in result] == [
        "#VALUE! PLAN_OPTIONS spills one table: give one value per argument, not a range of them"
    ] * 2


@settings(max_examples=150, deadline=None)
@given(
    # a function that spills a list (DEMAND_PROFILE, PROFILE_GPUS) fills a column from one call: a column of its
    # arguments has no cell per element to compare
    name=st.sampled_from([n for n in FUNCTIONS if FUNCTIONS[n].args and not FUNCTIONS[n].spills]),
    data=st.data(),
)
def test_fuzz_a_column_equals_scalar_calls_element_by_element(name, data):
    fn = FUNCTIONS[name]
    n_rows = data.draw(st.integers(2, 4), label="rows")
    # a range argument (TAIL_SHARE_DATA's lengths) takes a column whole rather than broadcasting over it
    broadcastable = [i for i, a in enumerate(fn.args) if a.domain is None or a.domain.kind != "range"]
    assume(broadcastable)
    column_at = data.draw(st.sampled_from(broadcastable), label="column argument")
    example = list(EXAMPLES[name]) + [None] * (len(fn.args) - len(EXAMPLES[name]))
    column = data.draw(st.lists(st.one_of(_scalars, st.just(example[column_at])), min_size=n_rows, max_size=n_rows))
    f = getattr(udfs, name)
    args = list(example)
    args[column_at] = [[v] for v in column]
    result = f(*args)
    for row, value in zip(result, column):
        args[column_at] = value
        one = f(*args)
        assert row[0] == one or (row[0] != row[0] and one != one)  # NaN never comes back, but be exact about it


# --- xlwings Lite, the way Lite registers and calls the functions --------------------------------------------------
#
# Lite registers custom functions from the metadata ``xlwings.pro.udfs_officejs.custom_functions_meta`` builds from
# the decorated module, and runs each call through ``custom_functions_call``: every argument arrives as Office.js
# hands it over (a 2-D list; ``null`` for an omitted optional; an error cell as ``{"type": "Error", ...}``), a 1x1
# range becomes a scalar, None takes the default, the rest goes through ``xlwings.conversion.read`` with the
# "officejs" engine, and the result through ``conversion.write``, which makes "#N/A"-style text a real error value.
# A raised exception is what Lite shows as #VALUE! with the message on hover.
#
# That code lives in ``xlwings.pro``: source-available, licensed PolyForm Noncommercial or under a paid xlwings PRO
# licence, and its package checks a licence key (``XLWINGS_LICENSE_KEY``) on import. Lite runs it inside Excel under
# Lite's own terms (free for commercial use); outside Lite these tests import it the ordinary way, so they run only
# where a licence key is configured and skip, saying why, elsewhere: nothing here goes around the licence check.
# The same call cases also run everywhere through ``lite_call`` below, which follows the protocol just described
# with xlwings' open-source conversion pipeline and a stand-in for the officejs engine's value cleaning (the
# Office.js shapes Microsoft documents); where the real machinery runs, it checks the stand-in's answers too.


def _lite_error(code: str) -> dict:
    """An error cell as Office.js passes it to a custom function (Excel JavaScript API, custom functions data
    types): ``{"type": "Error", "basicValue": "#N/A", "errorType": "NotAvailable"}``."""
    return {"type": "Error", "basicValue": code, "errorType": _ERROR_TYPES.get(code, "Value")}


_ERROR_TYPES = {
    "#DIV/0!": "Div0",
    "#N/A": "NotAvailable",
    "#NAME?": "Name",
    "#NULL!": "Null",
    "#NUM!": "Num",
    "#REF!": "Ref",
    "#VALUE!": "Value",
}


class _OfficeJsStandIn:
    """What the officejs engine does to values (the Office.js custom-function protocol): an empty cell reads as
    ``empty_as``, an error cell as its code with ``err_to_str``; written back, an error code is a real error value
    (``{"type": "Error", "errorType": ...}``), None an empty cell, a numpy number a float."""

    name = "officejs"
    type = "remote"

    @staticmethod
    def clean_value_data(data, datetime_builder, empty_as, number_builder, err_to_str):
        def clean(value):
            if value == "" or value is None:
                return empty_as
            if isinstance(value, dict) and value["type"] == "Error":
                return value["basicValue"] if err_to_str else None
            if isinstance(value, dict):
                return value["basicValue"]
            return value

        return [[clean(c) for c in row] for row in data]

    @staticmethod
    def prepare_xl_data_element(x, options):
        if x is None:
            return ""
        if isinstance(x, (float, np.floating)) and np.isnan(x):
            return {"type": "Error", "errorType": "Num"}
        if isinstance(x, np.number):
            return float(x)
        if isinstance(x, str) and x in _ERROR_TYPES:
            return {"type": "Error", "errorType": _ERROR_TYPES[x]}
        return x


@pytest.fixture(scope="module")
def officejs_engine() -> Iterator[None]:
    """The "officejs" conversion engine: xlwings' own where its licence lets it load, else the stand-in."""
    if "officejs" in xlwings.engines.engines_by_name:
        yield
        return
    engine = xlwings.Engine(impl=_OfficeJsStandIn())
    xlwings.engines.add(engine)
    try:
        yield
    finally:
        xlwings.engines.engines.remove(engine)
        del xlwings.engines.engines_by_name["officejs"]


@pytest.fixture(scope="module")
def officejs(officejs_engine) -> types.ModuleType:
    """``xlwings.pro.udfs_officejs``, imported the ordinary way: skipped where no xlwings licence key is set."""
    try:
        return importlib.import_module("xlwings.pro.udfs_officejs")
    except (ImportError, xlwings.LicenseError) as err:
        pytest.skip(f"xlwings Lite's own machinery is in xlwings.pro, which needs XLWINGS_LICENSE_KEY: {err}")


def _lite_module(func_decorator=None, arg_decorator=None) -> types.ModuleType:
    """What Lite loads from main.py: every function, decorated as xlsxplan.excel.udfs decorates it inside Lite."""
    module = types.ModuleType("main")
    kwargs = {"func_decorator": func_decorator, "arg_decorator": arg_decorator} if func_decorator else {}
    for name, udf in udfs.build(**kwargs, lite=True).items():
        setattr(module, name, udf)
    return module


def lite_call(name: str, *args):
    """A call as ``custom_functions_call`` makes it (0.37.8), through xlwings' open-source conversion pipeline."""
    from xlwings import conversion

    f = _LITE_UDFS[name]
    params = [a for a in FUNCTIONS[name].args]
    values = []
    for a, value in zip(params, args):
        if isinstance(value, list) and len(value) == 1:  # a 1x1 range arrives as its value
            value = value[0][0] if isinstance(value[0], list) and len(value[0]) == 1 else value[0]
        if value is None:
            values.append(a.default if a.optional else None)
        else:
            values.append(conversion.read(None, value, {"ndim": 2, "err_to_str": True}, engine_name="officejs"))
    result = f(*values)
    return conversion.write(result, None, {"runtime": "1.4", "date_format": None}, engine_name="officejs")


def _officejs_call(officejs, module, name, *args):
    import asyncio

    data = {
        "func_name": name,
        "args": list(args),
        "version": xlwings.__version__,
        "client": "Office.js",
        "runtime": "1.4",
    }
    return asyncio.run(officejs.custom_functions_call(data, module))


NA = {"type": "Error", "errorType": "NotAvailable"}
LITE_CALLS = [
    # (function, arguments as Office.js passes them, what the cell receives)
    ("KV_BYTES_PER_TOKEN", ([[80]], [[8]], [[128]], None), [[327680.0]]),  # None: the optional left out
    ("KV_BYTES_PER_TOKEN", ([[80]], [[8]], [[128]], [[""]]), [[327680.0]]),  # an empty cell: the default
    ("KV_BYTES_PER_TOKEN", (80, 8, 128, "fp8"), [[163840.0]]),  # scalars
    ("KV_BYTES_PER_TOKEN", ([[80], [28]], [[8], [4]], [[128]], None), [[327680.0], [57344.0]]),  # a matrix spills
    (
        "KV_BYTES_PER_TOKEN",
        ([[80], [-1]], [[8], [4]], [[128]], None),
        [[327680.0], ["#NUM! layers must be a whole number from 1 to 1,000,000, got -1"]],
    ),  # one bad element
    ("KV_BYTES_PER_TOKEN", ([[_lite_error("#N/A")]], [[8]], [[128]], None), [[NA]]),  # an error cell passed in
    ("KV_BYTES_PER_TOKEN", ([[_lite_error("#N/A")], [80]], [[8]], [[128]], None), [[NA], [327680.0]]),
    (
        "KV_GB",
        ([["#NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1"]], [[2300]], None),
        [[{"type": "Error", "errorType": "Num"}]],
    ),  # another xlsxplan cell's failure: a real #NUM!
    ("GPU_SPEC", ([["H100"]], [["memory_gb"]]), [[80.0]]),
    ("MODEL_SPEC", ([["Qwen2.5-72B"]], [["layers"]]), [[80.0]]),
    (
        "DECODE_TOKS_TOTAL",
        ([[72.7]], [[1]], [[2]], [[3.35]], [[94]], [[327680]], [[2300]], None),
        [[pytest.approx(4387.492161311242)]],
    ),
    ("MODELS", (), [[m] for m in FUNCTIONS["MODELS"].func()]),
]
LITE_FAILURES = [
    # a failed scalar call raises: Lite shows #VALUE! with this line on hover
    (
        "KV_BYTES_PER_TOKEN",
        ([[80]], [[-1]], [[128]], None),
        r"^#NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1$",
    ),
    ("GPU_SPEC", ([["H1000"]], [["memory_gb"]]), r"^#N/A gpu 'H1000' is not in the catalog; did you mean H100-SXM"),
    ("USABLE_GB", ([[2]], [[80]], [[True]]), r"^#VALUE! usable_fraction must be a number, got TRUE$"),
    ("KV_BYTES_PER_TOKEN", ([[80]], [[8]], None, None), r"^#VALUE! head_dim is required but the cell is empty$"),
]


@pytest.mark.parametrize("name, args, expected", LITE_CALLS)
def test_lite_calls_as_lite_makes_them(officejs_engine, name, args, expected):
    assert lite_call(name, *args) == expected


@pytest.mark.parametrize("name, args, match", LITE_FAILURES)
def test_a_failed_scalar_in_lite_raises_the_one_line_lite_shows(officejs_engine, name, args, match):
    with pytest.raises(udfs.ExcelError, match=match):
        lite_call(name, *args)


def test_lite_metadata_from_xlwings_own_machinery(officejs):
    meta = officejs.custom_functions_meta(_lite_module(officejs.xlfunc, officejs.xlarg))
    assert meta["allowErrorForDataTypeAny"] is True  # error cells reach the functions, as LITE_CALLS pass them
    functions = {f["id"]: f for f in meta["functions"]}
    assert set(functions) == set(FUNCTIONS)
    for name, fn in FUNCTIONS.items():
        f = functions[name]
        assert f["name"] == name and f["description"] == fn.description()
        assert len(f["description"]) <= EXCEL_TEXT_LIMIT and f"[{fn.unit}]" in f["description"]
        assert f["result"] == {"dimensionality": "matrix", "type": "any"}
        assert [p["name"] for p in f["parameters"]] == [a.name for a in fn.args]
        for p, a in zip(f["parameters"], fn.args):
            assert p["description"] == a.help() and f"[{a.unit}]" in p["description"]
            assert (p["dimensionality"], p["type"]) == ("matrix", "any")  # every argument takes a range
            assert p.get("optional", False) == a.optional and "repeating" not in p


@pytest.mark.parametrize("name, args, expected", LITE_CALLS)
def test_lite_calls_through_xlwings_own_machinery(officejs, name, args, expected):
    module = _lite_module(officejs.xlfunc, officejs.xlarg)
    assert _officejs_call(officejs, module, name, *args) == expected


@pytest.mark.parametrize("name, args, match", LITE_FAILURES)
def test_a_failed_scalar_raises_through_xlwings_own_machinery(officejs, name, args, match):
    module = _lite_module(officejs.xlfunc, officejs.xlarg)
    with pytest.raises(udfs.ExcelError, match=match):
        _officejs_call(officejs, module, name, *args)
