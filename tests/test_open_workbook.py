"""An analyst who has last week's workbook open in LibreOffice (or Excel) when the job writes over it
is warned: the program's lock file beside the output is found, its owner named, and what will happen
said. The report is written all the same (a scheduled job never waits for a person)."""

from __future__ import annotations

from conftest import RESPONSES, TESTCASES

from qareport.cli import main
from qareport.preflight import open_elsewhere


def run(output) -> int:
    return main(["run", str(TESTCASES), "--responses", str(RESPONSES), "--output", str(output), "--no-llm", "-q"])


def test_a_libreoffice_lock_beside_the_output_is_a_warning_naming_who_has_it_open(tmp_path, capsys):
    out = tmp_path / "week.xlsx"
    assert run(out) == 0
    capsys.readouterr()
    (tmp_path / ".~lock.week.xlsx#").write_text(",Jane Analyst,qa-laptop,28.11.2026 09:12,file:///home/jane;")
    before = out.stat().st_mtime_ns
    assert run(out) == 0
    err = capsys.readouterr().err
    assert f"qareport: {out} is open in LibreOffice by Jane Analyst (.~lock.week.xlsx# is beside it)" in err
    assert "it is replaced all the same" in err and "saving there would write the old report" in err
    assert out.stat().st_mtime_ns >= before and out.is_file()


def test_an_excel_owner_file_is_a_warning_too_and_no_lock_is_none(tmp_path):
    out = tmp_path / "week.xlsx"
    assert open_elsewhere(out) is None
    (tmp_path / "~$week.xlsx").write_bytes(b"\x04jane")
    assert open_elsewhere(out).startswith(f"{out} is open in Excel by someone (~$week.xlsx is beside it)")
    (tmp_path / ".~lock.other.xlsx#").write_text(",Bob,h,d,u;")  # another workbook's lock says nothing of this one
    assert open_elsewhere(tmp_path / "month.xlsx") is None
