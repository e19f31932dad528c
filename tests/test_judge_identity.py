"""Every run records its judge, and a judge change is never read as a system change: against a
baseline judged by another judge, the judged metrics' changes are labelled "judge changed" and kept
out of the regressions and the gates. Runs go through `qareport run` against the loopback stub."""

import json

import pytest
from conftest import RESPONSES, TESTCASES
from openai_stub import rule_answer_correctness, serve_stub
from openpyxl import load_workbook

from qareport.case_record import CaseRow
from qareport.cli import main
from qareport.digest import comparison_line
from qareport.judge.identity import AZURE, COMPATIBLE, LITELLM, OPENAI, JudgeIdentity, differences, judge_identity
from qareport.judge.models import DEFAULT_MODEL
from qareport.judge.prompts import Prompts
from qareport.judge.settings import JudgeSettings, LiteLLMRoute
from qareport.judge_change import JUDGED_KEYS, judge_changes, judge_shifts
from qareport.records import RunSnapshot
from qareport.run_reading import read_report, read_run
from qareport.trend import trend_points

SNAPSHOT = "gpt-4o-mini-2024-07-18"
DEFAULT_SNAPSHOT = f"{DEFAULT_MODEL}-2026-03-17"  # a dated snapshot of the default, as the API names one


@pytest.fixture
def stub(monkeypatch):
    with serve_stub(latency=0.0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield server


def run(tmp_path, name, *extra):
    """A run writing `name`.xlsx and `name`.json, with a judge cache of its own (a judge whose
    replies changed must be asked again)."""
    out, results = tmp_path / f"{name}.xlsx", tmp_path / f"{name}.json"
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(out), "--results", str(results),
                 "--cache-path", str(tmp_path / f"{name}.sqlite3"), "--quiet", *extra])
    return code, out, results


def lenient_correctness(prompt, body):
    """A judge that finds every claim it can match: the stub's answer F1 of 0 rises (to 1 where the
    answer has as many claims as the reference)."""
    found = rule_answer_correctness(prompt, body)
    return {**found, "matching_claims_count": min(found["reference_claims_count"], found["actual_claims_count"])}


def summary_values(path):
    ws = load_workbook(path)["Summary"]
    return [value for row in ws.iter_rows(values_only=True) for value in row if isinstance(value, str)]


def summary_entry(path, key):
    """The Summary's value for `key`, its lines (a long value is laid out on several) joined by spaces."""
    ws = load_workbook(path)["Summary"]
    cell = next(c for row in ws.iter_rows() for c in row if c.value == key)
    lines, row = [], cell.row
    while row == cell.row or ws.cell(row, cell.column).value is None:
        value = ws.cell(row, cell.column + 1).value
        if value is None:
            break
        lines.append(str(value))
        row += 1
    return " ".join(lines)


def changes_lines(path):
    ws = load_workbook(path)["Changes"]
    rows = list(ws.iter_rows(values_only=True))
    header = rows[0]
    return [dict(zip(header, row)) for row in rows[1:] if row[0]]


# -- the record


def test_the_identity_names_the_snapshot_the_replies_gave_and_is_stored_in_both_outputs(stub, tmp_path):
    stub.snapshots[DEFAULT_MODEL] = DEFAULT_SNAPSHOT
    code, out, results = run(tmp_path, "report")
    assert code == 0
    stored = json.loads(results.read_text())["qareport"]["judge"]
    assert stored["model"] == DEFAULT_MODEL and stored["served_model"] == DEFAULT_SNAPSHOT
    assert stored["endpoint_kind"] == COMPATIBLE and stored["temperature"] == 0 and stored["repeats"] == 1
    assert len(stored["prompts_sha256"]) == 16
    from_workbook, from_results = read_run(out).judge_identity, read_run(results).judge_identity
    assert from_workbook is not None and from_workbook == from_results
    assert from_workbook.to_dict() == stored
    shown = summary_entry(out, "judge identity")
    assert f"{DEFAULT_SNAPSHOT} (OpenAI-compatible), asked as {DEFAULT_MODEL}; temperature 0;" in shown
    assert f"prompts sha256 {stored['prompts_sha256']}" in shown


def test_a_run_without_a_judge_records_none(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, out, results = run(tmp_path, "report", "--no-llm")
    assert code == 0
    assert "judge" not in json.loads(results.read_text())["qareport"]
    assert read_run(out).judge_identity is None and read_run(results).judge_identity is None
    assert not any(str(key).startswith("judge.identity.") for key in read_report(out).metadata)


def test_the_endpoint_kind_says_how_the_judge_is_reached():
    sources = Prompts().sources
    kinds = [judge_identity(settings, template_sources=sources).endpoint_kind for settings in (
        JudgeSettings(api_key="k"),
        JudgeSettings(api_key="k", azure_endpoint="https://x.openai.azure.com", azure_deployment="judge"),
        JudgeSettings(base_url="http://127.0.0.1:8000/v1"),
        JudgeSettings(litellm_chat=LiteLLMRoute("anthropic/claude")),
    )]
    assert kinds == [OPENAI, AZURE, COMPATIBLE, LITELLM]


def test_the_prompts_hash_follows_the_templates_text(tmp_path):
    settings = JudgeSettings(api_key="k")
    packaged = judge_identity(settings, template_sources=Prompts().sources)
    (tmp_path / "judge").mkdir()
    source = Prompts().sources["answer_correctness"]
    (tmp_path / "judge" / "answer_correctness.txt").write_text(source + "\nBe strict.", encoding="utf-8")
    edited = judge_identity(settings, template_sources=Prompts(str(tmp_path)).sources)
    assert packaged.prompts_sha256 != edited.prompts_sha256
    assert judge_identity(settings, template_sources=Prompts().sources) == packaged  # the same text, the same hash
    assert differences(packaged, edited) == (f"prompt templates {packaged.prompts_sha256} → {edited.prompts_sha256}",)


def test_judges_differ_by_snapshot_when_both_runs_know_it_else_by_the_configured_model():
    base = judge_identity(JudgeSettings(api_key="k"), template_sources=Prompts().sources)
    dated = JudgeIdentity(**{**base.to_dict(), "served_model": SNAPSHOT})
    newer = JudgeIdentity(**{**base.to_dict(), "served_model": "gpt-4o-mini-2025-01-01"})
    assert differences(dated, newer) == (f"model {SNAPSHOT} → gpt-4o-mini-2025-01-01",)
    assert differences(base, dated) == ()  # the alias and its snapshot: nothing says they differ
    repeated = JudgeIdentity(**{**base.to_dict(), "repeats": 3})
    assert differences(base, repeated) == ()  # more repeats: the same expected value, less noise
    warmer = JudgeIdentity(**{**base.to_dict(), "temperature": 0.7})
    assert differences(base, warmer) == ("temperature 0 → 0.7",)
    assert judge_changes(None, base) == () and judge_changes(base, None) == ()


def test_an_edited_stored_identity_reads_back_as_none_rather_than_a_wrong_judge():
    base = judge_identity(JudgeSettings(api_key="k"), template_sources=Prompts().sources)
    assert JudgeIdentity.from_mapping(base.to_dict()) == base
    assert JudgeIdentity.from_mapping({**base.to_dict(), "temperature": "warm"}) is None
    assert JudgeIdentity.from_mapping({**base.to_dict(), "repeats": 1.5}) is None
    assert JudgeIdentity.from_metadata(dict(base.pairs())) == base


# -- a judge change is not a system change


def test_a_baseline_judged_by_another_judge_labels_judged_changes_and_keeps_them_out_of_the_gate(stub, tmp_path):
    stub.rules["answer_correctness"] = lenient_correctness  # judge A
    code, baseline, _ = run(tmp_path, "baseline")
    assert code == 0
    stub.rules["answer_correctness"] = rule_answer_correctness  # judge B scores the same answers lower
    code, out, results = run(tmp_path, "report", "--judge-model", "gpt-4.1-mini", "--baseline", str(baseline),
                             "--fail-on-regression")
    assert code == 0  # nothing regressed: the judged metrics moved with the judge
    lines = changes_lines(out)
    judged = [line for line in lines if line["change"] == "judge changed"]
    assert judged and {line["metric"] for line in judged} <= {"answer F1", "answer recall", "answer precision"}
    assert not any(line["change"] in ("regression", "improvement") and line["metric"] == "answer F1"
                   for line in lines)
    warning = summary_entry(out, "warning")
    assert warning.startswith(f"the judge changed since the baseline (model {DEFAULT_MODEL} → gpt-4.1-mini)")
    # the same responses in both runs: every judged answer is identical, and its move is the judge's
    assert "the new judge scores the same answers \u22121.00 on answer F1 (12 cases)" in warning
    assert "the new judge scores the same answers +0.00 on answer relevance (26 cases)" in warning
    statistics = [row for row in load_workbook(out)["Statistics"].iter_rows(values_only=True)]
    header = next(row for row in statistics if row[0] == "change of")
    f1_row = next(row for row in statistics if row[0] == "all test cases" and row[1] == "answer F1")
    recall_row = next(row for row in statistics if row[0] == "all test cases" and row[1] == "macro recall")
    assert f1_row[header.index("verdict")] == "judge changed"
    assert recall_row[header.index("verdict")] == "within noise"  # not a judged metric
    stored = read_report(out)
    assert stored.digest is not None
    assert any(text.startswith("the judge changed") for text in stored.digest.baseline.warnings)
    f1 = next(delta for delta in stored.digest.deltas if delta.metric == "answer_f1")
    assert f1.noise == "judge changed" and not f1.beyond_noise
    assert "\u22121.00" not in stored.digest.verdict  # the subject line reads no drop into it
    assert "answer F1 0.00 (judge changed)" in comparison_line(stored.digest)  # nor does the console
    assert read_run(results).judge_identity.model == "gpt-4.1-mini"


def test_the_same_judge_scoring_lower_is_a_regression_and_fails_the_gate(stub, tmp_path):
    stub.rules["answer_correctness"] = lenient_correctness
    code, baseline, _ = run(tmp_path, "baseline")
    assert code == 0
    stub.rules["answer_correctness"] = rule_answer_correctness  # the same identity: the drop is the system's
    code, out, _ = run(tmp_path, "report", "--baseline", str(baseline), "--fail-on-regression")
    assert code == 1
    lines = changes_lines(out)
    assert not any(line["change"] == "judge changed" for line in lines)
    assert any(line["change"] == "regression" and line["metric"] == "answer F1" for line in lines)
    assert not any(value.startswith("the judge changed") for value in summary_values(out))


def test_a_judged_threshold_still_applies_to_this_runs_values_when_the_judge_changed(stub, tmp_path):
    stub.rules["answer_correctness"] = lenient_correctness
    run(tmp_path, "baseline")
    stub.rules["answer_correctness"] = rule_answer_correctness
    code, _, _ = run(tmp_path, "report", "--judge-model", "gpt-4.1-mini", "--baseline", str(tmp_path / "baseline.xlsx"),
                     "--fail-on-regression", "--fail-under", "answer_f1=0.5")
    assert code == 1  # this run's answer F1 is below 0.5: a gate on values, not on a change


def test_the_judge_shift_counts_only_identical_answers_to_unchanged_tests():
    same = {"turns": [{"turn": 1, "answer": "Oslo"}]}
    other = {"turns": [{"turn": 1, "answer": "Bergen"}]}

    def row(case_id, f1, outputs, definition="h1", status="success"):
        return CaseRow(case_id, status=status, definition_hash=definition, outputs=outputs, metrics={"answer_f1": f1})

    old = [row("a", 0.5, same), row("b", 0.5, same), row("c", 0.5, same), row("d", 0.5, same), row("e", 0.5, same)]
    new = [row("a", 0.7, same), row("b", 0.6, same), row("c", 0.0, other), row("d", 0.0, same, "h2"),
           row("e", None, same, status="error")]
    (shift,) = judge_shifts(old, new)
    assert shift.metric == "answer_f1" and shift.cases == 2 and shift.mean_shift == pytest.approx(0.15)
    assert shift.describe() == "the new judge scores the same answers +0.15 on answer F1 (2 cases)"
    assert judge_shifts(old, [row("c", 0.0, other)]) == ()


def test_the_trend_counts_no_regression_where_only_the_judge_changed():
    judge_a = judge_identity(JudgeSettings(api_key="k"), template_sources=Prompts().sources)
    judge_b = JudgeIdentity(**{**judge_a.to_dict(), "model": "gpt-4.1-mini"})

    def snapshot(created, f1, judge, steps=1.0):
        rows = (CaseRow("a", status="success", metrics={"answer_f1": f1, "steps_score": steps}),)
        return RunSnapshot(f"{created}.xlsx", f"2026-11-{created}T10:00:00+00:00", "0.1.0", rows, judge_identity=judge)

    older, newer = snapshot("01", 1.0, judge_a), snapshot("08", 0.0, judge_b)
    assert trend_points([older], newer)[-1].regressions == 0
    assert trend_points([older], snapshot("08", 0.0, judge_a))[-1].regressions == 1
    assert trend_points([older], snapshot("08", 0.0, judge_b, steps=0.0))[-1].regressions == 1  # not the judge's


def test_the_judged_keys_are_the_case_metrics_a_judge_gives():
    assert {"answer_f1", "answer_relevance", "retrieval_answer_recall", "retrieval_answer_precision"} <= JUDGED_KEYS
    assert "steps_score" not in JUDGED_KEYS and "macro_recall" not in JUDGED_KEYS
