"""A run the judge covered only part-way (its budget reached, or judgments failed) marks its judged
means as partial wherever they are shown: the Summary's headline, the email, and the Trend, this
week and, read back from the stored run, next week. A fully judged run shows no mark. Against the
loopback OpenAI-compatible server (tests/openai_stub.py)."""

from __future__ import annotations

import email
import email.policy
import json
import re

import pytest
from conftest import RESPONSES, TESTCASES
from openai_stub import Fault, serve_stub
from openpyxl import load_workbook

from qareport.cli import main
from qareport.exit_status import JUDGE_FAILED, REPORT_WRITTEN
from qareport.judged_metrics import JudgedMetric

CORRECTNESS_ONLY = "judge:\n  metrics: [answer_correctness]\n"


@pytest.fixture
def stub(monkeypatch):
    with serve_stub(usage="chars") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield server


def run_week(tmp_path, monkeypatch, name: str, epoch: str, *extra: str) -> tuple[int, dict]:
    """A week's run (quiet: the closing line only), its exit status and its results file."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    results = tmp_path / f"{name}.json"
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(tmp_path / f"{name}.xlsx"),
                 "--results", str(results), "--cache-path", str(tmp_path / f"{name}.sqlite3"),
                 "--judge-concurrency", "1", "--config", str(tmp_path / "qareport.yaml"), "-q", *extra])
    return code, json.loads(results.read_text())


def texts(tmp_path, name: str, sheet: str) -> list[str]:
    rows = load_workbook(tmp_path / f"{name}.xlsx")[sheet].iter_rows(values_only=True)
    return [str(value) for row in rows for value in row if isinstance(value, str)]


def headline_format(tmp_path, name: str, label: str) -> str:
    ws = load_workbook(tmp_path / f"{name}.xlsx")["Summary"]
    row = next(row for row in ws.iter_rows() if row[0].value == label and isinstance(row[1].value, (int, float)))
    return str(row[1].number_format)


def email_text(tmp_path, name: str) -> str:
    out = tmp_path / f"{name}.eml"
    assert main(["email", str(tmp_path / f"{name}.xlsx"), "--to", "team@example.com", "--eml", str(out)]) == 0
    message = email.message_from_bytes(out.read_bytes(), policy=email.policy.default)
    return "\n".join(part.get_content() for part in message.walk() if part.get_content_type() in
                     ("text/plain", "text/html"))


def trend_rows(tmp_path, name: str) -> list[dict]:
    ws = load_workbook(tmp_path / f"{name}.xlsx")["Trend"]
    header = [cell.value for cell in ws[1]]
    return [{header[i]: (cell.value, cell.number_format) for i, cell in enumerate(row)}
            for row in ws.iter_rows(min_row=2) if row[1].value]


def test_a_budget_that_stops_part_way_marks_the_judged_means_partial_in_summary_email_and_trend(
        stub, tmp_path, monkeypatch, capsys):
    (tmp_path / "qareport.yaml").write_text(CORRECTNESS_ONLY)
    code, full = run_week(tmp_path, monkeypatch, "week1", "1714557600")
    assert code == REPORT_WRITTEN
    printed = capsys.readouterr().out
    assert "mean answer F1 " in printed and "(partial)" not in printed
    assert not any("partial" in metric for metric in full["judge"]["metrics"])
    assert not any(": partial, " in text for text in texts(tmp_path, "week1", "Summary"))
    assert headline_format(tmp_path, "week1", "answer F1") == "0.00"
    assert ": partial, " not in email_text(tmp_path, "week1")

    budget = full["judge"]["usage"]["cost_usd"] / 2  # some judgments fit, not all
    (tmp_path / "qareport.yaml").write_text(CORRECTNESS_ONLY + f"  budget: {budget!r}\n")
    code, stopped = run_week(tmp_path, monkeypatch, "week2", "1715162400", "--history", str(tmp_path / "week1.xlsx"))
    assert code == JUDGE_FAILED
    assert re.search(r"; mean answer F1 \d\.\d\d \(partial\)", capsys.readouterr().out)  # the console's line
    f1 = next(metric for metric in stopped["judge"]["metrics"] if metric["key"] == "answer_f1")
    assert f1["judged"] > 0 and f1["not_judged_budget_reached"] > 0
    said = f"answer F1: partial, {f1['judged']} of {f1['judged'] + f1['not_judged']} cases judged (budget reached)"
    assert f1["partial"] == said  # the results file keeps the mark

    summary = texts(tmp_path, "week2", "Summary")
    assert any(text.startswith(f"* {said}") for text in summary)
    assert headline_format(tmp_path, "week2", "answer F1") == '0.00"*"'  # the mean itself is marked
    body = email_text(tmp_path, "week2")
    assert f"{said}: a mean over the cases judged" in body and "answer F1: " in body
    assert "no LLM judge was available" not in body

    this_week = trend_rows(tmp_path, "week2")
    assert [row["run"][0] for row in this_week] == ["week1.xlsx", "this run"]
    assert this_week[0]["answer F1"][1] == "0.00" and this_week[0]["partly judged"][0] is None
    assert this_week[1]["answer F1"][1] == '0.00"*"' and said in this_week[1]["partly judged"][0]

    (tmp_path / "qareport.yaml").write_text(CORRECTNESS_ONLY)
    for history in ("week2.xlsx", "week2.json"):  # the stored run keeps the mark, in either form
        code, _ = run_week(tmp_path, monkeypatch, "week3", "1715767200",
                           "--history", str(tmp_path / "week1.xlsx"), str(tmp_path / history))
        assert code == REPORT_WRITTEN
        next_week = {row["run"][0]: row for row in trend_rows(tmp_path, "week3")}
        assert set(next_week) == {"week1.xlsx", "week2.xlsx" if history.endswith("xlsx") else history, "this run"}
        marked = next_week["week2.xlsx" if history.endswith("xlsx") else history]
        assert marked["answer F1"][1] == '0.00"*"' and said in marked["partly judged"][0]
        assert next_week["this run"]["answer F1"][1] == "0.00" and next_week["this run"]["partly judged"][0] is None
        assert not any(": partial, " in text for text in texts(tmp_path, "week3", "Summary"))


def test_failed_judgments_mark_the_judged_means_partial_and_the_email_says_so(stub, tmp_path, monkeypatch):
    (tmp_path / "qareport.yaml").write_text(CORRECTNESS_ONLY)
    stub.script(Fault(status=500, path="chat"))  # one judgment not obtained, the rest judged
    code, document = run_week(tmp_path, monkeypatch, "week1", "1714557600", "--judge-retries", "0")
    assert code == JUDGE_FAILED
    f1 = next(metric for metric in document["judge"]["metrics"] if metric["key"] == "answer_f1")
    assert f1["not_judged"] == 1 and f1["failed"] == 0 and f1["not_judged_budget_reached"] == 0
    said = f"answer F1: partial, {f1['judged']} of {f1['judged'] + 1} cases judged (judge failed)"
    assert f1["partial"] == said
    assert any(text.startswith(f"* {said}") for text in texts(tmp_path, "week1", "Summary"))
    assert f"{said}: a mean over the cases judged" in email_text(tmp_path, "week1")


@pytest.mark.parametrize(("counts", "words"), [
    ({"judged": 40, "failed": 0, "not_judged": 20, "budget_reached": 20},
     "answer F1: partial, 40 of 60 cases judged (budget reached)"),
    ({"judged": 40, "failed": 2, "not_judged": 0}, "answer F1: partial, 40 of 42 cases judged (judgments failed)"),
    ({"judged": 40, "failed": 0, "not_judged": 5, "budget_reached": 2},
     "answer F1: partial, 40 of 45 cases judged (budget reached, judge failed)"),
    ({"judged": 40, "failed": 0, "not_judged": 0}, None),  # every case it applied to was judged
    ({"judged": 0, "failed": 0, "not_judged": 9}, None),  # no mean at all: not evaluated, not partial
])
def test_a_judged_mean_is_partial_only_when_some_but_not_all_of_its_cases_were_judged(counts, words):
    metric = JudgedMetric("answer_f1", "answer F1", 0.5 if counts["judged"] else None, not_applicable=3, **counts)
    assert metric.partial_words() == words
    assert ("partial" in metric.to_dict()) is (words is not None)
