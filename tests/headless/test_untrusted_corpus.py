"""The hostile corpus, round 2: over a hundred cases across every class of hole a red-team pass found, and the
classes that already held, each run with a memory bound and a guard against hangs.

The files are built here (nothing hostile is committed) and run one after another in a child process
(tests/helpers/hostile_run.py) whose address space is capped at :data:`ADDRESS_SPACE_GB` and whose run is cut at
:data:`TOTAL_S`: a case that blocks (a FIFO read), runs away (a scan that does not count) or takes the machine's
memory fails the suite instead of hanging it. Each case must leave the child's peak resident memory under
:data:`PEAK_MB`; how long each takes is a benchmark's figure (benchmarks/hostile.py), not a test's bound.

Classes: ranges that must give Excel's number (the red team's row of 1 and 72.7); references and cells outside
Excel's grid; DDE and external links hidden behind quoted sheet names; range costs hidden the same way; what the
scan must count (junk elements in cell data, text past Excel's 32,767 characters, formulas past 8,192); files that
are not regular files; configs that are not a model's; and tests/helpers/hostile.py's corpus (zip and entity bombs, links,
corrupt zips), which held already.
"""

from __future__ import annotations

import io
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

from tests.helpers import HELPERS, REPO
from tests.helpers.hostile import CORPUS, _with_shared_strings, members, pack, plain_xlsx, with_parts

PEAK_MB = 1_500
"""The most resident memory the child may reach over all the cases [MB]."""
ADDRESS_SPACE_GB = 8
"""The child's address-space cap [GB]: a case that would need more fails with MemoryError, not the machine."""
TOTAL_S = 900
"""A guard against a hang, not a speed bound [s]: a case that blocks (a FIFO read) or never ends fails the test
instead of hanging the suite. The whole run takes about 30 s on a quiet machine; how long each case takes is
measured by benchmarks/hostile.py, whose target is 10 s a case."""

pytestmark = pytest.mark.slow  # one child process runs the whole corpus (about 10 s of CPU)

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
ROW = 1 + 72.7  # the red team's row: 1 and 72.7 side by side, which SUM(A1:XFD4) gave as 1


def _book(sheets: dict[str, dict[str, object]]) -> bytes:
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for title, cells in sheets.items():
        ws = wb.create_sheet(title)
        for ref, value in cells.items():
            ws[ref] = value
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _row_book(formula: str, own_sheet: bool = False) -> bytes:
    data = {"A1": 1, "B1": 72.7}
    if own_sheet:
        return _book({"Data": {**data, "A6": formula}})
    return _book({"Data": data, "Out": {"A1": formula}})


def _sheet_xml(data: str, extra: str = "") -> bytes:
    return f'<worksheet xmlns="{MAIN}"><sheetData>{data}</sheetData>{extra}</worksheet>'.encode()


def _sheet(data: str) -> bytes:
    return with_parts({"xl/worksheets/sheet1.xml": _sheet_xml(data)})


def _cell_formula(formula: str, sheets: dict[str, dict[str, object]] | None = None) -> bytes:
    return _book({"Sheet1": {"A1": 1, "A2": formula}, **(sheets or {})})


def _with_name(text: str) -> bytes:
    parts = members(_book({"Sheet1": {"A1": 1}, 'Q"1': {"A1": 2}}))
    workbook = parts["xl/workbook.xml"].decode()
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    workbook = workbook.replace(
        "</sheets>", f'</sheets><definedNames><definedName name="Launch">{escaped}</definedName></definedNames>'
    )
    parts["xl/workbook.xml"] = workbook.encode()
    return pack(parts)


def _cost_hidden() -> bytes:
    # a '"' in a quoted sheet name made the text surgery read the rest of the formula as a string: the whole-sheet
    # range behind it was not costed, and the engine went through 3,000 rows x 16,384 columns for each formula
    data = {f"A{r}": r for r in range(1, 3001)} | {"XFD1": 5}
    out = {f"A{r}": '=\'Q"1\'!A1+SUM(Data!A:XFD)+LEN("x")' for r in range(1, 13)}
    return _book({'Q"1': {"A1": 1}, "Data": data, "Out": out})


def _strings(count: int, size: int) -> bytes:
    items = "".join(f"<si><t>{i:08d}{'x' * size}</t></si>" for i in range(count))
    sst = f'<sst xmlns="{MAIN}" count="{count}" uniqueCount="{count}">{items}</sst>'.encode()
    return pack(_with_shared_strings(members(plain_xlsx()), sst))


def _long_shared_string() -> bytes:
    return _strings(1, 40_000 - 8)


def _long_name() -> bytes:
    return _with_name("1+" * 4_500 + "1")


def _junk_elsewhere() -> bytes:
    # 4.1 million elements in a part nothing names: every part is scanned, whatever its name
    junk = f'<c:chartSpace xmlns:c="urn:x">{"<c:v/>" * 4_100_000}</c:chartSpace>'
    return with_parts({"xl/charts/chart1.xml": junk.encode()})


RATIO_OFF = {"max_ratio": 1e12}  # junk compresses a thousand times: the ratio check alone would refuse it
CASES: list[tuple[str, dict]] = []


def _add(name: str, job: dict) -> None:
    CASES.append((name, job))


# -- ranges: Excel's number --------------------------------------------------------------------------------------
ON_THE_ROW = [
    "=SUM(Data!A1:XFD4)",
    "=SUM(Data!A1:XFD1)",
    "=SUM(Data!A1:XFD1048576)",
    "=SUM(Data!1:1)",
    "=SUM(Data!A:XFD)",
    "=SUM(Data!1:1048576)",
    "=SUM(Data!XFD1:A1)",
    "=SUM(Data!B1:A1)",
    "=SUM(Data!XFD4:A1)",
    "=SUM(Data!4:1)",
    "=SUM(Data!XFD:A)",
    "=SUM(Data!$B$1:A1)",
    "=SUM(Data!A1:B1:XFD1)",
    "=SUM(Data!A:A:XFD:XFD)",
    "=SUMPRODUCT(Data!A1:XFD1)",
    "=SUM(OFFSET(Data!A1,0,0,1,16384))",
    "=AVERAGE(Data!1:1)*COUNT(Data!A:XFD)",
    "=SUM(Data!A1:XFD1,Data!2:1048576)",
]
for formula in ON_THE_ROW:
    _add(f"range {formula}", {"kind": "book", "make": lambda f=formula: _row_book(f), "ref": "Out!A1", "value": ROW})
for formula, value in [
    ("=INDEX(Data!1:1,1,16384)", 0),
    ("=INDEX(Data!A:A,1048576)", 0),
    ("=INDEX(Data!A:XFD,3,3)", 0),
    ("=SUM(Data!A1:INDEX(Data!1:1,16384))", ROW),
]:
    _add(f"range {formula}", {"kind": "book", "make": lambda f=formula: _row_book(f), "ref": "Out!A1", "value": value})
_add(
    "range whole sheet holding its own cell",
    {
        "kind": "book",
        "make": lambda: _row_book("=SUM(A1:XFD1048576)", True),
        "ref": "Data!A6",
        "error": "circular reference",
    },
)

# -- references and cells outside the grid -----------------------------------------------------------------------
for formula, shown in [
    ("=SUM(Data!A1:XFE1)", "A1:XFE1"),
    ("=Data!XFE1", "XFE1"),
    ("=SUM(A1:A1048577)", "A1:A1048577"),
    ("=SUM(Data!1:1048577)", "1:1048577"),
    ("=SUM(A:XFE)", "A:XFE"),
    ("=SUM(A0:B1)", "A0:B1"),
    ("=SUM(0:3)", "0:3"),
    ("=A1+ZZZ9", "ZZZ9"),
]:
    _add(
        f"grid formula {formula}",
        {
            "kind": "book",
            "make": lambda f=formula: _cell_formula(f),
            "refused": rf"refers to {re.escape(shown)}, outside Excel's grid",
        },
    )
for ref in ["XFE1", "AAAA1", "A1048577", "A99999999", "XFD1048577"]:
    row = re.sub(r"^[A-Z]+", "", ref)
    _add(
        f"grid cell {ref}",
        {
            "kind": "book",
            "make": lambda r=ref, n=row: _sheet(f'<row r="{n}"><c r="{r}"><v>1</v></c></row>'),
            "refused": r"has a cell outside Excel's grid",
        },
    )

# -- DDE and external links, decided on the engine's tokens ------------------------------------------------------
DDE = [
    "='Q\"1'!A1+cmd|'/c calc'!A0",
    "=SUM('x\"y'!A1,cmd|'a'!B2)",
    "=cmd |'x'!A0",
    "=A1+'cmd'|'x'!A0",
    '="x"&cmd|x!A0',
    "=@SUM(cmd|'/c calc'!A0)",
    "=msexcel|'\\..\\..\\windows\\system32\\cmd.exe /c calc'!A1",
    "=-2+3+cmd|'/C calc'!A0",
    '=\'Q"1\'!A1&""""&cmd|\'/c calc\'!A0',
]
for formula in DDE:
    _add(
        f"dde {formula}",
        {
            "kind": "book",
            "make": lambda f=formula: _cell_formula(f, {'Q"1': {"A1": 1}}),
            "refused": r"the formula in Sheet1!A2 holds a DDE call",
        },
    )
EXTERNAL = [
    "=[book.xlsx]Sheet1!A1",
    "=\\\\server\\share\\[x.xlsx]S!A1",
    "='C:\\x\\book.xlsx'!Rate",
    "=http://x/[a.xlsx]S!A1",
    "='Q\"1'!A1+'C:\\data\\[rates.xlsx]Sheet1'!A1",
    "=SUM([2]!Rates)",
]
for formula in EXTERNAL:
    _add(
        f"external {formula}",
        {
            "kind": "book",
            "make": lambda f=formula: _cell_formula(f, {'Q"1': {"A1": 1}}),
            "refused": r"the formula in Sheet1!A2 refers to another workbook",
        },
    )
_add(
    "dde name behind a quoted sheet name",
    {
        "kind": "book",
        "make": lambda: _with_name("='Q\"1'!A1+cmd|'/c calc'!A0"),
        "refused": r"the defined name Launch holds a DDE call",
    },
)
_add(
    "range cost behind a quoted sheet name",
    {
        "kind": "book",
        "make": _cost_hidden,
        "refused": r"formulas refer to ranges of [\d,]+ cells in all.*the largest Data!A:XFD",
    },
)

# -- what the scan counts ----------------------------------------------------------------------------------------
ONE = '<row r="1"><c r="A1"><v>1</v></c></row>'
SCAN = [
    ("junk 16M elements in sheetData", lambda: _sheet(ONE + "<x/>" * 16_000_000), RATIO_OFF, r"XML elements outside"),
    (
        "junk 4.1M elements in a row",
        lambda: _sheet('<row r="1">' + "<x/>" * 4_100_000 + "</row>"),
        RATIO_OFF,
        r"has 4,1\d\d,\d+ XML elements",
    ),
    (
        "junk 4.1M elements in a cell",
        lambda: _sheet('<row r="1"><c r="A1">' + "<y/>" * 4_100_000 + "<v>1</v></c></row>"),
        RATIO_OFF,
        r"has 4,1\d\d,\d+ XML elements",
    ),
    ("junk 4.1M elements in a part nothing names", _junk_elsewhere, RATIO_OFF, r"in xl/charts/chart1\.xml"),
    (
        "inline string of 200,000 characters",
        lambda: _sheet('<row r="1"><c r="A1" t="inlineStr"><is><t>' + "x" * 200_000 + "</t></is></c></row>"),
        RATIO_OFF,
        r"a text of 200,000 characters \(<t>\); Excel holds at most 32,767",
    ),
    (
        "inline string of 20 MB",
        lambda: _sheet('<row r="1"><c r="A1" t="inlineStr"><is><t>' + "x" * 20_000_000 + "</t></is></c></row>"),
        RATIO_OFF,
        r"a text of [\d,]+ characters",
    ),
    (
        "shared string of 40,000 characters",
        _long_shared_string,
        {},
        r"the part xl/sharedStrings\.xml holds a text "
        r"of 40,000 characters",
    ),
    (
        "cached text of 40,000 characters",
        lambda: _sheet('<row r="1"><c r="A1" t="str"><f>"x"</f><v>' + "z" * 40_000 + "</v></c></row>"),
        RATIO_OFF,
        r"a text of 40,000 characters \(<v>\)",
    ),
    (
        "formula of 8,193 characters",
        lambda: _sheet('<row r="1"><c r="A1"><f>' + "1+" * 4_096 + "1</f></c></row>"),
        {},
        r"a formula of 8,193 characters \(<f>\); Excel's limit is 8,192",
    ),
    (
        "formula of 200,001 characters",
        lambda: _sheet('<row r="1"><c r="A1"><f>' + "1+" * 100_000 + "1</f></c></row>"),
        RATIO_OFF,
        r"a formula of 200,001 characters",
    ),
    ("defined name of 9,001 characters", _long_name, {}, r"xl/workbook\.xml holds a formula of 9,001 characters"),
    ("2 MB of text over a 1 MiB limit", lambda: _strings(2_000, 1_000), {"max_text_mb": 1}, r"MiB of text"),
]
for name, make, limits, refused in SCAN:
    _add(f"scan {name}", {"kind": "book", "make": make, "limits": limits, "refused": refused})
ACCEPTED = [
    ("text of 32,767 characters", '<row r="1"><c r="A1" t="inlineStr"><is><t>' + "x" * 32_767 + "</t></is></c></row>"),
    (
        "20,000 CJK characters (60 kB)",
        '<row r="1"><c r="A1" t="inlineStr"><is><t>' + "漢" * 20_000 + "</t></is></c></row>",
    ),
    (
        "20,000 escaped ampersands (100 kB)",
        '<row r="1"><c r="A1" t="inlineStr"><is><t>' + "&amp;" * 20_000 + "</t></is></c></row>",
    ),
    ("formula of 8,191 characters", '<row r="1"><c r="A1"><f>' + "1+" * 4_095 + "1</f></c></row>"),
]
for name, xml in ACCEPTED:
    _add(f"scan accepts {name}", {"kind": "book", "make": lambda x=xml: _sheet(x), "limits": RATIO_OFF})

# -- the corpus that held already --------------------------------------------------------------------------------
for name, (make, message) in CORPUS.items():
    _add(f"held {name}", {"kind": "book", "make": make, "refused": message})

# -- files that are not regular files, and configs that are not a model's ---------------------------------------
FILES = [
    ("recalc of a FIFO", ["recalc", "{fifo}"], r"cannot read .*fifo.*: it is a FIFO \(named pipe\), not a regular"),
    ("recalc of a device", ["recalc", "/dev/zero"], r"cannot read /dev/zero: it is a character device"),
    ("recalc of a folder", ["recalc", "{dir}"], r"it is a folder"),
    ("recalc -o a FIFO", ["recalc", "{book}", "-o", "{fifo_xlsx}"], r"cannot write .*: it is a FIFO"),
    ("recalc -o a device", ["recalc", "{book}", "-o", "{null_xlsx}"], r"cannot write .*: it is a character device"),
    ("recalc -o a folder", ["recalc", "{book}", "-o", "{dir_xlsx}"], r"cannot write .*: it is a folder"),
    ("excel of a FIFO", ["excel", "{fifo_xlsx}", "--checks-only"], r"it is a FIFO"),
    ("model add of a FIFO", ["model", "add", "{fifo}", "--name", "F"], r"cannot be read: it is a FIFO"),
    ("model add of a device", ["model", "add", "/dev/zero", "--name", "F"], r"cannot be read: it is a character"),
]
for name, argv, message in FILES:
    _add(f"file {name}", {"kind": "cli", "argv": argv, "refused": message})

LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "intermediate_size": 14336,
}
CONFIGS = [
    (
        "nested 100,000 deep",
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
        None,
        r"nests 100,001 deep; a config\.json nests at most 64 deep",
    ),
    (
        "a 5,000-digit number",
        '{"num_hidden_layers": ' + "9" * 5_000 + "}",
        None,
        r"a number of 5,000 digits; a config's numbers have at most 30",
    ),
    ("a number of 1,000 characters", '{"rope_theta": 1.' + "5" * 1_000 + "}", None, r"at most 64"),
    (
        "vocabulary of 10^15",
        {**LLAMA, "vocab_size": 10**15},
        None,
        r"vocab_size 1,000,000,000,000,000 is past any published model's; xlsxplan reads up to 16,777,216",
    ),
    ("a billion layers", {**LLAMA, "num_hidden_layers": 10**9}, None, r"num_hidden_layers 1,000,000,000 is past"),
    ("a width of 10^12", {**LLAMA, "hidden_size": 10**12}, None, r"hidden_size 1,000,000,000,000 is past"),
    (
        "a billion experts",
        {**LLAMA, "num_local_experts": 10**9, "num_experts_per_tok": 2},
        None,
        r"num_local_experts 1,000,000,000 is past",
    ),
    ("a context of 10^12 tokens", {**LLAMA, "max_position_embeddings": 10**12}, None, r"max_position_embeddings"),
    (
        "an infinite width",
        json.dumps({**LLAMA, "hidden_size": 1}).replace('"hidden_size": 1', '"hidden_size": 1e999'),
        None,
        r"hidden_size must be a positive whole number, got inf",
    ),
    ("a name with a newline", LLAMA, "evil\nname", r"holds a line break or another control character"),
    ("a name with a tab", LLAMA, "a\tb", r"holds a line break or another control character"),
    ("a name of 500 characters", LLAMA, "m" * 500, r"the preset name has 500 characters; the limit is 128"),
    ("a config name with a newline", {**LLAMA, "_name_or_path": "org/evil\nname"}, None, r"line break"),
    ("a config that is a list", "[1, 2, 3]", None, r"holds one JSON object, got list"),
]
for name, config, preset, message in CONFIGS:
    _add(f"config {name}", {"kind": "config", "config": config, "preset": preset, "refused": message})


def _jobs(folder: Path) -> list[dict]:
    folder.mkdir(exist_ok=True)
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    os.mkfifo(folder / "fifo.xlsx")
    (folder / "null.xlsx").symlink_to(os.devnull)
    (folder / "dir").mkdir()
    (folder / "dir.xlsx").mkdir()
    book = folder / "plain.xlsx"
    book.write_bytes(plain_xlsx())
    places = {
        "fifo": fifo,
        "dir": folder / "dir",
        "book": book,
        "fifo_xlsx": folder / "fifo.xlsx",
        "null_xlsx": folder / "null.xlsx",
        "dir_xlsx": folder / "dir.xlsx",
    }
    jobs = []
    for i, (name, case) in enumerate(CASES):
        job = {"name": name}
        if case["kind"] == "book":
            path = folder / f"case{i}.xlsx"
            path.write_bytes(case["make"]())
            job.update(kind="book", path=str(path), limits=case.get("limits", {}), ref=case.get("ref"))
        elif case["kind"] == "cli":
            job.update(kind="cli", argv=[a.format(**{k: str(v) for k, v in places.items()}) for a in case["argv"]])
        else:
            config = case["config"]
            path = folder / f"config{i}.json"
            path.write_text(config if isinstance(config, str) else json.dumps(config), encoding="utf-8")
            argv = ["model", "add", str(path)] + (["--name", case["preset"]] if case["preset"] else [])
            job.update(kind="cli", argv=argv)
        jobs.append(job)
    return jobs


def _cap() -> None:
    limit = ADDRESS_SPACE_GB * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile2")
    jobs = _jobs(folder / "files")
    (folder / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    env = {**os.environ, "XLSXPLAN_CATALOG_DIR": str(folder / "catalog"), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, str(HELPERS / "hostile_run.py"), str(folder / "jobs.json")],
        capture_output=True,
        text=True,
        timeout=TOTAL_S,
        env=env,
        preexec_fn=_cap,
    )
    found = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            found[record["name"]] = record
    assert len(found) == len(jobs), proc.stderr[-2000:]
    return found


def test_the_corpus_has_over_eighty_cases_across_every_class():
    classes = {name.split(" ", 1)[0] for name, _ in CASES}
    assert len(CASES) >= 80
    assert classes == {"range", "grid", "dde", "external", "scan", "held", "file", "config"}


@pytest.mark.parametrize("name", [name for name, _ in CASES])
def test_each_hostile_case_is_refused_or_computed_right_within_its_bounds(results, name):
    case = dict(CASES)[name]
    got = results[name]
    assert "UNCAUGHT" not in str(got["message"]) and "UNCAUGHT" not in str(got["status"]), got
    assert got["peak_mb"] < PEAK_MB, got
    if "refused" in case:
        assert not got["ok"], got
        assert re.search(case["refused"], got["message"]), got
        assert got["message"].strip().count("\n") == 0, got  # one line
        if case["kind"] != "book":
            assert got["status"] == 2, got
    elif "value" in case:
        assert got["ok"] and got["value"] == pytest.approx(case["value"]), got
    elif "error" in case:
        assert got["ok"] and case["error"] in got["value"]["message"], got
    else:
        assert got["ok"], got
