"""`qareport email` and `qareport run --email-to`, against a real SMTP server on loopback
(aiosmtpd), reading back what it received: the HTML body, the text alternative, the attachment."""

from __future__ import annotations

import email
import email.policy
import json
import re
import socket
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from qareport.cli import main
from qareport.exit_status import EMAIL_NOT_SENT

ROOT = Path(__file__).resolve().parents[1]
TESTCASES, RESPONSES = ROOT / "testcases", ROOT / "testcases" / "responses"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
REGRESSED_CASE = "c540d28c-31cc-40fa-930a-4380d76fd1e7"  # last week it selected exactly its target


def last_week_responses(folder: Path) -> Path:
    """The bundled responses as they were a week earlier: one case answered with an error, one
    case without the false positive it has now (so this week regresses on it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "power-system.json").write_bytes((RESPONSES / "power-system.json").read_bytes())
    records = [json.loads(line) for line in (RESPONSES / "imf.jsonl").read_text().splitlines() if line.strip()]
    for record in records:
        if record.get("test_case_id") == "c48d7624-d376-48ca-b2d8-386999befb45":
            record.clear()
            record.update(test_case_id="c48d7624-d376-48ca-b2d8-386999befb45", status="error", error="timeout")
        if record.get("test_case_id") == REGRESSED_CASE:
            for dataset in record["indicator_selection"]:
                for dimension in dataset["dimensions"]:
                    dimension["values"] = [v for v in dimension["values"] if v["id"] != "NGDP_R"]
    (folder / "imf.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def run(output: Path, *extra: str, responses: Path = RESPONSES, epoch: str | None = None) -> int:
    with pytest.MonkeyPatch.context() as patch:
        if epoch:
            patch.setenv("SOURCE_DATE_EPOCH", epoch)
        return main(["run", str(TESTCASES), "--responses", str(responses), "--output", str(output),
                     "--no-llm", "-q", *extra])


@pytest.fixture(autouse=True)
def sender(monkeypatch):
    """The From address, as a deployment sets it; a test of its absence takes it away."""
    monkeypatch.setenv("QAREPORT_SMTP_FROM", "qa-bot@example.com")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Last week's workbook, and this week's compared with it."""
    folder = tmp_path_factory.mktemp("email-reports")
    last_week, this_week = folder / "last-week.xlsx", folder / "this-week.xlsx"
    assert run(last_week, responses=last_week_responses(folder / "old"), epoch="1714557600") == 0
    assert run(this_week, "--baseline", str(last_week), epoch="1715162400") == 0
    return last_week, this_week


class Inbox:
    """What the SMTP server received, and who logged in."""

    def __init__(self):
        self.envelopes = []
        self.logins = []

    async def handle_DATA(self, server, session, envelope):
        self.envelopes.append(envelope)
        return "250 Message accepted"

    def messages(self):
        return [email.message_from_bytes(e.original_content, policy=email.policy.default) for e in self.envelopes]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def smtp_server():
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield inbox, controller.port
    controller.stop()


@pytest.fixture
def smtp_server_with_login():
    inbox = Inbox()

    def authenticate(server, session, envelope, mechanism, auth_data):
        ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (b"analyst", b"s3cret-pw")
        inbox.logins.append(auth_data.login if isinstance(auth_data, LoginPassword) else None)
        return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535 itself

    # plain SMTP on loopback: AUTH offered without TLS (requiring AUTH too would make aiosmtpd warn)
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port(), authenticator=authenticate,
                            auth_require_tls=False)
    controller.start()
    yield inbox, controller.port
    controller.stop()


def smtp_args(port: int) -> list[str]:
    return ["--smtp-host", "127.0.0.1", "--smtp-port", str(port), "--smtp-security", "none"]


def test_email_sends_the_workbook_with_an_html_body_and_a_text_alternative(reports, smtp_server, capsys):
    _, report = reports
    inbox, port = smtp_server
    assert main(["email", str(report), "--to", "team@example.com", "--cc", "lead@example.com", *smtp_args(port)]) == 0
    (envelope,) = inbox.envelopes
    assert sorted(envelope.rcpt_tos) == ["lead@example.com", "team@example.com"]
    (message,) = inbox.messages()
    assert message["To"] == "team@example.com" and message["Cc"] == "lead@example.com"
    # the verdict leads; last week's error case, now right, counts as rising from failing
    assert message["Subject"].startswith("1 regression, macro recall 0.84 (+0.07)")
    assert len(message["Subject"]) <= 80
    assert message["From"] == "qa-bot@example.com"
    assert message.get_body(("html",)) is not None and message.get_body(("plain",)) is not None
    (attachment,) = list(message.iter_attachments())
    assert attachment.get_content_type() == XLSX
    assert attachment.get_filename() == "this-week.xlsx"
    assert attachment.get_content() == report.read_bytes()
    assert "emailed this-week.xlsx to team@example.com, lead@example.com" in capsys.readouterr().out


def test_the_html_body_shows_headline_metrics_deltas_and_top_regressions_without_the_attachment(reports, smtp_server):
    _, report = reports
    inbox, port = smtp_server
    assert main(["email", str(report), "--to", "team@example.com", *smtp_args(port)]) == 0
    html = inbox.messages()[0].get_body(("html",)).get_content()
    for text in ("How good is it", "macro precision", "macro recall", "steps score", "within noise",
                 "What got worse (1)", "show_me_gdp_and_gdp_per_capita_in_us_dollars_for_brazil",
                 "extra INDICATOR NGDP_R", "What got better (1)", "could_you_give_me_the_population_numbers_for_mexico",
                 "Not evaluated", "the LLM judge was turned off for this run"):
        assert text in html, text
    assert "#9C0006" in html  # the regression is marked red
    text = inbox.messages()[0].get_body(("plain",)).get_content()
    assert "WHAT GOT WORSE (1)" in text
    assert ("  - show_me_gdp_and_gdp_per_capita_in_us_dollars_for_brazil: extra INDICATOR NGDP_R "
            "(macro precision 1.00 \u2192 0.83, grade ideal \u2192 acceptable)") in text
    for body in (html, text):  # written for a stakeholder, not for whoever runs the tool
        assert "OPENAI_API_KEY" not in body and "--" not in body.replace("<!--", "")


def test_the_email_fits_a_phone_screen(reports, smtp_server):
    _, report = reports
    inbox, port = smtp_server
    assert main(["email", str(report), "--to", "team@example.com", *smtp_args(port)]) == 0
    html = inbox.messages()[0].get_body(("html",)).get_content()
    widths = [int(w) for w in re.findall(r"(?<!max-)width:(\d+)px", html)]
    assert widths and max(widths) <= 100  # only the narrow number columns have a width of their own
    assert "max-width:600px" in html and 'name="viewport"' in html
    assert max(row.count("<td") for row in html.split("<tr>")) <= 3  # no table wider than three columns


def test_without_a_baseline_the_email_names_the_weakest_cases(reports, tmp_path):
    last_week, _ = reports
    out = tmp_path / "m.eml"
    assert main(["email", str(last_week), "--to", "team@example.com", "--eml", str(out)]) == 0
    text = email.message_from_bytes(out.read_bytes(), policy=email.policy.default).get_body(("plain",)).get_content()
    assert "WEAKEST CASES: INDICATOR SELECTION (macro recall / macro precision)" in text
    assert "how_much_did_italys_economy_grow_in_2023: 0.00 / 0.00, selected nothing" in text.replace("  - ", "")


def test_sending_needs_a_sender_and_never_makes_one_up_from_the_host_name(reports, smtp_server, monkeypatch, capsys):
    _, report = reports
    inbox, port = smtp_server
    monkeypatch.delenv("QAREPORT_SMTP_FROM")
    assert main(["email", str(report), "--to", "team@example.com", *smtp_args(port)]) == 2
    assert "no sender address: give --from" in capsys.readouterr().err
    assert inbox.envelopes == []
    assert main(["email", str(report), "--to", "team@example.com", "--from", "me@example.com", *smtp_args(port)]) == 0
    assert inbox.messages()[0]["From"] == "me@example.com"


def test_a_message_written_to_a_file_needs_its_recipients_too(reports, tmp_path, capsys):
    _, report = reports
    out = tmp_path / "m.eml"
    assert main(["email", str(report), "--eml", str(out)]) == 2
    assert "no recipient: give --to" in capsys.readouterr().err and not out.exists()


def test_the_login_comes_from_the_environment_and_the_password_is_never_printed(reports, smtp_server_with_login, monkeypatch, capsys):
    _, report = reports
    inbox, port = smtp_server_with_login
    monkeypatch.setenv("QAREPORT_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("QAREPORT_SMTP_PORT", str(port))
    monkeypatch.setenv("QAREPORT_SMTP_USER", "analyst")
    monkeypatch.setenv("QAREPORT_SMTP_PASSWORD", "s3cret-pw")
    assert main(["email", str(report), "--to", "team@example.com", "--smtp-security", "none"]) == 0
    assert inbox.logins == [b"analyst"] and len(inbox.envelopes) == 1
    monkeypatch.setenv("QAREPORT_SMTP_PASSWORD", "wrong-pw")
    assert main(["email", str(report), "--to", "team@example.com", "--smtp-security", "none"]) == 2
    captured = capsys.readouterr()
    assert "refused the login of 'analyst'" in captured.err
    assert "s3cret-pw" not in captured.out + captured.err and "wrong-pw" not in captured.out + captured.err


def test_smtp_settings_come_from_the_email_section_of_the_configuration(reports, smtp_server, tmp_path, monkeypatch):
    _, report = reports
    inbox, port = smtp_server
    config = tmp_path / "qareport.yaml"
    config.write_text(f"email:\n  host: 127.0.0.1\n  port: {port}\n  security: none\n  from: qa@example.com\n"
                      "  to: [team@example.com]\n")
    monkeypatch.delenv("QAREPORT_SMTP_FROM")  # the environment would win over the file
    assert main(["email", str(report), "--config", str(config)]) == 0
    (message,) = inbox.messages()
    assert message["From"] == "qa@example.com" and message["To"] == "team@example.com"


def test_eml_writes_the_message_to_a_file_instead_of_sending_it(reports, tmp_path):
    _, report = reports
    out = tmp_path / "report.eml"
    assert main(["email", str(report), "--to", "team@example.com", "--subject", "Weekly QA", "--eml", str(out)]) == 0
    message = email.message_from_bytes(out.read_bytes(), policy=email.policy.default)
    assert message["Subject"] == "Weekly QA"
    assert [a.get_content_type() for a in message.iter_attachments()] == [XLSX]


def test_run_with_email_to_writes_the_workbook_and_sends_it(reports, smtp_server, tmp_path):
    last_week, _ = reports
    inbox, port = smtp_server
    out = tmp_path / "weekly.xlsx"
    assert run(out, "--baseline", str(last_week), "--email-to", "team@example.com", "--email-subject", "QA week 19",
               *smtp_args(port)) == 0
    assert out.is_file()
    (message,) = inbox.messages()
    assert message["Subject"] == "QA week 19"
    assert next(iter(message.iter_attachments())).get_content() == out.read_bytes()


def test_an_unreachable_smtp_server_is_one_clear_line_and_exit_status_2(reports, capsys):
    _, report = reports
    port = free_port()  # nothing listens there
    assert main(["email", str(report), "--to", "team@example.com", *smtp_args(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"qareport: cannot reach the SMTP server 127.0.0.1:{port}")


def test_starttls_against_a_server_without_it_is_a_clear_error_not_a_plaintext_send(reports, smtp_server, capsys):
    _, report = reports
    inbox, port = smtp_server
    assert main(["email", str(report), "--to", "team@example.com", "--smtp-host", "127.0.0.1",
                 "--smtp-port", str(port)]) == 2  # STARTTLS is the default
    assert inbox.envelopes == []
    assert "does not support STARTTLS" in capsys.readouterr().err


def test_run_still_writes_the_workbook_when_the_smtp_server_is_unreachable(tmp_path, capsys):
    out = tmp_path / "report.xlsx"
    assert run(out, "--email-to", "team@example.com", *smtp_args(free_port())) == EMAIL_NOT_SENT
    assert out.is_file()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"qareport: {out} was written, but the email was not sent: cannot reach the SMTP server")


def test_run_without_an_smtp_server_configured_fails_before_evaluating(tmp_path, capsys):
    out = tmp_path / "report.xlsx"
    assert run(out, "--email-to", "team@example.com") == 2
    assert not out.exists()
    assert "no SMTP server configured" in capsys.readouterr().err


def test_text_from_test_cases_is_escaped_in_the_html_body(tmp_path):
    suite = tmp_path / "cases.yaml"
    suite.write_text(
        "- id: x1\n  name: \"<script>alert('x')</script> & co\"\n  conversation:\n"
        "  - role: user\n    content: GDP?\n    target:\n      indicator_selection:\n"
        "      - dataset_id: D\n        dimensions:\n        - dimension_name: INDICATOR\n"
        "          values: [{id: GDP, name: gdp}]\n"
    )
    selection = '[{"dataset_id": "D", "dimensions": [{"dimension_name": "INDICATOR", "values": %s}]}]'
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text('[{"id": "x1", "indicator_selection": %s}]' % (selection % '[{"id": "GDP", "name": "gdp"}]'))
    bad.write_text('[{"id": "x1", "indicator_selection": %s}]' % (selection % '[{"id": "CPI", "name": "cpi"}]'))
    base = ["run", str(suite), "--no-llm", "-q", "--output"]
    assert main([*base, str(tmp_path / "old.xlsx"), "--responses", str(good)]) == 0
    assert main([*base, str(tmp_path / "new.xlsx"), "--responses", str(bad), "--baseline", str(tmp_path / "old.xlsx")]) == 0
    out = tmp_path / "m.eml"
    assert main(["email", str(tmp_path / "new.xlsx"), "--to", "a@example.com", "--eml", str(out)]) == 0
    html = email.message_from_bytes(out.read_bytes(), policy=email.policy.default).get_body(("html",)).get_content()
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co" in html
    assert "<script>" not in html
