"""The judge judges each attempt of a case, each its own cache entry (against the loopback stub)."""

import json
import textwrap

import pytest
from openai_stub import metric_of, serve_stub

from qareport.cli import main
from qareport.judge.cache import SCHEMA_VERSION, cache_key

DATASET = """\
- template_id: capitals
  questions:
  - id: q1
    question_text: What is the capital of Norway?
    reference_answer: Oslo
"""


@pytest.fixture
def stub(monkeypatch):
    with serve_stub(latency=0.0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield server


def correctness_calls(server):
    return [r for r in server.requests if r.kind == "chat" and metric_of(r.body) == "answer_correctness"]


def run(tmp_path, records):
    (tmp_path / "qa.yaml").write_text(textwrap.dedent(DATASET), encoding="utf-8")
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    results = tmp_path / "results.json"
    code = main(["run", str(tmp_path / "qa.yaml"), "-r", str(tmp_path / "r.jsonl"), "-o", str(tmp_path / "out.xlsx"),
                 "--results", str(results), "--cache-path", str(tmp_path / "cache.sqlite3"), "--quiet"])
    assert code == 0
    return json.loads(results.read_text())


def test_two_attempts_with_the_same_answer_are_two_judgments_each_cached_apart(stub, tmp_path):
    records = [{"question_id": "q1", "actual_answer": "Oslo", "attempt": n} for n in (1, 2)]
    document = run(tmp_path, records)
    assert len(correctness_calls(stub)) == 2  # not one reply reused for both
    judged = [r for r in document["results"] if r.get("question_id") == "q1"]
    assert sorted(r["attempt"] for r in judged) == [1, 2] and all("answer_f1" in r for r in judged)
    stub.requests.clear()
    run(tmp_path, records)
    assert correctness_calls(stub) == []  # both served from the cache on a rerun
    stub.requests.clear()
    run(tmp_path, [*records, {"question_id": "q1", "actual_answer": "Oslo", "attempt": 3}])
    assert len(correctness_calls(stub)) == 1  # only the new attempt is asked


def test_a_case_run_once_is_judged_under_the_key_it_always_had(stub, tmp_path):
    run(tmp_path, [{"question_id": "q1", "actual_answer": "Oslo"}])
    assert len(correctness_calls(stub)) == 1
    stub.requests.clear()
    run(tmp_path, [{"question_id": "q1", "actual_answer": "Oslo", "attempt": 1}, ])
    assert len(correctness_calls(stub)) == 0  # a lone attempt 1 is a case run once: the same key


def test_the_cache_key_of_a_request_without_attempt_is_unchanged():
    import hashlib

    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    old = json.dumps({"v": SCHEMA_VERSION, "kind": "chat", "endpoint": "e", "request": request},
                     sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert cache_key("chat", request, endpoint="e") == hashlib.sha256(old.encode()).hexdigest()
    assert cache_key("chat", request, endpoint="e", attempt=2) != cache_key("chat", request, endpoint="e", attempt=3)


TWO_CLAIMS = """\
- template_id: transformers
  questions:
  - id: q2
    question_text: Which transformers are in Oslo?
    reference_answer: OSLO T1; OSLO T2
"""


@pytest.mark.parametrize(("threshold", "config", "exp_passed", "exp_flaky"), [
    (None, None, "1/2", "flaky"),
    ("0.6", None, "2/2", None),
    (None, "answer_pass_f1: 0.6\n", "2/2", None),  # the configuration file's key
    ("0.8", "answer_pass_f1: 0.6\n", "1/2", "flaky"),  # the command line wins over the file
])
def test_an_answer_passes_at_the_answer_f1_threshold_which_is_configurable(stub, tmp_path, threshold, config,
                                                                            exp_passed, exp_flaky):
    from openpyxl import load_workbook

    (tmp_path / "qa.yaml").write_text(textwrap.dedent(TWO_CLAIMS), encoding="utf-8")
    records = [{"question_id": "q2", "attempt": 1, "actual_answer": "OSLO T1; OSLO T2"},  # F1 1
               {"question_id": "q2", "attempt": 2, "actual_answer": "OSLO T1"}]  # recall 0.5, precision 1: F1 0.67
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "out.xlsx"
    extra = ["--answer-pass-f1", threshold] if threshold else []
    if config:
        (tmp_path / "settings.yaml").write_text(config, encoding="utf-8")
        extra += ["--config", str(tmp_path / "settings.yaml")]
    assert main(["run", str(tmp_path / "qa.yaml"), "-r", str(tmp_path / "r.jsonl"), "-o", str(out),
                 "--cache-path", str(tmp_path / "cache.sqlite3"), "--quiet", *extra]) == 0
    rows = list(load_workbook(out)["Overview"].iter_rows(values_only=True))
    row = dict(zip(rows[0], rows[1]))
    assert row["answer F1"] == pytest.approx((1 + 2 / 3) / 2)
    assert (row["attempts passed"], row["flaky"]) == (exp_passed, exp_flaky)


def test_the_workbook_states_the_pass_rules_of_the_kinds_present_with_the_threshold_used(stub, tmp_path):
    from openpyxl import load_workbook

    (tmp_path / "qa.yaml").write_text(textwrap.dedent(TWO_CLAIMS), encoding="utf-8")
    records = [{"question_id": "q2", "attempt": n, "actual_answer": "OSLO T1"} for n in (1, 2)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "out.xlsx"
    assert main(["run", str(tmp_path / "qa.yaml"), "-r", str(tmp_path / "r.jsonl"), "-o", str(out),
                 "--cache-path", str(tmp_path / "cache.sqlite3"), "--quiet", "--answer-pass-f1", "0.5"]) == 0
    book = load_workbook(out)
    for sheet in ("Summary", "Statistics"):  # a note may be wrapped over several rows: read as one text
        text = " ".join(cell for row in book[sheet].iter_rows(values_only=True) for cell in row if isinstance(cell, str))
        # the threshold this run used, and the rules end there: none of a kind the run has no case of
        assert "rules: reference answer: answer F1 0.5 or above (--answer-pass-f1)." in text, sheet


def test_an_answer_pass_threshold_outside_0_to_1_is_a_usage_error(tmp_path, capsys):
    from qareport.exit_status import USAGE_ERROR

    with pytest.raises(SystemExit) as stopped:
        main(["run", str(tmp_path), "-r", str(tmp_path), "--answer-pass-f1", "1.5"])
    assert stopped.value.code == USAGE_ERROR
    assert "must be a number from 0 to 1 (got '1.5')" in capsys.readouterr().err


def test_an_answer_pass_threshold_in_the_configuration_outside_0_to_1_names_the_file(tmp_path, capsys):
    from qareport.exit_status import USAGE_ERROR

    config = tmp_path / "settings.yaml"
    config.write_text("answer_pass_f1: high\n", encoding="utf-8")
    assert main(["run", str(tmp_path), "-r", str(tmp_path), "--config", str(config)]) == USAGE_ERROR
    assert f"'answer_pass_f1' in {config} must be a number between 0 and 1 (got 'high')" in capsys.readouterr().err
