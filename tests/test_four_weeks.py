"""Four weeks of an analyst's suite, end to end through `qareport.cli.main`: 20 indicator-selection
cases in 5 templates with 4 attempts and 10 Q&A questions in 3 templates with 3 attempts, judged by
the loopback OpenAI-compatible stub, each week's email sent to an SMTP server on loopback.

Week 1 is the baseline. Week 2: three cases fail every attempt that passed every attempt, flaky cases
move within their attempts, and one test file holds a merge-conflict marker. Week 3: the analyst's
LibreOffice re-save of week 2 is the baseline, the file is fixed, and a judge budget stops part way.
Week 4: the regressions are fixed. Each week is read back from the workbook, the email and the exit
status (issue 28)."""

from __future__ import annotations

import contextlib
import email
import email.policy
import io
import json
import re
import socket
import subprocess
import textwrap
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml
from aiosmtpd.controller import Controller
from conftest import link_by_id
from openai_stub import serve_stub
from openpyxl import load_workbook
from test_libreoffice import require

from qareport.cli import main
from qareport.exit_status import GATE_FAILED, JUDGE_FAILED, REPORT_WRITTEN

EPOCHS = ("1714557600", "1715162400", "1715767200", "1716372000")  # four Wednesdays in May 2024
TEMPLATES = {"population": "LP", "gdp": "NGDPD", "inflation": "PCPIPCH", "unemployment": "LUR", "debt": "GGXWDG"}
COUNTRIES = ("MEX", "NOR", "FRA", "JPN")
WRONG_INDICATOR, WRONG_COUNTRY = "BCA", "ITA"
QA_TEMPLATES = {"substation_transformers": 4, "line_voltage": 3, "station_owner": 3}

# a case's attempts in a week: P passes (its target selected, or the reference answer given), F fails
# the regressed question is in the first template: a budget judges the first cases in the test cases' order
REGRESSED = ("population-MEX", "debt-NOR", "substation_transformers-2")  # every attempt passed in week 1, none in week 2
FLAKY = ("gdp-JPN", "unemployment-FRA", "station_owner-1")  # pass and fail within a week, differently each week
BROKEN_FILE, CONFLICTED = "inflation", "inflation-FRA"  # week 2: a merge-conflict marker around this case
WEEK_1_PATTERNS = {"gdp-JPN": "PFPP", "unemployment-FRA": "PPFF", "station_owner-1": "PFP", CONFLICTED: "FFFF"}
WEEK_2_PATTERNS = {"gdp-JPN": "PFFP", "unemployment-FRA": "PPPF", "station_owner-1": "FFP", CONFLICTED: "FFFF",
                   **{case_id: "FFFF"[:3 if "_" in case_id else 4] for case_id in REGRESSED}}
WEEK_3_PATTERNS = {**WEEK_2_PATTERNS, CONFLICTED: "PPPP"}  # the case not loaded in week 2 now passes
WEEK_4_PATTERNS = {**WEEK_1_PATTERNS, CONFLICTED: "PPPP"}  # the regressions fixed


def indicator_ids() -> list[str]:
    return [f"{template}-{country}" for template in TEMPLATES for country in COUNTRIES]


def qa_ids() -> list[str]:
    return [f"{template}-{number}" for template, size in QA_TEMPLATES.items() for number in range(1, size + 1)]


def indicator_case(case_id: str) -> str:
    template, country = case_id.split("-")
    return textwrap.dedent(f"""\
        id: {case_id}
        name: {case_id}
        tags: [imf, {template}]
        cluster: {template}
        conversation:
        - role: user
          content: {template} of {country}?
          target:
            indicator_selection:
            - dataset_id: IMF.RES:WEO
              dimensions:
              - dimension_name: INDICATOR
                values:
                - id: {TEMPLATES[template]}
              - dimension_name: COUNTRY
                values:
                - id: {country}
        """)


def reference_answer(case_id: str) -> str:
    return f"{case_id} first fact; {case_id} second fact"


def write_suite(folder: Path, *, conflicted: bool) -> Path:
    """The test cases: one file per indicator template and one Q&A dataset; with `conflicted`, the
    inflation file (a file of several documents) holds a merge conflict inside one of its cases."""
    cases = folder / "testcases"
    cases.mkdir(parents=True)
    for template in TEMPLATES:
        if template == BROKEN_FILE:  # several YAML documents, the other files a list of cases
            text = "---\n".join(indicator_case(f"{template}-{country}") for country in COUNTRIES)
        else:
            text = "".join(textwrap.indent("- " + indicator_case(f"{template}-{country}"), "  ")[2:]
                           for country in COUNTRIES)
        if conflicted and template == BROKEN_FILE:
            ours = f"  content: {BROKEN_FILE} of FRA?\n"  # two edits of one line, merged unresolved
            theirs = f"  content: {BROKEN_FILE} rate of FRA?\n"
            text = text.replace(ours, "<<<<<<< HEAD\n" + ours + "=======\n" + theirs + ">>>>>>> reword\n")
            assert "<<<<<<<" in text
        (cases / f"{template}.yaml").write_text(text, "utf-8")
    dataset = [{"template_id": template, "questions": [
        {"id": case_id, "question_text": f"Question {case_id}?", "reference_answer": reference_answer(case_id)}
        for case_id in qa_ids() if case_id.startswith(template + "-")]} for template in QA_TEMPLATES]
    (cases / "qa.yaml").write_text(yaml.safe_dump(dataset, sort_keys=False), "utf-8")
    return cases


def write_responses(folder: Path, patterns: dict[str, str]) -> Path:
    """One responses file per attempt and kind: 4 attempts of each indicator case, 3 of each
    question; a case not in `patterns` passes every attempt."""
    responses = folder / "responses"
    responses.mkdir(parents=True)
    for attempt in range(1, 5):
        lines = []
        for case_id in indicator_ids():
            passed = patterns.get(case_id, "PPPP")[attempt - 1] == "P"
            template, country = case_id.split("-")
            lines.append(json.dumps({"test_case_id": case_id, "attempt": attempt, "indicator_selection": [
                {"dataset_id": "IMF.RES:WEO", "dimensions": [
                    {"dimension_name": "INDICATOR", "values": [{"id": TEMPLATES[template] if passed else WRONG_INDICATOR}]},
                    {"dimension_name": "COUNTRY", "values": [{"id": country if passed else WRONG_COUNTRY}]}]}]}))
        (responses / f"indicators-{attempt}.jsonl").write_text("".join(line + "\n" for line in lines), "utf-8")
    for attempt in range(1, 4):
        records = [{"question_id": case_id, "attempt": attempt,
                    "actual_answer": reference_answer(case_id) if patterns.get(case_id, "PPP")[attempt - 1] == "P"
                    else "something else entirely"} for case_id in qa_ids()]
        (responses / f"qa-{attempt}.json").write_text(json.dumps(records), "utf-8")
    return responses


class Inbox:
    """The messages the loopback SMTP server received."""

    def __init__(self) -> None:
        self.envelopes: list = []

    async def handle_DATA(self, server, session, envelope):
        self.envelopes.append(envelope)
        return "250 Message accepted"

    def take(self) -> email.message.EmailMessage:
        """The one message received since the last take."""
        (envelope,) = self.envelopes
        self.envelopes.clear()
        return email.message_from_bytes(envelope.original_content, policy=email.policy.default)


@dataclass(frozen=True)
class Week:
    code: int
    report: Path
    results: dict
    message: email.message.EmailMessage
    printed: str
    resaved: Path | None = None  # the workbook as the analyst saved it again in LibreOffice

    @property
    def body(self) -> str:
        return self.message.get_body(preferencelist=("plain",)).get_content()


@contextlib.contextmanager
def capture():
    """What a run prints to stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def resave_in_libreoffice(report: Path, folder: Path) -> Path:
    """The analyst opens the workbook in LibreOffice and saves it as .xlsx again."""
    soffice = require("soffice")
    subprocess.run([soffice, f"-env:UserInstallation={(folder / 'lo-profile').as_uri()}", "--headless", "--norestore",
                    "--convert-to", "xlsx", "--outdir", str(folder / "saved"), str(report)],
                   capture_output=True, timeout=300, check=True)
    return folder / "saved" / report.name


@pytest.fixture(scope="module")
def weeks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("four-weeks")
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    config = folder / "qareport.yaml"
    config.write_text("judge:\n  metrics: [answer_correctness]\n", "utf-8")
    done: list[Week] = []

    def run_week(number: int, patterns: dict[str, str], *extra: str, conflicted: bool = False) -> Week:
        """The week's run, with its email sent; its exit status, workbook, results file, message and
        the lines it printed."""
        week = folder / f"week{number}"
        report, results = folder / f"week{number}.xlsx", folder / f"week{number}.json"
        with pytest.MonkeyPatch.context() as patch, capture() as (out, err):
            patch.setenv("SOURCE_DATE_EPOCH", EPOCHS[number - 1])
            patch.setenv("QAREPORT_SMTP_FROM", "qa-bot@example.com")
            code = main(["run", str(write_suite(week, conflicted=conflicted)),
                         "-r", str(write_responses(week, patterns)), "-o", str(report), "--results", str(results),
                         "--config", str(config), "--cache-path", str(week / "judge.sqlite3"),
                         "--judge-concurrency", "1", "-q",
                         "--email-to", "team@example.com", "--smtp-host", "127.0.0.1",
                         "--smtp-port", str(controller.port), "--smtp-security", "none", *extra])
        return Week(code, report, json.loads(results.read_text("utf-8")), inbox.take(), out.getvalue() + err.getvalue())

    try:
        with serve_stub(usage="chars") as server, pytest.MonkeyPatch.context() as patch:
            patch.setenv("OPENAI_BASE_URL", server.url)
            patch.setenv("OPENAI_API_KEY", "sk-test")
            done.append(run_week(1, WEEK_1_PATTERNS))
            done.append(run_week(2, WEEK_2_PATTERNS, "--fail-on-regression", "--baseline", str(done[0].report),
                                 conflicted=True))
            resaved = resave_in_libreoffice(done[1].report, folder)
            done[1] = replace(done[1], resaved=resaved)
            budget = done[1].results["judge"]["usage"]["cost_usd"] / 2  # some of the week's judgments fit
            done.append(run_week(3, WEEK_3_PATTERNS, "--fail-on-regression", "--baseline", str(resaved),
                                 "--judge-budget", repr(budget)))
            done.append(run_week(4, WEEK_4_PATTERNS, "--fail-on-regression", "--baseline", str(done[2].report),
                                 "--history", str(done[0].report), str(resaved), str(done[2].report)))
    finally:
        controller.stop()
    return done


def summary_rows(report: Path) -> list[tuple]:
    return list(load_workbook(report)["Summary"].iter_rows(values_only=True))


def summary_text(report: Path) -> str:
    return "\n".join(str(value) for row in summary_rows(report) for value in row if isinstance(value, str))


HEADINGS = ("What got worse", "What got better", "Moved within noise", "A case with attempts", "How consistent is it")


def listed(report: Path, title: str) -> dict[str, int]:
    """Case id -> Summary row (from 1) of each case linked under the heading that starts with `title`."""
    rows = summary_rows(report)
    start = next(index for index, row in enumerate(rows) if str(row[0]).startswith(title))
    found: dict[str, int] = {}
    for number, row in enumerate(rows[start + 1:], start=start + 2):
        if isinstance(row[0], str) and row[0].startswith(HEADINGS):
            break
        if (link := link_by_id(row[0])) is not None:
            found[link[2]] = number
    return found


def headline(report: Path) -> dict[str, dict[str, object]]:
    """Metric -> its headline row of the Summary, by column heading (the comparison's columns)."""
    rows = summary_rows(report)
    at = next(index for index, row in enumerate(rows) if row[:2] == ("metric", "mean"))
    header = rows[at]
    lines = {}
    for row in rows[at + 1:]:
        if not isinstance(row[1], (int, float)):
            break
        lines[row[0]] = {str(name): value for name, value in zip(header, row) if name is not None}
    return lines


def changes(report: Path) -> dict[str, set[tuple[str, str]]]:
    """Case id -> its lines in the Changes sheet: (change, reason)."""
    rows = list(load_workbook(report)["Changes"].iter_rows(values_only=True))
    header = rows[0]
    kinds: dict[str, set[tuple[str, str]]] = {}
    for row in rows[1:]:
        line = dict(zip(header, row))
        if line["case id"]:
            case_id = (link_by_id(line["case id"]) or ("", "", str(line["case id"])))[2]
            kinds.setdefault(case_id, set()).add((line["change"], str(line["reason"] or "")))
    return kinds


def overview_ids(report: Path) -> set[str]:
    return {str(row[0]) for row in load_workbook(report)["Overview"].iter_rows(min_row=2, values_only=True) if row[0]}


def kinds_of(lines: set[tuple[str, str]]) -> set[str]:
    return {kind for kind, _ in lines}


def test_week_1_is_the_baseline_of_two_kinds_with_four_and_three_attempts(weeks):
    week = weeks[0]
    assert week.code == REPORT_WRITTEN
    assert overview_ids(week.report) == set(indicator_ids()) | set(qa_ids())
    consistency = {row[6]: row[:4] for row in summary_rows(week.report) if row[6] in ("conversation cases", "Q&A questions")}
    assert consistency["conversation cases"][0] == 4 and consistency["conversation cases"][3] == 20
    assert consistency["Q&A questions"][0] == 3 and consistency["Q&A questions"][3] == 10
    assert [part.get_filename() for part in week.message.iter_attachments()] == ["week1.xlsx"]


def test_week_2_names_the_three_cases_that_failed_every_attempt_and_fails_the_gate(weeks):
    week = weeks[1]
    assert week.code == GATE_FAILED
    assert "GATE FAILED: --fail-on-regression: 3 case(s) regressed since the baseline; 3 of them on every attempt" \
        in week.printed
    worse = listed(week.report, "What got worse (3)")
    assert set(worse) == set(REGRESSED) and max(worse.values()) <= 40  # on the first screen
    assert all(kinds_of(changes(week.report)[case_id]) == {"regression"} for case_id in REGRESSED)
    body = week.body.split("WHAT GOT BETTER")[0]
    assert "WHAT GOT WORSE (3)" in body
    assert all(name in body for name in ("population-MEX", "debt-NOR", "Question substation_transformers-2?"))


def test_week_2s_verdict_and_subject_give_one_answer_that_agrees_with_the_headline_rows(weeks):
    week = weeks[1]
    verdict = load_workbook(week.report)["Summary"]["A3"].value
    assert verdict.startswith("3 regressions, ") and "; 3 cases regressed on every attempt; " in verdict
    subject = week.message["Subject"]
    assert verdict.startswith(subject.split(" \u00b7 ")[0])  # the subject: the verdict's first clause
    rows = headline(week.report)
    for metric, row in rows.items():
        said = re.search(re.escape(metric) + r" (\d\.\d\d) \(([\u2212+±]\d\.\d\d)\)", verdict)
        if said:  # each headline figure the verdict quotes is the row's, as shown
            assert said[1] == f"{row['this run']:.2f}" and said[2].replace("\u2212", "-") == f"{row['change']:+.2f}"
    assert re.search(r"answer F1 \d\.\d\d \(", verdict)
    # the rows call every suite-level change within noise; the verdict says why that is no contradiction
    assert all(str(row["vs noise"]).startswith("within noise") for row in rows.values())
    assert "the suite's means cannot resolve a change at this size" in verdict
    assert "no regression" not in summary_text(week.report) + week.body + subject


def test_week_2s_flaky_cases_moved_within_noise_and_keep_out_of_the_regressions(weeks):
    week = weeks[1]
    lines = changes(week.report)
    assert all(kinds_of(lines[case_id]) == {"moved within noise"} for case_id in FLAKY)
    assert "Moved within noise (3)" in summary_text(week.report)
    assert "MOVED WITHIN NOISE (3)" in week.body
    overview = list(load_workbook(week.report)["Overview"].iter_rows(values_only=True))
    flaky = {row[0]: row[overview[0].index("flaky")] for row in overview[1:]}
    assert all(flaky[case_id] == "flaky" for case_id in FLAKY)


def test_week_2s_merge_conflict_loses_only_the_case_it_touches_and_says_so(weeks):
    week = weeks[1]
    assert overview_ids(week.report) == (set(indicator_ids()) | set(qa_ids())) - {CONFLICTED}
    assert re.search(r"inflation\.yaml:\d+: merge-conflict marker '<<<<<<<'", week.printed)
    problems = " ".join(str(value) for row in load_workbook(week.report)["Problems"].iter_rows(values_only=True)
                        for value in row if value)
    assert "merge-conflict marker" in problems
    assert kinds_of(changes(week.report)[CONFLICTED]) == {"not loaded"}
    assert "1 test case not loaded" in week.message["Subject"]


def test_week_3_compares_the_case_not_loaded_last_week_with_its_last_seen_result(weeks):
    week = weeks[2]
    resaved = weeks[1].resaved  # the baseline: week 2 as LibreOffice saved it
    assert resaved is not None and "LibreOffice" in zipfile.ZipFile(resaved).read("docProps/app.xml").decode()
    assert overview_ids(week.report) == set(indicator_ids()) | set(qa_ids())
    lines = changes(week.report)
    assert not any("new case" in kinds_of(case_lines) for case_lines in lines.values())
    ((kind, reason),) = lines[CONFLICTED]
    assert kind == "improvement" and reason.startswith("compared with its result of 2024-05-01 (not loaded on 2024-05-08)")
    assert set(listed(week.report, "What got better (1)")) == {CONFLICTED}


def test_week_3s_budget_marks_the_judged_means_partial_and_the_exit_status_says_the_judge_stopped(weeks):
    week = weeks[2]
    assert week.code == JUDGE_FAILED  # no gate failed: the judge's stop is the outcome
    (f1,) = [metric for metric in week.results["judge"]["metrics"] if metric["key"] == "answer_f1"]
    assert 0 < f1["judged"] < len(qa_ids()) and f1["not_judged_budget_reached"] > 0
    said = f"answer F1: partial, {f1['judged']} of {len(qa_ids())} cases judged (budget reached)"
    assert f1["partial"] == said
    # a stated, deterministic subset: the first questions in the test cases' order
    judged = [case["case_id"] for case in week.results["cases"] if case["answer_f1"] is not None]
    assert judged == qa_ids()[:f1["judged"]]
    assert "over the first cases in the test cases' order" in week.body
    assert f"* {said}" in summary_text(week.report)
    ws = load_workbook(week.report)["Summary"]
    marks = {row[0].value: row[1].number_format for row in ws.iter_rows()
             if row[0].value in ("answer F1", "macro recall") and isinstance(row[1].value, (int, float))}
    assert marks == {"answer F1": '0.00"*"', "macro recall": "0.00"}  # only the judged mean is marked
    assert f"{said}: a mean over the cases judged" in week.body
    assert "no LLM judge was available" not in week.body
    assert "(partial)" in week.printed


def test_week_4_lists_the_fixed_regressions_as_improved_and_the_trend_keeps_week_3_partial(weeks):
    week = weeks[3]
    assert week.code == REPORT_WRITTEN
    better = listed(week.report, "What got better")
    assert set(better) == set(REGRESSED) and max(better.values()) <= 40
    assert all(kinds_of(changes(week.report)[case_id]) == {"improvement"} for case_id in REGRESSED)
    assert "WHAT GOT BETTER (3)" in week.body
    trend = list(load_workbook(week.report)["Trend"].iter_rows(values_only=True))
    header = trend[0]
    partly = {row[header.index("run")]: row[header.index("partly judged")] for row in trend[1:] if row[1]}
    assert "answer F1: partial" in str(partly["week3.xlsx"])
    assert partly["this run"] is None and partly["week1.xlsx"] is None



def test_the_overview_has_the_same_columns_every_week_and_lists_the_regressed_cases_first(weeks):
    headers = [[cell.value for cell in load_workbook(week.report)["Overview"][1]] for week in weeks]
    assert all(header == headers[1] for header in headers[1:])  # the weeks compared with a baseline
    assert set(headers[0]) <= set(headers[1])
    first = [row[0] for row in load_workbook(weeks[1].report)["Overview"].iter_rows(min_row=2, max_row=4,
                                                                                    values_only=True)]
    assert set(first) == set(REGRESSED)


def test_no_week_shows_a_figure_unrounded_or_a_negative_zero(weeks):
    for week in weeks:
        shown = summary_text(week.report) + week.body + week.message["Subject"]
        assert not re.search(r"\de-1\d", shown)  # float noise such as 8e-17 (a small chance may read 9e-05)
        assert "\u22120.00 " not in shown and "-0.00 " not in shown and "-0.000" not in shown
