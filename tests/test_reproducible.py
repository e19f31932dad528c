"""With SOURCE_DATE_EPOCH set, the same inputs and options give a byte-identical workbook."""

from __future__ import annotations

import zipfile
from pathlib import Path

from qareport.cli import main

ROOT = Path(__file__).resolve().parents[1]
TESTCASES, RESPONSES = ROOT / "testcases", ROOT / "testcases" / "responses"
EPOCH = "1715162400"  # 2024-05-08 10:00:00 UTC


def run(output: Path, *extra: str) -> None:
    assert main(["run", str(TESTCASES), "--responses", str(RESPONSES), "--output", str(output), "--no-llm",
                 "-q", *extra]) == 0


def test_two_runs_with_source_date_epoch_give_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1714557600")
    run(tmp_path / "baseline.xlsx")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    # every sheet, the charts and the hidden sheets, so that nothing escapes the comparison
    options = ("--baseline", str(tmp_path / "baseline.xlsx"), "--history", str(tmp_path / "baseline.xlsx"))
    first, second = tmp_path / "first" / "report.xlsx", tmp_path / "second" / "report.xlsx"
    for output in (first, second):  # different folders: the output path must not leak into the file
        output.parent.mkdir()
        run(output, *options)
    assert first.read_bytes() == second.read_bytes()


def test_the_save_time_is_replaced_by_the_run_time_in_properties_and_kept_out_of_zip_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    out = tmp_path / "report.xlsx"
    run(out)
    with zipfile.ZipFile(out) as package:
        entries = package.infolist()
        core = package.read("docProps/core.xml").decode()
    assert "<dcterms:created xsi:type=\"dcterms:W3CDTF\">2024-05-08T10:00:00Z</dcterms:created>" in core
    assert "<dcterms:modified xsi:type=\"dcterms:W3CDTF\">2024-05-08T10:00:00Z</dcterms:modified>" in core
    # XlsxWriter dates every zip entry with one fixed date of its own (1980, not the run's date):
    # what matters is that no entry carries the time of saving
    dates = {entry.date_time for entry in entries}
    assert len(dates) == 1 and max(dates) <= (2024, 5, 8, 10, 0, 0)
    names = [entry.filename for entry in entries]
    # a fixed order (the same in every run: see the test above), [Content_Types].xml first as Office writes it
    assert names[0] == "[Content_Types].xml" and len(set(names)) == len(names)


def test_nothing_but_the_report_is_left_in_the_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    run(tmp_path / "report.xlsx")
    assert [p.name for p in tmp_path.iterdir()] == ["report.xlsx"]
