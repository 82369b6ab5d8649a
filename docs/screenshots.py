"""Regenerate the README's screenshots of the templates, as LibreOffice prints them.

Each shipped workbook in ``workbooks/`` is printed to PDF by headless LibreOffice, the first page of the sheet a
screenshot shows is found by its footer (``Serving plan: Scenarios``: every sheet's footer names the file and the
sheet), and that page is rasterised by poppler's ``pdftoppm``, cropped to what is printed on it (the words'
bounding boxes from ``pdftotext -bbox``, the footer left out) at about 1,300 pixels wide. Needs ``soffice``,
``pdftotext`` and ``pdftoppm`` on the PATH; nothing else is installed.

Usage::

    python docs/screenshots.py                 # docs/serving_plan.png and docs/training_plan.png
    python docs/screenshots.py --pages DIR     # also every printed page of both workbooks, to look at

Each screenshot records the SHA-256 of the workbook it shows (a PNG text chunk), so a test finds a screenshot that
no longer shows the committed workbook.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SHOTS = (
    # workbook, title in its footer, sheet, screenshot
    ("serving_plan.xlsx", "Serving plan", "Scenarios", "serving_plan.png"),
    ("training_plan.xlsx", "Training plan", "Calculations", "training_plan.png"),
)
WIDTH_PX = 1300
MARGIN_PT = 6.0
FOOTER_PT = 40.0  # the footer sits in the bottom 0.3 inch margin: words this close to the bottom edge are left out

_WORD = re.compile(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>')
_PAGE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)">')


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=300).stdout


def to_pdf(book: Path, out: Path, profile: Path) -> Path:
    run(
        "soffice",
        "--headless",
        f"-env:UserInstallation=file://{profile}",
        "--convert-to",
        "pdf",
        "--outdir",
        str(out),
        str(book),
    )
    return out / book.with_suffix(".pdf").name


def pages(pdf: Path) -> list[str]:
    """The text of each page."""
    return run("pdftotext", "-layout", str(pdf), "-").split("\f")


def first_page_of(pdf: Path, footer: str) -> int:
    """The 1-based number of the first page whose footer is ``footer``."""
    for number, text in enumerate(pages(pdf), start=1):
        if footer in text:
            return number
    raise SystemExit(f"{pdf.name}: no page's footer reads {footer!r}")


def content_box(pdf: Path, page: int) -> tuple[float, float, float, float]:
    """The printed content of a page, footer excluded: (x, y, width, height) in points."""
    xml = run("pdftotext", "-bbox", "-f", str(page), "-l", str(page), str(pdf), "-")
    size = _PAGE.search(xml)
    if not size:
        raise SystemExit(f"{pdf.name}: page {page} has no size")
    height = float(size.group(2))
    boxes = [tuple(float(v) for v in m.groups()[:4]) for m in _WORD.finditer(xml) if html.unescape(m.group(5))]
    boxes = [b for b in boxes if b[3] < height - FOOTER_PT]
    x0, y0 = min(b[0] for b in boxes) - MARGIN_PT, min(b[1] for b in boxes) - MARGIN_PT
    x1, y1 = max(b[2] for b in boxes) + MARGIN_PT, max(b[3] for b in boxes) + MARGIN_PT
    return x0, y0, x1 - x0, y1 - y0


def screenshot(pdf: Path, page: int, target: Path) -> None:
    x, y, w, h = content_box(pdf, page)
    dpi = WIDTH_PX / (w / 72)
    scale = dpi / 72
    run(
        "pdftoppm",
        "-f",
        str(page),
        "-l",
        str(page),
        "-r",
        f"{dpi:.2f}",
        "-x",
        str(round(x * scale)),
        "-y",
        str(round(y * scale)),
        "-W",
        str(round(w * scale)),
        "-H",
        str(round(h * scale)),
        "-png",
        "-singlefile",
        str(pdf),
        str(target.with_suffix("")),
    )


SOURCE_KEY = "xlsxplan:workbook-sha256"
"""The PNG text chunk that records which workbook a screenshot shows: the SHA-256 of its bytes (the build writes the
same bytes every time, so a rebuilt, changed workbook no longer matches; tests/templates/test_build.py checks it)."""


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_text(png: bytes) -> dict[str, str]:
    """The ``tEXt`` chunks of a PNG (PNG specification, 11.3.4.3), keyword -> text."""
    out, pos = {}, 8
    while pos + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        if kind == b"tEXt":
            key, _, value = png[pos + 8 : pos + 8 + length].partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        pos += 12 + length
    return out


def stamp(png: Path, book: Path) -> None:
    """Record the workbook's SHA-256 in the screenshot, as a ``tEXt`` chunk just before ``IEND``."""
    data = png.read_bytes()
    end = data.rindex(b"IEND") - 4  # the IEND chunk's length field
    text = _chunk(b"tEXt", SOURCE_KEY.encode() + b"\0" + hashlib.sha256(book.read_bytes()).hexdigest().encode())
    png.write_bytes(data[:end] + text + data[end:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", metavar="DIR", type=Path, help="also write every printed page here, as PNG")
    args = parser.parse_args()
    for tool in ("soffice", "pdftotext", "pdftoppm"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not on the PATH")
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        for book, title, sheet, png in SHOTS:
            pdf = to_pdf(ROOT / "workbooks" / book, tmp_path, tmp_path / "profile")
            page = first_page_of(pdf, f"{title}: {sheet}")
            screenshot(pdf, page, ROOT / "docs" / png)
            stamp(ROOT / "docs" / png, ROOT / "workbooks" / book)
            print(f"docs/{png}: {book}, {sheet} (page {page})")
            if args.pages:
                args.pages.mkdir(parents=True, exist_ok=True)
                run("pdftoppm", "-r", "80", "-png", str(pdf), str(args.pages / Path(book).stem))
                print(f"{args.pages}/{Path(book).stem}-*.png: {len(pages(pdf)) - 1} pages")


if __name__ == "__main__":
    main()
