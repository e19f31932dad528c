"""Secrets never shown: the SMTP password, in clear and in every base64 form it travels in.

A server that refuses a login may quote what it received, and SMTP sends the password base64-encoded:
AUTH LOGIN sends base64(password), AUTH PLAIN base64("\\0user\\0password"), and a password inside a
longer encoded text shows at one of three alignments. `secret_forms()` lists the texts that give the
password away; `scrub()` masks them. Messages built from a server's reply are scrubbed where they are
made (`qareport.emailing`); the command line also registers each secret it uses
(`register_secret`), and `qareport.console.visible()` scrubs what it prints with them, so that even
a bug's message or its traceback cannot show one.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

MASK = "***"
MIN_ENCODED_CHARS = 4  # shorter base64 pieces of a (very short) password are too common to mask

_REGISTERED: set[str] = set()


def secret_forms(secret: str, *, user: str | None = None) -> list[str]:
    """The texts that show `secret`: itself, its base64 at each of the three byte alignments (the
    characters that depend on the secret alone), and AUTH PLAIN's whole token; longest first."""
    if not secret:
        return []
    raw = secret.encode("utf-8")
    forms = {secret, base64.b64encode(raw).decode("ascii").rstrip("=")}
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        first = -(-8 * offset // 6)  # the first character made of the secret's bits only
        last = 8 * (offset + len(raw)) // 6  # one past the last such character
        core = encoded[first:last]
        if len(core) >= MIN_ENCODED_CHARS:
            forms.add(core)
    if user is not None:
        for token in (f"\0{user}\0{secret}", f"{user}\0{user}\0{secret}"):
            forms.add(base64.b64encode(token.encode("utf-8")).decode("ascii"))
    return sorted((form for form in forms if form), key=len, reverse=True)


def scrub(text: str, forms: Iterable[str]) -> str:
    """`text` with every one of `forms` masked."""
    for form in forms:
        if form in text:
            text = text.replace(form, MASK)
    return text


def register_secret(secret: str | None, *, user: str | None = None) -> None:
    """Remember a secret of this process: `scrub_registered` masks it from then on."""
    if secret:
        _REGISTERED.update(secret_forms(secret, user=user))


def scrub_registered(text: str) -> str:
    """`text` with every registered secret masked."""
    if not _REGISTERED:
        return text
    return scrub(text, sorted(_REGISTERED, key=len, reverse=True))
