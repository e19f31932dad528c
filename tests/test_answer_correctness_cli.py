"""`qareport answer-correctness -i IN.tsv -o OUT.tsv` end to end, against the stub OpenAI server (through
`qareport answer-correctness`, run in-process through `qareport.cli.main`)."""

from __future__ import annotations

import csv
import os

import pytest
from openai_stub import Fault, serve_stub

from qareport.cli import main as qareport_main


def run_command(argv: list[str]) -> int:
    """`qareport answer-correctness ARGV...`, in this process."""
    return qareport_main(["answer-correctness", *argv])

KEY = "sk-test-LEAKCHECK-tsv-0123456789abcdef"
HEADER = ["Question", "Reference answer", "Actual answer"]


@pytest.fixture(autouse=True)
def clean_openai_environ(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "AZURE_OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def server(monkeypatch):
    with serve_stub() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        yield stub


def write_tsv(path, header, rows):
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def read_tsv(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


ROWS = [
    ["Which transformers are in OSLO?", "OSLO T1; OSLO T2", "OSLO T1; OSLO T2"],
    ["Which lines leave STAVANGER?", "LC 300; LC 420", "LC 300; LC 999; LC 111"],
    ["Empty reference", "", "something"],
    ["Multi-line answer", "a; b", 'a; "quoted"\nsecond line'],
]


def test_judges_every_row_and_keeps_the_input_columns(server, tmp_path, capsys):
    source, target = tmp_path / "in.tsv", tmp_path / "out" / "out.tsv"
    write_tsv(source, [*HEADER, "Notes"], [[*row, f"note {n}"] for n, row in enumerate(ROWS)])
    status = run_command(["-i", str(source), "-o", str(target)])
    assert status == 1  # one row has an error
    rows = read_tsv(target)
    assert list(rows[0]) == [*HEADER, "Notes", "#Reference", "#PTarget", "#Matching", "Reasoning", "Error", "Recall", "Precision", "F1", "Cost"]
    assert [r["Question"] for r in rows] == [r[0] for r in ROWS]
    assert [r["Notes"] for r in rows] == ["note 0", "note 1", "note 2", "note 3"]
    first, second, empty, multi = rows
    assert (first["#Reference"], first["#PTarget"], first["#Matching"], first["Error"]) == ("2", "2", "2", "")
    assert (first["Recall"], first["Precision"], first["F1"]) == ("1", "1", "1")
    assert (second["#Reference"], second["#PTarget"], second["#Matching"]) == ("2", "3", "1")
    assert float(second["F1"]) == pytest.approx(0.4)
    assert second["Reasoning"].startswith("stub:")
    assert float(second["Cost"]) > 0
    assert empty["Error"] == "the reference answer is empty" and empty["#Reference"] == ""
    assert multi["Actual answer"] == 'a; "quoted"\nsecond line'
    err = capsys.readouterr().err
    assert "4 rows: 4 judged, 0 kept" in err and "1 with an error" in err
    assert KEY not in err
    assert KEY not in target.read_text(encoding="utf-8")


def test_a_rerun_resumes_instead_of_paying_twice(server, tmp_path, capsys):
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    write_tsv(source, HEADER, ROWS[:2])
    server.script(Fault(content="garbage"), Fault(content="garbage"))  # first row fails twice
    assert run_command(["-i", str(source), "-o", str(target), "--no-cache", "--concurrency", "1"]) == 1
    rows = read_tsv(target)
    assert "not JSON" in rows[0]["Error"] and rows[1]["Error"] == ""
    calls = server.chat_calls
    capsys.readouterr()

    assert run_command(["-i", str(source), "-o", str(target), "--no-cache"]) == 0
    assert server.chat_calls == calls + 1  # only the failed row was judged again
    rows = read_tsv(target)
    assert [r["Error"] for r in rows] == ["", ""]
    assert rows[0]["#Matching"] == "2"
    assert "2 rows: 1 judged, 1 kept" in capsys.readouterr().err


def test_resume_from_an_interrupted_output(server, tmp_path):
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    write_tsv(source, HEADER, ROWS[:2])
    assert run_command(["-i", str(source), "-o", str(target), "--no-cache"]) == 0
    complete = target.read_text(encoding="utf-8")
    lines = complete.splitlines(keepends=True)
    # the run was killed while writing the second row (rows are written as they finish)
    target.write_text(lines[0] + lines[1] + lines[2][:15], encoding="utf-8")
    calls = server.chat_calls
    assert run_command(["-i", str(source), "-o", str(target), "--no-cache"]) == 0
    assert server.chat_calls == calls + 1
    assert target.read_text(encoding="utf-8") == complete


def test_the_cache_makes_a_fresh_output_free(server, tmp_path):
    source = tmp_path / "in.tsv"
    write_tsv(source, HEADER, ROWS[:2])
    assert run_command(["-i", str(source), "-o", str(tmp_path / "a.tsv")]) == 0
    calls = server.calls
    assert run_command(["-i", str(source), "-o", str(tmp_path / "b.tsv")]) == 0
    assert server.calls == calls
    cache = tmp_path / "xdg" / "qareport" / "judge.sqlite3"
    assert cache.exists() and KEY.encode() not in cache.read_bytes()


def test_large_fields_are_read(server, tmp_path):
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    big = "; ".join(f"claim {n}" for n in range(30_000))  # > csv's default 128 KiB field limit
    write_tsv(source, HEADER, [["q", big, "claim 1"]])
    assert run_command(["-i", str(source), "-o", str(target), "--no-cache"]) == 0
    assert read_tsv(target)[0]["#Reference"] == "30000"


def test_missing_file(tmp_path, capsys):
    assert run_command(["-i", str(tmp_path / "nope.tsv"), "-o", str(tmp_path / "out.tsv")]) == 2
    err = capsys.readouterr().err
    assert err == f"answer-correctness: {tmp_path / 'nope.tsv'}: no such file\n"


def test_missing_column(tmp_path, capsys):
    source = tmp_path / "in.tsv"
    write_tsv(source, ["Question", "Reference answer", "Answer"], [["q", "r", "a"]])
    assert run_command(["-i", str(source), "-o", str(tmp_path / "out.tsv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"answer-correctness: {source}: missing column 'Actual answer' (found ")
    assert err.count("\n") == 1
    assert not (tmp_path / "out.tsv").exists()


def test_an_output_that_is_not_ours_is_left_alone(server, tmp_path, capsys):
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    write_tsv(source, HEADER, ROWS[:1])
    target.write_text("something\telse\n1\t2\n", encoding="utf-8")
    assert run_command(["-i", str(source), "-o", str(target)]) == 2
    assert "is not an answer-correctness output" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "something\telse\n1\t2\n"


def test_no_key_exits_2_with_the_reason(tmp_path, capsys):
    source = tmp_path / "in.tsv"
    write_tsv(source, HEADER, ROWS[:1])
    assert run_command(["-i", str(source), "-o", str(tmp_path / "out.tsv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("answer-correctness: No LLM judge configured")


def test_options_reach_the_requests(server, tmp_path):
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    write_tsv(source, HEADER, ROWS[:1])
    status = run_command(["-i", str(source), "-o", str(target), "--model", "gpt-4.1-mini",
                       "--base-url", server.url, "--response-format", "json_object", "-q",
                       "--cache-path", str(tmp_path / "c.sqlite3")])
    assert status == 0
    body = server.requests[0].body
    assert body["model"] == "gpt-4.1-mini"
    assert body["response_format"] == {"type": "json_object"}
    assert (tmp_path / "c.sqlite3").exists()


def test_a_rejected_key_writes_every_row_as_not_judged_and_exits_4(server, tmp_path, capsys):
    server.api_key = "the-right-key"
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    write_tsv(source, HEADER, ROWS[:2])
    assert run_command(["-i", str(source), "-o", str(target), "--no-cache"]) == 4  # JUDGE_FAILED
    rows = read_tsv(target)
    assert all(r["Error"].startswith("not judged: the judge was stopped: ") for r in rows)
    err = capsys.readouterr().err
    assert "JUDGE FAILED" in err and "rejected the API key" in err and KEY not in err
