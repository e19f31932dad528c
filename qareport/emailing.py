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
"""

from __future__ import annotations

import smtplib
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Any, Literal

from qareport.digest import SUBJECT_CHARS, CaseLine, Digest, build_digest, signed
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


def _two(value: float | None) -> str | None:
    return f"{value:.2f}" if isinstance(value, (int, float)) else None


def email_context(digest: Digest, *, file_name: str) -> dict[str, Any]:
    """What the email templates get: the digest with its numbers already in words, so a template
    only places them."""
    metrics = []
    for item in digest.headline:
        delta = digest.delta(item.metric)
        change = delta.shown_delta if delta is not None else None  # the difference of the two figures shown
        metrics.append({
            "label": item.label,
            "mean": _two(item.mean) or "–",
            "interval": f"{item.low:.2f}–{item.high:.2f}" if item.low is not None and item.high is not None else None,
            "cases": item.cases,
            "not_scored": item.not_scored,
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
) -> EmailMessage:
    """The email for a report: subject, HTML body, plain-text alternative, the workbook attached.
    `digest`: the run's, when the caller has it; else it is read from the workbook."""
    path = Path(report_path)
    digest = digest if digest is not None else read_digest(path, on_problem=on_problem)
    context = email_context(digest, file_name=path.name)
    html = render_email_template(HTML_TEMPLATE, context, templates_dir)
    text = render_email_template(TEXT_TEMPLATE, context, templates_dir)

    message = EmailMessage()
    message["Subject"] = subject or subject_for(digest)
    if sender:
        message["From"] = sender
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = make_msgid(domain=(sender or "").rpartition("@")[2] or "qareport.invalid")
    message.set_content(text.strip() + "\n")
    message.add_alternative(html, subtype="html")
    try:
        attachment = path.read_bytes()
    except OSError as error:
        raise EmailError(f"{path}: cannot read the report to attach: {error.strerror or error}") from error
    message.add_attachment(attachment, maintype=XLSX_TYPE[0], subtype=XLSX_TYPE[1], filename=path.name)
    return message


# --- sending -------------------------------------------------------------------------------------


def send_message(message: EmailMessage, settings: SmtpSettings, recipients: Sequence[str]) -> None:
    """Hand the message to the SMTP server; EmailError (one line, no password) when that fails.
    A server may quote the credentials in its refusal: the password is scrubbed from the message,
    in clear and in its base64 forms (`qareport.redaction`)."""
    try:
        _send(message, settings, recipients)
    except EmailError as error:
        forms = secret_forms(settings.password or "", user=settings.user)
        raise EmailError(scrub(str(error), forms)) from None


def _send(message: EmailMessage, settings: SmtpSettings, recipients: Sequence[str]) -> None:
    where = f"the SMTP server {settings.host}:{settings.port}"
    try:
        if settings.security == "ssl":
            client: smtplib.SMTP = smtplib.SMTP_SSL(settings.host, settings.port, timeout=settings.timeout,
                                                    context=ssl.create_default_context())
        else:
            client = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout)
        with client:
            if settings.security == "starttls":
                client.starttls(context=ssl.create_default_context())
            if settings.user:
                try:
                    client.login(settings.user, settings.password or "")
                except UnicodeEncodeError:  # smtplib sends the login as ASCII
                    raise EmailError(f"{where}: the SMTP user or password holds a character that is not ASCII, "
                                     "which smtplib cannot send; use an ASCII password (or an app password)") from None
            refused = client.send_message(message, to_addrs=list(recipients))
    except smtplib.SMTPAuthenticationError as error:
        raise EmailError(f"{where} refused the login of {settings.user!r}: {_reply(error)}") from None
    except smtplib.SMTPRecipientsRefused as error:
        raise EmailError(f"{where} refused every recipient: {', '.join(error.recipients)}") from None
    except smtplib.SMTPNotSupportedError as error:
        raise EmailError(f"{where} does not support {error} (try --smtp-security ssl or none)") from None
    except smtplib.SMTPException as error:
        raise EmailError(f"{where} did not accept the message: {_reply(error)}") from None
    except ssl.SSLError as error:
        raise EmailError(f"{where}: TLS failed ({error.reason or error}); "
                         "check --smtp-security and --smtp-port") from None
    except TimeoutError:
        raise EmailError(f"{where} did not answer within {settings.timeout:g} s; "
                         "check --smtp-host and --smtp-port") from None
    except OSError as error:
        raise EmailError(
            f"cannot reach {where} ({error.strerror or error}); check --smtp-host and --smtp-port, "
            "or write the message to a file with --eml"
        ) from None
    if refused:
        raise EmailError(f"{where} refused some recipients: {', '.join(sorted(refused))}")


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
    message = build_message(report_path, to=to, cc=cc, sender=sender_of(settings, smtp),
                            subject=settings.subject, templates_dir=templates_dir, digest=digest,
                            on_problem=on_problem)
    if request.eml_path:
        write_eml(message, request.eml_path)
        return f"{request.eml_path}: the email with {Path(report_path).name} attached"
    assert smtp is not None
    send_message(message, smtp, [*to, *cc])
    return f"emailed {Path(report_path).name} to {', '.join([*to, *cc])} through {smtp}"
