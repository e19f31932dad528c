"""Faults of the process around a run, provoked for real: a bug in a stage, signals, a full disk,
names at the file system's limits, a terminal that is not UTF-8, no home folder, hostile header
values and a server that quotes the password. Each ends in its own exit status
(`qareport.exit_status`) with one clear line, never a traceback, and never a half-written file."""

from __future__ import annotations

import base64
import json
import os
import pty
import resource
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import held_run
import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult
from openpyxl import load_workbook
from test_email import Inbox, free_port, last_week_responses

from qareport import kinds
from qareport.cli import main
from qareport.console import visible
from qareport.exit_status import EMAIL_NOT_SENT, HUNG_UP, INTERNAL_ERROR, INTERRUPTED, TERMINATED, USAGE_ERROR
from qareport.kinds import Facts, Kind
from qareport.pipeline import RunOptions, run_pipeline
from qareport.redaction import register_secret

ROOT = Path(__file__).resolve().parents[1]
TESTCASES, RESPONSES = ROOT / "testcases", ROOT / "testcases" / "responses"
NON_ASCII_ID = "café-ünïcode-1"


def run(output: Path | str, *extra: str, testcases: Path | str = TESTCASES, responses: Path | str = RESPONSES) -> int:
    talk = [] if "-v" in extra else ["-q"]
    return main(["run", str(testcases), "--responses", str(responses), "--output", str(output), "--no-llm", *talk,
                 *extra])


def child(*args: str, env: dict[str, str] | None = None, drop: tuple[str, ...] = (), **kwargs) -> subprocess.CompletedProcess:
    """`python -m qareport ARGS` in a child process, as a user runs it."""
    full = {k: v for k, v in os.environ.items() if k not in drop}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "qareport", *map(str, args)], env=full, capture_output=True,
                          timeout=300, **kwargs)


@pytest.fixture(scope="module")
def last_week(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("last-week")
    report = folder / "week18.xlsx"
    assert run(report, responses=last_week_responses(folder / "responses")) == 0
    return report


# --- a bug is an internal error (3), and costs only the part it is in -------------------------------


class BrokenComparison(Kind):
    """A plugged-in kind (`qareport.kinds.register`) whose comparison of two runs has a bug."""
    name = "broken_comparison"
    label = "broken comparison"

    def explain_change(self, old: Facts, new: Facts) -> str | None:
        raise KeyError("found")


class BrokenEverywhere(Kind):
    """A plugged-in kind with a bug in what every workbook needs."""
    name = "broken_everywhere"
    label = "broken everywhere"

    def present(self, results) -> bool:
        raise ZeroDivisionError("division by zero")


@pytest.fixture
def registered(request) -> Iterator[Kind]:
    kind = kinds.register(request.param())
    yield kind
    kinds.unregister(kind.name)


@pytest.mark.parametrize("registered", [BrokenEverywhere], indirect=True)
def test_a_bug_exits_with_internal_error_3_in_one_line_not_1_which_means_a_gate_failed(registered, tmp_path,
                                                                                        capsys, monkeypatch):
    monkeypatch.delenv("QAREPORT_DEBUG", raising=False)
    assert run(tmp_path / "week.xlsx") == INTERNAL_ERROR
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "internal error" in line] == [
        "qareport: internal error: ZeroDivisionError: division by zero (set QAREPORT_DEBUG=1 for the traceback, "
        "and please report it)"]
    assert "Traceback" not in err
    assert not (tmp_path / "week.xlsx").exists()


@pytest.mark.parametrize("registered", [BrokenEverywhere], indirect=True)
def test_qareport_debug_keeps_the_traceback_of_an_internal_error(registered, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QAREPORT_DEBUG", "1")
    assert run(tmp_path / "week.xlsx") == INTERNAL_ERROR
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in present" in err


@pytest.mark.parametrize("registered", [BrokenComparison], indirect=True)
def test_a_bug_in_the_comparison_with_the_baseline_still_writes_the_workbook_without_it(registered, last_week,
                                                                                         tmp_path, capsys):
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(last_week), "--results", str(tmp_path / "week19.yaml")) == INTERNAL_ERROR
    err = capsys.readouterr().err
    assert f"{report} was written, but the workbook has no Changes or Trend sheet and no deltas: internal error in " \
           "the comparison with the baseline and the trend: KeyError: 'found'" in err
    sheets = load_workbook(report, read_only=True).sheetnames
    assert "Changes" not in sheets and "Overview" in sheets
    problems = [str(cell.value) for row in load_workbook(report, read_only=True)["Problems"].iter_rows()
                for cell in row if cell.value]
    assert any("internal error in the comparison with the baseline" in text for text in problems)
    assert (tmp_path / "week19.yaml").exists()  # the stages after it ran


def test_an_email_template_override_that_fails_to_render_still_writes_the_workbook_and_names_the_template(
        tmp_path, capsys):
    """A template given with --templates is the user's input: when it fails while rendering (it compiles,
    so the check before any work passes), the workbook is kept and the message names the template."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "email.txt").write_text("{{ metrics[99].label }}\n")  # compiles; fails on rendering
    report = tmp_path / "week.xlsx"
    status = run(report, "--templates", str(templates), "--email-to", "team@example.com", "--smtp-host", "127.0.0.1",
                 "--email-from", "qa@example.com")
    assert status == EMAIL_NOT_SENT
    err = capsys.readouterr().err
    assert f"{report} was written, but the email was not sent: " in err
    assert "email.txt: the email template cannot be rendered" in err
    assert "Traceback" not in err
    assert load_workbook(report, read_only=True).sheetnames[0] == "Summary"
    # the email command: the same message, and no message file is left
    assert main(["email", str(report), "--to", "team@example.com", "--templates", str(templates), "--eml",
                 str(tmp_path / "week.eml")]) == USAGE_ERROR
    err = capsys.readouterr().err
    assert "email.txt: the email template cannot be rendered" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "week.eml").exists()


@pytest.mark.parametrize("stage, left_out", [
    ("baseline", "the workbook has no comparison with it"),
    ("history", "the workbook has no Trend sheet"),
    ("results", "was not written"),
])
def test_a_bug_in_an_optional_stage_leaves_out_that_stage_only(last_week, tmp_path, stage, left_out):
    def fail_in(name: str) -> None:
        if name == stage:
            raise RuntimeError(f"bug in {name}")

    options = RunOptions(testcases=(str(TESTCASES),), responses=(str(RESPONSES),), output=str(tmp_path / "w.xlsx"),
                         results_path=str(tmp_path / "w.json"), baseline=str(last_week),
                         history=(str(last_week),), judge_options={"enabled": False})
    outcome = run_pipeline(options, on_stage=fail_in)
    assert outcome.exit_status == INTERNAL_ERROR
    assert next((fault.stage, str(fault.error)) for fault in outcome.faults)[1] == f"bug in {stage}"
    assert left_out in outcome.faults[0].left_out
    assert len(outcome.faults) == 1
    sheets = load_workbook(tmp_path / "w.xlsx", read_only=True).sheetnames
    assert ("Changes" in sheets) == (stage != "baseline")
    assert ("Trend" in sheets) == (stage != "history")
    assert (tmp_path / "w.json").exists() == (stage != "results")
    problems = [str(cell.value) for row in load_workbook(tmp_path / "w.xlsx", read_only=True)["Problems"].iter_rows()
                for cell in row if cell.value]
    said = [text for text in problems if f"RuntimeError: bug in {stage}" in text]
    assert len(said) == (stage != "results")  # the workbook says what it lacks (the results file is not in it)


# --- a terminal that is not UTF-8 ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def non_ascii_suite(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("non-ascii")
    (folder / "cases.yaml").write_text(f"""
- id: {NON_ASCII_ID}
  name: Qu'est-ce que le PIB ? — « GDP »
  conversation:
    - role: user
      content: Le PIB de la France
      target:
        indicator_selection:
          - dataset_id: WEO
            dimensions:
              - dimension_name: INDICATOR
                values: [{{id: NGDP, name: produit intérieur brut}}]
""", encoding="utf-8")
    (folder / "responses.json").write_text(
        '[{"test_case_id": "%s", "turns": [{"indicator_selection": [{"dataset_id": "WEO", "dimensions": '
        '[{"dimension_name": "INDICATOR", "values": [{"id": "NGDPX", "name": "autre"}]}]}]}]},'
        ' {"test_case_id": "inconnu-é", "turns": []}]' % NON_ASCII_ID, encoding="utf-8")
    return folder / "cases.yaml", folder / "responses.json"


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}],
                         ids=["PYTHONIOENCODING=ascii", "LC_ALL=C"])
def test_validate_prints_a_non_ascii_id_on_an_ascii_terminal_as_escapes(non_ascii_suite, env):
    cases, responses = non_ascii_suite
    done = child("validate", cases, "--responses", responses, env=env, drop=("PYTHONIOENCODING", "LC_ALL", "LANG"))
    out, err = done.stdout.decode("ascii"), done.stderr.decode("ascii")
    assert done.returncode == 1, err
    assert "inconnu-\\xe9" in out
    assert "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}],
                         ids=["PYTHONIOENCODING=ascii", "LC_ALL=C"])
def test_run_prints_its_lines_on_an_ascii_terminal_after_writing(non_ascii_suite, tmp_path, env):
    cases, responses = non_ascii_suite
    report = tmp_path / "rapport-é.xlsx"  # printed back in the result line
    done = child("run", cases, "--responses", responses, "--output", report, "--no-llm", env=env,
                 drop=("PYTHONIOENCODING", "LC_ALL", "LANG"))
    out, err = done.stdout.decode("ascii"), done.stderr.decode("ascii")
    assert done.returncode == 0, err
    assert "rapport-\\" in out and ".xlsx: 1 cases: 1 evaluated" in out
    assert "inconnu-\\xe9" in err and "Traceback" not in err
    assert report.exists()


# --- no home folder ------------------------------------------------------------------------------------


def _without_passwd_entry() -> list[str] | None:
    """A command prefix that runs a child under a user id the passwd database does not know: the
    user-namespace mapping of `unshare` (the interpreter stays readable), else None (skip)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    prefix = ["unshare", "--user", "--map-user=54321"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "import os, pwd; pwd.getpwuid(os.getuid())"],
                           capture_output=True, text=True)
    return prefix if probe.returncode == 1 and "KeyError" in probe.stderr else None


def test_a_run_without_home_under_a_user_without_passwd_entry_writes_the_report_and_no_cache_warning_without_a_judge(
        tmp_path):
    prefix = _without_passwd_entry()
    if prefix is None:
        pytest.skip("needs root and unshare to run as a user without a passwd entry")
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    report = tmp_path / "week.xlsx"
    done = subprocess.run([*prefix, sys.executable, "-m", "qareport", "run", str(TESTCASES), "--responses",
                           str(RESPONSES), "--output", str(report), "-q", "--no-llm"],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert report.exists()
    # with --no-llm no cache is used (the judge's is the only one), so there is nothing to warn of
    assert [line for line in done.stderr.splitlines() if "no home folder" in line] == []


# --- email header values, whatever their source -------------------------------------------------------


@pytest.mark.parametrize(("config", "env", "where"), [
    ("email:\n  to: \"team@example.com\\nBcc: spy@example.com\"\n", {}, "'email.to' in "),
    ("email:\n  cc: [\"lead@example.com\", \"x@example.com\\r\\nBcc: spy@example.com\"]\n", {}, "'email.cc' in "),
    ("email:\n  subject: \"weekly\\r\\nBcc: spy@example.com\"\n", {}, "'email.subject' in "),
    ("email:\n  subject: \"weekly\\abell\"\n", {}, "'email.subject' in "),
    ("", {"QAREPORT_SMTP_FROM": "qa@example.com\nBcc: spy@example.com"}, "environment variable QAREPORT_SMTP_FROM"),
])
def test_a_control_character_in_a_header_from_the_config_or_environment_is_refused_before_any_work(
        tmp_path, capsys, monkeypatch, config, env, where):
    inbox = Inbox()
    server = Controller(inbox, hostname="127.0.0.1", port=free_port())
    server.start()
    try:
        (tmp_path / "qareport.yaml").write_text(config or "{}\n")
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        report = tmp_path / "week.xlsx"
        if "email.to" not in where:  # run reads the recipients from --email-to only
            status = run(report, "--config", str(tmp_path / "qareport.yaml"), "--email-to", "team@example.com",
                         "--smtp-host", "127.0.0.1", "--smtp-port", str(server.port), "--smtp-security", "none",
                         *([] if env else ["--email-from", "qa@example.com"]))
            err = capsys.readouterr().err
            assert status == USAGE_ERROR
            assert where in err and ("holds a line break" in err or "holds a control character ('\\x07')" in err)
            assert not report.exists() and inbox.envelopes == []
        assert run(report) == 0
        # the email command refuses them as well, before reading the workbook
        capsys.readouterr()
        status = main(["email", str(report), "--config", str(tmp_path / "qareport.yaml"), "--smtp-host", "127.0.0.1",
                       "--smtp-port", str(server.port), "--smtp-security", "none",
                       *(["--to", "team@example.com"] if "email.to" not in where else []),
                       *([] if env else ["--from", "qa@example.com"])])
        err = capsys.readouterr().err
        assert status == USAGE_ERROR and where in err and "holds a" in err
        assert inbox.envelopes == []
    finally:
        server.stop()


def test_a_control_character_in_an_email_command_option_is_refused(tmp_path, capsys):
    assert main(["email", str(tmp_path / "week.xlsx"), "--to", "team@example.com", "--subject", "a\rb",
                 "--eml", str(tmp_path / "m.eml")]) == USAGE_ERROR
    assert "--subject: 'a\\rb' holds a line break; give it on one line" in capsys.readouterr().err


# --- the SMTP password is never printed -----------------------------------------------------------------

PASSWORD = "s3cret-Password+/=~"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


PASSWORD_FORMS = {
    "clear": PASSWORD,
    "AUTH PLAIN": b64(b"\0analyst\0" + PASSWORD.encode()),
    "AUTH LOGIN": b64(PASSWORD.encode()),
    "aligned at 1": b64(b"x" + PASSWORD.encode() + b"!"),
    "aligned at 2": b64(b"xy" + PASSWORD.encode() + b"tail"),
}


@pytest.fixture
def quoting_smtp_server():
    """An SMTP server that refuses every login and quotes the credentials in its refusal, in clear
    and in each base64 form (as a badly written or hostile server might)."""
    def authenticate(server, session, envelope, mechanism, auth_data):
        quoted = " ".join(f"{name}={form}" for name, form in PASSWORD_FORMS.items())
        return AuthResult(success=False, handled=False, message=f"535 5.7.8 no, {mechanism}: {quoted}")

    controller = Controller(Inbox(), hostname="127.0.0.1", port=free_port(), authenticator=authenticate,
                            auth_require_tls=False)
    controller.start()
    yield controller.port
    controller.stop()


@pytest.mark.parametrize("command", ["email", "run"])
def test_the_smtp_password_and_its_base64_forms_are_scrubbed_from_a_refusal_that_quotes_them(
        quoting_smtp_server, last_week, tmp_path, capsys, monkeypatch, command):
    monkeypatch.setenv("QAREPORT_SMTP_PASSWORD", PASSWORD)
    monkeypatch.setenv("QAREPORT_SMTP_USER", "analyst")
    smtp = ["--smtp-host", "127.0.0.1", "--smtp-port", str(quoting_smtp_server), "--smtp-security", "none"]
    if command == "email":
        status = main(["email", str(last_week), "--to", "team@example.com", "--from", "qa@example.com", *smtp])
    else:
        status = run(tmp_path / "week.xlsx", "--email-to", "team@example.com", "--email-from", "qa@example.com", *smtp)
    out, err = capsys.readouterr()
    assert status == (USAGE_ERROR if command == "email" else EMAIL_NOT_SENT), err
    assert "refused the login of 'analyst'" in err and "***" in err
    for name, form in PASSWORD_FORMS.items():
        assert form not in out + err, name
    assert "=***" in err  # each quoted form was there, and masked


def test_a_password_that_is_not_ascii_is_a_clear_email_error_and_is_not_printed(quoting_smtp_server, last_week,
                                                                                 capsys, monkeypatch):
    monkeypatch.setenv("QAREPORT_SMTP_PASSWORD", "Pässwort-geheim")
    monkeypatch.setenv("QAREPORT_SMTP_USER", "analyst")
    status = main(["email", str(last_week), "--to", "team@example.com", "--from", "qa@example.com", "--smtp-host",
                   "127.0.0.1", "--smtp-port", str(quoting_smtp_server), "--smtp-security", "none"])
    err = capsys.readouterr().err
    assert status == USAGE_ERROR, err
    assert "holds a character that is not ASCII" in err and "geheim" not in err


def test_a_registered_secret_is_masked_in_whatever_the_command_line_prints():
    register_secret("an0ther-secret", user="me")
    shown = visible(f"KeyError: {b64(b'ab' + b'an0ther-secret')} an0ther-secret {b64(b'me' + bytes(1) + b'an0ther-secret')}")
    assert "an0ther" not in shown and "secret" not in shown


# --- names at the file system's limits --------------------------------------------------------------


def leftovers(folder: Path) -> list[str]:
    return [path.name for path in folder.rglob(".qareport-*")]


@pytest.mark.parametrize("length", [233, 240, 255])
def test_an_output_and_results_name_up_to_255_bytes_are_written(tmp_path, capsys, length):
    report = tmp_path / ("w" * (length - 5) + ".xlsx")
    results = tmp_path / ("r" * (length - 5) + ".json")
    assert run(report, "--results", str(results)) == 0, capsys.readouterr().err
    assert report.exists() and results.exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("option", ["--output", "--results"])
def test_a_name_longer_than_the_file_system_takes_is_a_usage_error_before_any_work(tmp_path, capsys, option):
    long_name = "w" * 251 + (".xlsx" if option == "--output" else ".yaml")
    report = tmp_path / (long_name if option == "--output" else "week.xlsx")
    extra = ["--results", str(tmp_path / long_name)] if option == "--results" else []
    assert run(report, *extra, "-v") == USAGE_ERROR
    err = capsys.readouterr().err
    assert f"qareport: {option} " in err and "the name is 256 bytes long; the file system takes at most 255" in err
    assert "loaded" not in err and "internal error" not in err  # refused before any work
    assert list(tmp_path.iterdir()) == []


def deep_folder(root: Path, length: int) -> Path:
    """A folder whose path is `length` bytes long (components of at most 200 bytes)."""
    folder = root
    while len(os.fsencode(str(folder))) < length - 201:
        folder = folder / ("d" * 200)
    rest = length - len(os.fsencode(str(folder))) - 1
    folder = folder / ("e" * rest)
    folder.mkdir(parents=True)
    assert len(os.fsencode(str(folder))) == length
    return folder


def test_a_path_near_path_max_is_written_through_a_temporary_name_that_fits(tmp_path, capsys):
    folder = deep_folder(tmp_path, 4095 - 40)
    report = folder / ("w" * 34 + ".xlsx")  # 4095 bytes: the longest path Linux takes
    assert len(os.fsencode(str(report))) == 4095
    assert run(report) == 0, capsys.readouterr().err
    assert report.exists() and leftovers(tmp_path) == []


def test_a_path_beyond_path_max_is_a_usage_error_before_any_work(tmp_path, capsys):
    folder = deep_folder(tmp_path, 4095 - 40)
    report = folder / ("w" * 35 + ".xlsx")
    assert run(report) == USAGE_ERROR
    assert "the path is 4096 bytes long; the file system takes at most 4095" in capsys.readouterr().err
    assert list(folder.iterdir()) == []


# --- SIGTERM is handled as SIGINT is ----------------------------------------------------------------


@pytest.fixture(scope="module")
def big_suite(tmp_path_factory) -> tuple[Path, Path]:
    """300 cases: rows enough that writing them is under way when the run is held (`held_run`); the
    hold, not the suite's size, makes each stage last until the signal."""
    folder = tmp_path_factory.mktemp("big")
    cases, responses = [], []
    for i in range(300):
        cases.append(f"""- id: case-{i:05d}
  name: GDP of country {i}
  tags: [t{i % 7}]
  conversation:
    - role: user
      content: What is the GDP of country {i}?
      target:
        indicator_selection:
          - dataset_id: WEO
            dimensions:
              - dimension_name: INDICATOR
                values: [{{id: NGDP, name: gross domestic product}}, {{id: NGDPPC, name: GDP per capita}}]
              - dimension_name: COUNTRY
                values: [{{id: C{i}, name: Country {i}}}]
""")
        responses.append(json.dumps({"test_case_id": f"case-{i:05d}", "indicator_selection": [
            {"dataset_id": "WEO", "dimensions": [
                {"dimension_name": "INDICATOR", "values": [{"id": "NGDP", "name": "gross domestic product"},
                                                           {"id": "X", "name": "x"}]},
                {"dimension_name": "COUNTRY", "values": [{"id": f"C{i}", "name": f"Country {i}"}]}]}]}))
    (folder / "cases.yaml").write_text("".join(cases))
    (folder / "responses.jsonl").write_text("\n".join(responses) + "\n")
    return folder / "cases.yaml", folder / "responses.jsonl"


HELD_RUN = Path(__file__).resolve().parent / "held_run.py"
WRITING_OPENS = 2
"""Writing is stopped once the rows of its first sheets have files in TMPDIR, beside the temporary
workbook in the output folder: the clean-up then has both to remove."""


def stop_in_stage(big_suite, tmp_path: Path, stage: str, signum: int, *,
                  opens: int = 0) -> tuple[int, str, Path, Path, list[str]]:
    """Run the command with its stderr on a terminal (so that it shows each stage as it starts),
    held inside `stage` (`held_run`: after its name shows and then `opens` more files opened in
    TMPDIR) until `signum` is sent; return the exit status, what it printed, the output folder, its
    TMPDIR, and what the two held when the signal was sent. The signal is sent only once the run waits inside the stage, so the outcome does
    not depend on how fast the machine is."""
    cases, responses = big_suite
    out, tmp = tmp_path / "out", tmp_path / "tmpdir"
    out.mkdir()
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("QAREPORT_DEBUG", None)
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, str(HELD_RUN), stage, str(opens), "run", str(cases), "--responses",
                                str(responses), "--output", str(out / "week.xlsx"), "--no-llm", "--no-cache"],
                               stdout=subprocess.DEVNULL, stderr=follower, env=env)
    os.close(follower)
    shown, sent, held = b"", False, []
    while True:  # until the child closes the terminal: it ends, whatever happens, within the timeout below
        ready, _, _ = select.select([leader], [], [], 300)
        if not ready:
            process.kill()
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the process ended and closed its side
            break
        if not chunk:
            break
        shown += chunk
        if not sent and held_run.HELD.encode() in shown:
            held = sorted(str(path.relative_to(tmp_path)) for path in [*out.rglob("*"), *tmp.rglob("*")])
            process.send_signal(signum)
            sent = True
    status = process.wait(timeout=60)
    os.close(leader)
    assert sent, f"the run never reached {stage!r}: {shown!r}"
    return status, shown.decode("utf-8", "replace"), out, tmp, held


@pytest.mark.parametrize("stage", ["loading test cases", "evaluating", "writing"])
def test_sigterm_in_each_stage_cleans_up_says_so_and_exits_143(big_suite, tmp_path, stage):
    status, shown, out, tmp, held = stop_in_stage(big_suite, tmp_path, stage, signal.SIGTERM,
                                                  opens=WRITING_OPENS if stage == "writing" else 0)
    assert status == TERMINATED, shown
    assert "qareport: terminated (SIGTERM); nothing half-written is left" in shown
    assert "Traceback" not in shown and "internal error" not in shown and "Exception ignored" not in shown
    assert list(out.iterdir()) == [], shown  # no workbook, no temporary file
    assert list(tmp.iterdir()) == [], shown  # no rows folder left in TMPDIR
    if stage == "writing":
        assert _half_written(held), held


def test_sighup_from_a_closed_terminal_while_writing_cleans_up_as_sigterm_does_and_exits_129(big_suite, tmp_path):
    status, shown, out, tmp, held = stop_in_stage(big_suite, tmp_path, "writing", signal.SIGHUP, opens=WRITING_OPENS)
    assert _half_written(held), held
    assert status == HUNG_UP, shown
    assert "qareport: hung up (SIGHUP); nothing half-written is left" in shown
    assert "Traceback" not in shown and "Exception ignored" not in shown
    assert list(out.iterdir()) == [] and list(tmp.iterdir()) == []  # no temporary workbook, no rows folder


def _half_written(held: list[str]) -> bool:
    """Whether the run was stopped with a temporary workbook in the output folder and a file of
    rows in TMPDIR: what the clean-up must remove."""
    return (any(name.startswith("out/.qareport-week.xlsx.") for name in held)
            and any(name.startswith("tmpdir/qareport-rows-") and name.count("/") == 2 for name in held))


def test_sigint_while_writing_cleans_up_the_same_way_and_exits_130(big_suite, tmp_path):
    status, shown, out, tmp, held = stop_in_stage(big_suite, tmp_path, "writing", signal.SIGINT, opens=WRITING_OPENS)
    assert _half_written(held), held
    assert status == INTERRUPTED, shown
    assert "qareport: interrupted; nothing half-written is left" in shown
    assert list(out.iterdir()) == [] and list(tmp.iterdir()) == []


# --- a full disk ---------------------------------------------------------------------------------------


def _full_disk_command(folder: Path, args: list[str]) -> list[str] | None:
    """`python -m qareport ARGS` with `folder` on a 16 KB tmpfs of its own (a mount namespace of an
    unprivileged user namespace), or None when this machine does not allow one."""
    if not shutil.which("unshare"):
        return None
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            f"mount -t tmpfs -o size=16k tmpfs {folder}"], capture_output=True)
    if probe.returncode != 0:
        return None
    quoted = " ".join(f"'{arg}'" for arg in [sys.executable, "-X", "dev", "-m", "qareport", *args])
    return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
            f"mount -t tmpfs -o size=16k tmpfs {folder} && exec {quoted}"]


def test_a_full_disk_is_one_line_and_exit_2_with_no_exception_ignored_after_it(tmp_path):
    folder = tmp_path / "small-disk"
    folder.mkdir()
    report = folder / "week.xlsx"
    command = _full_disk_command(folder, ["run", str(TESTCASES), "--responses", str(RESPONSES), "--output",
                                          str(report), "--no-llm", "-q"])
    if command is None:
        pytest.skip("no tmpfs can be mounted here (needs unprivileged user namespaces)")
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == USAGE_ERROR, done.stderr
    problems = [line for line in done.stderr.splitlines() if "LLM metrics skipped" not in line
                and "has no response" not in line]
    assert problems == [f"qareport: {report}: cannot write the workbook: [Errno 28] No space left on device"]


def test_a_file_size_limit_is_one_line_and_exit_2_with_no_exception_ignored_after_it(tmp_path):
    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    report = tmp_path / "week.xlsx"
    done = subprocess.run([sys.executable, "-m", "qareport", "run", str(TESTCASES), "--responses",
                           str(RESPONSES), "--output", str(report), "--no-llm", "-q", "--no-cache"],
                          capture_output=True, text=True, timeout=300, preexec_fn=limit_file_size,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == USAGE_ERROR, done.stderr
    problems = [line for line in done.stderr.splitlines() if "LLM metrics skipped" not in line
                and "has no response" not in line]
    assert problems == [f"qareport: {report}: cannot write the workbook: [Errno 27] File too large"]
    assert list(tmp_path.iterdir()) == []
