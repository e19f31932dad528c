#!/usr/bin/env python3
"""Render each sheet of a workbook to PNG pages, to look at a report the way a person would.

    python scripts/render_report.py report.xlsx [--outdir DIR] [--dpi 80] [--sheet Summary ...]
    python scripts/render_report.py report.xlsx --screenshot [--size 1600x1000] [--sheet Overview ...]

Pages show how a sheet prints; `--screenshot` shows what fits in one screen instead: the real
LibreOffice window on a virtual screen, one PNG per sheet (`screenshot.py`).

For every visible sheet it makes a copy of the workbook in which only that sheet is visible,
converts the copies to PDF with LibreOffice in one headless call (a private profile, so a running
or stale LibreOffice does not interfere), and turns each PDF page into a PNG with pdftoppm:
DIR/<sheet>-<page>.png. Needs `soffice` (LibreOffice) and `pdftoppm` (poppler) on the PATH.
The copies are made by `sheet_copies.py`, which the screenshots share.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshot import screenshots
from sheet_copies import RenderError, safe_name, single_sheet_copy, visible_sheets


def convert_to_pdf(files: list[Path], outdir: Path, *, profile: Path, timeout: float = 300) -> list[Path]:
    """PDFs of the files, via one headless LibreOffice; soffice exits 0 even when a file failed to
    load, so success is a PDF that exists and is not empty."""
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        raise RenderError("LibreOffice (soffice) is not on the PATH")
    command = [soffice, f"-env:UserInstallation={profile.resolve().as_uri()}", "--headless", "--norestore",
               "--convert-to", "pdf", "--outdir", str(outdir), *map(str, files)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    pdfs = []
    for file in files:
        pdf = outdir / f"{file.stem}.pdf"
        if not pdf.is_file() or pdf.stat().st_size == 0:
            shown = completed.stderr.strip() or completed.stdout.strip()
            raise RenderError(f"LibreOffice made no PDF of {file.name}: {shown}")
        pdfs.append(pdf)
    return pdfs


def pdf_to_png(pdf: Path, prefix: Path, *, dpi: int) -> list[Path]:
    pdftoppm = shutil.which("pdftoppm")
    if pdftoppm is None:
        raise RenderError("pdftoppm (poppler) is not on the PATH")
    subprocess.run([pdftoppm, "-png", "-r", str(dpi), str(pdf), str(prefix)], check=True, capture_output=True)
    return sorted(prefix.parent.glob(f"{prefix.name}-*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))


def render_report(report: Path, outdir: Path, *, dpi: int = 80,
                  sheets: list[str] | None = None) -> dict[str, list[Path]]:
    """Render the chosen (default: all visible) sheets; returns the PNG pages of each."""
    with zipfile.ZipFile(report) as package:
        workbook_xml = package.read("xl/workbook.xml").decode("utf-8")
    available = visible_sheets(workbook_xml)
    chosen = sheets or available
    unknown = [s for s in chosen if s not in available]
    if unknown:
        raise RenderError(f"{report}: no visible sheet {unknown[0]!r}; sheets: {', '.join(available)}")
    outdir.mkdir(parents=True, exist_ok=True)
    pages: dict[str, list[Path]] = {}
    with tempfile.TemporaryDirectory(prefix="qareport-render-") as scratch:
        work = Path(scratch)
        copies = []
        for sheet in chosen:
            copy = work / f"{safe_name(sheet)}.xlsx"
            single_sheet_copy(report, sheet, copy)
            copies.append(copy)
        for old in outdir.glob("*.png"):
            if old.stem.rsplit("-", 1)[0] in {safe_name(s) for s in chosen}:
                old.unlink()
        pdfs = convert_to_pdf(copies, work, profile=work / "profile")
        for sheet, pdf in zip(chosen, pdfs):
            pages[sheet] = pdf_to_png(pdf, outdir / safe_name(sheet), dpi=dpi)
    return pages


def take_screenshots(report: Path, outdir: Path, *, sheets: list[str] | None, size: str) -> int:
    """A screenshot of each chosen sheet, all on one virtual screen (`screenshot.screenshots`)."""
    with zipfile.ZipFile(report) as package:
        available = visible_sheets(package.read("xl/workbook.xml").decode("utf-8"))
    unknown = [s for s in sheets or () if s not in available]
    if unknown:
        print(f"render_report: {report}: no visible sheet {unknown[0]!r}; sheets: {', '.join(available)}",
              file=sys.stderr)
        return 2
    try:
        for path in screenshots(report, sheets or available, outdir, size=size):
            print(path)
    except RenderError as error:
        print(f"render_report: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="the workbook (.xlsx)")
    parser.add_argument("--outdir", type=Path, help="where the PNGs go (default: render-<report name>)")
    parser.add_argument("--dpi", type=int, default=80, help="resolution of the PNGs (default 80)")
    parser.add_argument("--sheet", action="append", dest="sheets", metavar="NAME",
                        help="render only this sheet (repeatable; default: every visible sheet)")
    parser.add_argument("--screenshot", action="store_true",
                        help="a screenshot of the LibreOffice window per sheet instead of printed pages")
    parser.add_argument("--size", default="1600x1000", help="the screen for --screenshot (default 1600x1000)")
    args = parser.parse_args(argv)
    outdir = args.outdir or Path(f"render-{args.report.stem}")
    try:
        if args.screenshot:
            return take_screenshots(args.report, outdir, sheets=args.sheets, size=args.size)
        pages = render_report(args.report, outdir, dpi=args.dpi, sheets=args.sheets)
    except (RenderError, OSError, zipfile.BadZipFile, subprocess.SubprocessError) as error:
        print(f"render_report: {error}", file=sys.stderr)
        return 2
    for sheet, files in pages.items():
        print(f"{sheet}: {len(files)} page(s): {', '.join(str(f) for f in files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
