"""Parts in UTF-16: the notes xlsxplan writes go into comments, VML, relationships and content types as they are
encoded (a UTF-16 comments part must not crash recalc with UnicodeDecodeError)."""

from __future__ import annotations

import io

import openpyxl
import pytest
from openpyxl.comments import Comment

from tests.helpers.hostile import members, pack
from xlsxplan.errors import WorkbookError
from xlsxplan.headless import Workbook

NOTE = (
    "#NUM! bytes_per_param must be a positive number of bytes up to 64 or a precision name such as bf16, fp8 or "
    "int4, got -1"
)
COMMENTS = "xl/comments/comment1.xml"
VML = "xl/drawings/commentsDrawing1.vml"
SHEET_RELS = "xl/worksheets/_rels/sheet1.xml.rels"
TYPES = "[Content_Types].xml"


def _book(user_note: bool) -> dict[str, bytes]:
    """A sheet whose B1 fails; with the user's own note on A1, or with a hyperlink (a rels part but no notes)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    ws["A1"] = 5
    ws["B1"] = "=WEIGHTS_GB(A1,-1)"
    if user_note:
        ws["A1"].comment = Comment("the user's own note", "Ann")
    else:
        ws["C1"] = "site"
        ws["C1"].hyperlink = "https://example.com/"
    buf = io.BytesIO()
    wb.save(buf)
    return members(buf.getvalue())


def _encode(data: bytes, codec: str) -> bytes:
    text = data.decode("utf-8")
    if text.startswith("<?xml"):
        text = text.replace('encoding="UTF-8"', 'encoding="UTF-16"').replace("encoding='UTF-8'", "encoding='UTF-16'")
    elif codec.startswith("utf-16"):
        text = '<?xml version="1.0" encoding="UTF-16" standalone="yes"?>\n' + text
    return text.encode(codec)


def _saved(parts: dict[str, bytes], tmp_path) -> dict[str, bytes]:
    (tmp_path / "in.xlsx").write_bytes(pack(parts))
    Workbook.load(tmp_path / "in.xlsx").save(tmp_path / "out.xlsx")
    return members((tmp_path / "out.xlsx").read_bytes())


@pytest.mark.parametrize("codec, head", [("utf-16", (b"\xff\xfe", b"\xfe\xff")), ("utf-16-le", (b"<\x00?\x00",))])
@pytest.mark.parametrize("part", [COMMENTS, VML])
def test_notes_go_into_utf16_comments_and_drawings_which_stay_utf16(tmp_path, part, codec, head):
    parts = _book(user_note=True)
    parts[part] = _encode(parts[part], codec)
    out = _saved(parts, tmp_path)
    assert out[part].startswith(head)
    assert "xlsxplan" in out[part].decode(codec) if part == COMMENTS else "<x:Row>0</x:Row>" in out[part].decode(codec)
    (tmp_path / "check.xlsx").write_bytes(pack(out))
    sheet = openpyxl.load_workbook(tmp_path / "check.xlsx")["S"]
    assert sheet["A1"].comment.text == "the user's own note" and sheet["A1"].comment.author == "Ann"
    assert sheet["B1"].comment.text == NOTE and sheet["B1"].comment.author == "xlsxplan"


@pytest.mark.parametrize("part", [SHEET_RELS, TYPES])
def test_a_new_notes_part_is_linked_through_utf16_relationships_and_content_types(tmp_path, part):
    parts = _book(user_note=False)
    parts[part] = _encode(parts[part], "utf-16")
    out = _saved(parts, tmp_path)
    text = out[part].decode("utf-16")
    assert out[part].startswith(b"\xff\xfe") and ("comments" in text)
    (tmp_path / "check.xlsx").write_bytes(pack(out))
    sheet = openpyxl.load_workbook(tmp_path / "check.xlsx")["S"]
    assert sheet["B1"].comment.text == NOTE and sheet["C1"].hyperlink.target == "https://example.com/"


def test_a_part_in_neither_utf8_nor_utf16_is_refused_in_one_line(tmp_path):
    parts = _book(user_note=True)
    text = parts[COMMENTS].decode("utf-8").replace("the user's own note", "caf\u00e9")
    parts[COMMENTS] = ('<?xml version="1.0" encoding="ISO-8859-1"?>\n' + text).encode("latin-1")
    (tmp_path / "in.xlsx").write_bytes(pack(parts))
    book = Workbook.load(tmp_path / "in.xlsx")
    with pytest.raises(WorkbookError, match=r"^xl/comments/comment1\.xml is neither UTF-8 nor UTF-16 text \("):
        book.save(tmp_path / "out.xlsx")
