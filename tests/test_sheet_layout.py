"""The sheets as an analyst opens them. Overview: the scanning part (id to review note) fits a
1600-pixel LibreOffice window with a baseline, a judge, both or neither; headers wrap only between
words; a review typed into any row sits at the top of the row. Statistics: a section's note stays
within the tables' width, so it never shrinks the printed page.

Widths are checked in LibreOffice's pixels as measured on its screenshots at 100 % zoom
(`scripts/render_report.py --screenshot`): a column-width unit is 7.8 pixels, the row numbers take
37 pixels on the left, the scroll bar and the sidebar 62 on the right.
"""

from __future__ import annotations

import pytest
from conftest import RESPONSES, TESTCASES
from openai_stub import serve_stub
from openpyxl import load_workbook

from qareport.cli import main
from qareport.workbook import styles

PIXELS_PER_UNIT, WINDOW, ROW_NUMBERS, RIGHT_EDGE = 7.8, 1600, 37, 62
SCANNING = ("id", "status", "macro recall", "macro precision", "steps score", "reason", "review", "review note")


@pytest.fixture(scope="module")
def overviews(tmp_path_factory):
    """The bundled run's Overview: alone, against a baseline, judged, judged against a baseline."""
    folder = tmp_path_factory.mktemp("layout")
    base = ["run", str(TESTCASES), "--responses", str(RESPONSES), "-q"]
    sheets = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", "1715162400")
        assert main([*base, "--no-llm", "--output", str(folder / "plain.xlsx")]) == 0
        assert main([*base, "--no-llm", "--output", str(folder / "baseline.xlsx"),
                     "--baseline", str(folder / "plain.xlsx")]) == 0
        with serve_stub(latency=0.0) as server:
            patch.setenv("OPENAI_BASE_URL", server.url)
            patch.setenv("OPENAI_API_KEY", "sk-test")
            judged = [*base, "--no-cache", "--judge-concurrency", "1"]
            assert main([*judged, "--output", str(folder / "judged.xlsx")]) == 0
            assert main([*judged, "--output", str(folder / "judged-baseline.xlsx"),
                         "--baseline", str(folder / "plain.xlsx")]) == 0
    for name in ("plain", "baseline", "judged", "judged-baseline"):
        sheets[name] = load_workbook(folder / f"{name}.xlsx")["Overview"]
    return sheets


def widths(ws) -> dict[int, float]:
    found = {}
    for dimension in ws.column_dimensions.values():
        for column in range(dimension.min, dimension.max + 1):
            found[column] = dimension.width
    return found


@pytest.mark.parametrize("name", ["plain", "baseline", "judged", "judged-baseline"])
def test_id_name_status_scores_reason_vs_baseline_and_the_review_fit_a_1600_pixel_window(overviews, name):
    ws = overviews[name]
    headers = [c.value for c in ws[1]]
    expected = [*SCANNING, "name / question"]
    if "baseline" in name:
        expected.append("vs baseline")
    if "judged" in name:
        expected += ["answer F1", "answer relevance"]
    last = max(headers.index(header) for header in expected) + 1
    width = widths(ws)
    right = ROW_NUMBERS + sum(width[column] for column in range(1, last + 1)) * PIXELS_PER_UNIT
    assert right <= WINDOW - RIGHT_EDGE, (name, right)
    assert headers[last - 1] == "review note"  # the review comes last of what an analyst scans
    assert width[1] >= max(styles.text_units(str(c.value)) for c in ws["A"]) + 1  # ids are never cut


@pytest.mark.parametrize("name", ["plain", "judged-baseline"])
def test_headers_wrap_only_between_words(overviews, name):
    ws = overviews[name]
    width = widths(ws)
    for column, cell in enumerate(ws[1], start=1):
        assert width[column] >= styles.header_units(cell.value), cell.value  # "INDICATOR recall" not "INDICATO/R"
    headers = [c.value for c in ws[1]]
    assert width[headers.index("INDICATOR recall") + 1] >= 13


def test_a_review_typed_into_any_row_sits_at_the_top_of_the_row(overviews):
    ws = overviews["baseline"]
    headers = [c.value for c in ws[1]]
    for header in ("review", "review note"):
        column = headers.index(header) + 1
        for row in range(2, ws.max_row + 1):
            cell = ws.cell(row, column)
            assert cell.alignment.vertical == "top", (header, row)  # an empty cell, ready for the typing
        assert ws.cell(2, column).value is None
    assert ws.cell(2, headers.index("review note") + 1).alignment.wrap_text


def test_statistics_notes_stay_within_the_width_of_the_tables_and_headers_keep_their_words(overviews):
    ws = overviews["judged-baseline"].parent["Statistics"]
    width = widths(ws)
    notes = [row[0] for row in ws.iter_rows(min_col=1, max_col=1) if row[0].font.i and row[0].value]
    assert len(notes) >= 8
    dimension_table = sum(width[column] for column in range(1, 9))  # the Data Query table: 8 columns
    for cell in notes:
        assert styles.text_units(cell.value) * 0.9 <= dimension_table, cell.value  # italics run narrower
    headers = [cell for row in ws.iter_rows() for cell in row
               if cell.fill.fgColor.rgb and str(cell.fill.fgColor.rgb).endswith("305496") and cell.value]
    assert headers
    for cell in headers:
        assert width.get(cell.column, 8.43) >= styles.header_units(cell.value, filter_button=False), cell.value


def test_why_metrics_were_not_evaluated_ends_where_the_tables_end(overviews):
    ws = overviews["plain"].parent["Statistics"]
    width = widths(ws)
    rows = [row for row in ws.iter_rows(min_col=1, max_col=2, values_only=True)]
    start = rows.index(("metrics", "why")) + 1
    reasons = [why for _, why in rows[start:] if why]
    assert " ".join(reasons).startswith("The LLM judge is turned off")
    tables = sum(width[column] for column in range(1, 9))
    assert len(reasons) >= 2 and all(width[1] + styles.text_units(why) <= tables for why in reasons)
