"""Excel's functions that xlsxplan registers in place of formualizer's (xlsxplan/headless/bonds.py and the other
modules :data:`xlsxplan.headless.engine.CORRECTED` gathers): each value is one Excel saved, in the workbook and cell
named beside it (tests/data/excel_saved), or an example from Microsoft's page on the function."""

from __future__ import annotations

import math

import pytest

from xlsxplan.errors import CellError
from xlsxplan.headless import evaluate_formula


def _value(formula: str) -> object:
    result = evaluate_formula(formula)
    return result.error.code if isinstance(result.error, CellError) else result.value


def _check(formula: str, want: object) -> None:
    got = _value(formula)
    if isinstance(want, float):
        assert isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-9), (formula, got, want)
    else:
        assert got == want, (formula, got)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # FINANCIAL/COUPDAYS.xlsx, Sheet1 rows 2 to 27 (settlement, maturity, frequency, basis in A:D)
        ("=COUPDAYS(DATE(2020,1,1),DATE(2021,1,1),1,1)", 366.0),  # E3
        ("=COUPDAYS(DATE(2020,1,1),DATE(2021,1,1),2,3)", 182.5),  # E11
        ("=COUPDAYBS(DATE(2020,1,1),DATE(2024,3,17),1,0)", 284.0),  # F21: US 30/360
        ("=COUPDAYBS(DATE(2020,1,1),DATE(2024,3,17),1,1)", 290.0),  # F22: actual days
        ("=COUPDAYSNC(DATE(2020,1,1),DATE(2021,1,1),1,2)", 366.0),  # G4
        ("=COUPDAYSNC(DATE(2020,1,1),DATE(2024,3,17),1,0)", 76.0),  # G21
        ("=COUPNCD(DATE(2020,1,1),DATE(2024,3,17),2,0)", 43907.0),  # H26
        ("=COUPPCD(DATE(2020,1,1),DATE(2024,3,17),2,0)", 43725.0),  # J26
        ("=COUPNUM(DATE(2020,1,1),DATE(2024,3,17),2,0)", 9.0),  # I26
        # Microsoft, "COUPDAYBS function" and the other COUP pages: 25 January 2011, 15 November 2011, 2, 1
        ("=COUPDAYBS(DATE(2011,1,25),DATE(2011,11,15),2,1)", 71.0),
        ("=COUPDAYS(DATE(2011,1,25),DATE(2011,11,15),2,1)", 181.0),
        ("=COUPDAYSNC(DATE(2011,1,25),DATE(2011,11,15),2,1)", 110.0),
        ("=COUPNCD(DATE(2011,1,25),DATE(2011,11,15),2,1)", 40678.0),  # 15 May 2011
        ("=COUPNUM(DATE(2007,1,25),DATE(2008,11,15),2,1)", 4.0),
        ("=COUPPCD(DATE(2011,1,25),DATE(2011,11,15),2,1)", 40497.0),  # 15 November 2010
        ("=COUPDAYS(DATE(2021,1,1),DATE(2020,1,1),2,1)", "#NUM!"),  # settlement after maturity
        ("=COUPDAYS(DATE(2020,1,1),DATE(2021,1,1),3,1)", "#NUM!"),  # frequency 3
    ],
)
def test_engine_difference_coupon_functions(formula, want):
    """formualizer 0.13 has no COUP function (#NAME?)."""
    _check(formula, want)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # FINANCIAL/ACCRINT.xlsx, Sheet1
        ("=ACCRINT(39508, 39691, 39569, 0.1, 1000, 2, 0)", 16.666666666666664),  # B1, Microsoft's example
        ("=ACCRINT(DATE(2007,3,1), DATE(2008,8,31), DATE(2008,5,1), 0.1, 1000, 2, 0)", 116.94444444444446),  # B4
        ("=ACCRINT(DATE(2007,3,1), DATE(2008,8,31), DATE(2008,5,1), 0.1, 1000, 2, 0, FALSE)", 66.94444444444446),  # B5
        ("=ACCRINT(DATE(2020,1,1), DATE(2020,7,1), DATE(2020,3,1), 0.1, 1000, 2, 1)", 16.483516483516482),  # B24
        ("=ACCRINT(DATE(2017,1,1), DATE(2017,12,1), DATE(2017,4,1), 0.33, 3000, 4, 2)", 236.5),  # B33
        ("=ACCRINT(DATE(2017,1,1), DATE(2017,12,1), DATE(2017,4,1), 0.33, 3000, 4, 3)", 240.04109589041096),  # B34
        ("=ACCRINT(DATE(2016,6,1), DATE(2017,12,1), DATE(2016,9,1), 0.33, 3000, 2, 1)", 251.55737704918027),  # B38
        ("=ACCRINT(DATE(2008,3,1), DATE(2008,9,1), DATE(2008,5,1), 0.1, 1000, 3, 0)", "#NUM!"),  # B11
        ("=ACCRINT(DATE(2008,5,1), DATE(2008,9,1), DATE(2008,5,1), 0.1, 1000, 2, 0)", "#NUM!"),  # B17
    ],
)
def test_engine_difference_accrint_counts_quasi_coupon_periods(formula, want):
    """formualizer 0.13 counts the days from issue to settlement in one piece (B4: 116.67, Excel 116.94)."""
    _check(formula, want)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # Microsoft, "CONVERT function", its examples
        ('=CONVERT(1,"lbm","kg")', 0.45359237),
        ('=CONVERT(68,"F","C")', 20.0),
        ('=CONVERT(2.5,"ft","sec")', "#N/A"),
        ('=CONVERT(CONVERT(100,"ft","m"),"ft","m")', 9.290304),
        # ENGINEERING/CONVERT.xlsx: a unit with a prefix ("M" & the unit) and a few factors
        ('=CONVERT(0.05,"Mg","g")', 50000.0),  # Weight!G2
        ('=CONVERT(1,"sg","g")', 14593.9029372064),  # Weight!C3
        ('=CONVERT(1,"u","g")', 1.660538782e-24),  # Weight!C5
        ('=CONVERT(0.004,"Mmph","m/s")', 1788.16),  # Speed!J8
        ('=CONVERT(1,"kibyte","bit")', 8192.0),  # binary prefix (Microsoft's table)
        ('=CONVERT(1,"km2","m2")', 1e6),  # a prefix squared for an area
    ],
)
def test_engine_difference_convert_knows_excels_units_and_prefixes(formula, want):
    """formualizer 0.13 gives #N/A for prefixed units and many of Excel's (CONVERT.xlsx: 276 of 509 matched)."""
    _check(formula, want)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # LOOKUP_AND_REFERENCE/XLOOKUP.xlsx, ReturnSmaller rows 4 to 13: A4:A10 {2;5;4;5;3;TRUE;"ala"}, B4:B10 a to g
        ('=XLOOKUP(10,{2;5;4;5;3;TRUE;"ala"},{"a";"b";"c";"d";"e";"f";"g"},,-1)', "b"),  # E8: first of the 5s
        ('=XLOOKUP(10,{2;5;4;5;3;TRUE;"ala"},{"a";"b";"c";"d";"e";"f";"g"},,-1,-1)', "d"),  # F8: from the last
        ('=XLOOKUP(1.8,{2;5;4;5;3;TRUE;"ala"},{"a";"b";"c";"d";"e";"f";"g"},"Not found",-1)', "Not found"),  # G5
        ('=XLOOKUP(FALSE,{2;5;4;5;3;TRUE;"ala"},{"a";"b";"c";"d";"e";"f";"g"},,-1)', "g"),  # E13: text sorts below
        # MultipleElements: a binary search finds the first of equal items ascending, the last descending
        ("=XLOOKUP(5,{1;2;3;4;5;5;5;6;7;7;7;8;9},{1;2;3;4;5;6;7;8;9;10;11;12;13},,-1,2)", 5.0),  # E4 ('d', row 5)
        ("=XLOOKUP(7.1,{1;2;3;4;5;5;5;6;7;7;7;8;9},{1;2;3;4;5;6;7;8;9;10;11;12;13},,-1,2)", 11.0),  # E8 ('j')
        ("=XLOOKUP(5,{9;8;7;7;7;6;5;5;5;4;3;2;1},{1;2;3;4;5;6;7;8;9;10;11;12;13},,1,-2)", 9.0),  # N4 ('h', row 9)
        ('=XLOOKUP(TRUE,{"a";"b";"c";"d";"e"},{2;3;4;5;6},,-1,2)', 6.0),  # ReturnSmaller!I25
        ('=XLOOKUP("Abra",{"Abra";"Bra"},{1;2},,2,2)', "#VALUE!"),  # Wildcards!E13: no wildcard binary search
        ('=XLOOKUP("B?a",{"Abra";"Bra"},{1;2},,2)', 2.0),  # Microsoft: ? is one character
        ("=XLOOKUP(4,{1;5;3},{10;50;30},,1)", 50.0),  # the next larger item of unsorted data
    ],
)
def test_engine_difference_xlookup_match_and_search_modes(formula, want):
    """formualizer 0.13 gives #N/A for these (XLOOKUP.xlsx: 269 of 439 matched)."""
    _check(formula, want)


def test_only_an_xlookup_with_a_mode_leaves_the_engines_own():
    from xlsxplan.headless.engine import MODAL_XLOOKUP, prepare

    assert prepare("=XLOOKUP(A1,B:B,C:C)")[0] == "=XLOOKUP(A1,B:B,C:C)"
    assert prepare("=XLOOKUP(A1,B:B,C:C,,1)")[0] == f"={MODAL_XLOOKUP}(A1,B:B,C:C,_XLSXPLAN_OMITTED(),1)"
    nested = prepare('=_xlfn.XLOOKUP(SUM(1,2),{1,2},B1:C1,"x",-1,2)+XLOOKUP(1,A:A,B:B)')[0]
    assert nested == f'={MODAL_XLOOKUP}(SUM(1,2),{{1,2}},B1:C1,"x",-1,2)+XLOOKUP(1,A:A,B:B)'


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        ("=DISC(39472,39614,97.975,100,0)", 0.05207142857142884),  # FINANCIAL/DISC.xlsx F2 (Microsoft's example)
        ("=DISC(39472,39614,97.975,100,5)", "#NUM!"),  # F7: basis 5
        ("=INTRATE(DATE(2027,2,15),DATE(2027,5,15),2000001,2040001.02,1)", 0.0820224719101124),  # INTRATE.xlsx F3
        ("=FVSCHEDULE(1,{0.09,0.11,0.1})", 1.33089),  # FVSCHEDULE.xlsx A7 (Microsoft's example)
        ("=FVSCHEDULE(1000,-1.5)", -500.0),  # A11
        ("=PROB({0;1;2;3},{0.2;0.3;0.1;0.4},2)", 0.1),  # Microsoft's example
        ("=PROB({0;1;2;3},{0.2;0.3;0.1;0.4},1,3)", 0.8),  # Microsoft's example
        ("=PROB({1;2},{0.5;0.4},1)", "#NUM!"),  # probabilities not summing to 1 (PROB.xlsx D15)
        ('=PROB({"Hi";"ho"},{"hi";"ho"},1)', "#DIV/0!"),  # PROB.xlsx O2
        ("=PERMUTATIONA(3,2)", 9.0),  # Microsoft's example
        ("=PERMUTATIONA(-1,2)", "#NUM!"),
        ('=INDEX(EXPAND({1,2,3;4,5,6},4,4,"x"),3,4)', "x"),  # EXPAND.xlsx L7
        ("=INDEX(EXPAND({1,2,3;4,5,6},6),5,1)", "#N/A"),  # EXPAND.xlsx E9
        ('=INDEX(WRAPCOLS({"London","Paris","Madrid","Berlin"},3,"xxx"),3,2)', "xxx"),  # WRAPCOLS_ROWS.xlsx H7
        ('=INDEX(WRAPROWS({"London","Paris","Madrid","Berlin","Rome"},2),3,1)', "Rome"),  # WRAPCOLS_ROWS.xlsx A12
        ("=COLUMNS(EXPAND({1,2},,3))", 3.0),  # an omitted argument is the array's own size, not 0
    ],
)
def test_engine_difference_functions_the_engine_lacks(formula, want):
    """formualizer 0.13 gives #NAME? for each of these."""
    _check(formula, want)


_ROWS = '{23;"23";TRUE;1;-23;"hey";FALSE}'  # STATISTICAL/COUNTIF.xlsx, Rows!A2:A8


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        (f"=COUNTIF({_ROWS},23)", 2.0),  # Rows!C2: the number and the text of it
        (f'=COUNTIF({_ROWS},"=23")', 2.0),  # Rows!D2
        (f'=COUNTIF({_ROWS},"<>23")', 6.0),  # Rows!E2: "<>" skips only the number
        (f'=COUNTIF({_ROWS},"<23")', 2.0),  # Rows!I2 (G2:G8 holds the same values): numbers only
        (f'=COUNTIF({_ROWS},"<=")', 0.0),  # Rows!J9: an ordering with nothing after it matches nothing
        (f'=COUNTIF({_ROWS},"true")', 1.0),  # Rows!AK6: the text of a boolean matches the boolean
        ('=COUNTIF({1;"a";""},"<>")', 3.0),  # Rows!AB5: a formula's empty text is not an empty cell for "<>"
        ('=COUNTIF({"Mr. Brown";"Mrs. Brown";"Albert"},"<>*brown")', 1.0),  # Rows!V2: a wildcard, any case
        ('=SUMIF({1;2;3},">1")', 5.0),
        # MATH_AND_TRIGONOMETRY/SUMIFS.xlsx, Sheet1: a matched error value in the sum range is the result
        ('=SUMIFS({13;17;1/0},{"red";"blue";"white"},"white")', "#DIV/0!"),  # D6 (A10 is #DIV/0!)
        ('=AVERAGEIF({"red";"blue"},"magenta",{1;2})', "#DIV/0!"),  # F13: nothing matched
        # MATH_AND_TRIGONOMETRY/SUMIF_array.xlsx G31: one result per criterion of an array
        ('=INDEX(SUMIF({"East";"West";"East"},{"East","West"},{100;300;150}),1,2)', 300.0),
    ],
)
def test_engine_difference_criteria_as_excel_reads_them(formula, want):
    """formualizer 0.13 counts "<>23" as 5, "<=" as 1, skips a matched error in SUMIFS and gives 0 for an array of
    criteria (COUNTIF.xlsx: 398 of 531 matched)."""
    _check(formula, want)


def test_an_empty_cell_as_the_criterion_is_zero(tmp_path):
    """COUNTIF.xlsx Rows!AI2: =COUNTIF(AG2:AG15,AH2) with AH2 empty counts the cells holding 0, not the empty ones."""
    import openpyxl

    from xlsxplan.headless import Workbook

    book = openpyxl.Workbook()
    sheet = book.active
    for i, v in enumerate([True, 1, 0, None, "x", None], start=1):
        sheet.cell(i, 1, v)
    sheet["C1"] = "=COUNTIF(A1:A6,B1)"
    path = tmp_path / "c.xlsx"
    book.save(path)
    assert Workbook.load(path).calculate().get("Sheet!C1") == 1


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # ENGINEERING/NUMBER_SYSTEMS.xlsx, Binary and Decimal sheets: a negative number is 10 digits whatever places
        ('=BIN2HEX("1110111011",4)', "FFFFFFFFBB"),  # Binary!D3
        ('=BIN2OCT("1100011011",2.3)', "7777777433"),  # Binary!F19
        ('=BIN2OCT("1100011011",0)', "#NUM!"),  # Binary!F14: places still from 1 to 10
        ('=BIN2HEX("1100011011",TRUE)', "#VALUE!"),
        ("=DEC2BIN(-511,4)", "1000000001"),
        ('=BIN2DEC("1000000001")', -511.0),
        ("=DEC2OCT(-512.8,1)", "7777777000"),  # truncated to -512
        ("=DEC2HEX(TRUE)", "#VALUE!"),
        ("=OCT2HEX(4000000000,2)", "FFE0000000"),
        ("=DEC2BIN(9,4)", "1001"),  # Microsoft's example
        ("=DEC2BIN(9,3)", "#NUM!"),  # too few places
    ],
)
def test_engine_difference_number_systems_on_negatives(formula, want):
    """formualizer 0.13 gives #NUM! for a negative number with places, and converts TRUE."""
    _check(formula, want)


_HOOD = '"Little red riding hood\'s red hood"'


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # Microsoft, "TEXTBEFORE function" and "TEXTAFTER function", their examples
        (f'=TEXTBEFORE({_HOOD},"red")', "Little "),
        (f'=TEXTBEFORE({_HOOD},"red",-1)', "Little red riding hood's "),
        (f'=TEXTAFTER({_HOOD},"red",2)', " hood"),
        (f'=TEXTAFTER({_HOOD},"Red",,1)', " riding hood's red hood"),
        (f'=TEXTBEFORE({_HOOD},"basket",1,0,0,"Not found")', "Not found"),
        # TEXT/TEXTBEFORE_TEXTAFTER.xlsx
        ('=TEXTAFTER("del","deli",1,1,0,"qwerty")', "#VALUE!"),  # G19: a delimiter longer than the text
        ('=TEXTAFTER("del","deli")', "#N/A"),  # H19
        ('=TEXTAFTER("a - me@example.com","- ",-1,,1)', "me@example.com"),  # Sheet2!D2
    ],
)
def test_engine_difference_textbefore_textafter(formula, want):
    """formualizer 0.13 gives #VALUE! for TEXTBEFORE and TEXTAFTER with modes or if_not_found (54 of 90)."""
    _check(formula, want)


def test_engine_difference_a_function_of_one_value_over_an_array_function():
    """TEXT/UPPER_LOWER.xlsx A9:A18 and F9:F18: TEXT and DATE over SEQUENCE's array, element by element (formualizer
    0.13: #VALUE!, or the first element's result alone)."""
    assert evaluate_formula('=INDEX(TEXT(DATE(1996,1,SEQUENCE(10)),"ddd"),2)').value == "Tue"  # F10
    assert evaluate_formula('=INDEX(UPPER(TEXTSPLIT("Hi,come",",")),1,2)').value == "COME"  # UPPER_LOWER.xlsx D3


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # FINANCIAL/IPMT_PPMT.xlsx, Sheet1 (rate, per, nper, pv, fv, type in A:F)
        ("=IPMT(0.1,3,3,8000,0,1)", -265.8610271903324),  # G3
        ("=PPMT(0.3,5,36,8000,0,1)", -0.4169797444000284),  # I4: formualizer gave +553.35
        ("=IPMT(0.1,3.9,3,8000,10,1)", -26.866364667656377),  # G17: a fractional period
        ("=IPMT(0.1/12,1,3*12,8000)", -66.66666666666667),  # Microsoft's example
        # FINANCIAL/CUMPRINC_CUMIPMT.xlsx, Sheet1 (rate, nper, pv, start, end, type in A:F)
        ("=CUMPRINC(0.01,36,8000,1.2,8.53,1)", -1339.6579298169904),  # H6: whole periods 2 to 8
        ("=CUMIPMT(0.8,36,18000,2.7,9.667,1)", -55999.99877582575),  # G7
        ("=CUMPRINC(0.7,36,8000,2,10,1)", -0.0047565423422487076),  # H5
        ("=CUMIPMT(0.1,2,8000,1,10,1)", "#NUM!"),  # G11: end past nper
        ("=CUMIPMT(0.0083,36,8000,3,10,TRUE)", "#VALUE!"),  # G28
    ],
)
def test_engine_difference_payment_parts(formula, want):
    """formualizer 0.13 gives IPMT/PPMT with payments at the start (type 1) wrong, and CUMIPMT/CUMPRINC with
    fractional periods (IPMT_PPMT.xlsx: 98 of 128; CUMPRINC_CUMIPMT.xlsx: 48 of 70)."""
    _check(formula, want)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # TEXT/TEXT.xlsx: NUMBERS (values in A, formats in row 2) and DATES (formats in row 1)
        ('=TEXT(12,"00-00-00-00")', "00-00-00-12"),  # NUMBERS!G3
        ('=TEXT(12,"0.00E+0")', "1.20E+1"),  # NUMBERS!M3
        ('=TEXT(-12,"0;(0)")', "(12)"),  # NUMBERS!E6: the negative section
        ('=TEXT(-0.001,"0.00")', "0.00"),  # NUMBERS!C17: no sign on a negative shown as zero
        ('=TEXT(-0.00000001,"General")', "-0.00000001"),  # NUMBERS!H20
        ('=TEXT(41181,"mm###")', "#VALUE!"),  # DATES!G2: a date code beside digit placeholders
        ('=TEXT(2958466,"m/d/y")', "#VALUE!"),  # DATES: after 31 December 9999
        ('=TEXT(1234.567,"$#,##0.00")', "$1,234.57"),  # Microsoft's example
    ],
)
def test_engine_difference_text_formats(formula, want):
    """formualizer 0.13 shows the number unformatted for most formats (TEXT.xlsx: 287 of 352 matched)."""
    _check(formula, want)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # ENGINEERING/COMPLEXs.xlsx, Sheet1 (x, y in A:B) and Sheet2
        ("=COMPLEX(1.2E-45,-3)", "1.2E-45-3i"),  # D13
        ("=COMPLEX(1E-16,0)", "0.0000000000000001"),  # D16: formualizer wrote "0"
        ("=COMPLEX(1E-20,0)", "1E-20"),  # D19
        ("=IMARGUMENT(COMPLEX(1E-16,0))", 0.0),  # H16: formualizer #DIV/0!
        ("=IMREAL(IMLOG10(COMPLEX(1E-16,0)))", -16.0),  # AF16
        ('=IMSUB("i","i")', "0"),  # Sheet2!G6
        ('=IMDIV("3+4i","-4+5i")', "0.195121951219512-0.75609756097561i"),  # Sheet2!D2:E2
        # Microsoft's examples
        ('=COMPLEX(3,4,"j")', "3+4j"),
        ("=COMPLEX(0,1)", "i"),
        ('=IMSQRT("1+i")', "1.09868411346781+0.455089860562227i"),
        ('=IMPRODUCT("3+4i","5-3i")', "27+11i"),
        ('=IMSUM("3+4i","5-3i")', "8+i"),
        ('=IMPOWER("2+3i",3)', "-46+9.00000000000001i"),
    ],
)
def test_engine_difference_complex_numbers_keep_small_parts(formula, want):
    """formualizer 0.13 writes a part below about 1E-15 as 0, so every IM function after it computes from 0
    (COMPLEXs.xlsx: 877 of 958 matched)."""
    _check(formula, want)


_DB = '{"Region","Units","Revenue";"East",120,12000;"West",80,9600;"East",200,20000;"North",100,11000}'


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # DATABASE/DCOUNT_DCOUNTA_DGET_DPRODUCT.xlsx, DCOUNT_DCOUNTA (the same kinds of criteria on its sales list)
        (f'=DCOUNT({_DB},"Units",{{"Region";"East"}})', 2.0),  # B28: valid criteria
        (f'=DCOUNT({_DB},"Units",{{"Region";"E"}})', 2.0),  # text matches text that begins with it
        (f'=DCOUNT({_DB},"Units",{{"Region";"=E"}})', 0.0),
        (f'=DCOUNT({_DB},"Units",{{"Region","Units";"East",">150";"West",">0"}})', 2.0),  # B30: rows are OR
        (f'=DSUM({_DB},"Revenue",{{"Units";">=100"}})', 43000.0),
        (f'=DGET({_DB},"Revenue",{{"Region";"East"}})', "#NUM!"),  # DGET!B59: several records
        (f'=DCOUNT({_DB},TRUE,{{"Units";">0"}})', 0.0),  # B66: TRUE is the first column, text
        (f'=DAVERAGE({_DB},"Units",{{"Region";"South"}})', "#DIV/0!"),
    ],
)
def test_engine_difference_database_functions(formula, want):
    """formualizer 0.13 differs on criteria rows and fields given as TRUE or numbers (DCOUNT_DCOUNTA_DGET_DPRODUCT.xlsx:
    176 of 203; the four database books 482 of 551)."""
    _check(formula, want)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # Microsoft's examples on each function's page
        (
            "=ODDFPRICE(DATE(2008,11,11),DATE(2021,3,1),DATE(2008,10,15),DATE(2009,3,1),0.0785,0.0625,100,2,1)",
            113.597717474079,
        ),
        (
            "=ODDFYIELD(DATE(2008,11,11),DATE(2021,3,1),DATE(2008,10,15),DATE(2009,3,1),0.0575,84.5,100,2,0)",
            0.0772455415972989,
        ),
        ("=ODDLPRICE(DATE(2008,2,7),DATE(2008,6,15),DATE(2007,10,15),0.0375,0.0405,100,2,0)", 99.8782860147213),
        ("=ODDLYIELD(DATE(2008,4,20),DATE(2008,6,15),DATE(2007,12,24),0.0375,99.875,100,2,0)", 0.0451922356291692),
        # FINANCIAL/PRICE_YIELD.xlsx
        (
            "=ODDFPRICE(DATE(2020,3,1),DATE(2030,3,1),DATE(2020,1,15),DATE(2021,3,1),0.075,0.05,120,1,1)",
            131.5377155865953,  # ODDFPRICE_ODDFYIELD!J2 (a long first period)
        ),
        ("=ODDLPRICE(DATE(2020,3,1),DATE(2030,3,1),DATE(2020,1,15),0.075,0.0589,120,2,2)", 122.36705839417525),  # I3
        ("=ODDLPRICE(DATE(2020,3,1),DATE(2040,3,15),DATE(2020,1,15),0.075,0.06,120,2,5)", "#NUM!"),  # I6
    ],
)
def test_engine_difference_odd_period_securities(formula, want):
    """formualizer 0.13 has no ODDFPRICE, ODDFYIELD, ODDLPRICE, ODDLYIELD (#NAME?)."""
    _check(formula, want)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # FINANCIAL/TBILLs.xlsx, Sheet1 (settlement, maturity, discount in A:C)
        ("=TBILLEQ(14640,15006,0.5)", 0.8522961312491701),  # D6: 366 days, past a year's 365
        ('=TBILLEQ("45366","45731","0.5")', 0.8482759796652481),  # D16: text of numbers
        ("=TBILLPRICE(45332,45650,7)", "#NUM!"),  # N29: no price left
        ("=TBILLPRICE(TRUE,45731,0.5)", "#VALUE!"),  # N12
        ("=TBILLEQ(20000,20182,0.5)", 0.6784386617100372),  # D2: 182 days, 365 rate / (360 - rate DSM)
        # MATH_AND_TRIGONOMETRY/SEQUENCE.xlsx
        ('=SEQUENCE("5")', [[1.0], [2.0], [3.0], [4.0], [5.0]]),  # G16:G20
        ("=INDEX(SEQUENCE(,12,,2.5),1,2)", 3.5),  # D23: omitted arguments are 1
        ("=SEQUENCE(0.3)", "#VALUE!"),  # E18
    ],
)
def test_engine_difference_tbills_and_sequence(formula, want):
    """formualizer 0.13 caps a bill at 365 days, refuses text numbers, and reads SEQUENCE's omitted arguments as 0."""
    if isinstance(want, list):
        assert evaluate_formula(formula).value.tolist() == want
    else:
        _check(formula, want)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # FINANCIAL/MIRR.xlsx
        ("=MIRR({-70,12,15},0.1,0.2)", -0.3519259301592139),  # Sheet2!N8
        ('=MIRR({-20,5,"Hello",TRUE,FALSE,5},0.1,0.2)', -0.2583801512904337),  # Sheet2!N20: only numbers count
        ("=MIRR({-6,-1,-2},0.1,0.2)", -1.0),  # Three parameters!F18: no positive flow
        ("=MIRR({-50,25,30},0.5,-12)", "#NUM!"),  # Three parameters!F31
        ("=MIRR({-120000,39000,30000,21000,37000,46000},0.1,0.12)", 0.126094130365905),  # Microsoft's example
    ],
)
def test_engine_difference_mirr(formula, want):
    """formualizer 0.13 gives #DIV/0! for no positive flow and counts blank and text cells as periods."""
    _check(formula, want)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # STATISTICAL/BINOM.xlsx
        ("=BINOM.DIST(2,10,0,TRUE)", 1.0),  # BINOM.DIST!E25: a probability of 0
        ("=BINOM.DIST(0,0,0,TRUE)", 1.0),  # E17
        ('=BINOM.DIST(7,8,0.7,"true")', 0.94235199),  # E58: the flag as text
        ("=BINOM.DIST.RANGE(0,0,0,0)", 1.0),  # BINOM.DIST.RANGE!E14
        ("=BINOM.INV(10,0.7,1)", "#NUM!"),  # BINOM.INV!D4: alpha 1
        ("=BINOM.INV(10,1,0.8)", "#NUM!"),  # D25: probability 1
        ("=BINOM.DIST(6,10,0.5,FALSE)", 0.205078125),  # Microsoft's example
        ("=BINOM.INV(6,0.5,0.75)", 4.0),  # Microsoft's example
    ],
)
def test_engine_difference_binomial_edges(formula, want):
    """formualizer 0.13 refuses a probability of 0 or 1 and the flag as text, and answers BINOM.INV outside its
    domain (BINOM.xlsx: 237 of 268)."""
    _check(formula, want)


@pytest.mark.parametrize(
    ("formula", "want"),
    [
        # TEXT/DOLLARs.xlsx, Sheet1 (dollar, fraction in A:B)
        ("=DOLLARDE(12.1234,12)", 13.028333333333334),  # D3
        ("=DOLLARFR(12.1234,12)", 12.014808),  # C3
        ("=DOLLARDE(0.01,2)", 0.05),  # D9
        ("=DOLLARDE(10,0.5)", "#DIV/0!"),  # D18
        ("=DOLLARFR(TRUE,2)", "#VALUE!"),  # C11
        ("=DOLLARDE(1.02,16)", 1.125),  # Microsoft's example
        # FINANCIAL/NOMINAL_EFFECT.xlsx
        ("=EFFECT(10,TRUE)", "#VALUE!"),  # D20
        ("=NOMINAL(0.5,10)", 0.4137974399241062),  # C2
        # MATH_AND_TRIGONOMETRY/MROUND_TRUNC_INT.xlsx, MROUND
        ('=MROUND("2024-01-10",7)', 45304.0),  # C31: a date written as text
        ("=MROUND(TRUE,2)", "#VALUE!"),  # C51
        ("=MROUND(-10,-3)", -9.0),  # Microsoft's example
        ("=MROUND(5,-2)", "#NUM!"),  # Microsoft's example
    ],
)
def test_engine_difference_dollar_rate_and_mround(formula, want):
    """formualizer 0.13 ignores DOLLARDE's scale, reads TRUE as 1 in EFFECT and MROUND, and refuses a date as text."""
    _check(formula, want)


def test_engine_difference_value_of_an_empty_cell_is_zero(tmp_path):
    """TEXT/T_VALUE_VALUETOTEXT.xlsx Sheet1!C2: =VALUE(A2) with A2 empty is 0 (formualizer 0.13: #VALUE!)."""
    import openpyxl

    from xlsxplan.headless import Workbook

    book = openpyxl.Workbook()
    book.active["C2"] = "=VALUE(A2)"
    book.save(tmp_path / "v.xlsx")
    assert Workbook.load(tmp_path / "v.xlsx").calculate().get("Sheet!C2") == 0


def test_an_array_too_large_to_build_is_num_not_memory_exhausted():
    """SEQUENCE and EXPAND refuse more than MAX_ARRAY_CELLS cells before building anything (the engine's own SEQUENCE
    gave #NUM! for SUM(SEQUENCE(20000,20000)): tests/headless/test_untrusted.py's memory bombs)."""
    assert _value("=SUM(SEQUENCE(20000,20000))") == "#NUM!"
    assert _value("=SUM(EXPAND({1},1000000,16000))") == "#NUM!"
    assert _value("=ROWS(SEQUENCE(100000))") == 100000


def test_cumulative_payments_over_very_many_periods_take_closed_form(monkeypatch):
    """Past 10,000 periods CUMPRINC and CUMIPMT sum in closed form (the period-by-period sum agrees to 1e-9 where
    both run), so a loan of 10^12 periods answers at once instead of looping."""
    from xlsxplan.headless import bonds

    args = (0.001, 20000.0, 8000.0, 2.0, 20000.0, 1.0)
    closed = [bonds.FUNCTIONS[name][0](*args) for name in ("CUMPRINC", "CUMIPMT")]
    monkeypatch.setattr(bonds, "_MAX_PERIODS", 10**9)
    summed = [bonds.FUNCTIONS[name][0](*args) for name in ("CUMPRINC", "CUMIPMT")]
    assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(closed, summed, strict=True))
    assert isinstance(_value("=CUMPRINC(0.01,1E12,1000,1,1E12,0)"), (float, str))  # answers (a number or #NUM!)


def test_a_conditional_aggregate_over_every_column_is_the_engines_own():
    """formualizer hands a range over every column of several rows to a registered function as #NUM!, so such a call
    goes to its own COUNTIF (tests/headless/test_libreoffice.py checks the value against LibreOffice's)."""
    from xlsxplan.headless.engine import prepare

    assert prepare('=COUNTIF(Data!A1:XFD1048576,">1")')[0] == '=_xlfn.COUNTIF(Data!A1:XFD1048576,">1")'
    assert prepare("=SUMIF(Data!1:1048576,1)+COUNTIF(A1:B2,1)")[0] == "=_xlfn.SUMIF(Data!1:1048576,1)+COUNTIF(A1:B2,1)"
    assert prepare('=COUNTIF(Data!A:A,">1")')[0] == '=COUNTIF(Data!A:A,">1")'  # a column: xlsxplan's
