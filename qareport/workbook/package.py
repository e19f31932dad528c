"""The saved file, finished: reproducible, and with its text in one shared-string table.

openpyxl writes every string inline in its cell and stamps the save time into docProps/core.xml
and into each zip entry. After it has saved, the package is rewritten once:

- strings move into `xl/sharedStrings.xml`, as Excel itself writes them: a case id repeated on
  every Details row is stored once, which makes a 10,000-case report markedly smaller (see
  benchmarks/bench_workbook.py), and it is the form every reader and previewer knows best;
- the core properties get the workbook's own dates back (the run's date, `SOURCE_DATE_EPOCH` when
  set), every entry that date, and the entries a fixed order ([Content_Types].xml first, as Office
  writes it; then by name), so the same inputs and options give the same bytes.

The rewriting works on openpyxl's own output only; any form it does not recognise is left as it is.
"""

from __future__ import annotations

import io
import re
import zipfile
from datetime import datetime
from pathlib import Path

from openpyxl.packaging.core import DocumentProperties
from openpyxl.xml.functions import tostring

CORE_PROPERTIES = "docProps/core.xml"
CONTENT_TYPES = "[Content_Types].xml"
WORKBOOK_RELS = "xl/_rels/workbook.xml.rels"
SHARED_STRINGS = "xl/sharedStrings.xml"
WORKSHEET = re.compile(r"xl/worksheets/sheet(\d+)\.xml")
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry can carry

# `<c r="A2" t="inlineStr"><is><t>text</t></is></c>`: cell text is XML-escaped, so it has no '<'
INLINE_STRING = re.compile(rb' t="inlineStr"><is><t( xml:space="preserve")?>([^<]*)</t></is>')
SST_TYPE = b"application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
SST_RELATIONSHIP = b"http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings"
SST_NAMESPACE = b"http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def share_strings(parts: dict[str, bytes]) -> None:
    """Move the inline strings of every worksheet into one shared-string table (in place)."""
    if SHARED_STRINGS in parts:
        return  # already has a table: leave it alone rather than merge
    index: dict[tuple[bytes, bool], int] = {}
    uses = 0

    def shared(match: re.Match[bytes]) -> bytes:
        nonlocal uses
        uses += 1
        key = (match.group(2), match.group(1) is not None)
        return b' t="s"><v>%d</v>' % index.setdefault(key, len(index))

    worksheets = sorted((name for name in parts if WORKSHEET.fullmatch(name)),
                        key=lambda name: int(WORKSHEET.fullmatch(name).group(1)))
    for name in worksheets:
        parts[name] = INLINE_STRING.sub(shared, parts[name])
    if not index:
        return
    items = b"".join(
        b'<si><t xml:space="preserve">%s</t></si>' % text if preserve else b"<si><t>%s</t></si>" % text
        for text, preserve in index
    )
    parts[SHARED_STRINGS] = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        b'<sst xmlns="%s" count="%d" uniqueCount="%d">%s</sst>' % (SST_NAMESPACE, uses, len(index), items)
    )
    parts[CONTENT_TYPES] = parts[CONTENT_TYPES].replace(
        b"</Types>", b'<Override PartName="/%s" ContentType="%s"/></Types>' % (SHARED_STRINGS.encode(), SST_TYPE)
    )
    parts[WORKBOOK_RELS] = parts[WORKBOOK_RELS].replace(
        b"</Relationships>",
        b'<Relationship Type="%s" Target="/%s" Id="rIdSharedStrings"/></Relationships>'
        % (SST_RELATIONSHIP, SHARED_STRINGS.encode()),
    )


def finish_package(path: str | Path, properties: DocumentProperties) -> None:
    """Rewrite a workbook openpyxl saved: shared strings, the properties' own dates, fixed entry
    dates and order."""
    moment = properties.created or datetime(1980, 1, 1)
    properties.modified = moment
    date_time = max(ZIP_EPOCH, moment.timetuple()[:6])
    with zipfile.ZipFile(path) as package:
        parts = {info.filename: package.read(info) for info in package.infolist()}
    parts[CORE_PROPERTIES] = tostring(properties.to_tree())
    share_strings(parts)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        for name in sorted(parts, key=lambda name: (name != CONTENT_TYPES, name)):
            entry = zipfile.ZipInfo(name, date_time=date_time)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.create_system = 0
            entry.external_attr = 0o644 << 16
            package.writestr(entry, parts[name])
    Path(path).write_bytes(buffer.getvalue())
