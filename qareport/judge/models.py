"""The judge models qareport knows the fate of: the default, and the shutdowns providers announced.

A judge model that is retired stops every judged metric at once (see `JudgeModelRetired`), and one
that changes moves every judged value, so qareport says ahead of time when the model a run uses is
announced to go. The table holds what OpenAI's deprecations page announced, as checked on
`SHUTDOWNS_CHECKED`; a model not in it is simply not known to be going.
"""

from __future__ import annotations

from datetime import date

DEFAULT_MODEL = "gpt-5.4-mini"
DEFAULT_MODEL_CHOSEN = "2026-11-28"
"""When the default was chosen: a model of the GPT-5.4 family, with no shutdown announced then (the
earlier default, gpt-4o-mini, is announced to shut down on 2027-01-14)."""

SHUTDOWNS_CHECKED = "2026-11-28"
ANNOUNCED_SHUTDOWNS: dict[str, date] = {
    # the October 2026 announcement: the GPT-5 family first, then the GPT-4o, GPT-4.1 and GPT-3.5 models
    **dict.fromkeys(("gpt-5", "gpt-5-mini", "gpt-5-nano"), date(2026, 12, 11)),
    **dict.fromkeys(("gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-3.5-turbo"),
                    date(2027, 1, 14)),
}
"""Model (without a date suffix) → the day its provider announced it stops answering."""

WARN_WITHIN_DAYS = 120
"""How long before a shutdown a run starts saying so."""


def announced_shutdown(model: str) -> date | None:
    """The shutdown announced for `model`, also for a dated snapshot (`gpt-4o-mini-2024-07-18`)."""
    name = model.strip()
    while name:
        if name in ANNOUNCED_SHUTDOWNS:
            return ANNOUNCED_SHUTDOWNS[name]
        head, _, tail = name.rpartition("-")
        if not head or not tail.isdigit():
            return None
        name = head
    return None


def retirement_note(model: str, *, today: date) -> str | None:
    """What a run says of a judge model announced to shut down soon (or already past it), else None.

    >>> retirement_note("gpt-4o-mini-2024-07-18", today=date(2026, 11, 28)).split(":")[0]
    "the judge model 'gpt-4o-mini-2024-07-18' is announced to shut down on 2027-01-14"
    >>> retirement_note("gpt-5.4-mini", today=date(2026, 11, 28)) is None
    True
    """
    shutdown = announced_shutdown(model)
    if shutdown is None or (shutdown - today).days > WARN_WITHIN_DAYS:
        return None
    when = "was" if shutdown <= today else "is"
    return (f"the judge model {model!r} {when} announced to shut down on {shutdown.isoformat()}: pin another with "
            f"--judge-model or judge.model (the default is {DEFAULT_MODEL}); a new judge moves the judged metrics, "
            "so compare like with like (see 'the judge changed')")
