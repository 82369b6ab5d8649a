"""`xlsxplan excel`: the set-up steps, the checks of this machine and of a workbook, and the xlwings Lite bundle."""

from __future__ import annotations

import ast
import importlib.metadata
import math
import os
import re
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest
import xlwings
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.hostile import entity_bomb, members, pack
from xlsxplan import registry
from xlsxplan.cli import main
from xlsxplan.excel import lite as lite_module
from xlsxplan.excel import setup, vba
from xlsxplan.excel.lite import LITE_REQUIREMENTS, bundle_files, lite_bundle
from xlsxplan.excel.setup import CLASSIC_STEPS, EXPECTED, FORMULA, LITE_STEPS
from xlsxplan.excel.vba import vba_module_names, vba_references
from xlsxplan.sheet.xlwings_conf import add_conf_sheet

XLWINGS_DIR = Path(xlwings.__file__).parent  # xlwings ships workbooks saved by Excel, with real VBA projects


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# --- a minimal Compound File writer, to make a VBA project that lists xlwings_udfs ------------------------------


def compound_file(streams: dict[str, bytes]) -> bytes:
    """A version-3 compound file (512-byte sectors) holding ``streams``, each padded past the 4,096-byte mini-stream
    cutoff so they sit in regular sectors ([MS-CFB] 2.2, 2.6). The xlwings workbooks cover the mini-stream path."""
    end, free, fat_sect = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD
    streams = {name: data.ljust(4096, b" ") for name, data in streams.items()}
    fat = [fat_sect, end]  # sector 0 holds the FAT, sector 1 the directory
    starts = {}
    for name, data in streams.items():
        n = math.ceil(len(data) / 512)
        starts[name] = len(fat)
        fat += list(range(len(fat) + 1, len(fat) + n)) + [end]
    assert len(fat) <= 128
    header = bytearray(512)
    header[0:8] = bytes.fromhex("D0CF11E0A1B11AE1")
    struct.pack_into("<HHHHH", header, 0x18, 0x3E, 3, 0xFFFE, 9, 6)
    struct.pack_into("<9I", header, 0x2C, 1, 1, 0, 4096, end, 0, end, 0, 0)
    struct.pack_into("<109I", header, 0x4C, 0, *[free] * 108)

    def entry(name: str, kind: int, start: int, size: int, child: int = free) -> bytes:
        raw = bytearray(128)
        encoded = name.encode("utf-16-le")
        raw[0 : len(encoded)] = encoded
        struct.pack_into("<HBB3I", raw, 64, len(encoded) + 2, kind, 1, free, free, child)
        struct.pack_into("<IQ", raw, 116, start, size)
        return bytes(raw)

    directory = entry("Root Entry", 5, end, 0, child=1)
    for name, data in streams.items():
        directory += entry(name, 2, starts[name], len(data))
    directory = directory.ljust(512, b"\0")
    fat_sector = struct.pack(f"<{128}I", *(fat + [free] * (128 - len(fat))))
    body = b"".join(data.ljust(math.ceil(len(data) / 512) * 512, b"\0") for data in streams.values())
    return bytes(header) + fat_sector + directory + body


def with_vba(src: Path, dst: Path, modules: list[str]) -> Path:
    """``src`` copied to ``dst`` with a VBA project whose PROJECT stream lists ``modules``."""
    project = 'ID="{00000000-0000-0000-0000-000000000000}"\r\nDocument=ThisWorkbook/&H00000000\r\n'
    project += "".join(f"Module={m}\r\n" for m in modules) + 'Name="VBAProject"\r\n'
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            if item.filename != "xl/vbaProject.bin":
                zout.writestr(item, zin.read(item.filename))
        zout.writestr("xl/vbaProject.bin", compound_file({"PROJECT": project.encode("latin-1")}))
    return dst


@pytest.fixture
def ready_xlsm(tmp_path) -> Path:
    """A macro-enabled workbook set up as the classic steps leave it: xlwings.conf sheet, xlwings_udfs imported."""
    wb = openpyxl.load_workbook(XLWINGS_DIR / "quickstart_standalone.xlsm", keep_vba=True)
    add_conf_sheet(wb)
    staged = tmp_path / "staged.xlsm"
    wb.save(staged)
    return with_vba(staged, tmp_path / "plan.xlsm", ["xlwings", "xlwings_udfs"])


# --- the VBA project reader -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "workbook, modules",
    [
        ("quickstart.xlsm", ["Module1"]),
        ("quickstart_standalone.xlsm", ["Module1", "xlwings"]),
        ("quickstart_addin.xlam", ["xlwings", "Module1"]),
        ("quickstart_addin_ribbon.xlam", ["RibbonMyAddin", "xlwings"]),
    ],
)
def test_vba_modules_of_workbooks_saved_by_excel(workbook, modules):
    assert vba_module_names(XLWINGS_DIR / workbook) == modules


def test_vba_modules_in_regular_sectors_and_no_vba_at_all(tmp_path, ready_xlsm):
    assert vba_module_names(ready_xlsm) == ["xlwings", "xlwings_udfs"]
    wb = openpyxl.Workbook()
    wb.save(tmp_path / "plain.xlsx")
    assert vba_module_names(tmp_path / "plain.xlsx") == []


def test_a_damaged_vba_project_is_a_one_line_error(tmp_path):
    path = tmp_path / "broken.xlsm"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("xl/vbaProject.bin", b"not a compound file")
    with pytest.raises(setup.WorkbookError, match=r"cannot read the VBA project of .*: not a compound file"):
        vba_module_names(path)


def _project_file(tmp_path, patch=None) -> Path:
    """An .xlsm whose VBA project lists xlwings_udfs, with ``patch(bytearray)`` applied to vbaProject.bin."""
    project = b'ID="{00000000-0000-0000-0000-000000000000}"\r\nModule=xlwings_udfs\r\nName="VBAProject"\r\n'
    data = bytearray(compound_file({"PROJECT": project}))
    if patch is not None:
        patch(data)
    path = tmp_path / "plan.xlsm"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("xl/vbaProject.bin", bytes(data))
    return path


def _no_root(data: bytearray) -> None:
    data[1024 + 66] = 1  # the directory starts at sector 1 (byte 1,024); the root entry becomes a storage


def _loop(data: bytearray) -> None:
    struct.pack_into("<I", data, 512 + 4 * 2, 2)  # the PROJECT stream's first sector (2) points to itself


def _huge_sectors(data: bytearray) -> None:
    struct.pack_into("<H", data, 0x1E, 40)  # 2^40-byte sectors


@pytest.mark.parametrize(
    "patch, reason",
    [
        (_no_root, "no root entry in the directory"),
        (_loop, "a sector chain that loops"),
        (_huge_sectors, "sectors of 2\\^40 and mini sectors of 2\\^6 bytes are not valid"),
    ],
)
def test_a_malformed_vba_project_is_a_one_line_error(tmp_path, patch, reason):
    # A directory without a root entry must not escape as StopIteration, nor a chain that loops be followed
    # as long as the FAT, each time reading a sector again: one line each
    assert vba_module_names(_project_file(tmp_path)) == ["xlwings_udfs"]
    with pytest.raises(setup.WorkbookError, match=rf"^cannot read the VBA project of .*plan\.xlsm: {reason}$"):
        vba_module_names(_project_file(tmp_path, patch))


def test_a_vba_project_over_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(vba, "MAX_VBA_MB", 0.004)
    with pytest.raises(
        setup.WorkbookError,
        match=r"^cannot read the VBA project of .*plan\.xlsm: it is 5,632 bytes, and xlsxplan reads VBA projects up "
        r"to 0\.004 MiB$",
    ):
        vba_module_names(_project_file(tmp_path))


def test_excel_checks_a_workbook_as_untrusted_before_parsing_it(capsys, tmp_path, ready_xlsm):
    # `xlsxplan excel BOOK` makes recalc's checks before openpyxl opens the file, rather than reading vbaProject.bin
    # whole unchecked
    parts = members(ready_xlsm.read_bytes())
    bomb = tmp_path / "bomb.xlsm"
    bomb.write_bytes(pack({**parts, "xl/vbaProject.bin": b"\0" * (4 * 1024 * 1024)}, level=9))
    code, out, err = run(capsys, "excel", "--checks-only", str(bomb))
    assert (code, out.count("Checks of")) == (2, 0)
    assert re.fullmatch(
        r"xlsxplan: error: .*bomb\.xlsm looks like a zip bomb: xl/vbaProject\.bin inflates [\d,]+ times "
        r"\(to 4 MiB\); the limit is 200\n",
        err,
    )
    entities = tmp_path / "entities.xlsm"
    entities.write_bytes(pack({**parts, **{k: v for k, v in members(entity_bomb()).items() if "sharedStrings" in k}}))
    code, _, err = run(capsys, "excel", "--checks-only", str(entities))
    assert code == 2 and err == (
        f"xlsxplan: error: {entities} is refused: the part xl/sharedStrings.xml declares a DTD or entities (an XML "
        "entity bomb?)\n"
    )
    assert setup.workbook_checks(ready_xlsm)[0].ok is True  # the same workbook, unharmed, still passes


# --- the reference to the xlwings add-in ------------------------------------------------------------------------------


def compressed(data: bytes) -> bytes:
    """``data`` as a VBA compressed container ([MS-OVBA] 2.4.1) without copy tokens: each full 4,096 bytes as a raw
    chunk, the rest as a compressed chunk of literal tokens. (Excel's own files, above, have copy tokens.)"""
    out = bytearray(b"\x01")
    for start in range(0, len(data), 4096):
        chunk = data[start : start + 4096]
        if len(chunk) == 4096:
            out += struct.pack("<H", 0x3FFF) + chunk
            continue
        body = b"".join(b"\x00" + chunk[i : i + 8] for i in range(0, len(chunk), 8))
        out += struct.pack("<H", 0xB000 | (len(body) + 2 - 3)) + body
    return bytes(out)


def dir_stream(references: list[tuple[str, str]]) -> bytes:
    """A dir stream's records up to the modules: project information, then a REFERENCEPROJECT per reference."""

    def record(rid: int, body: bytes) -> bytes:
        return struct.pack("<HI", rid, len(body)) + body

    out = record(0x0001, b"\x03\0\0\0") + record(0x0004, b"VBAProject")
    out += struct.pack("<HI", 0x0009, 4) + b"\0\0\0\0\0\0"  # PROJECTVERSION: 6 bytes behind a size of 4
    for name, libid in references:
        out += record(0x0016, name.encode("latin-1")) + record(0x003E, name.encode("utf-16-le"))
        lib = libid.encode("latin-1")
        out += record(0x000E, struct.pack("<I", len(lib)) + lib + struct.pack("<I", 0) + b"\0" * 6)
    out += record(0x000F, b"\x01\0")
    return out.ljust(4200, b"\0")  # a raw chunk and a compressed one; past 4,096 bytes, in regular sectors


def _with_project(tmp_path: Path, modules: list[str], references: list[tuple[str, str]] | None, damage=None) -> Path:
    wb = openpyxl.load_workbook(XLWINGS_DIR / "quickstart_standalone.xlsm", keep_vba=True)
    add_conf_sheet(wb)
    wb.save(tmp_path / "staged.xlsm")
    project = 'ID="{00000000-0000-0000-0000-000000000000}"\r\n' + "".join(f"Module={m}\r\n" for m in modules)
    streams = {"PROJECT": project.encode("latin-1")}
    if references is not None:
        streams["dir"] = compressed(dir_stream(references))
        if damage is not None:
            streams["dir"] = damage(streams["dir"])
    path = tmp_path / "plan.xlsm"
    with zipfile.ZipFile(tmp_path / "staged.xlsm") as zin, zipfile.ZipFile(path, "w") as zout:
        for item in zin.infolist():
            if item.filename != "xl/vbaProject.bin":
                zout.writestr(item, zin.read(item.filename))
        zout.writestr("xl/vbaProject.bin", compound_file(streams))
    return path


ADDIN = ("xlwings", "*\\CC:\\Users\\me\\AppData\\Roaming\\Microsoft\\Excel\\XLSTART\\xlwings.xlam")


def test_decompression_reproduces_the_specifications_example():
    # [MS-OVBA] 3.2.3, "Example: Copy Tokens": literals, then copy tokens of several lengths and offsets
    data = bytes.fromhex(
        "012FB000236161616263646582660070616768696A013808616B6C00306D6E6F700671027004107273747576107778797A003C"
    )
    assert vba._ovba_decompress(data) == b"#aaabcdefaaaaghijaaaaaklaaamnopqaaaaaaaaaaaarstuvwxyzaaa"
    with pytest.raises(ValueError, match=r"^a copy token before any byte of its chunk$"):
        vba._ovba_decompress(bytes.fromhex("0103B00100"))


def test_vba_references_of_workbooks_saved_by_excel():
    # xlwings' docs: a workbook made with `xlwings quickstart` references the add-in; the standalone one needs none
    refs = vba_references(XLWINGS_DIR / "quickstart.xlsm")
    assert [n for n, _ in refs] == ["MSForms", "Office", "xlwings"]
    assert refs[-1][1].endswith("\\addin\\xlwings.xlam")
    assert "xlwings" not in [n for n, _ in vba_references(XLWINGS_DIR / "quickstart_standalone.xlsm")]
    assert [n for n, _ in vba_references(XLWINGS_DIR / "quickstart_addin.xlam")] == ["MSForms", "Office"]


def test_a_workbook_that_references_the_add_in_passes(capsys, tmp_path):
    path = _with_project(tmp_path, ["xlwings_udfs"], [("Office", "*\\G{2DF8D04C}#2.0#0#MSO.DLL"), ADDIN])
    assert vba_references(path) == [("Office", "*\\G{2DF8D04C}#2.0#0#MSO.DLL"), ADDIN]
    code, out, _ = run(capsys, "excel", "--checks-only", str(path))
    assert code == 0, out
    assert "ok    the VBA project references the xlwings add-in (Tools > References > xlwings)" in out
    assert f"info  {setup.NOT_CHECKED}" in out


def test_a_workbook_without_the_reference_fails_with_what_to_do(capsys, tmp_path):
    path = _with_project(tmp_path, ["xlwings_udfs"], [("Office", "*\\G{2DF8D04C}#2.0#0#MSO.DLL")])
    code, out, _ = run(capsys, "excel", "--checks-only", str(path))
    assert code == 1
    assert (
        "FAIL  no reference to the xlwings add-in (it references Office): in the VBA editor (Alt+F11), Tools > "
        "References, tick xlwings, then save; without it the imported functions cannot call Python and show #NAME?"
    ) in out
    assert "ok    the VBA module xlwings_udfs is there" in out


def test_the_standalone_xlwings_module_needs_no_reference(capsys, ready_xlsm):
    _, out, _ = run(capsys, "excel", "--checks-only", str(ready_xlsm))
    assert "ok    the workbook carries xlwings' own VBA (the standalone module xlwings)" in out


def test_a_damaged_dir_stream_is_a_one_line_error(capsys, tmp_path):
    broken = _with_project(tmp_path, ["xlwings_udfs"], [ADDIN], damage=lambda d: d[:2] + b"\x0f" + d[3:])
    code, _, err = run(capsys, "excel", "--checks-only", str(broken))
    assert (code, err) == (
        2,
        f"xlsxplan: error: cannot read the VBA references of {broken}: a compressed chunk at byte 1 has no signature\n",
    )
    broken = _with_project(tmp_path, ["xlwings_udfs"], [ADDIN], damage=lambda d: b"\x02" + d[1:])
    with pytest.raises(setup.WorkbookError, match=r": the dir stream is not a compressed container$"):
        vba_references(broken)
    path = _with_project(tmp_path, ["xlwings_udfs"], None)
    with pytest.raises(setup.WorkbookError, match=r"^cannot read the VBA references of .*: no dir stream$"):
        vba_references(path)


# --- the command ------------------------------------------------------------------------------------------------


def test_excel_prints_both_set_ups_and_passes_its_checks_here(capsys):
    code, out, _ = run(capsys, "excel")
    assert code == 0
    for step in CLASSIC_STEPS + LITE_STEPS:
        assert step in out
    assert out.index("Windows desktop Excel") < out.index("xlwings Lite add-in") < out.index("Checks on this machine")
    assert f"ok    xlwings {importlib.metadata.version('xlwings')} is installed" in out
    assert f"ok    xlsxplan.excel.udfs imports and exposes all {len(registry.FUNCTIONS)} functions" in out
    assert re.search(r"info  \w+: ", out)
    assert CLASSIC_STEPS[-1] == LITE_STEPS[-1] == f"Type {FORMULA} into a cell: it shows {EXPECTED}."
    assert EXPECTED == "327680" and FORMULA == "=KV_BYTES_PER_TOKEN(80,8,128,2)"


def test_the_classic_steps_name_what_xlwings_needs():
    text = " ".join(CLASSIC_STEPS)
    for needed in (
        "xlwings addin install",
        "Trust access to the VBA project object model",
        '"UDF Modules"',
        "xlsxplan.excel.udfs",
        "xlwings.conf",
        '"Import Functions"',
        ".xlsm",
        "xlwings_udfs",
    ):
        assert needed in text
    lite = " ".join(LITE_STEPS)
    for needed in ("Add-ins", "xlwings Lite", "xlsxplan excel --lite", "requirements.txt", "main.py", "macOS", "web"):
        assert needed in lite


def test_missing_xlwings_fails_the_check(capsys, monkeypatch):
    real = importlib.metadata.version

    def version(name):
        if name == "xlwings":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    code, out, _ = run(capsys, "excel", "--checks-only")
    assert code == 1
    assert "FAIL  xlwings is not installed: python -m pip install xlwings" in out
    assert CLASSIC_STEPS[0] not in out and out.startswith("Checks on this machine")  # --checks-only


def test_a_udf_module_missing_a_function_fails_the_check(capsys, monkeypatch):
    monkeypatch.setitem(registry.FUNCTIONS, "NOT_IN_UDFS", registry.FUNCTIONS["KV_GB"])
    code, out, _ = run(capsys, "excel", "--checks-only")
    assert code == 1
    assert "FAIL  xlsxplan.excel.udfs lacks 1 registry functions: NOT_IN_UDFS" in out


def test_a_workbook_set_up_for_classic_xlwings_passes(capsys, ready_xlsm):
    code, out, _ = run(capsys, "excel", "--checks-only", str(ready_xlsm))
    assert code == 0, out
    assert 'ok    the xlwings.conf sheet names xlsxplan.excel.udfs under "UDF Modules"' in out
    assert "ok    plan.xlsm is a macro-enabled workbook (.xlsm)" in out
    assert "ok    the VBA module xlwings_udfs is there (Import Functions was run)" in out


def test_a_workbook_before_import_functions_fails_with_what_to_do(capsys, tmp_path):
    src = XLWINGS_DIR / "quickstart_standalone.xlsm"
    path = tmp_path / "quickstart.xlsm"
    path.write_bytes(src.read_bytes())
    code, out, _ = run(capsys, "excel", "--checks-only", str(path))
    assert code == 1
    assert 'FAIL  no xlwings.conf sheet: set "UDF Modules" to xlsxplan.excel.udfs (ribbon or that sheet)' in out
    assert "FAIL  no VBA module xlwings_udfs (it has Module1, xlwings): click Import Functions, then save" in out


def test_an_xlsx_with_the_conf_sheet_still_needs_import_and_xlsm(capsys, tmp_path):
    wb = openpyxl.Workbook()
    add_conf_sheet(wb, {"UDF Modules": "mine;xlsxplan.excel.udfs"})
    wb.save(tmp_path / "plan.xlsx")
    code, out, _ = run(capsys, "excel", "--checks-only", str(tmp_path / "plan.xlsx"))
    assert code == 1
    assert 'ok    the xlwings.conf sheet names xlsxplan.excel.udfs under "UDF Modules"' in out
    assert "FAIL  plan.xlsx is not .xlsm: after Import Functions, save it as .xlsm" in out
    assert "FAIL  no VBA module xlwings_udfs (it has no VBA)" in out
    wb = openpyxl.Workbook()
    add_conf_sheet(wb, {"UDF Modules": "other.module"})
    wb.save(tmp_path / "other.xlsx")
    _, out, _ = run(capsys, "excel", "--checks-only", str(tmp_path / "other.xlsx"))
    assert 'FAIL  the xlwings.conf sheet does not name xlsxplan.excel.udfs under "UDF Modules"' in out


@pytest.mark.parametrize("content", [None, b"plain text, not a workbook"])
def test_an_unreadable_workbook_is_a_file_error(capsys, tmp_path, content):
    path = tmp_path / "plan.xlsm"
    if content is not None:
        path.write_bytes(content)
    code, _, err = run(capsys, "excel", "--checks-only", str(path))
    assert code == 2
    assert re.fullmatch(r"xlsxplan: error: cannot read .*plan\.xlsm: (no such file|not an Excel workbook .*)\n", err)


# --- xlwings Lite -------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_lite_writes_main_and_requirements_and_never_overwrites_unasked(capsys, tmp_path):
    folder = tmp_path / "lite"
    code, out, _ = run(capsys, "excel", "--checks-only", "--lite", str(folder))
    assert code == 0
    assert (folder / "main.py").read_text(encoding="utf-8") == lite_bundle()
    assert (folder / "requirements.txt").read_text(encoding="utf-8") == "".join(f"{r}\n" for r in LITE_REQUIREMENTS)
    assert f"wrote {folder / 'main.py'}" in out
    (folder / "main.py").write_text("# my own code", encoding="utf-8")
    code, _, err = run(capsys, "excel", "--lite", str(folder))
    assert code == 2 and err.endswith(
        "main.py and " + str(folder / "requirements.txt") + " exist already; use --force to replace\n"
    )
    assert (folder / "main.py").read_text(encoding="utf-8") == "# my own code"
    assert run(capsys, "excel", "--checks-only", "--force", "--lite", str(folder))[0] == 0
    assert (folder / "main.py").read_text(encoding="utf-8") == lite_bundle()


@given(st.text())
def test_the_bundle_literal_holds_any_text_exactly(text):
    assert eval(lite_module._literal(text)) == text


@pytest.mark.slow
def test_the_bundle_carries_what_the_functions_need_and_nothing_lite_never_uses():
    files = bundle_files()
    assert {"xlsxplan/__init__.py", "xlsxplan/excel/udfs.py", "xlsxplan/registry.py", "xlsxplan/sheet/cells.py"} <= set(
        files
    )
    assert {
        "xlsxplan/catalog/models.toml",
        "xlsxplan/catalog/accelerators.toml",
        "xlsxplan/catalog/formats.toml",
        "xlsxplan/calibration/data/calibration.json",
        "xlsxplan/calibration/data/__init__.py",
    } <= set(files)
    # the bundle once carried the workbook, OOXML, engine and file-safety code, which Lite never runs
    faces = ("xlsxplan/cli/", "xlsxplan/templates/", "xlsxplan/headless/")
    assert not [f for f in files if f.startswith(faces) or "__pycache__" in f]
    for unused in (
        "infra/zipfiles",
        "excel/setup",
        "excel/vba",
        "excel/lite",
        "calibration/measurements",
        "calibration/machine",
        "catalog/hfconfig",
    ):
        assert f"xlsxplan/{unused}.py" not in files, unused
    # the calibration fit's 100-odd published rows stay behind: the functions read only the fitted factors
    assert "xlsxplan/calibration/data/measurements.csv" not in files
    assert "xlsxplan/calibration/data/calibration.json" in files
    assert files["xlsxplan/excel/udfs.py"] == (Path(lite_module.__file__).parent / "udfs.py").read_text(
        encoding="utf-8"
    )
    # the functions and the catalog they need, the plan search behind PLAN_OPTIONS included (with its percentile
    # target, engine memory, speculative draft and owned case; 733 KB once the plan's calibrated view ran validate's
    # serving step, which brought core.step, core.effects and calibration.shape but not the measurements' reader),
    # no more (the faces left out above would add several hundred KB); 761 KB once models.toml held the open models of
    # 2025-26 with their citations (MODEL_SPEC reads them; the system presets, which no function reads, stay behind);
    # about 820 KB with the finance functions (core.tiers, core.hosted, core.energy and catalog.finance with its three
    # tables); 869 KB with the system presets, their accessors and the layouts once PLAN_OPTIONS laid replicas out
    # beyond a server; about 920 KB with the portfolio of several workloads (plan.portfolio, PORTFOLIO); about 985 KB
    # with TRAIN_OPTIONS, which needs the training plan it lays out (plan.train, plan.train_inputs, core.goodput); about
    # 1,002 KB once models.toml held MiniMax-M1, GLM-5, Kimi-K2.6 and the Qwen3.5 family with their citations;
    # 1,022 KB once the registry built each entry on first use (its table names modules as text, and the lazy map);
    # 1,035 KB with the prefill pool's forwarding all-to-all, two-batch overlap and dispatch bytes (core.effects,
    # core.step, which PLAN_OPTIONS runs) and the training step's gathered pipeline stage (plan.train); 1,042 KB with
    # the engine's per-step token budget (core.engine.budget_batch, two plan inputs); 1,046 KB with the power-limited
    # H100 of torchtitan's benchmark hosts in accelerators.toml; 1,050 KB with the step's shared rules for the weights
    # read, the tokens routed and a replica's layout (core.step.read_weights, routed_tokens, pipelined, SERVER_GPUS)
    # and TensorRT-LLM's KV share (core.engine)
    assert len(lite_bundle().encode("utf-8")) < 1_060_000
    assert "xlsxplan/catalog/systems.toml" in files and "xlsxplan/catalog/systems.py" in files
    assert "xlsxplan/calibration/measurements.py" not in files


_LITE_RUN = r"""
import json, runpy, sys
before = set(sys.modules)
import numpy, pydantic.main, xlwings, docstring_parser  # loaded first, under the real platform name
real, sys.platform = sys.platform, "emscripten"  # what Pyodide reports, so xlsxplan.excel.udfs presents for Lite
try:
    g = runpy.run_path(sys.argv[1], run_name="main")
finally:
    sys.platform = real
import xlsxplan, xlsxplan.excel.udfs
out = {"file": xlsxplan.__file__, "lite": xlsxplan.excel.udfs.LITE, "kv": g["KV_BYTES_PER_TOKEN"](80, 8, 128, 2),
       "layers": g["MODEL_SPEC"]("Qwen2.5-72B", "layers"), "column": g["DECODE_TOKS_TOTAL"](72.7, 1, 2, 3.35, [[1], [94]], 327680, 2300),
       "names": sorted(n for n, v in g.items() if hasattr(v, "__name__") and v.__name__ == n and n.isupper())}
try:
    g["KV_BYTES_PER_TOKEN"](80, -1, 128)
except Exception as err:
    out["error"] = [type(err).__name__, str(err)]
out["all"] = {}
for name, args in json.loads(sys.argv[2]).items():  # every function, on its example: nothing the bundle lacks
    try:
        out["all"][name] = repr(g[name](*args))
    except Exception as err:
        out["all"][name] = f"{type(err).__name__}: {err}"
out["modules"] = sorted({m.split(".")[0] for m in set(sys.modules) - before})
print(json.dumps(out))
"""


def _own_temp(tmp_path: Path) -> dict[str, str]:
    """The environment for a run of the bundle, which unpacks itself into the temporary folder: the test's own, so
    that runs beside it (another worker, another checkout) never write the same files at the same time."""
    return {**os.environ, "TMPDIR": str(tmp_path)}


@pytest.mark.slow
def test_the_lite_bundle_runs_alone_and_needs_only_its_requirements(tmp_path):
    import json

    main_py = tmp_path / "main.py"
    main_py.write_text(lite_bundle(), encoding="utf-8")
    from tests.helpers.examples import EXAMPLES
    from xlsxplan.excel import udfs

    proc = subprocess.run(
        [sys.executable, "-c", _LITE_RUN, str(main_py), json.dumps(EXAMPLES)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=_own_temp(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert "/xlsxplan-" in out["file"] and not out["file"].startswith(str(Path(lite_module.__file__).parents[2]))
    assert out["lite"] is True
    assert out["kv"] == 327680.0 and out["layers"] == 80.0
    assert len(out["column"]) == 2 and round(out["column"][1][0]) == 4387  # Back-of-the-Envelope §4, batch 94
    assert out["names"] == sorted(registry.FUNCTIONS)
    assert out["error"] == ["ExcelError", "#NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1"]
    lite = udfs.build(lite=True)
    for name, args in EXAMPLES.items():  # the trimmed bundle answers every function as the installed package does
        try:
            expected = repr(lite[name](*args))
        except udfs.ExcelError as err:
            expected = f"ExcelError: {err}"
        assert out["all"][name] == expected, name
    # every third-party module the bundle loaded is a Lite requirement, or comes with one of them or with xlwings
    from xlsxplan.excel.lite import LITE_OPTIONAL

    allowed = {"xlwings", "xlsxplan", *LITE_OPTIONAL}  # numpy: optional, and loaded above by this test itself
    for requirement in [*LITE_REQUIREMENTS, "xlwings"]:
        name = re.split(r"[<>=!~ ;\[]", requirement)[0]
        allowed.add(name.replace("-", "_").lower())
        for dep in importlib.metadata.requires(name) or []:
            if "extra ==" not in dep:
                allowed.add(re.split(r"[<>=!~ ;\[]", dep)[0].replace("-", "_").lower())
    third_party = [m for m in out["modules"] if m not in sys.stdlib_module_names and not m.startswith("_")]
    assert third_party and set(third_party) <= allowed, set(third_party) - allowed
    assert not {"formulas", "openpyxl", "schedula", "tqdm", "tomli_w"} & set(out["modules"])


_NO_NUMPY_RUN = r"""
import json, runpy, sys


class _NoNumpy:  # as in a Pyodide without numpy: no registry serves one for it
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, _NoNumpy())
import pydantic.main, xlwings, docstring_parser  # loaded first, under the real platform name
real, sys.platform = sys.platform, "emscripten"
try:
    g = runpy.run_path(sys.argv[1], run_name="main")
finally:
    sys.platform = real
out = {}
for key, (name, args) in json.loads(sys.argv[2]).items():
    try:
        out[key] = repr(g[name](*args))
    except Exception as err:
        out[key] = f"{type(err).__name__}: {err}"
out["numpy loaded"] = "numpy" in sys.modules
print(json.dumps(out))
"""

# Calls with ranges: a column, a column against a row, a bad element, a range argument, an error passed in.
_RANGE_CALLS = {
    "column": ("DECODE_TOKS_TOTAL", [72.7, 1, 2, 3.35, [[1], [94]], 327680, 2300]),
    "grid": ("KV_BYTES_PER_TOKEN", [[[32], [80]], [[8, 16]], 128]),
    "bad element": ("KV_BYTES_PER_TOKEN", [80, 8, 128, [[1], [2], ["x"]]]),
    "whole": ("MAX_BATCH", [72.7, "fp8", 327680, [[2300], [4600]], 2, 80]),
    "mismatch": ("KV_BYTES_PER_TOKEN", [[[1], [2]], [[1], [2], [3]], 128]),
    "range argument": ("TAIL_SHARE_DATA", [[[600], [4000], [40000]], [[100, 16384]]]),
    "passed in": ("KV_BYTES_PER_TOKEN", [80, "#N/A", 128]),
    "error": ("KV_BYTES_PER_TOKEN", [80, -1, 128]),
    "models": ("MODELS", []),
}


@pytest.mark.slow
def test_the_lite_bundle_imports_and_computes_without_numpy(tmp_path):
    # Pyodide has numpy only from its own distribution, which no registry here serves: the bundle must import and
    # answer every function without it, ranges broadcast by the pure-Python path, every result as with numpy
    import json

    from tests.helpers.examples import EXAMPLES
    from xlsxplan.excel import udfs

    main_py = tmp_path / "main.py"
    main_py.write_text(lite_bundle(), encoding="utf-8")
    calls = {**{k: list(v) for k, v in _RANGE_CALLS.items()}, **{n: [n, list(a)] for n, a in EXAMPLES.items()}}
    proc = subprocess.run(
        [sys.executable, "-c", _NO_NUMPY_RUN, str(main_py), json.dumps(calls)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=_own_temp(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out.pop("numpy loaded") is False
    lite = udfs.build(lite=True)
    for key, (name, args) in calls.items():  # with numpy (the vectorised path), in this process
        try:
            expected = repr(lite[name](*args))
        except udfs.ExcelError as err:
            expected = f"ExcelError: {err}"
        assert out[key] == expected, key
    # "Back-of-the-Envelope Estimation for LLM Systems", sections 3 and 6
    assert out["KV_BYTES_PER_TOKEN"] == "327680.0" and out["whole"] == "[[94.0], [47.0]]"
    assert out["grid"] == "[[131072.0, 262144.0], [327680.0, 655360.0]]"


def test_the_excel_page_walks_both_set_ups_to_327680():
    # docs/excel.md (the README links to it): each set-up, step by step, ends in the formula and its figure
    from tests.helpers.docpages import read, section, words

    page = read("docs/excel.md")
    assert "<!-- section:" not in page
    classic = words(section(page, "Windows desktop Excel (the classic xlwings add-in)"))
    lite = words(section(page, "Excel on a Mac, on the web, or on Windows (xlwings Lite)"))
    for needed in (
        "xlwings addin install",
        "Trust access to the VBA project",
        "UDF Modules",
        "xlsxplan.excel.udfs",
        "xlwings.conf",
        "Import Functions",
        ".xlsm",
        "xlwings_udfs",
        FORMULA,
        EXPECTED,
    ):
        assert needed in classic, needed
    for needed in (
        "Add-ins",
        "xlwings Lite",
        "xlsxplan excel --lite",
        "requirements.txt",
        "main.py",
        FORMULA,
        EXPECTED,
    ):
        assert needed in lite, needed
    for requirement in LITE_REQUIREMENTS:  # the page names what Lite installs
        assert re.split(r"[<>=]", requirement)[0] in lite
    errors = words(section(page, "How errors look"))
    assert "#NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1" in errors
    assert "#776" in errors and "#1108" in errors and "spill" in words(page)


def _third_party_imports(files: dict[str, str]) -> dict[str, set[str]]:
    """Top-level module -> the bundled files importing it (at any depth: lazy imports count), outside xlsxplan and
    the standard library."""
    found: dict[str, set[str]] = {}
    for path, text in files.items():
        if not path.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "xlsxplan" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(path)
    return found


def test_the_lite_requirements_name_every_import_of_the_bundle():
    # lite/requirements.txt once left out xlwings and tomli_w, which main.py imports: every package a bundled module
    # imports is a requirement, or optional with its reason
    from xlsxplan.excel.lite import LITE_OPTIONAL

    distributions = importlib.metadata.packages_distributions()
    required = {re.split(r"[<>=!~ ;\[]", r)[0].replace("_", "-").lower() for r in LITE_REQUIREMENTS}
    imports = _third_party_imports(bundle_files())
    assert {"xlwings", "pydantic", "docstring_parser", "platformdirs", "tomli_w", "numpy"} <= set(imports)
    for module, where in sorted(imports.items()):
        if module in LITE_OPTIONAL:
            continue
        names = {d.replace("_", "-").lower() for d in distributions.get(module, [module])}
        assert names & required, f"{module} (imported by {sorted(where)}) is not in LITE_REQUIREMENTS"
    assert set(LITE_OPTIONAL) <= set(imports)  # nothing excused that is not imported
    assert lite_module.lite_requirements().splitlines() == list(LITE_REQUIREMENTS)
    assert "numpy" not in lite_module.lite_requirements()
