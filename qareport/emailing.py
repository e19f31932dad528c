"""Emailing a report: an HTML body a reader understands without opening the attachment, a plain
text alternative, and the workbook attached; sent through SMTP or written to an .eml file.

The body is read back from the workbook's hidden sheets (`baseline.read_report`), so
`qareport email REPORT.xlsx` works on any report qareport wrote, long after the run. It comes from
the templates `email.html` (autoescaped) and `email.txt`, which `--templates DIR` can override.

SMTP settings come from `qareport.settings` (`EmailSettings`), each from the first place that has
it: the command line (or library call), the environment (QAREPORT_SMTP_HOST, _PORT, _USER,
_PASSWORD, _FROM, _SECURITY, _TIMEOUT), the `email:` mapping of the configuration file, the
defaults (STARTTLS on port 587; port 465 means SSL). The password is never an option (command
lines end up in shell histories and process lists), never printed, never written to a report or
a log.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Any, Literal

from qareport.runs import ReportRecord, read_report
from qareport.comparison import (
    DEFAULT_TOLERANCE,
    metric_label,
    parse_created,
)
from qareport.errors import EmailError
from qareport.settings import DEFAULT_PORTS, EmailSettings
from qareport.templating import template_environment

XLSX_TYPE = ("application", "vnd.openxmlformats-officedocument.spreadsheetml.sheet")
HTML_TEMPLATE = "email.html"
TEXT_TEMPLATE = "email.txt"
TOP_REGRESSIONS = 10
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
    return SmtpSettings(
        host=settings.host,
        port=settings.port or DEFAULT_PORTS[settings.security],
        security=settings.security,
        user=settings.user,
        password=settings.password,
        timeout=settings.timeout,
    )


# --- the message ---------------------------------------------------------------------------------


def _fmt(value: float | str | None, pattern: str = "{:.2f}") -> str | None:
    return pattern.format(value) if isinstance(value, (int, float)) else None


def _direction(delta: float | None) -> str | None:
    if delta is None:
        return None
    if abs(delta) <= DEFAULT_TOLERANCE or round(delta, 3) == 0:
        return "same"
    return "up" if delta > 0 else "down"


def _delta_text(delta: float | None) -> str | None:
    """A headline change to three decimals; one that rounds to nothing is no change, unsigned."""
    if delta is None:
        return None
    return "0.000" if _direction(delta) == "same" else f"{delta:+.3f}"


def _display_time(created: str) -> str:
    moment = parse_created(created)
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else created


def report_context(record: ReportRecord, *, file_name: str) -> dict[str, Any]:
    """What the email templates get: numbers already formatted, so a template stays simple."""
    counts = record.status_counts
    metadata = record.metadata
    # an incomplete run shows no delta: a change over a handful of cases is no change
    comparison = None if metadata.get("alert.incomplete") else record.comparison
    deltas = {d.metric: d for d in comparison.headline} if comparison else {}
    metrics = []
    for item in record.headline:
        delta = deltas.get(item.metric)
        metrics.append({
            "label": item.label,
            "mean": _fmt(item.mean),
            "cases": item.cases,
            "errors": item.errors,
            "missing": item.missing,
            "invalid": item.invalid,
            "not_scored": ", ".join(f"{count} {status}" for count, status in
                                    ((item.errors, "error"), (item.missing, "missing"), (item.invalid, "invalid"))
                                    if count),
            "baseline": _fmt(delta.old) if delta else None,
            "delta": _delta_text(delta.delta) if delta else None,
            "direction": _direction(delta.delta) if delta else None,
        })
    regressions = list(comparison.regressions) if comparison else []
    cost = metadata.get("judge.cost_usd")
    context: dict[str, Any] = {
        "file_name": file_name,
        "created": _display_time(record.snapshot.created),
        "version": record.snapshot.qareport_version,
        "cases": sum(counts.values()),
        "status": counts,
        "metrics": metrics,
        "judge_model": metadata.get("judge.model"),
        "judge_cost": _fmt(cost, "${:,.4f}"),
        "not_evaluated": [
            {"metrics": key.removeprefix("not_evaluated."), "why": str(value)}
            for key, value in metadata.items() if key.startswith("not_evaluated.")
        ],
        "comparison": None,
        "regressions": [
            {
                "case_id": change.case_id,
                "name": change.name,
                "metric": metric_label(change.metric),
                "old": _fmt(change.old) or (str(change.old) if change.old is not None else ""),
                "new": _fmt(change.new) or (str(change.new) if change.new is not None else ""),
                "delta": _fmt(change.delta, "{:+.2f}") or "",
            }
            for change in regressions[:TOP_REGRESSIONS]
        ],
        "more_regressions": max(0, len(regressions) - TOP_REGRESSIONS),
    }
    if comparison is not None:
        counts_by_kind = comparison.counts()
        context["comparison"] = {
            "source": Path(comparison.baseline_source).name,
            "created": _display_time(comparison.baseline_created),
            "regressions": counts_by_kind["regression"],
            "improvements": counts_by_kind["improvement"],
            "tests_changed": counts_by_kind["test changed"],
            "new_cases": counts_by_kind["new case"],
            "removed_cases": counts_by_kind["removed case"],
        }
    context["alerts"] = [str(value) for key, value in metadata.items() if key.startswith("alert.") and value]
    context["judged"] = _judged(metadata)
    context["headline_sentence"] = _headline_sentence(context)
    return context


def _judged(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """How far the judge got per judged metric, as the workbook stored it (`runs.run_metadata`)."""
    keys = dict.fromkeys(key.split(".")[1] for key in metadata if key.startswith("judged."))
    rows = []
    for key in keys:
        def get(field: str) -> Any:
            return metadata.get(f"judged.{key}.{field}")
        judged, failed = int(get("judged") or 0), int(get("failed") or 0)
        if not judged and not failed:
            continue
        rows.append({"label": get("label") or key, "mean": _fmt(get("mean")), "judged": judged, "failed": failed,
                     "not_applicable": int(get("not_applicable") or 0),
                     "mostly_failed": failed / (judged + failed) > 0.5})
    return rows


def _headline_sentence(context: Mapping[str, Any]) -> str:
    """One line that says it all: the subject line and the first line of the body. An incomplete
    run says so instead of its numbers; test cases that could not be loaded come first."""
    incomplete = next((alert for alert in context["alerts"] if alert.startswith("INCOMPLETE RUN")), None)
    if incomplete:
        return incomplete
    parts = [alert for alert in context["alerts"]]
    for metric in context["metrics"][:2]:
        part = f"{metric['label']} {metric['mean']}"
        if metric["direction"] in ("up", "down"):
            part += f" ({metric['delta']})"
        parts.append(part)
    status = context["status"]
    not_scored = context["cases"] - status["success"]
    parts.append(f"{status['success']} of {context['cases']} cases evaluated" if not_scored else f"{context['cases']} cases")
    if context["comparison"] is not None:
        count = context["comparison"]["regressions"]
        parts.append(f"{count} regression{'s' if count != 1 else ''}")
    return ", ".join(parts)


def build_message(
    report_path: str | Path,
    *,
    to: Sequence[str],
    cc: Sequence[str] = (),
    sender: str,
    subject: str | None = None,
    templates_dir: str | None = None,
) -> EmailMessage:
    """The email for a report: subject, HTML body, plain-text alternative, the workbook attached."""
    path = Path(report_path)
    record = read_report(path)
    context = report_context(record, file_name=path.name)
    environment = template_environment(templates_dir)
    html = environment.get_template(HTML_TEMPLATE).render(**context)
    text = environment.get_template(TEXT_TEMPLATE).render(**context)

    message = EmailMessage()
    message["Subject"] = subject or f"QA report {context['created'][:10]}: {context['headline_sentence']}"
    message["From"] = sender
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
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
    """Hand the message to the SMTP server; EmailError (one line, no password) when that fails."""
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
                client.login(settings.user, settings.password or "")
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
        raise EmailError(f"{where}: TLS failed ({error.reason or error}); check --smtp-security and --smtp-port") from None
    except (socket.timeout, TimeoutError):
        raise EmailError(f"{where} did not answer within {settings.timeout:g} s; check --smtp-host and --smtp-port") from None
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


def check_email_request(
    request: EmailRequest, settings: EmailSettings
) -> tuple[tuple[str, ...], tuple[str, ...], SmtpSettings | None]:
    """Recipients and SMTP settings, or EmailError: called before a run starts, so a missing
    setting fails at once rather than after the evaluation."""
    if not settings.to and not request.eml_path:
        raise EmailError("no recipient: give --to (or email.to in qareport.yaml)")
    return settings.to, settings.cc, None if request.eml_path else smtp_settings(settings)


def email_report(
    report_path: str | Path,
    request: EmailRequest,
    *,
    settings: EmailSettings,
    templates_dir: str | None = None,
) -> str:
    """Build the email for a report and send it (or write it with `request.eml_path`).
    `settings` come from `qareport.settings.resolve_email_settings` (the request among its options).
    Returns one line saying what was done."""
    to, cc, smtp = check_email_request(request, settings)
    sender = settings.sender
    if not sender:
        user = smtp.user if smtp else None
        sender = user if user and "@" in user else f"qareport@{socket.gethostname() or 'localhost'}"
    message = build_message(report_path, to=to, cc=cc, sender=str(sender),
                            subject=settings.subject, templates_dir=templates_dir)
    if request.eml_path:
        write_eml(message, request.eml_path)
        return f"{request.eml_path}: the email with {Path(report_path).name} attached"
    assert smtp is not None
    send_message(message, smtp, [*to, *cc])
    return f"emailed {Path(report_path).name} to {', '.join([*to, *cc])} through {smtp}"
