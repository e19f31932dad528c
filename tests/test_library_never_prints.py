"""The library never writes to the terminal: its notes go to the caller's callbacks or to the
"qareport" logger; only the CLI prints."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
import yaml

from qareport import graphrag_eval_6, run_evaluation
from qareport.pipeline import RunOptions, run_pipeline

REPO = Path(__file__).resolve().parent.parent
TESTCASES, RESPONSES = REPO / "testcases", REPO / "testcases" / "responses"
DATA = Path(__file__).parent / "data"
GE6_CONFIG = """\
llm:
  generation:
    provider: openai
    model: gpt-4o-mini
  embedding:
    provider: openai
    model: text-embedding-3-small
custom_evaluation:
  - name: x
"""


def options(output: Path, **extra: object) -> RunOptions:
    return RunOptions(testcases=(str(TESTCASES),), responses=(str(RESPONSES),), output=str(output),
                      judge_options={"enabled": False}, **extra)  # type: ignore[arg-type]


@pytest.fixture
def history(tmp_path):
    """A folder with one earlier run and a file that is not a run (the history skips it)."""
    folder = tmp_path / "history"
    folder.mkdir()
    run_pipeline(options(folder / "week18.xlsx", results_path=str(folder / "week18.json")))
    (folder / "qareport.yaml").write_text("match_terms_by: id\n", encoding="utf-8")
    return folder


def test_run_pipeline_with_a_baseline_and_a_history_writes_nothing_to_the_terminal(history, tmp_path, capfd):
    capfd.readouterr()
    warnings: list[str] = []
    outcome = run_pipeline(options(tmp_path / "week19.xlsx", baseline=str(history / "week18.xlsx"),
                                   history=(str(history),)), on_warning=warnings.append)
    assert outcome.report.comparison is not None  # the baseline was read and compared
    assert capfd.readouterr() == ("", "")
    assert any(w.startswith("history: skipped ") and "qareport.yaml" in w for w in warnings)


def test_run_pipeline_without_on_warning_sends_its_notes_to_the_qareport_logger(history, tmp_path, capfd, caplog):
    capfd.readouterr()
    with caplog.at_level(logging.WARNING, logger="qareport"):
        run_pipeline(options(tmp_path / "week19.xlsx", history=(str(history),)))
    assert capfd.readouterr() == ("", "")
    assert any(r.name == "qareport" and r.getMessage().startswith("history: skipped ") for r in caplog.records)


def test_run_evaluation_without_a_key_writes_nothing_and_logs_why_the_judge_did_not_run(capfd, caplog):
    reference_qas = yaml.safe_load((DATA / "qa_power_system_reference.yaml").read_text(encoding="utf-8"))
    responses = json.loads((DATA / "qa_power_system_responses.json").read_text(encoding="utf-8"))
    capfd.readouterr()
    with caplog.at_level(logging.WARNING, logger="qareport"):
        results = run_evaluation(reference_qas, responses)
    assert results and capfd.readouterr() == ("", "")
    assert any(r.getMessage().startswith("LLM metrics skipped: ") for r in caplog.records)


def test_graphrag_eval_6_without_a_key_writes_nothing_and_logs_its_notes(tmp_path, capfd, caplog):
    reference_qas = yaml.safe_load((DATA / "qa_power_system_reference.yaml").read_text(encoding="utf-8"))
    responses = json.loads((DATA / "qa_power_system_responses.json").read_text(encoding="utf-8"))
    config = tmp_path / "graphrag-eval.yaml"
    config.write_text(GE6_CONFIG, encoding="utf-8")
    capfd.readouterr()
    with caplog.at_level(logging.WARNING, logger="qareport"):
        results = asyncio.run(graphrag_eval_6.run_evaluation(reference_qas, responses, config))
    assert results and capfd.readouterr() == ("", "")
    messages = [r.getMessage() for r in caplog.records]
    assert any("'custom_evaluation' is not a graphrag-eval 6.x setting and is ignored" in m for m in messages)
    assert any(m.startswith("LLM metrics skipped: ") for m in messages)
