"""A copy of a workbook in which one sheet is the one shown: what the printed pages
(`render_report.py`) and the screenshots (`screenshot.py`) both start from, and the error both raise.

The copy is made by editing xl/workbook.xml in the zip, not by loading the workbook with openpyxl,
which would drop the charts.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

SHEET_TAG = re.compile(r"<(?:\w+:)?sheet\b[^>]*/>")
NAME = re.compile(r'\bname="([^"]*)"')
STATE = re.compile(r'\s+state="[^"]*"')
ACTIVE_TAB = re.compile(r'\s+(?:activeTab|firstSheet)="\d+"')
WORKBOOK_VIEW = re.compile(r"<((?:\w+:)?workbookView)\b")
PRINT_AREA = re.compile(r'<definedName name="_xlnm\.Print_Area" localSheetId="(\d+)">[^<]*</definedName>')


class RenderError(Exception):
    pass


def visible_sheets(workbook_xml: str) -> list[str]:
    names = []
    for tag in SHEET_TAG.findall(workbook_xml):
        if 'state="hidden"' in tag or 'state="veryHidden"' in tag:
            continue
        match = NAME.search(tag)
        if match:
            names.append(_unescape(match.group(1)))
    return names


def _unescape(text: str) -> str:
    return (text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&apos;", "'")
            .replace("&amp;", "&"))


def only_sheet_visible(workbook_xml: str, keep: str, *, hide_others: bool = True) -> str:
    """workbook.xml with `keep` the active tab and, with `hide_others`, every other sheet hidden."""
    tags = SHEET_TAG.findall(workbook_xml)
    names = [_unescape(NAME.search(tag).group(1)) if NAME.search(tag) else "" for tag in tags]
    index = names.index(keep)

    def rewrite(match: re.Match[str]) -> str:
        tag = STATE.sub("", match.group(0))
        name = NAME.search(tag)
        if not hide_others or (name and _unescape(name.group(1)) == keep):
            return match.group(0)
        return tag[:-2].rstrip() + ' state="hidden"/>'

    text = SHEET_TAG.sub(rewrite, workbook_xml)
    if hide_others:  # LibreOffice prints a hidden sheet that has a print area: drop the others' areas
        text = PRINT_AREA.sub(lambda m: m.group(0) if int(m.group(1)) == index else "", text)
    text = ACTIVE_TAB.sub("", text)
    return WORKBOOK_VIEW.sub(lambda m: f'<{m.group(1)} activeTab="{index}" firstSheet="{index}"', text, count=1)


def single_sheet_copy(source: Path, sheet: str, target: Path, *, hide_others: bool = True) -> None:
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in original.infolist():
            data = original.read(info)
            if info.filename == "xl/workbook.xml":
                data = only_sheet_visible(data.decode("utf-8"), sheet, hide_others=hide_others).encode("utf-8")
            copy.writestr(info, data)


def safe_name(sheet: str) -> str:
    return re.sub(r"[^\w.-]+", "_", sheet).strip("_") or "sheet"
