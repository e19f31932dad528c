"""One typed settings object for a command: run, judge and email options, resolved once, here.

Each setting comes from the first place that has it:

    1. the command-line option (or the library call's argument)
    2. the environment (OPENAI_*, AZURE_OPENAI_*, QAREPORT_SMTP_*: see `JUDGE_ENVIRONMENT` and
       `EMAIL_ENVIRONMENT`)
    3. the configuration file (`qareport.config_file`): `--config FILE`, else `./qareport.yaml`,
       else the `[tool.qareport]` table of `./pyproject.toml`
    4. the default, declared once on the record's field with its type and constraints

The records are frozen: `RunSettings` and `EmailSettings` (pydantic models, here) and the judge's
`JudgeSettings` (`qareport.judge.settings`, resolved by `qareport.judge.resolution`);
`resolve_settings` returns them together as `Settings`. Each value is checked by pydantic against
its field (`qareport.setting_sources`), and a wrong one raises a `SettingsError`
(`JudgeSettingsError`, `EmailSettingsError`) that says where it came from (the option, the
environment variable, or the file and key), what it must be, and what was found. Secrets (the
judge's API key, the SMTP password) never come from a command-line option and are never shown by
repr().

Adding an option: a field (type, constraints, default) on its record, and its configuration key:
a run setting's in `config_file.RUN_CONFIG_KEYS` (a `RunOptions` field of the same name is passed
on by `pipeline.given_run_settings`), a judge setting's in `judge.settings.CONFIG_KEYS` and its
name in `judge.resolution.CHECKED`, an email setting's in `EMAIL_CONFIG_KEYS` (and
`EMAIL_ENVIRONMENT`); then the command-line option in `cli.py` (its help says the default with
`{RunSettings.<field>}`, filled in when the help is shown). The documentation's option and
configuration reference pages are generated from these (docs/hooks/reference.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict

from qareport.config_file import RUN_CONFIG_KEYS, ConfigFile, find_config_file, read_config_file
from qareport.errors import EmailSettingsError, SettingsError
from qareport.evaluation_options import (
    DEFAULT_ACCEPTABLE_EXTRAS,
    DEFAULT_SEMANTICS,
    EvaluationOptions,
    given_pass_rules,
)
from qareport.ge6_config import NO_CONFIG, Ge6Config, read_ge6_config
from qareport.judge.resolution import JUDGE_ENVIRONMENT, resolve_ge6_judge_settings, resolve_judge_settings
from qareport.judge.settings import CONTEXT_METRICS, JudgeSettings
from qareport.judge_audit import AUDIT_SIZE
from qareport.preflight import header_text_problem
from qareport.records import DEFAULT_TERM_MATCHING, TermMatching
from qareport.setting_sources import COMMAND_LINE_OPTIONS, Expected, Found, Layers, Text, check, setting

__all__ = [  # the configuration file's and the judge's parts, as this module named them before they moved
    "JUDGE_ENVIRONMENT", "ConfigFile", "EmailSettings", "RunSettings", "Settings", "addresses", "find_config_file",
    "read_config_file", "resolve_email_settings", "resolve_ge6_judge_settings", "resolve_judge_settings",
    "resolve_run_settings", "resolve_settings",
]

ASKING_FOR_THE_JUDGE = ("model", "embedding_model", "base_url", "batch", "repeats")
"""Judge options that ask for judging (which model, where, in batches, how many times): one given
while the judge cannot run (no API key) makes that a failure of the run (`Settings.judge_unavailable`),
not a note. Options that only tune a judge (concurrency, timeout, retries, cache, budget) do not."""
INDICATOR_SELECTION_KEYS = ("acceptable_extras",)  # the keys of the configuration's indicator_selection section
EMAIL_ENVIRONMENT = {
    "host": "QAREPORT_SMTP_HOST",
    "port": "QAREPORT_SMTP_PORT",
    "user": "QAREPORT_SMTP_USER",
    "password": "QAREPORT_SMTP_PASSWORD",
    "from": "QAREPORT_SMTP_FROM",
    "security": "QAREPORT_SMTP_SECURITY",
    "timeout": "QAREPORT_SMTP_TIMEOUT",
    "max_size": "QAREPORT_SMTP_MAX_SIZE",
}
EMAIL_CONFIG_KEYS = ("host", "port", "security", "user", "password", "from", "timeout", "to", "cc", "subject",
                     "max_size")
Security = Literal["starttls", "ssl", "none"]
SECURITIES: tuple[str, ...] = get_args(Security)
DEFAULT_PORTS = {"starttls": 587, "ssl": 465, "none": 25}


# --- run -----------------------------------------------------------------------------------------


def _number_text(value: Any) -> Any:
    """"6" (an environment variable, a command line) read as 6."""
    return int(value.strip()) if isinstance(value, str) and value.strip().isdigit() else value


Semantics = Annotated[Literal[5, 6], BeforeValidator(_number_text),
                      Expected("5 or 6, graphrag-eval's major version whose steps rules apply")]
Flag = Annotated[bool, Strict()]


class RunSettings(BaseModel):
    """How cases are evaluated and where templates come from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    match_terms_by: TermMatching = DEFAULT_TERM_MATCHING
    templates: Text | None = None  # a folder of templates that override the bundled ones
    strict: Flag = False  # input problems fail the run
    steps_semantics: Semantics = DEFAULT_SEMANTICS  # graphrag-eval's steps rules: 5.x or 6.x
    config_ge6: Text | None = None  # a graphrag-eval 6.x configuration file (LLM, custom metrics)
    acceptable_extras: Annotated[int, Field(ge=0)] = DEFAULT_ACCEPTABLE_EXTRAS  # `indicator_selection.GRADES`
    answer_pass_f1: Annotated[float, Field(ge=0, le=1)] | None = None  # None: `PassRules`' default (--answer-pass-f1)
    audit_size: Annotated[int, Field(ge=0)] = AUDIT_SIZE  # judgments drawn for the analysts to audit (`judge_audit`)

    @property
    def evaluation(self) -> EvaluationOptions:
        """What the evaluator needs of these settings."""
        return EvaluationOptions(match_terms_by=self.match_terms_by, steps_semantics=self.steps_semantics,
                                 acceptable_extras=self.acceptable_extras,
                                 pass_rules=given_pass_rules(self.answer_pass_f1))


def resolve_run_settings(options: Mapping[str, Any], config: ConfigFile) -> RunSettings:
    """Options named as the fields of `RunSettings` (None: not given); in the configuration, at its
    top level (`acceptable_extras` in its `indicator_selection` section); no environment variables."""
    layers = Layers(section=None, options=options, config=config,
                    config_values={k: v for k, v in config.values.items() if k in RUN_CONFIG_KEYS})
    grading = config.section("indicator_selection")
    unknown = sorted(set(grading) - set(INDICATOR_SELECTION_KEYS))
    if unknown:
        raise SettingsError(f"{config.at('indicator_selection')}: unknown key '{config.prefix}indicator_selection."
                            f"{unknown[0]}'; known keys: {', '.join(INDICATOR_SELECTION_KEYS)}")
    extras = Layers(section="indicator_selection", options={"acceptable_extras": options.get("acceptable_extras")},
                    config=config, config_values=grading)
    values = {name: layers.setting(RunSettings, name) for name in RunSettings.model_fields
              if name not in ("steps_semantics", "acceptable_extras")}
    semantics = layers.find("steps_semantics")
    if semantics is not None and semantics.rank == 2:  # a top-level key: its line is known
        semantics = replace(semantics, where=f"{config.at('steps_semantics')}: 'steps_semantics'")
    return RunSettings(
        **values,
        steps_semantics=DEFAULT_SEMANTICS if semantics is None else setting(RunSettings, "steps_semantics", semantics),
        acceptable_extras=extras.setting(RunSettings, "acceptable_extras"),
    )


# --- email ---------------------------------------------------------------------------------------


class EmailSettings(BaseModel):
    """Who gets the report and through which SMTP server. `host` None means no server is
    configured (fine when the message is written to a file); `port` None means the security's
    default port (`DEFAULT_PORTS`). The password is never an option and never shown by repr()."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    to: tuple[str, ...] = ()
    cc: tuple[str, ...] = ()
    subject: str | None = None
    sender: str | None = None
    host: str | None = None
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    security: Security = "starttls"  # "ssl" when only the port is given, and it is 465
    user: str | None = None
    password: str | None = Field(default=None, repr=False)
    timeout: Annotated[float, Field(ge=0.001)] = 30.0  # seconds
    # the largest message sent, in MB (10**6 bytes); a larger one goes without the workbook, saying so
    max_size: Annotated[float, Field(ge=0.01)] = 10.0


def resolve_email_settings(options: Mapping[str, Any], config: ConfigFile,
                           environ: Mapping[str, str]) -> EmailSettings:
    """Options: to, cc, subject, from, host, port, security, user, timeout, max_size (None: not given)."""
    section = config.section("email")
    unknown = sorted(set(section) - set(EMAIL_CONFIG_KEYS))
    if unknown:
        place = f"{config.path}: " if config.path else ""
        raise EmailSettingsError(
            f"{place}unknown key '{config.prefix}email.{unknown[0]}'; known keys: {', '.join(EMAIL_CONFIG_KEYS)}"
        )
    given = {k: v for k, v in options.items() if k != "password"}  # never from a command line
    src = Layers(section="email", options=given, environ=environ, environment_names=EMAIL_ENVIRONMENT,
                 config=config, config_values=section)
    error = EmailSettingsError
    for name in ("to", "cc", "subject", "from"):  # the command line's values are checked by the command
        found = src.find(name)
        if found is not None and found.rank > 0:
            values = [found.value] if isinstance(found.value, str) else found.value
            for value in values if isinstance(values, (list, tuple)) else ():
                problem = header_text_problem(value) if isinstance(value, str) else None
                if problem is not None:
                    raise error(f"{found.where}: {problem}")
    port = src.setting(EmailSettings, "port", error=error)
    security = src.find("security")
    if security is None and port == DEFAULT_PORTS["ssl"]:
        security = Found("ssl", "port", 3)

    def text(name: str) -> str | None:
        found = src.find(name)
        if found is None or found.value == "":
            return None
        return str(check(Text, replace(found, value=str(found.value)), error=error))

    return EmailSettings(
        to=addresses(src.get("to", None)[0]),
        cc=addresses(src.get("cc", None)[0]),
        subject=text("subject"),
        sender=text("from"),
        host=text("host"),
        port=port,
        security=src.setting(EmailSettings, "security", error=error) if security is None
        else setting(EmailSettings, "security", security, error=error),
        user=text("user"),
        password=text("password"),
        timeout=src.setting(EmailSettings, "timeout", error=error),
        max_size=src.setting(EmailSettings, "max_size", error=error),
    )


def addresses(values: Any) -> tuple[str, ...]:
    """Addresses from options or configuration: lists, or comma-separated text."""
    from email.utils import getaddresses

    if not values:
        return ()
    items = [values] if isinstance(values, str) else list(values)
    return tuple(address for _, address in getaddresses([str(item) for item in items]) if address)


# --- everything ----------------------------------------------------------------------------------


class Settings(BaseModel):
    """A command's settings, resolved once. `judge` is None when the judge does not run, and
    `judge_off_reason` says why; `email` is None when nothing is emailed; `config_file` is the
    file read, if any; `warnings` what the caller should tell the user (a configuration file in the
    current folder that was not read because another user could have written it)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    run: RunSettings
    judge: JudgeSettings | None
    judge_off_reason: str | None
    email: EmailSettings | None
    config_file: str | None
    ge6: Ge6Config = NO_CONFIG  # the graphrag-eval 6.x configuration file, when one was given
    warnings: tuple[str, ...] = ()
    judge_unavailable: str | None = None  # a judge asked for by an option that cannot run: why (a failure)


def resolve_settings(
    *,
    run_options: Mapping[str, Any] | None = None,
    judge_options: Mapping[str, Any] | None = None,
    email_options: Mapping[str, Any] | None = None,
    config_path: str | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    with_judge: bool = True,
    with_email: bool = False,
) -> Settings:
    """Every setting of a command from its options, the environment and the configuration file.

    `with_judge=False` leaves the judge out (a command that never judges); `with_email=True`
    resolves the email settings (only then can a wrong QAREPORT_SMTP_* variable stop a command).
    """
    environ = os.environ if environ is None else environ
    warnings: list[str] = []
    config = read_config_file(find_config_file(config_path, cwd, on_warning=warnings.append))
    run = resolve_run_settings(run_options or {}, config)
    ge6 = read_ge6_config(run.config_ge6) if run.config_ge6 and with_judge else NO_CONFIG
    judge: JudgeSettings | None = None
    reason: str | None = None
    if with_judge and ge6.generation is not None:
        judge, reason = resolve_ge6_judge_settings(ge6, options=judge_options or {}, config=config, environ=environ,
                                                   semantics=run.steps_semantics)
    elif with_judge:
        judge, reason = resolve_judge_settings(options=judge_options or {}, config=config, environ=environ)
        if judge is not None and run.steps_semantics == 6:  # 6.x judges the retrieval contexts too
            judge = replace(judge, steps_semantics=6,
                            metrics=(*judge.metrics, *(m for m in CONTEXT_METRICS if m not in judge.metrics)))
    asked = [COMMAND_LINE_OPTIONS["judge"].get(name, name) for name, value in (judge_options or {}).items()
             if value is not None and name in ASKING_FOR_THE_JUDGE]
    unavailable = None
    if with_judge and judge is None and reason and asked and (judge_options or {}).get("enabled") is not False:
        unavailable = f"the judge was asked for ({', '.join(asked)}) but cannot run: {reason.rstrip('.')}"
    return Settings(
        run=run,
        judge=judge,
        judge_off_reason=reason,
        judge_unavailable=unavailable,
        email=resolve_email_settings(email_options or {}, config, environ) if with_email else None,
        config_file=config.path,
        ge6=ge6,
        warnings=tuple(warnings),
    )
