"""The email of an unattended weekly run, against real SMTP servers on loopback (aiosmtpd): a
failure after the workbook is written has its own exit status, transient refusals are tried again,
a message too large goes without the workbook and says so, the message is marked automatic, the
attachment's name is always a plain base name, and a stop (SIGTERM) is not held up by a hanging
server."""

from __future__ import annotations

import asyncio
import email
import email.policy
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from test_email import TESTCASES, Inbox, free_port, smtp_args

from qareport import emailing
from qareport.cli import main
from qareport.exit_status import EMAIL_NOT_SENT, TERMINATED

RESPONSES = TESTCASES / "responses"


@pytest.fixture(autouse=True)
def sender(monkeypatch):
    monkeypatch.setenv("QAREPORT_SMTP_FROM", "qa-bot@example.com")


@pytest.fixture
def quick_retries(monkeypatch):
    """Retries a test can wait for (the pauses of a real run are seconds long)."""
    monkeypatch.setattr(emailing, "RETRY_WAITS", (0.05, 0.1))


def run(output: Path | str, *extra: str) -> int:
    return main(["run", str(TESTCASES), "--responses", str(RESPONSES), "--output", str(output), "--no-llm", "-q",
                 *extra])


class Moody(Inbox):
    """An inbox whose first DATA commands get the scripted replies ("451 ...", or "drop" to cut the
    connection without a word); the next ones are accepted."""

    def __init__(self, *replies: str):
        super().__init__()
        self.replies = list(replies)
        self.tries = 0

    async def handle_DATA(self, server, session, envelope):
        self.tries += 1
        if self.replies:
            reply = self.replies.pop(0)
            if reply == "drop":
                server.transport.abort()
                return "421 closing"
            return reply
        return await super().handle_DATA(server, session, envelope)


def serve(handler) -> Controller:
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    return controller


def test_a_run_whose_email_cannot_be_sent_keeps_the_workbook_and_exits_email_not_sent(tmp_path, capsys):
    out = tmp_path / "week.xlsx"
    assert run(out, "--email-to", "team@example.com", *smtp_args(free_port())) == EMAIL_NOT_SENT
    assert out.is_file()
    err = capsys.readouterr().err
    assert f"qareport: {out} was written, but the email was not sent: cannot reach the SMTP server" in err
    assert f"(exit status {EMAIL_NOT_SENT})" in err


@pytest.mark.parametrize("replies", [("451 4.3.0 try again later",), ("drop",), ("451 busy", "drop")])
def test_a_transient_smtp_failure_is_tried_again_and_the_message_goes_once(tmp_path, quick_retries, replies):
    inbox = Moody(*replies)
    controller = serve(inbox)
    try:
        assert run(tmp_path / "week.xlsx", "--email-to", "team@example.com", *smtp_args(controller.port)) == 0
    finally:
        controller.stop()
    assert inbox.tries == len(replies) + 1
    assert len(inbox.envelopes) == 1


def test_a_failure_that_lasts_is_given_up_after_three_tries_and_a_permanent_one_at_once(tmp_path, quick_retries,
                                                                                          capsys):
    lasting, permanent = Moody(*["451 4.3.0 later"] * 5), Moody("554 5.7.1 no thanks")
    for inbox in (lasting, permanent):
        controller = serve(inbox)
        try:
            status = run(tmp_path / "week.xlsx", "--email-to", "team@example.com", *smtp_args(controller.port))
        finally:
            controller.stop()
        assert status == EMAIL_NOT_SENT and inbox.envelopes == []
    assert (lasting.tries, permanent.tries) == (3, 1)
    err = capsys.readouterr().err
    assert "451 4.3.0 later (tried 3 times)" in err and "554 5.7.1 no thanks" in err


def test_a_message_over_the_size_limit_goes_without_the_workbook_and_says_so(tmp_path, monkeypatch, capsys):
    inbox = Inbox()
    controller = serve(inbox)
    report = tmp_path / "week.xlsx"
    assert run(report) == 0
    monkeypatch.setenv("QAREPORT_SMTP_MAX_SIZE", "0.02")  # 20 kB: the workbook alone is larger
    try:
        assert main(["email", str(report), "--to", "team@example.com", *smtp_args(controller.port)]) == 0
        out = capsys.readouterr().out
        monkeypatch.setenv("QAREPORT_SMTP_MAX_SIZE", "10")
        assert main(["email", str(report), "--to", "team@example.com", *smtp_args(controller.port)]) == 0
    finally:
        controller.stop()
    small, full = inbox.messages()
    assert list(small.iter_attachments()) == [] and len(list(full.iter_attachments())) == 1
    text, html = small.get_body(("plain",)).get_content(), small.get_body(("html",)).get_content()
    for body in (text, html):
        assert "The workbook week.xlsx (" in body and "is not attached" in body and "more than the 0.02 MB" in body
        assert "attached workbook" not in body
    assert len(inbox.envelopes[0].original_content) <= 20_000
    assert "emailed week.xlsx to team@example.com" in out and "without the workbook: week.xlsx not attached" in out
    assert "above the limit of 0.02 MB (email.max_size, QAREPORT_SMTP_MAX_SIZE)" in out


def test_a_template_override_that_does_not_place_the_note_gets_it_at_the_end(tmp_path, monkeypatch):
    report = tmp_path / "week.xlsx"
    assert run(report) == 0
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "email.txt").write_text("{{ verdict }}\nSee {{ file_name }}.\n")
    monkeypatch.setenv("QAREPORT_SMTP_MAX_SIZE", "0.02")
    eml = tmp_path / "m.eml"
    assert main(["email", str(report), "--to", "a@example.com", "--templates", str(templates), "--eml", str(eml)]) == 0
    message = email.message_from_bytes(eml.read_bytes(), policy=email.policy.default)
    assert message.get_body(("plain",)).get_content().rstrip().endswith("Ask whoever runs the QA report for the file.")


def test_the_message_is_marked_automatic_so_out_of_office_replies_do_not_answer_it(tmp_path):
    report, eml = tmp_path / "week.xlsx", tmp_path / "m.eml"
    assert run(report) == 0
    assert main(["email", str(report), "--to", "a@example.com", "--eml", str(eml)]) == 0
    message = email.message_from_bytes(eml.read_bytes(), policy=email.policy.default)
    assert message["Auto-Submitted"] == "auto-generated"
    assert message["X-Auto-Response-Suppress"] == "All"


@pytest.mark.parametrize(("output", "exp"), [
    ("C:\\reports\\week19.xlsx", "week19.xlsx"),
    ('r"ep\r\nBcc: evil@x.example\r\n.xlsx', 'r"ep__Bcc: evil@x.example__.xlsx'),
    ("week\u2028nineteen.xlsx", "week_nineteen.xlsx"),
])
def test_the_attachment_is_named_by_a_plain_base_name_whatever_the_output_name(tmp_path, monkeypatch, output, exp):
    monkeypatch.chdir(tmp_path)
    inbox = Inbox()
    controller = serve(inbox)
    try:
        assert run(output, "--email-to", "team@example.com", *smtp_args(controller.port)) == 0
    finally:
        controller.stop()
    (envelope,) = inbox.envelopes
    assert envelope.rcpt_tos == ["team@example.com"]
    (message,) = inbox.messages()
    assert message["Bcc"] is None
    (attachment,) = message.iter_attachments()
    assert attachment.get_filename() == exp
    assert attachment.get_content() == (tmp_path / output).read_bytes()


class Hanging(Inbox):
    """A server that takes the message and then never answers."""

    def __init__(self):
        super().__init__()
        self.in_data = threading.Event()

    async def handle_DATA(self, server, session, envelope):
        self.in_data.set()
        await asyncio.sleep(120)
        return "250 too late"


def test_sigterm_while_the_smtp_server_hangs_after_data_stops_the_run_within_seconds(tmp_path):
    inbox = Hanging()
    controller = serve(inbox)
    env = {k: v for k, v in os.environ.items() if k != "QAREPORT_DEBUG"}
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "qareport", "run", str(TESTCASES), "--responses", str(RESPONSES), "--output",
             str(tmp_path / "week.xlsx"), "--no-llm", "-q", "--email-to", "team@example.com",
             *smtp_args(controller.port), "--smtp-timeout", "90"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        assert inbox.in_data.wait(120), "the run never sent its message"
        process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        _, err = process.communicate(timeout=60)
        waited = time.monotonic() - stopped
    finally:
        controller.stop()
    assert process.returncode == TERMINATED, err
    assert waited < 5, f"the stop took {waited:.1f} s"
    assert "Traceback" not in err
