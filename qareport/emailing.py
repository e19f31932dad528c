"""Emailing a report: an HTML body a reader understands without opening the attachment, a plain
text alternative, and the workbook attached; sent through SMTP or written to an .eml file.

The message lays out the run's digest (`qareport.digest`): `qareport run --email-to` passes the
report's own, and `qareport email REPORT.xlsx` reads the one the workbook stored, so the email says
what the Summary says, long after the run. It is addressed to a stakeholder (a verdict, the cases
that moved and why; nothing about settings) and reads on a phone. It comes from the templates
`email.html` (autoescaped) and `email.txt`, which `--templates DIR` can override.

SMTP settings come from `qareport.settings` (`EmailSettings`), each from the first place that has
it: the command line (or library call), the environment (QAREPORT_SMTP_HOST, _PORT, _USER,
_PASSWORD, _FROM, _SECURITY, _TIMEOUT), the `email:` mapping of the configuration file, the
defaults (STARTTLS on port 587; port 465 means SSL). The password is never an option (command
lines end up in shell histories and process lists), never printed, never written to a report or
a log.

The message is sent unattended, so it is marked as such (`Auto-Submitted: auto-generated`, RFC 3834,
and Exchange's `X-Auto-Response-Suppress`): out-of-office replies do not answer it. A message larger
than `EmailSettings.max_size` (many servers refuse one over 10 MB, and the workbook grows with the
suite) goes without the workbook, with a note in its body saying so. A transient refusal (a 4xx
reply, a connection reset or dropped) is tried again after a pause (`RETRY_WAITS`); a permanent one
(5xx, a login refused) is not. The connection is closed without waiting for the server's goodbye
when sending fails or the run is stopped, so a server that hangs never holds a stop (SIGTERM) up.
"""

from __future__ import annotations

import re
import smtplib
import ssl
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Any, Literal

from markupsafe import escape

from qareport.digest import SUBJECT_CHARS, CaseLine, Digest, build_digest, partly_judged, signed
from qareport.errors import EmailError
from qareport.records import Problem, RunInfo
from qareport.redaction import register_secret, scrub, secret_forms
from qareport.run_reading import read_report, stored_usage
from qareport.settings import DEFAULT_PORTS, EmailSettings
from qareport.templating import template_environment
from qareport.trend import parse_created

XLSX_TYPE = ("application", "vnd.openxmlformats-officedocument.spreadsheetml.sheet")
HTML_TEMPLATE = "email.html"
TEXT_TEMPLATE = "email.txt"
Security = Literal["starttls", "ssl", "none"]
RETRY_WAITS = (2.0, 8.0)
"""Seconds before each new try of a transient SMTP failure: three tries in all."""
MEGABYTE = 1_000_000
DEFAULT_ATTACHMENT_NAME = "report.xlsx"


@dataclass(frozen=True, slots=True)
class EmailRequest:
    """What to send and how. `smtp` holds settings given on the command line (host, port,
    security, user, timeout); None values count as not given."""

    to: tuple[str, ...] = ()
    cc: tuple[str, ...] = ()
    subject: str | None = None
    sender: str | None = None
    eml_path: str | None = None  # write the message to this file instead of sending it
    smtp: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SmtpSettings:
    host: str
    port: int
    security: Security
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float = 30.0

    def __str__(self) -> str:
        return f"{self.host}:{self.port} ({self.security})"


# --- settings ------------------------------------------------------------------------------------


def email_options(request: EmailRequest) -> dict[str, Any]:
    """The request as options for `qareport.settings.resolve_email_settings` (None: not given)."""
    return {
        "to": list(request.to) or None,
        "cc": list(request.cc) or None,
        "subject": request.subject,
        "from": request.sender,
        **{key: value for key, value in request.smtp.items() if value is not None},
    }


def smtp_settings(settings: EmailSettings) -> SmtpSettings:
    """The SMTP server to send through; EmailError when none is configured."""
    if not settings.host:
        raise EmailError(
            "no SMTP server configured: give --smtp-host, set QAREPORT_SMTP_HOST, or set email.host in "
            "qareport.yaml (or write the message to a file with --eml)"
        )
    register_secret(settings.password, user=settings.user)  # never printed, even by a bug's message
    return SmtpSettings(
        host=settings.host,
        port=settings.port or DEFAULT_PORTS[settings.security],
        security=settings.security,
        user=settings.user,
        password=settings.password,
        timeout=settings.timeout,
    )


# --- the message ---------------------------------------------------------------------------------


def read_digest(report_path: str | Path, *, on_problem: Callable[[Problem], None] | None = None) -> Digest:
    """The digest a workbook stored; for a workbook written before qareport stored one, the digest
    made again from its hidden sheets (without the significance of its changes, which needs the
    baseline's cases). `on_problem` hears of stored values an edit made unreadable (left out)."""
    record = read_report(report_path, on_problem=on_problem)
    if record.digest is not None:
        return record.digest
    metadata = record.metadata
    run = RunInfo(
        created=record.snapshot.created,
        qareport_version=record.snapshot.qareport_version,
        judge_model=metadata.get("judge.model"),
        judge_usage=stored_usage(metadata),
        not_evaluated={key.removeprefix("not_evaluated."): str(value) for key, value in metadata.items()
                       if key.startswith("not_evaluated.") and value},
    )
    alerts = [str(value) for key, value in metadata.items() if key.startswith("alert.") and value]
    return build_digest(run=run, rows=record.snapshot.cases, headline=record.headline,
                        status_counts=record.status_counts, problems=0, comparison=record.comparison,
                        alerts=alerts, judged=(), incomplete=bool(metadata.get("alert.incomplete")))


def attachment_name(report_path: str | Path) -> str:
    """The name the workbook is attached under: the report's base name, also when the path is a
    Windows one (backslashes, which are ordinary characters in a POSIX name), with each control or
    line-separating character (which would end a header line) replaced by "_"."""
    name = re.split(r"[\\/]", str(report_path))[-1]
    safe = "".join("_" if unicodedata.category(char) in ("Cc", "Zl", "Zp") else char for char in name).strip()
    return safe or DEFAULT_ATTACHMENT_NAME


def _megabytes(size: int) -> str:
    return f"{size / MEGABYTE:,.1f} MB"


def _two(value: float | None) -> str | None:
    return f"{value:.2f}" if isinstance(value, (int, float)) else None


def email_context(digest: Digest, *, file_name: str, attachment_note: str | None = None) -> dict[str, Any]:
    """What the email templates get: the digest with its numbers already in words, so a template
    only places them. `attachment_note` says why the workbook is not attached, when it is not."""
    metrics = []
    partial = partly_judged(digest.judged)
    for item in digest.headline:
        delta = digest.delta(item.metric)
        change = delta.shown_delta if delta is not None else None  # the difference of the two figures shown
        metrics.append({
            "label": item.label,
            "mean": _two(item.mean) or "–",
            "interval": f"{item.low:.2f}–{item.high:.2f}" if item.low is not None and item.high is not None else None,
            "cases": item.cases,
            "not_scored": item.not_scored,
            "partial": item.metric in partial,  # a judged mean over only some of its cases
            "change": signed(change) if change is not None else None,
            "direction": None if change is None or round(change, 2) == 0 else "down" if change < 0 else "up",
            "noise": None if delta is None else delta.noise,
            "shared": delta.shared_cases if delta is not None else 0,
            # like for like, so the change reconciles: last run and this run over the shared cases
            "shared_old": _two(delta.shared_old) if delta is not None else None,
            "shared_new": _two(delta.shared_new) if delta is not None else None,
        })
    baseline = digest.baseline
    return {
        "file_name": file_name,
        "attachment_note": attachment_note,
        # the subject adds the alerts in a few words; the body says them once, in full
        "verdict": digest.headline_verdict,
        "created": _display_time(digest.created),
        "version": digest.qareport_version,
        "cases": digest.cases,
        "status": {status: digest.status_counts.get(status, 0)
                   for status in ("success", "error", "missing", "invalid")},
        "alerts": list(digest.alerts_after_verdict),
        "metrics": metrics,
        "baseline": None if baseline is None else {
            "source": Path(baseline.source).name,
            "created": _display_time(baseline.created),
            "counts": baseline.counts,
            "warnings": list(baseline.warnings),
        },
        "compared": bool(digest.deltas),
        # of every change tested (headline metrics, tags, templates, dimensions), those beyond noise
        "noise_count": (f"{digest.beyond_noise} of {digest.tests} changes tested (headline metrics, tags, templates, "
                        "dimensions) are beyond noise (headline metrics: Holm at 5%; tags, templates, dimensions: a 5% "
                        "false discovery rate in each)") if digest.tests else None,
        "regressed": [_line(line) for line in digest.regressed],
        "more_regressed": max(0, digest.regressed_total - len(digest.regressed)),
        "improved": [_line(line) for line in digest.improved],
        "more_improved": max(0, digest.improved_total - len(digest.improved)),
        # cases whose change is within what their own attempts vary by: listed apart, never counted
        "within_noise": int((baseline.counts if baseline is not None else {}).get("moved within noise") or 0),
        "weakest": [{"family": weakest.family, "ranked_by": weakest.ranked_by,
                     "cases": [_line(line) for line in weakest.cases]} for weakest in digest.weakest],
        "judged": [{"label": metric.label, "mean": _two(metric.mean), "judged": metric.judged,
                    "failed": metric.failed, "not_judged": metric.not_judged, "describe": metric.describe(),
                    "mostly_failed": metric.mostly_failed} for metric in digest.judged],
        "not_evaluated": [{"metrics": what, "why": why} for what, why in digest.not_evaluated],
        "partial": list(partial.values()),
        "judge_model": digest.judge_model,
        "judge_cost": f"${digest.judge_cost:,.4f}" if digest.judge_cost is not None else None,
    }


def _line(line: CaseLine) -> dict[str, Any]:
    return {"case_id": line.case_id, "name": line.name or line.case_id, "what": line.what, "reason": line.reason}


def _display_time(created: str) -> str:
    moment = parse_created(created)
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else created


def render_email_template(name: str, context: Mapping[str, Any], templates_dir: str | None) -> str:
    """One email template, rendered in the sandbox with `context` only (see `qareport.templating`);
    EmailError naming the template when it cannot be rendered (or reaches for what it may not)."""
    import jinja2

    try:
        return template_environment(templates_dir).get_template(name).render(**context)
    except jinja2.TemplateError as error:
        where = Path(templates_dir) / name if templates_dir and (Path(templates_dir) / name).is_file() else name
        raise EmailError(f"{where}: the email template cannot be rendered: {error}") from None


def subject_for(digest: Digest) -> str:
    """The verdict first, the date after it when it fits: a phone shows the start of a subject."""
    date = _display_time(digest.created)[:10]
    with_date = f"{digest.verdict} (QA report {date})"
    return with_date if len(with_date) <= SUBJECT_CHARS + 2 else digest.verdict


@dataclass(frozen=True, slots=True)
class ComposedEmail:
    """A message ready to send, and why the workbook is not attached to it (None: it is)."""

    message: EmailMessage
    left_out: str | None = None


def build_message(
    report_path: str | Path,
    *,
    to: Sequence[str],
    cc: Sequence[str] = (),
    sender: str | None,
    subject: str | None = None,
    templates_dir: str | None = None,
    digest: Digest | None = None,
    on_problem: Callable[[Problem], None] | None = None,
    max_size: float | None = None,
) -> ComposedEmail:
    """The email for a report: subject, HTML body, plain-text alternative, the workbook attached.
    `digest`: the run's, when the caller has it; else it is read from the workbook. `max_size` (MB):
    a message larger with the workbook goes without it, and its body says so."""
    path = Path(report_path)
    digest = digest if digest is not None else read_digest(path, on_problem=on_problem)
    name = attachment_name(path)
    try:
        attachment = path.read_bytes()
    except OSError as error:
        raise EmailError(f"{path}: cannot read the report to attach: {error.strerror or error}") from error
    message = _message(digest, name, to=to, cc=cc, sender=sender, subject=subject, templates_dir=templates_dir)
    message.add_attachment(attachment, maintype=XLSX_TYPE[0], subtype=XLSX_TYPE[1], filename=name)
    size = len(message.as_bytes())
    if max_size is None or size <= max_size * MEGABYTE:
        return ComposedEmail(message)
    limit = f"{max_size:g} MB"
    note = (f"The workbook {name} ({_megabytes(len(attachment))}) is not attached: the email would have been "
            f"{_megabytes(size)}, more than the {limit} it may be. Ask whoever runs the QA report for the file.")
    message = _message(digest, name, to=to, cc=cc, sender=sender, subject=subject, templates_dir=templates_dir,
                       note=note)
    return ComposedEmail(message, f"{name} not attached: the message would have been {_megabytes(size)}, above "
                                  f"the limit of {limit} (email.max_size, QAREPORT_SMTP_MAX_SIZE)")


def _message(digest: Digest, name: str, *, to: Sequence[str], cc: Sequence[str], sender: str | None,
             subject: str | None, templates_dir: str | None, note: str | None = None) -> EmailMessage:
    """The message without its attachment; `note` (why there is none) is in both bodies, at their
    end when a template override does not place it."""
    context = email_context(digest, file_name=name, attachment_note=note)
    html = render_email_template(HTML_TEMPLATE, context, templates_dir)
    text = render_email_template(TEXT_TEMPLATE, context, templates_dir)
    if note is not None and note not in text:
        text = f"{text.rstrip()}\n\n{note}\n"
    if note is not None and escape(note) not in html:
        closing = html.lower().rfind("</body>")
        at = closing if closing >= 0 else len(html)
        html = f"{html[:at]}<p>{escape(note)}</p>{html[at:]}"

    message = EmailMessage()
    message["Subject"] = subject or subject_for(digest)
    if sender:
        message["From"] = sender
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = make_msgid(domain=(sender or "").rpartition("@")[2] or "qareport.invalid")
    message["Auto-Submitted"] = "auto-generated"  # RFC 3834: no out-of-office reply to a report
    message["X-Auto-Response-Suppress"] = "All"  # the same for Exchange, which does not read the former
    message.set_content(text.strip() + "\n")
    message.add_alternative(html, subtype="html")
    return message


# --- sending -------------------------------------------------------------------------------------


class _TransientSmtpError(EmailError):
    """A refusal worth trying again: a 4xx reply, a connection reset or dropped."""


def send_message(message: EmailMessage, settings: SmtpSettings, recipients: Sequence[str], *,
                 waits: Sequence[float] | None = None) -> None:
    """Hand the message to the SMTP server; EmailError (one line, no password) when that fails.
    A transient failure is tried again after each of `waits` seconds (default `RETRY_WAITS`). A server may quote the
    credentials in its refusal: the password is scrubbed from the message, in clear and in its
    base64 forms (`qareport.redaction`)."""
    forms = secret_forms(settings.password or "", user=settings.user)
    for tried, wait in enumerate((*(RETRY_WAITS if waits is None else waits), None), start=1):
        try:
            _send(message, settings, recipients)
            return
        except _TransientSmtpError as error:
            if wait is None:
                raise EmailError(scrub(f"{error} (tried {tried} times)", forms)) from None
            time.sleep(wait)
        except EmailError as error:
            raise EmailError(scrub(str(error), forms)) from None


def _send(message: EmailMessage, settings: SmtpSettings, recipients: Sequence[str]) -> None:
    where = f"the SMTP server {settings.host}:{settings.port}"
    try:
        if settings.security == "ssl":
            client: smtplib.SMTP = smtplib.SMTP_SSL(settings.host, settings.port, timeout=settings.timeout,
                                                    context=ssl.create_default_context())
        else:
            client = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout)
        try:
            refused = _deliver(client, message, settings, recipients, where)
        except BaseException:  # closed at once: a goodbye (QUIT) to a hanging server would hold a stop up
            client.close()
            raise
        try:
            client.quit()
        except (smtplib.SMTPException, OSError):  # the message was accepted; the goodbye does not matter
            client.close()
    except smtplib.SMTPAuthenticationError as error:
        if _temporary(error):
            raise _TransientSmtpError(f"{where} could not check the login now: {_reply(error)}") from None
        raise EmailError(f"{where} refused the login of {settings.user!r}: {_reply(error)}") from None
    except smtplib.SMTPRecipientsRefused as error:
        replies = [reply for reply in error.recipients.values() if isinstance(reply, tuple)]
        if replies and all(400 <= reply[0] < 500 for reply in replies):
            raise _TransientSmtpError(f"{where} deferred every recipient: {', '.join(error.recipients)}") from None
        raise EmailError(f"{where} refused every recipient: {', '.join(error.recipients)}") from None
    except smtplib.SMTPNotSupportedError as error:
        raise EmailError(f"{where} does not support {error} (try --smtp-security ssl or none)") from None
    except smtplib.SMTPServerDisconnected as error:
        raise _TransientSmtpError(f"{where} closed the connection ({error or 'without a word'})") from None
    except smtplib.SMTPException as error:
        if _temporary(error):
            raise _TransientSmtpError(f"{where} did not accept the message for now: {_reply(error)}") from None
        raise EmailError(f"{where} did not accept the message: {_reply(error)}") from None
    except ssl.SSLError as error:
        raise EmailError(f"{where}: TLS failed ({error.reason or error}); "
                         "check --smtp-security and --smtp-port") from None
    except TimeoutError:
        raise EmailError(f"{where} did not answer within {settings.timeout:g} s; "
                         "check --smtp-host and --smtp-port") from None
    except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as error:
        raise _TransientSmtpError(f"{where} dropped the connection ({error.strerror or error})") from None
    except OSError as error:
        raise EmailError(
            f"cannot reach {where} ({error.strerror or error}); check --smtp-host and --smtp-port, "
            "or write the message to a file with --eml"
        ) from None
    if refused:
        raise EmailError(f"{where} refused some recipients: {', '.join(sorted(refused))}")


def _deliver(client: smtplib.SMTP, message: EmailMessage, settings: SmtpSettings, recipients: Sequence[str],
             where: str) -> dict[str, tuple[int, bytes]]:
    """Greet, secure, log in and send on an open connection; the recipients refused (some only)."""
    if settings.security == "starttls":
        client.starttls(context=ssl.create_default_context())
    if settings.user:
        try:
            client.login(settings.user, settings.password or "")
        except UnicodeEncodeError:  # smtplib sends the login as ASCII
            raise EmailError(f"{where}: the SMTP user or password holds a character that is not ASCII, "
                             "which smtplib cannot send; use an ASCII password (or an app password)") from None
    return client.send_message(message, to_addrs=list(recipients))


def _temporary(error: smtplib.SMTPException) -> bool:
    """A 4xx reply: the server asks to be tried again later (RFC 5321, 4.2.1)."""
    code = getattr(error, "smtp_code", None)
    return isinstance(code, int) and 400 <= code < 500


def _reply(error: smtplib.SMTPException) -> str:
    code = getattr(error, "smtp_code", None)
    text = getattr(error, "smtp_error", b"")
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return f"{code} {text}".strip() if code else str(error)


def write_eml(message: EmailMessage, path: str | Path) -> None:
    target = Path(path)
    try:
        target.write_bytes(message.as_bytes())
    except OSError as error:
        raise EmailError(f"{target}: cannot write the message: {error.strerror or error}") from error


def sender_of(settings: EmailSettings, smtp: SmtpSettings | None) -> str | None:
    """The From address: as given (option, environment, file), else the SMTP login when it is an
    address; never made up from the machine's name."""
    if settings.sender:
        return settings.sender
    user = smtp.user if smtp else None
    return user if user and "@" in user else None


def check_email_request(
    request: EmailRequest, settings: EmailSettings
) -> tuple[tuple[str, ...], tuple[str, ...], SmtpSettings | None]:
    """Recipients and SMTP settings, or EmailError: called before a run starts, so a missing
    setting fails at once rather than after the evaluation. A message written to a file needs its
    recipients as much as one sent; one sent needs a sender."""
    if not settings.to:
        raise EmailError("no recipient: give --to (or email.to in qareport.yaml)"
                         + ("; a message written with --eml needs one too" if request.eml_path else ""))
    smtp = None if request.eml_path else smtp_settings(settings)
    if smtp is not None and sender_of(settings, smtp) is None:
        raise EmailError("no sender address: give --from (with run: --email-from), set QAREPORT_SMTP_FROM, "
                         "or set email.from in qareport.yaml")
    return settings.to, settings.cc, smtp


def email_report(
    report_path: str | Path,
    request: EmailRequest,
    *,
    settings: EmailSettings,
    templates_dir: str | None = None,
    digest: Digest | None = None,
    on_problem: Callable[[Problem], None] | None = None,
) -> str:
    """Build the email for a report and send it (or write it with `request.eml_path`).
    `settings` come from `qareport.settings.resolve_email_settings` (the request among its options);
    `digest` is the run's when the caller has it (else read from the workbook). Returns one line
    saying what was done."""
    to, cc, smtp = check_email_request(request, settings)
    composed = build_message(report_path, to=to, cc=cc, sender=sender_of(settings, smtp),
                             subject=settings.subject, templates_dir=templates_dir, digest=digest,
                             on_problem=on_problem, max_size=settings.max_size)
    name = attachment_name(report_path)
    if request.eml_path:
        write_eml(composed.message, request.eml_path)
        left_out = f" without the workbook: {composed.left_out}" if composed.left_out else f" with {name} attached"
        return f"{request.eml_path}: the email{left_out}"
    assert smtp is not None
    send_message(composed.message, smtp, [*to, *cc])
    sent = f"emailed {name} to {', '.join([*to, *cc])} through {smtp}"
    return sent if composed.left_out is None else f"{sent}, without the workbook: {composed.left_out}"
