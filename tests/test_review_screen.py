"""What an analyst reviewing a week sees first: the Summary's verdict, headline table, lists of
moved cases and what the run can see within the first 40 rows, and an Overview whose regressed
cases come first, with the review columns before the attempt columns."""

from openpyxl import load_workbook
from test_attempts_end_to_end import run, write_run

from qareport.workbook.summary_grid import LEFT_COLUMNS

FIRST_SCREEN_ROWS = 40  # a 1600×1000 LibreOffice window at 100 %


def _weeks(tmp_path):
    """Nine steady cases and, after them in file order, two that failed every attempt this week."""
    last = {f"case-{n}": "PPP" for n in range(9)} | {"dropped-a": "PPP", "dropped-b": "PPP", "back": "FFF"}
    this = {f"case-{n}": "PPP" for n in range(9)} | {"dropped-a": "FFF", "dropped-b": "FFF", "back": "PPP"}
    baseline = write_run(tmp_path / "week1", last)
    assert run(baseline)[0] == 0
    current = write_run(tmp_path / "week2", this)
    code, report = run(current, "--baseline", str(baseline / "report.xlsx"))
    assert code == 0
    return load_workbook(report), list(this)


def test_the_summary_shows_the_verdict_the_headline_and_the_moved_cases_within_the_first_screen(tmp_path):
    workbook, _ = _weeks(tmp_path)
    rows = [row[:LEFT_COLUMNS] for row in workbook["Summary"].iter_rows(values_only=True)]
    first = {row[0]: number for number, row in enumerate(rows, start=1) if isinstance(row[0], str)}
    assert first["How good is it"] < first["What got worse (2)"] < first["What got better (1)"]
    can_see = next(number for number, row in enumerate(rows, start=1)
                   if isinstance(row[0], str) and row[0].startswith("What this run can see: "))
    better = first["What got better (1)"]
    last_of_better = better + 2 + 2  # title, header, then the one case's name and what moved
    assert can_see < FIRST_SCREEN_ROWS and last_of_better <= FIRST_SCREEN_ROWS
    # each figure once: one table holds the change, its interval and its decision
    assert "How sure is it" not in first
    header = next(row for row in rows if row[0] == "metric")
    assert header.count("change") == 1 and header.count("vs noise") == 1
    recall = next(row for row in rows if row[0] == "macro recall")
    assert recall[header.index("vs noise")].startswith(("within noise", "beyond noise"))
    assert "–" in recall[header.index("change") + 1]  # the change's interval, beside it
    # the rest follows the lists
    assert first["How consistent is it"] > better


def test_the_summary_prints_one_page_wide_at_a_legible_scale(tmp_path):
    workbook, _ = _weeks(tmp_path)
    summary = workbook["Summary"]
    assert summary.sheet_properties.pageSetUpPr.fitToPage
    assert summary.page_setup.fitToWidth in (None, 1) and summary.page_setup.fitToHeight == 0


def test_the_overview_lists_the_regressed_cases_first_then_the_rest_in_file_order(tmp_path):
    workbook, in_file_order = _weeks(tmp_path)
    ids = [row[0] for row in workbook["Overview"].iter_rows(min_row=2, values_only=True)]
    assert sorted(ids[:2]) == ["dropped-a", "dropped-b"]
    assert ids[2:] == [case for case in in_file_order if not case.startswith("dropped")]


def test_the_overview_puts_the_attempt_columns_after_the_review_columns(tmp_path):
    workbook, _ = _weeks(tmp_path)
    header = [cell.value for cell in workbook["Overview"][1]]
    assert header.index("review") < header.index("review note") < header.index("attempts passed")
    assert header.index("vs baseline") < header.index("review")


def test_a_change_that_shows_as_zero_is_zero_never_minus_zero_or_a_rounding_residue():
    from qareport.workbook.styles import as_shown

    residue = (0.1 + 0.2) - 0.3  # 5.6e-17, as a difference of float means leaves it
    assert residue != 0 and as_shown(residue) == 0.0 and str(as_shown(-1e-17)) == "0.0"
    assert as_shown(-0.004) == 0.0 and as_shown(-0.006) == -0.006 and as_shown(None) is None


