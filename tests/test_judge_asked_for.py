"""A judge asked for on the command line (`--judge-model`) that cannot run (no API key) is a failure
the run says on stderr even with `-q`, and its exit status is JUDGE_FAILED; without such an option
(or with --no-llm) a run without a key skips the judged metrics quietly, as before."""

from __future__ import annotations

import pytest

from qareport.cli import main
from qareport.exit_status import JUDGE_FAILED, REPORT_WRITTEN

QA = """\
- template_id: t1
  questions:
    - id: q1
      question_text: How many?
      reference_answer: three
"""


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qa.yaml").write_text(QA)
    (tmp_path / "r.json").write_text('[{"question_id": "q1", "actual_answer": "three", "actual_steps": []}]')
    return ["run", str(tmp_path / "qa.yaml"), "--responses", str(tmp_path / "r.json"), "--output",
            str(tmp_path / "week.xlsx"), "-q"]


def test_a_judge_asked_for_without_an_api_key_is_said_under_quiet_and_exits_judge_failed(inputs, tmp_path, capsys):
    assert main([*inputs, "--judge-model", "gpt-4o-mini", "--judge-repeats", "2", "--judge-budget", "1"]) == JUDGE_FAILED
    err = capsys.readouterr().err
    assert ("qareport: JUDGE FAILED: the judge was asked for (--judge-model, --judge-repeats) but cannot run: "
            "No LLM judge configured (set OPENAI_API_KEY") in err
    assert (tmp_path / "week.xlsx").is_file()


@pytest.mark.parametrize("extra", [[], ["--no-llm", "--judge-model", "gpt-4o-mini"], ["--no-cache"],
                                   ["--judge-concurrency", "2", "--judge-budget", "1"]])
def test_without_asking_for_the_judge_a_run_without_a_key_stays_quiet_and_exits_0(inputs, capsys, extra):
    assert main([*inputs, *extra]) == REPORT_WRITTEN
    assert "JUDGE FAILED" not in capsys.readouterr().err
