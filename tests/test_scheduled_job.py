"""qareport run as a cron job or a CI pipeline runs it: a typo never becomes a confident report, a
regression or a low score can fail the job, and a run that evaluated too little says so loudly."""

from __future__ import annotations

import itertools
import os
import re
import time
from pathlib import Path

import pytest
from openpyxl import load_workbook
from test_email import REGRESSED_CASE, last_week_responses, sender, smtp_args, smtp_server  # noqa: F401 (fixtures)

from qareport.cli import main
from qareport.console import ProgressBar

ROOT = Path(__file__).resolve().parents[1]
TESTCASES, RESPONSES = ROOT / "testcases", ROOT / "testcases" / "responses"


def run(output: Path | str, *extra: str, testcases: Path | str = TESTCASES, responses: Path | str = RESPONSES) -> int:
    return main(["run", str(testcases), "--responses", str(responses), "--output", str(output), "--no-llm", *extra])


@pytest.fixture(scope="module")
def last_week(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("last-week")
    report = folder / "week18.xlsx"
    assert run(report, "-q", responses=last_week_responses(folder / "responses")) == 0
    return report


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# --- a path that was named and does not exist ------------------------------------------------------


def test_a_misspelt_responses_path_is_a_usage_error_naming_the_option_and_nothing_is_written(tmp_path, capsys):
    report = tmp_path / "week.xlsx"
    assert run(report, responses=TESTCASES / "respons") == 2
    out, err = capsys.readouterr()
    assert lines(err) == [f"qareport: --responses {TESTCASES / 'respons'}: no such file or folder; check the path"]
    assert out == "" and not report.exists()


def test_a_misspelt_test_case_path_is_a_usage_error_too(tmp_path, capsys):
    assert run(tmp_path / "week.xlsx", testcases=tmp_path / "nowhere") == 2
    assert lines(capsys.readouterr().err) == [f"qareport: TESTCASES {tmp_path / 'nowhere'}: no such file or folder; "
                                              "check the path"]


def test_a_dangling_link_among_the_inputs_is_named_as_such(tmp_path, capsys):
    link = tmp_path / "responses.json"
    link.symlink_to(tmp_path / "gone.json")
    assert run(tmp_path / "week.xlsx", responses=link) == 2
    assert "a link to something that does not exist" in capsys.readouterr().err


# --- the output, checked before any work -----------------------------------------------------------


@pytest.mark.parametrize("name", ["report.xls", "report.csv", "report"])
def test_an_output_name_that_is_not_xlsx_is_refused_before_any_work(tmp_path, capsys, name):
    assert run(tmp_path / name) == 2
    err = capsys.readouterr().err
    assert lines(err)[0].startswith(f"qareport: --output {tmp_path / name}: the name must end in .xlsx")
    assert list(tmp_path.iterdir()) == []


def test_an_output_folder_that_does_not_exist_is_refused_before_any_work(tmp_path, capsys):
    assert run(tmp_path / "reports" / "week.xlsx") == 2
    assert f"the folder {tmp_path / 'reports'} does not exist; create it first" in capsys.readouterr().err


def test_an_output_folder_that_cannot_be_written_is_refused_before_any_work(other_user):
    folder = other_user.folder / "locked"
    folder.mkdir()
    other_user.give(folder)
    folder.chmod(0o500)  # its owner, the user who runs qareport, may not write in it
    done = other_user.run_qareport("run", TESTCASES, "--responses", RESPONSES, "--output", folder / "week.xlsx",
                                   "--no-llm")
    assert done.returncode == 2, done.stderr
    assert f"{folder}" in done.stderr and "cannot be written" in done.stderr
    assert list(folder.iterdir()) == []


def test_a_results_path_that_is_an_input_is_refused_and_the_input_is_left_intact(tmp_path, capsys):
    responses = tmp_path / "responses.json"
    responses.write_bytes((RESPONSES / "power-system.json").read_bytes())
    before = responses.read_bytes()
    assert run(tmp_path / "week.xlsx", "--results", str(responses), responses=responses) == 2
    assert "is one of the inputs" in capsys.readouterr().err
    assert responses.read_bytes() == before and not (tmp_path / "week.xlsx").exists()


def test_a_results_file_inside_an_input_folder_is_refused(tmp_path, capsys):
    folder = tmp_path / "responses"
    folder.mkdir()
    (folder / "power-system.json").write_bytes((RESPONSES / "power-system.json").read_bytes())
    assert run(tmp_path / "week.xlsx", "--results", str(folder / "results.json"), responses=folder) == 2
    assert "is one of the inputs" in capsys.readouterr().err


def test_a_stale_temporary_file_of_a_killed_run_is_removed_and_a_fresh_one_is_kept(tmp_path):
    stale, fresh = tmp_path / ".qareport-week.xlsx.abc.tmp", tmp_path / ".qareport-week.xlsx.def.tmp"
    stale.write_bytes(b"half a workbook")
    fresh.write_bytes(b"another run, writing now")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    assert run(tmp_path / "week.xlsx", "-q") == 0
    assert not stale.exists() and fresh.exists()


# --- templates -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "message"), [
    ("{% for x in %}\n", "steps_details.txt:1: template syntax error"),
    ("line one\n{{ no_such_variable }}\n", "steps_details.txt:2: the template uses 'no_such_variable'"),
    (b"caf\xe9 {{ x }}\n", "not UTF-8 text"),
    ("{% include 'steps_details.txt' %}\n", "the template includes itself"),
])
def test_a_broken_override_template_is_a_usage_error_naming_the_template_and_line(tmp_path, capsys, content, message):
    folder = tmp_path / "templates"
    folder.mkdir()
    path = folder / "steps_details.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert run(tmp_path / "week.xlsx", "--templates", str(folder)) == 2
    (line,) = lines(capsys.readouterr().err)
    assert line.startswith(f"qareport: {folder}") and message in line
    assert not (tmp_path / "week.xlsx").exists()


def test_a_templates_folder_that_does_not_exist_is_a_usage_error(tmp_path, capsys):
    assert run(tmp_path / "week.xlsx", "--templates", str(tmp_path / "nowhere")) == 2
    assert "--templates" in capsys.readouterr().err


# --- the email's headers ---------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [
    ("--email-subject", "weekly\r\nBcc: someone@example.com"),
    ("--email-to", "team@example.com\nother@example.com"),
])
def test_a_line_break_in_the_subject_or_an_address_is_a_usage_error(tmp_path, capsys, extra):
    args = [*extra] if extra[0] == "--email-to" else ["--email-to", "team@example.com", *extra]
    assert run(tmp_path / "week.xlsx", *args) == 2
    assert "holds a line break" in capsys.readouterr().err
    assert not (tmp_path / "week.xlsx").exists()


# --- gates -----------------------------------------------------------------------------------------


def test_fail_on_regression_exits_1_after_writing_the_workbook_and_says_which_gate_failed(last_week, tmp_path, capsys):
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(last_week), "--fail-on-regression") == 1
    out = lines(capsys.readouterr().out)
    assert report.exists()
    assert out[-1] == ("GATE FAILED: --fail-on-regression: 1 case(s) regressed since the baseline (one run per case "
                       "cannot tell a change from a flip)")
    assert any(line.startswith("since the baseline: 1 regressed, 1 improved; macro ") for line in out)


def test_fail_on_regression_passes_when_nothing_regressed(tmp_path, capsys):
    first, second = tmp_path / "a.xlsx", tmp_path / "b.xlsx"
    assert run(first, "-q") == 0
    assert run(second, "--baseline", str(first), "--fail-on-regression") == 0
    assert lines(capsys.readouterr().out)[-1] == ("gate passed: --fail-on-regression: "
                                                 "no case regressed since the baseline")


def test_fail_on_regression_without_a_baseline_is_a_usage_error(tmp_path, capsys):
    assert run(tmp_path / "week.xlsx", "--fail-on-regression") == 2
    assert "--fail-on-regression needs --baseline" in capsys.readouterr().err


@pytest.mark.parametrize(("gate", "status", "verdict"), [
    ("macro_recall=0.5", 0, "gate passed: --fail-under macro_recall=0.5: macro_recall is 0."),
    ("macro_recall=0.99", 1, "GATE FAILED: --fail-under macro_recall=0.99: macro_recall is 0."),
    ("steps_score=0.1", 0, "gate passed: --fail-under steps_score=0.1"),
])
def test_fail_under_compares_a_headline_metric_with_the_value(tmp_path, capsys, gate, status, verdict):
    assert run(tmp_path / "week.xlsx", "--fail-under", gate) == status
    assert lines(capsys.readouterr().out)[-1].startswith(verdict)


def test_fail_under_a_tag_uses_only_the_cases_of_that_tag(tmp_path, capsys):
    results = tmp_path / "week.json"
    assert run(tmp_path / "week.xlsx", "--results", str(results), "--fail-under", "macro_recall@weo=0") == 0
    import json

    rows = [row for row in json.loads(results.read_text())["cases"]
            if row["status"] == "success" and "weo" in row["groups"] and row["macro_recall"] is not None]
    mean = sum(row["macro_recall"] for row in rows) / len(rows)
    assert lines(capsys.readouterr().out)[-1] == (
        f"gate passed: --fail-under macro_recall@weo=0: macro_recall@weo is {mean:.4f} over {len(rows)} case(s), "
        "at least 0")


@pytest.mark.parametrize(("gate", "message"), [
    ("recall=0.5", "unknown metric 'recall'"),
    ("macro_recall", "write METRIC=VALUE"),
    ("macro_recall=high", "the value must be a number"),
    ("macro_recall@=0.5", "name a tag after '@'"),
    ("macro_recall=80", "the value is a share between 0 and 1, as the metric is; for 80 % write macro_recall=0.8"),
    ("macro_recall=-0.1", "the value is a share between 0 and 1"),
    ("macro_recall@no_such_tag=0.5", "no test case has the tag 'no_such_tag' (tags: "),
])
def test_a_malformed_gate_is_a_usage_error_before_any_work(tmp_path, capsys, gate, message):
    assert run(tmp_path / "week.xlsx", "--fail-under", gate) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "week.xlsx").exists()


def test_a_gate_on_a_tag_whose_cases_have_no_value_still_fails_at_run_time(tmp_path, capsys):
    assert run(tmp_path / "week.xlsx", "--fail-under", "answer_f1@weo=0.5") == 1
    assert lines(capsys.readouterr().out)[-1] == ("GATE FAILED: --fail-under answer_f1@weo=0.5: no evaluated case of "
                                                 "tag 'weo' has answer_f1")


def test_quiet_prints_the_result_line_and_only_the_failed_gates(tmp_path, capsys):
    assert run(tmp_path / "week.xlsx", "-q", "--fail-under", "macro_recall=0.1", "--fail-under", "macro_recall=0.99") == 1
    out = lines(capsys.readouterr().out)
    assert len(out) == 2 and out[0].startswith(f"{tmp_path / 'week.xlsx'}: 29 cases")
    assert out[1].startswith("GATE FAILED: --fail-under macro_recall=0.99")


# --- a run that evaluated too little ---------------------------------------------------------------


def empty_responses(folder: Path) -> Path:
    folder.mkdir()
    (folder / "responses.json").write_text("[]")
    return folder


def test_an_incomplete_run_says_so_instead_of_deltas_exits_1_and_sends_no_email(last_week, tmp_path, capsys,
                                                                                smtp_server):  # noqa: F811
    inbox, port = smtp_server
    report = tmp_path / "week.xlsx"
    status = run(report, "--baseline", str(last_week), "--email-to", "team@example.com", *smtp_args(port),
                 responses=empty_responses(tmp_path / "responses"))
    out = capsys.readouterr().out
    assert status == 1 and report.exists()
    assert inbox.envelopes == []
    assert "INCOMPLETE RUN: 0 of 29 cases evaluated: no deltas are shown" in out
    assert "since the baseline" not in out
    assert "email not sent: INCOMPLETE RUN: 0 of 29 cases evaluated" in out
    assert lines(out)[-1] == "GATE FAILED: complete run: INCOMPLETE RUN: 0 of 29 cases evaluated"


def test_send_incomplete_sends_the_email_all_the_same(tmp_path, capsys, smtp_server):  # noqa: F811
    inbox, port = smtp_server
    status = run(tmp_path / "week.xlsx", "--email-to", "team@example.com", "--send-incomplete", *smtp_args(port),
                 responses=empty_responses(tmp_path / "responses"))
    assert status == 1 and len(inbox.envelopes) == 1


def test_the_share_below_which_a_run_is_incomplete_can_be_set(tmp_path):
    # 28 of the 29 bundled cases have a response: complete at the default, incomplete when all are required
    assert run(tmp_path / "a.xlsx", "-q") == 0
    assert run(tmp_path / "b.xlsx", "-q", "--min-evaluated", "1") == 1


# --- validate --------------------------------------------------------------------------------------

VALID_CASE = """- id: one
  name: one
  conversation:
  - role: user
    content: GDP of Mexico
    target:
      indicator_selection:
      - dataset_id: WEO
        dimensions:
        - dimension_name: COUNTRY
          values: [{id: MEX, name: Mexico}]
"""


def test_validate_checks_test_cases_alone_and_exits_0_when_they_are_valid(tmp_path, capsys):
    (tmp_path / "cases.yaml").write_text(VALID_CASE)
    assert main(["validate", str(tmp_path / "cases.yaml")]) == 0
    out, err = capsys.readouterr()
    assert lines(out) == ["qareport: 1 test cases: valid"] and err == ""


def test_validate_lists_each_problem_with_file_and_line_and_exits_1(tmp_path, capsys):
    (tmp_path / "cases.yaml").write_text(VALID_CASE.replace("values: [{id: MEX, name: Mexico}]", "values: MEX"))
    assert main(["validate", str(tmp_path / "cases.yaml")]) == 1
    out = lines(capsys.readouterr().out)
    assert len(out) == 1 and out[0].startswith(f"{tmp_path / 'cases.yaml'}:11: ")


def test_validate_with_responses_also_checks_the_pairing(tmp_path, capsys):
    (tmp_path / "cases.yaml").write_text(VALID_CASE)
    (tmp_path / "responses.json").write_text('[{"id": "two", "indicator_selection": []}]')
    assert main(["validate", str(tmp_path / "cases.yaml"), "--responses", str(tmp_path / "responses.json")]) == 1
    out = "\n".join(lines(capsys.readouterr().out))
    assert "response for unknown case id 'two'" in out and "case 'one' has no response" in out


def test_validate_on_a_path_that_does_not_exist_is_a_usage_error(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nowhere")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


# --- what is echoed on the terminal ----------------------------------------------------------------


def test_ids_with_escape_sequences_are_printed_with_the_control_characters_visible(tmp_path, capsys):
    (tmp_path / "cases.yaml").write_text(VALID_CASE.replace("id: one", 'id: "one\\e]0;pwned\\a"'))
    (tmp_path / "responses.json").write_text("[]")
    assert main(["run", str(tmp_path / "cases.yaml"), "--responses", str(tmp_path / "responses.json"),
                 "--output", str(tmp_path / "week.xlsx"), "--no-llm", "-q"]) == 1
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "one\\x1b]0;pwned\\x07" in err
    assert load_workbook(tmp_path / "week.xlsx")["Overview"]["A2"].value.startswith("one")


# --- a broken test-case file never turns into "removed" ---------------------------------------------

FIRST_WEO_CASE = "4f1a0365-8c7e-4792-850f-8563d1b51444"


def broken_suite(folder: Path, how: str) -> Path:
    import shutil

    testcases = folder / "testcases"
    shutil.copytree(TESTCASES, testcases, ignore=shutil.ignore_patterns("responses"))
    weo = testcases / "imf" / "weo.yaml"
    text = weo.read_text(encoding="utf-8")
    if how == "one item":  # a syntax error in the first case of the file
        weo.write_text(text.replace("  name: what_is_the_real_gdp_growth_forecast_for_india",
                                    "  name: [what_is_the_real_gdp_growth_forecast_for_india", 1), encoding="utf-8")
    else:  # a byte that is not UTF-8: the whole file is unreadable
        weo.write_bytes(text.encode("utf-8").replace(b"India", b"Indi\xe9", 1))
    return testcases


@pytest.mark.parametrize("how", ["one item", "whole file"])
def test_cases_of_a_broken_file_are_not_loaded_not_removed_and_said_first(last_week, tmp_path, capsys, how):
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(last_week), "-q", testcases=broken_suite(tmp_path, how)) == 0
    err = capsys.readouterr().err
    book = load_workbook(report)
    changes = [row for row in book["Changes"].iter_rows(min_row=2, values_only=True)]
    assert "removed case" not in [row[2] for row in changes]
    not_loaded = {row[0] for row in changes if row[2] == "not loaded"}
    assert FIRST_WEO_CASE in not_loaded and len(not_loaded) == (1 if how == "one item" else 9)
    assert changes[0][2] == "not loaded"  # listed first
    verdict = book["Summary"]["A3"].value
    # the alert is wrapped over as many lines as its places (long temporary paths) need
    alert = " ".join(itertools.takewhile(bool, (cell.value for cell in book["Summary"]["A"][3:])))
    assert re.match(r"(no|1) regression, macro (precision|recall) \d", verdict)  # the verdict leads, always
    assert alert.startswith(f"{len(not_loaded)} test case(s) of the baseline could not be loaded (")  # then the warning
    assert "weo.yaml" in " ".join(str(c.value) for c in book["Summary"]["A"][3:6] if c.value)
    if how == "one item":
        assert f"response for case id '{FIRST_WEO_CASE}', whose test case is in the part of" in err
    else:
        assert "which no loaded test case has; its test case may be in" in err and "could not be read" in err


def test_the_email_of_a_run_with_unloaded_cases_says_so_first(last_week, tmp_path, smtp_server):  # noqa: F811
    inbox, port = smtp_server
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(last_week), "-q", "--email-to", "team@example.com", *smtp_args(port),
               testcases=broken_suite(tmp_path, "one item")) == 0
    (message,) = inbox.messages()
    subject = message["Subject"]
    assert re.match(r"1 regression, macro (precision|recall) ", subject) and subject.endswith(" \u00b7 1 test case not loaded")
    assert len(subject) <= 80
    body = message.get_body(("plain",)).get_content()
    lines = body.splitlines()
    assert re.match(r"1 regression, macro (precision|recall) ", lines[0]) and "not loaded" not in lines[0]  # the verdict leads
    assert lines[1].startswith("!! 1 test case(s) of the baseline could not be loaded (")  # then the warning
    assert body.count("could not be loaded") == 1  # once
    html = message.get_body(("html",)).get_content()
    assert html.count("could not be loaded") == 1
    assert html.index("1 regression, macro ") < html.index("could not be loaded") < html.index("How good is it")


# --- the console -----------------------------------------------------------------------------------


class Terminal:
    """A stream that says it is a terminal, keeping what was written."""

    def __init__(self, tty: bool):
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("tty", [True, False])
def test_progress_shows_on_a_terminal_and_never_in_a_log(tmp_path, tty):
    from qareport.pipeline import RunOptions, run_pipeline

    stream = Terminal(tty)
    run_pipeline(RunOptions(testcases=(str(TESTCASES),), responses=(str(RESPONSES),),
                            output=str(tmp_path / "week.xlsx"), judge_options={"enabled": False}),
                 on_progress=ProgressBar(stream))
    if tty:
        assert "qareport: evaluating 29 test cases…" in stream.text and "\r" in stream.text
    else:
        assert stream.text == ""


def test_the_library_tells_progress_to_a_callback_and_the_cli_draws_one_bar(tmp_path, capsys):
    from qareport.pipeline import RunOptions, run_pipeline
    from qareport.progress import ProgressEvent

    events: list[ProgressEvent] = []
    run_pipeline(RunOptions(testcases=(str(TESTCASES),), responses=(str(RESPONSES),),
                            output=str(tmp_path / "week.xlsx"), judge_options={"enabled": False}),
                 on_progress=events.append)
    assert capsys.readouterr() == ("", "")  # told, never drawn
    finished = [event.finished for event in events if event.finished is not None]
    assert finished == ["loaded 29 test cases and 28 responses", "evaluated 29 test cases",
                        f"wrote {tmp_path / 'week.xlsx'}"]
    assert all(event.seconds is not None and event.seconds >= 0 for event in events if event.finished)
    # the judge's bar and the stages' are one bar: the same words for any counted stage
    judging = ProgressEvent("judging", 3, 4, "5 calls \u00b7 1 cached \u00b7 $0.0012")
    assert ProgressBar.text(judging) == "judging [##################......] 3/4 \u00b7 5 calls \u00b7 1 cached \u00b7 $0.0012"
    assert ProgressBar.text(ProgressEvent("evaluating 29 test cases")) == "evaluating 29 test cases\u2026"


def test_verbose_prints_each_stage_with_its_time(tmp_path, capsys):
    assert run(tmp_path / "week.xlsx", "-v") == 0
    err = capsys.readouterr().err
    assert "qareport: loaded 29 test cases and 28 responses in " in err
    assert f"qareport: wrote {tmp_path / 'week.xlsx'} in " in err


def test_a_results_path_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys):
    assert run(tmp_path / "week.xlsx", "--results", str(tmp_path / "gone" / "week.json")) == 2
    assert f"--results {tmp_path / 'gone' / 'week.json'}: the folder" in capsys.readouterr().err
    assert not (tmp_path / "week.xlsx").exists()
