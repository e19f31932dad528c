"""End to end: runs with attempts per case against a baseline with attempts, read back from the
workbook (openpyxl), the stored run and the email (`qareport email ... --eml`)."""

import email
import email.policy
import json
import textwrap

import pytest
from conftest import link_by_id
from openpyxl import load_workbook

from qareport.cli import main
from qareport.run_reading import read_run

CASE = """\
id: {id}
name: case {id}
tags: [imf]
conversation:
- role: user
  content: Population of Mexico?
  target:
    indicator_selection:
    - dataset_id: IMF.RES:WEO
      dimensions:
      - dimension_name: INDICATOR
        values:
        - id: LP
          name: Population
"""
RIGHT = [{"id": "LP", "name": "Population"}]
WRONG = [{"id": "NGDP", "name": "GDP"}]


def write_run(folder, passes):
    """Test cases and one responses file per attempt (attempt N in attempt-N.jsonl); P: the target
    term selected (recall and precision 1), F: another one (0)."""
    folder.mkdir(exist_ok=True)
    (folder / "cases.yaml").write_text("---\n".join(textwrap.dedent(CASE.format(id=i)) for i in passes), "utf-8")
    attempts = max(len(v) for v in passes.values())
    for number in range(1, attempts + 1):
        lines = [json.dumps({"test_case_id": case_id, "attempt": number, "indicator_selection": [
            {"dataset_id": "IMF.RES:WEO", "dimensions": [
                {"dimension_name": "INDICATOR", "values": RIGHT if verdicts[number - 1] == "P" else WRONG}]}]})
                 for case_id, verdicts in passes.items() if number <= len(verdicts)]
        (folder / "responses").mkdir(exist_ok=True)
        (folder / "responses" / f"attempt-{number}.jsonl").write_text("".join(line + "\n" for line in lines), "utf-8")
    return folder


def run(folder, *extra):
    out = folder / "report.xlsx"
    code = main(["run", str(folder / "cases.yaml"), "-r", str(folder / "responses"), "-o", str(out), "--quiet",
                 *extra])
    return code, out


def summary_text(workbook):
    return " ".join(str(value) for row in workbook["Summary"].iter_rows(values_only=True)
                    for value in row if isinstance(value, str))


def changes(workbook):
    rows = list(workbook["Changes"].iter_rows(values_only=True))
    header = rows[0]
    return {(link_by_id(r["case id"])[2], r["change"]) for row in rows[1:] if (r := dict(zip(header, row)))["case id"]}


def emailed(report, tmp_path):
    out = tmp_path / "weekly.eml"
    assert main(["email", str(report), "--to", "team@example.com", "--eml", str(out)]) == 0
    message = email.message_from_bytes(out.read_bytes(), policy=email.policy.default)
    return message, message.get_body(preferencelist=("plain",)).get_content()


def test_three_attempts_against_three_list_a_case_that_failed_every_attempt_as_regressed(tmp_path, capsys):
    baseline = write_run(tmp_path / "week1", {"steady": "PPP", "dropped": "PPP", "flaky": "PFP"})
    assert run(baseline)[0] == 0
    current = write_run(tmp_path / "week2", {"steady": "PPP", "dropped": "FFF", "flaky": "FPF"})
    code, report = run(current, "--baseline", str(baseline / "report.xlsx"), "--fail-on-regression")
    out = capsys.readouterr().out
    assert "since the baseline: 1 regressed, 0 improved, 1 moved within noise" in out
    # one such case among two that could separate by luck (1 in 20 each) is not more than luck explains
    assert code == 0
    workbook = load_workbook(report)
    assert changes(workbook) == {("dropped", "regression"), ("flaky", "moved within noise")}
    text = summary_text(workbook)
    assert "What got worse (1)" in text and "Moved within noise (1)" in text
    assert "about 0.1 would be listed by luck alone" in text
    overview = {row[0]: row for row in workbook["Overview"].iter_rows(values_only=True)}
    header = overview["id"]
    assert overview["dropped"][header.index("attempts passed")] == "0/3"
    assert overview["flaky"][header.index("attempts passed")] == "1/3"
    assert overview["flaky"][header.index("flaky")] == "flaky"
    stored = {row.case_id: row for row in read_run(report).cases}
    assert stored["dropped"].attempts == {"macro_precision": [0.0] * 3, "macro_recall": [0.0] * 3,
                                             "dataset_precision": [1.0] * 3, "dataset_recall": [1.0] * 3}
    assert stored["flaky"].attempts["macro_recall"] == [0.0, 1.0, 0.0]
    message, body = emailed(report, tmp_path)
    assert "WHAT GOT WORSE (1)" in body and "MOVED WITHIN NOISE (1)" in body
    assert message["Subject"].startswith("1 regression")


def test_a_case_that_went_from_every_attempt_passing_to_none_fails_the_gate_among_steady_cases(tmp_path, capsys):
    baseline = write_run(tmp_path / "week1", {"steady": "PPP", "dropped": "PPP"})
    assert run(baseline)[0] == 0
    current = write_run(tmp_path / "week2", {"steady": "PPP", "dropped": "FFF"})
    code, report = run(current, "--baseline", str(baseline / "report.xlsx"), "--fail-on-regression")
    out = capsys.readouterr().out
    # one answer: the case regressed, and why the suite's means (two cases) do not show it
    verdict = load_workbook(report)["Summary"]["A3"].value
    assert verdict.startswith("1 regression, macro precision 0.50 (\u22120.50)")
    assert verdict.endswith("; 1 case regressed on every attempt; the suite's means cannot resolve a change at this "
                            "size (2 cases in 2 clusters)")
    message, _ = emailed(report, tmp_path)
    assert message["Subject"].startswith("1 regression, macro precision 0.50 (\u22120.50)")  # the reason: if it fits
    assert code == 1 and "GATE FAILED: --fail-on-regression: 1 case(s) regressed since the baseline; 1 of them on every " \
        "attempt, about 0.05 expected by chance" in out


@pytest.mark.parametrize(("steady_before", "dropped_after", "flaky_before", "flaky_after"), [
    ("PPPP", "FFFF", "PFPP", "PFFP"),  # 4 against 4: 2 / C(8, 4) = 0.029 is reachable
    ("PPPPP", "FFFFF", "PFPFP", "FPFFP"),  # 5 against 5 (issue 20's planted cases)
])
def test_with_four_or_more_attempts_a_consistent_drop_is_a_regression_and_a_flaky_case_moved_within_noise(
        tmp_path, steady_before, dropped_after, flaky_before, flaky_after):
    baseline = write_run(tmp_path / "week1", {"steady": steady_before, "dropped": steady_before,
                                              "flaky": flaky_before})
    assert run(baseline)[0] == 0
    current = write_run(tmp_path / "week2", {"steady": steady_before, "dropped": dropped_after,
                                             "flaky": flaky_after})
    code, report = run(current, "--baseline", str(baseline / "report.xlsx"), "--fail-on-regression")
    assert code == 1  # the gate: one regression
    workbook = load_workbook(report)
    assert changes(workbook) == {("dropped", "regression"), ("flaky", "moved within noise")}
    text = summary_text(workbook)
    assert "What got worse (1)" in text and "Moved within noise (1)" in text
    assert "One run per case" not in text
    message, body = emailed(report, tmp_path)
    assert "WHAT GOT WORSE (1)" in body and "case dropped" in body.split("WHAT GOT BETTER")[0]
    assert "MOVED WITHIN NOISE (1)" in body
    assert "1 regression" in message["Subject"]


def test_without_attempts_the_lists_are_as_before_and_say_one_run_cannot_tell_a_change_from_a_flip(tmp_path):
    baseline = write_run(tmp_path / "week1", {"steady": "P", "dropped": "P"})
    assert run(baseline)[0] == 0
    current = write_run(tmp_path / "week2", {"steady": "P", "dropped": "F"})
    code, report = run(current, "--baseline", str(baseline / "report.xlsx"))
    assert code == 0
    workbook = load_workbook(report)
    assert changes(workbook) == {("dropped", "regression")}
    assert "One run per case cannot tell a change from a flip" in summary_text(workbook)
    assert "attempts" not in {cell.value for cell in workbook["qareport_results"][1]}
    assert read_run(report).cases[0].attempts is None


def test_attempts_too_many_for_one_cell_are_stored_across_cells_and_read_back_whole(tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "cases.yaml").write_text(textwrap.dedent(CASE.format(id="many")), "utf-8")
    verdicts = ["P" if number % 3 else "F" for number in range(3_000)]
    (folder / "responses").mkdir()
    (folder / "responses" / "all.jsonl").write_text("".join(json.dumps({
        "test_case_id": "many", "attempt": number, "indicator_selection": [{"dataset_id": "IMF.RES:WEO", "dimensions": [
            {"dimension_name": "INDICATOR", "values": RIGHT if verdict == "P" else WRONG}]}]}) + "\n"
        for number, verdict in enumerate(verdicts, start=1)), "utf-8")
    code, report = run(folder)
    assert code == 0
    stored = load_workbook(report, read_only=True)["qareport_results"]
    header, row = list(stored.iter_rows(values_only=True))[:2]
    width = len([name for name in header if name is not None])
    assert any(value is not None for value in row[width:])  # the attempts continue after the last column
    attempts = read_run(report).cases[0].attempts
    assert attempts is not None
    exp = [1.0 if verdict == "P" else 0.0 for verdict in verdicts]
    assert attempts["macro_recall"] == exp
