"""MkDocs hook: the reference pages generated from the code at build time, so they cannot drift.

- `reference/cli.md`: every subcommand and option of `qareport`, read from `qareport.cli.build_parser()`.
- `reference/configuration.md`: every key of the configuration file, with its default, what it must
  be, the environment variable and the command-line option that also set it, read from the settings
  records (`qareport.settings`, `qareport.judge.settings`, `qareport.config_file`).
- `reference/api.md`: one mkdocstrings block per public name of `qareport.__all__`, at the module
  that defines it.
- the exit-status table of `troubleshooting.md` (where the page says `EXIT_STATUSES_MARKER`), read
  from `qareport.exit_status`: its constants and the table its docstring draws.

Nothing here is checked in as text: `mkdocs build` writes the pages from the code each time. When the
code changes shape (a record renamed, an option gone), this file fails the build loudly instead of
publishing a stale page. `tests/test_docs.py` checks the pages these functions write against the code.
"""

from __future__ import annotations

import argparse
import inspect
import re
from collections.abc import Iterator
from typing import Any

GENERATED = {
    "reference/cli.md": lambda: cli_reference(),
    "reference/configuration.md": lambda: configuration_reference(),
    "reference/api.md": lambda: api_reference(),
}


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File  # only when MkDocs runs: the tests import this file without it

    for path, render in GENERATED.items():
        existing = files.get_file_from_path(path)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, path, content=render()))
    return files


EXIT_STATUSES_MARKER = "<!-- exit statuses: generated from qareport/exit_status.py -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if EXIT_STATUSES_MARKER in markdown:
        return markdown.replace(EXIT_STATUSES_MARKER, exit_status_table())
    return markdown


# --- the command line ------------------------------------------------------------------------------


def subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in the order `--help` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, subparser in action.choices.items():
                yield name, helps.get(name, ""), subparser


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help as `--help` shows it: the declared defaults filled in."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return parser._get_formatter()._expand_help(action)


def _invocation(action: argparse.Action) -> str:
    names = action.option_strings or [action.metavar or action.dest]
    value = ""
    if action.option_strings and action.nargs != 0:
        if action.metavar is not None:
            value = str(action.metavar)
        elif action.choices is not None:
            value = "{" + ",".join(str(choice) for choice in action.choices) + "}"
        else:
            value = action.dest.upper()
        if action.nargs in ("+", "*"):
            value += "..."
    shown = ", ".join(f"`{name}`" for name in names)
    return f"{shown} `{value}`" if value else shown


def _options_table(parser: argparse.ArgumentParser, level: int) -> list[str]:
    lines: list[str] = []
    for group in parser._action_groups:
        actions = [a for a in group._group_actions
                   if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
        if not actions:
            continue
        lines += [f"{'#' * level} {group.title[:1].upper()}{group.title[1:]}", ""]
        if group.description:
            lines += [_cell(group.description), ""]
        lines += ["| option | what it does |", "|---|---|"]
        for action in actions:
            required = " (required)" if action.required and action.option_strings else ""
            lines.append(f"| {_invocation(action)}{required} | {_cell(_help(parser, action))} |")
        lines.append("")
    return lines


def cli_reference() -> str:
    """Every subcommand and option of `qareport`, as its parser declares them."""
    from qareport.cli import build_parser

    parser = build_parser()
    lines = [
        "# Command line reference",
        "",
        "Generated from the code (`qareport.cli.build_parser()`) each time the site is built; "
        "`qareport COMMAND --help` says the same. For what each option is for, follow the guide's pages.",
        "",
        "```text",
        parser.format_usage().strip(),
        "```",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    commands = list(subcommands(parser))
    lines += [f"| [`qareport {name}`](#qareport-{name}) | {_cell(short)} |" for name, short, _ in commands]
    lines.append("")
    for name, _short, subparser in commands:
        lines += _command_section(f"qareport {name}", subparser, level=2)
    return "\n".join(lines) + "\n"


def _command_section(command: str, parser: argparse.ArgumentParser, *, level: int) -> list[str]:
    """A command's heading, description, usage and options, then its own subcommands one level down."""
    anchor = command.replace(" ", "-")
    lines = [f"{'#' * level} `{command}` {{#{anchor}}}", ""]
    if parser.description:
        lines += [_cell(parser.description), ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    lines += _options_table(parser, level + 1)
    if parser.epilog:
        lines += [_cell(parser.epilog), ""]
    for name, _short, subparser in subcommands(parser):
        lines += _command_section(f"{command} {name}", subparser, level=level + 1)
    return lines


# --- exit statuses -----------------------------------------------------------------------------------

_STATUS_LINE = re.compile(r"^\s*(\d+)\s+([A-Z][A-Z_]+)\s+(.*)$")


def exit_status_table() -> str:
    """`qareport.exit_status`'s docstring table as Markdown, each row checked against its constant."""
    from qareport import exit_status

    rows: list[list[str]] = []
    for line in (exit_status.__doc__ or "").splitlines():
        start = _STATUS_LINE.match(line)
        if start:
            rows.append([start[1], start[2], start[3].strip()])
        elif rows and line.strip():
            rows[-1][2] += " " + line.strip()
    constants = {name: value for name, value in vars(exit_status).items()
                 if name.isupper() and isinstance(value, int)}
    listed = {name: int(status) for status, name, _ in rows}
    if listed != constants:  # a status added, renamed or renumbered without its line in the docstring
        raise LookupError(f"qareport/exit_status.py: its docstring lists {listed}, its constants are {constants}")
    lines = ["| status | name | what it means |", "|---|---|---|"]
    lines += [f"| {status} | `{name}` | {_cell(words)} |" for status, name, words in rows]
    return "\n".join(lines)


# --- the configuration file --------------------------------------------------------------------------

RUN_OPTION = {"acceptable_extras": "--grade-extras"}
"""Run settings whose command-line option is not `--` + the key with dashes."""
JUDGE_OPTION = {
    "enabled": "--no-llm", "model": "--judge-model", "embedding_model": "--embedding-model",
    "base_url": "--judge-base-url", "timeout": "--judge-timeout", "max_retries": "--judge-retries",
    "concurrency": "--judge-concurrency", "cache": "--no-cache", "cache_path": "--cache-path",
    "budget": "--judge-budget", "batch": "--judge-batch", "batch_wait": "--judge-batch-wait",
    "batch_poll": "--judge-batch-poll", "repeats": "--judge-repeats",
}
"""The `judge:` keys that `qareport run` also takes as an option."""
EMAIL_OPTION = {
    "host": "--smtp-host", "port": "--smtp-port", "security": "--smtp-security", "user": "--smtp-user",
    "timeout": "--smtp-timeout", "to": "--email-to", "cc": "--email-cc", "subject": "--email-subject",
    "from": "--email-from",
}
"""The `email:` keys that `qareport run` also takes as an option (`qareport email` names them without
`email-`)."""
WITHOUT_OPTION = {
    "password": "the SMTP password (also $QAREPORT_SMTP_PASSWORD); never a command-line option, never printed",
    "max_size": "the largest message, in MB; a larger one is sent without the workbook, and says so",
}
"""What a key that no command-line option sets does (the option's help says it for the others)."""


def _described(key: str, help_text: str) -> str:
    """The option's help, else the words above; a key with neither fails the build."""
    if help_text:
        return _cell(help_text)
    if key not in WITHOUT_OPTION:
        raise LookupError(f"configuration key {key!r} has no option and no description: add it to "
                          "WITHOUT_OPTION in docs/hooks/reference.py")
    return _cell(WITHOUT_OPTION[key])


def _run_parser() -> argparse.ArgumentParser:
    from qareport.cli import build_parser

    for name, _short, subparser in subcommands(build_parser()):
        if name == "run":
            return subparser
    raise LookupError("qareport has no 'run' subcommand: docs/hooks/reference.py must follow the CLI")


def _option_cell(option: str | None, options: dict[str, argparse.Action]) -> str:
    if option is None:
        return ""
    if option not in options:  # fail the build: the table would point at an option that is gone
        raise LookupError(f"qareport run has no option {option}: update docs/hooks/reference.py")
    return f"`{option}`"


def _default(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ", ".join(str(item) for item in value) or "none"
    return f"`{getattr(value, 'value', value)}`"


def configuration_reference() -> str:
    """Every key of `qareport.yaml` (and `[tool.qareport]`), read from the settings records."""
    from qareport import settings
    from qareport.config_file import RUN_CONFIG_KEYS, SECTION_KEYS
    from qareport.judge.resolution import JUDGE_ENVIRONMENT
    from qareport.judge.settings import CONFIG_KEYS
    from qareport.setting_sources import expected, field_annotation, field_default

    parser = _run_parser()
    options = {option: action for action in parser._actions for option in action.option_strings}
    run = settings.RunSettings
    lines = [
        "# Configuration reference",
        "",
        "Generated from the code (the settings records and their configuration keys) each time the "
        "site is built. Each setting comes from the first place that has it: the command-line option, "
        "the environment, the configuration file, the default. The file is `--config FILE`, else "
        "`qareport.yaml` in the current folder, else the `[tool.qareport]` table of `pyproject.toml` "
        "there (the same keys in TOML). See [Configuration](../configuration.md) for how to use it.",
        "",
        "## Top level",
        "",
        "| key | must be | default | option | what it does |",
        "|---|---|---|---|---|",
    ]
    for key in RUN_CONFIG_KEYS:
        option = RUN_OPTION.get(key, "--" + key.replace("_", "-"))
        action = options.get(option)
        help_text = _help(parser, action) if action is not None else ""
        lines.append(f"| `{key}` | {_cell(expected(field_annotation(run, key)))} | "
                     f"{_default(field_default(run, key))} | {_option_cell(option if action else None, options)} | "
                     f"{_described(key, help_text)} |")
    sections = set(SECTION_KEYS)
    lines += ["", "## `indicator_selection:`", "",
              "| key | must be | default | option | what it does |", "|---|---|---|---|---|"]
    for key in settings.INDICATOR_SELECTION_KEYS:
        option = RUN_OPTION.get(key, "--" + key.replace("_", "-"))
        lines.append(f"| `{key}` | {_cell(expected(field_annotation(run, key)))} | {_default(field_default(run, key))}"
                     f" | {_option_cell(option, options)} | {_cell(_help(parser, options[option]))} |")
    lines += ["", "## `judge:`", "",
              "The API key is never a key of this file: it is read from `OPENAI_API_KEY` "
              "(`AZURE_OPENAI_API_KEY` with an Azure endpoint) or from the variable `api_key_env` names.", "",
              "| key | environment | option | what it is |", "|---|---|---|---|"]
    for key, words in CONFIG_KEYS.items():
        variable = JUDGE_ENVIRONMENT.get(key)
        lines.append(f"| `{key}` | {f'`{variable}`' if variable else ''} | "
                     f"{_option_cell(JUDGE_OPTION.get(key), options)} | {_cell(words)} |")
    lines += ["", "## `email:`", "",
              "The password is read only from `QAREPORT_SMTP_PASSWORD` or `email.password`, never from the "
              "command line.", "",
              "| key | environment | default | option | what it does |", "|---|---|---|---|---|"]
    email = settings.EmailSettings
    for key in settings.EMAIL_CONFIG_KEYS:
        field = "sender" if key == "from" else key
        variable = settings.EMAIL_ENVIRONMENT.get(key)
        option = EMAIL_OPTION.get(key)
        action = options.get(option) if option else None
        help_text = _help(parser, action) if action is not None and option else ""
        default = field_default(email, field) if field in email.model_fields else None
        lines.append(f"| `{key}` | {f'`{variable}`' if variable else ''} | {_default(default)} | "
                     f"{_option_cell(option, options)} | {_described(key, help_text)} |")
    known = {"judge", "email", "indicator_selection"}
    if sections - known:  # a new section would be missing from this page
        raise LookupError(f"configuration sections {sorted(sections - known)} are not documented: "
                          "update docs/hooks/reference.py")
    return "\n".join(lines) + "\n"


# --- the library --------------------------------------------------------------------------------------


def api_reference() -> str:
    """One mkdocstrings block per exported name, at the module that defines it."""
    import qareport

    lines = [
        "# Library reference",
        "",
        "Generated from the docstrings of the names `qareport` exports (`qareport.__all__`) each time the "
        "site is built. Import them from `qareport` itself; the heading of each shows the module that "
        "defines it. For how they fit together, see [The library](../library.md).",
        "",
    ]
    for name in qareport.__all__:
        if name.startswith("__"):
            continue
        value = getattr(qareport, name)
        module = getattr(value, "__module__", None) or inspect.getmodule(value).__name__  # type: ignore[union-attr]
        lines += [f"::: {module}.{name}", "    options:", "      heading_level: 2", "      show_root_heading: true",
                  "      show_root_full_path: false", ""]
    return "\n".join(lines) + "\n"
