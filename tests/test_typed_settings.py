"""One representation per option, one default, and typed settings carried end to end."""

from __future__ import annotations

import pytest
from conftest import REPO

from qareport.cli import main
from qareport.evaluation_options import EvaluationOptions
from qareport.exit_status import USAGE_ERROR
from qareport.kinds.selection_scoring import score_indicator_selection
from qareport.records import DEFAULT_TERM_MATCHING, DatasetSelection, DimensionTerms, Term, TermMatching
from qareport.settings import RunSettings, resolve_settings


def resolve(tmp_path, **kwargs):
    return resolve_settings(environ={"HOME": str(tmp_path)}, cwd=tmp_path, **kwargs)


def test_match_terms_by_is_one_enum_from_option_file_and_default(tmp_path):
    assert resolve(tmp_path).run.match_terms_by is DEFAULT_TERM_MATCHING is TermMatching.ID_AND_NAME
    (tmp_path / "qareport.yaml").write_text("match_terms_by: id\n")
    assert resolve(tmp_path).run.match_terms_by is TermMatching.ID
    given = resolve(tmp_path, run_options={"match_terms_by": "id_and_name"}).run.match_terms_by
    assert given is TermMatching.ID_AND_NAME  # the option wins over the file, and is the enum too


def test_match_terms_by_has_its_default_written_once():
    # the evaluator, the kind and the settings all default to the same constant
    assert RunSettings().match_terms_by is EvaluationOptions().match_terms_by is DEFAULT_TERM_MATCHING
    exp, got = Term("GDP", "gdp"), Term("GDP", "gross domestic product")

    def selection(term):
        return (DatasetSelection("D", (DimensionTerms("INDICATOR", (term,)),)),)

    by_default = score_indicator_selection(selection(exp), selection(got))
    by_id = score_indicator_selection(selection(exp), selection(got), match_terms_by=TermMatching.ID)
    assert len(by_default.dimensions[0].true_positives) == 0 and len(by_id.dimensions[0].true_positives) == 1


@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_wrong_match_terms_by_is_a_usage_error_naming_the_choices(command, tmp_path, capsys):
    argv = [command, str(tmp_path), "--match-terms-by", "label"]
    argv += ["-r", str(tmp_path)] if command == "run" else []
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == USAGE_ERROR
    err = capsys.readouterr().err
    assert "argument --match-terms-by: invalid choice: 'label' (choose from id_and_name, id)" in err


def run_options(tmp_path, **kwargs):
    from conftest import RESPONSES, TESTCASES

    from qareport.pipeline import RunOptions

    return RunOptions(testcases=(str(TESTCASES),), responses=(str(RESPONSES),), output=str(tmp_path / "report.xlsx"),
                      judge_options={"cache_path": str(tmp_path / "cache.sqlite3")}, **kwargs)


def test_a_run_carries_its_options_and_judge_usage_as_typed_records(tmp_path, monkeypatch):
    from openai_stub import serve_stub
    from openpyxl import load_workbook

    from qareport.judge.settings import JudgeSettings
    from qareport.judge.usage import JudgeUsage
    from qareport.pipeline import run_pipeline
    from qareport.records import OptionsUsed
    from qareport.runs import RUN_SHEET

    with serve_stub() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-typed-records")
        outcome = run_pipeline(run_options(tmp_path, match_terms_by=TermMatching.ID, steps_semantics=6), on_progress=None)
        url, calls = server.url, server.calls
    run = outcome.report.run
    assert isinstance(run.options, OptionsUsed) and isinstance(run.judge_usage, JudgeUsage)
    assert run.options.match_terms_by is TermMatching.ID and run.steps_semantics == 6
    assert isinstance(run.options.judge, JudgeSettings) and run.options.judge.base_url == url
    assert run.judge_usage.calls == calls > 0
    # the stored run keeps plain values: the enum's text, the judge's provenance without its key
    stored = {row[0].value: row[1].value for row in load_workbook(tmp_path / "report.xlsx")[RUN_SHEET].iter_rows()}
    assert stored["option.match_terms_by"] == "id" and stored["option.steps_semantics"] == 6
    assert '"endpoint": "' + url in stored["option.judge"] and "sk-test-typed-records" not in str(stored)
    assert stored["judge.calls"] == calls


def test_an_older_workbook_gives_the_email_a_typed_judge_usage(tmp_path, monkeypatch):
    from openai_stub import serve_stub

    from qareport.emailing import read_digest
    from qareport.pipeline import run_pipeline
    from qareport.run_reading import stored_usage

    with serve_stub() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-typed-records")
        outcome = run_pipeline(run_options(tmp_path), on_progress=None)
    usage = outcome.report.run.judge_usage
    metadata = {"judge.model": usage.model, "judge.embedding_model": usage.embedding_model,
                "judge.calls": usage.calls, "judge.cost_usd": usage.cost_usd}
    restored = stored_usage(metadata)
    assert (restored.model, restored.embedding_model, restored.calls, restored.cost_usd) == (
        usage.model, usage.embedding_model, usage.calls, usage.cost_usd)
    assert stored_usage({"judge.model": None}) is None
    assert stored_usage({"judge.model": "m", "judge.cost_usd": "edited"}).cost_usd is None
    assert read_digest(tmp_path / "report.xlsx").judge_model == usage.model


# --- each value checked against its field's declaration, named by where it came from ---------------


@pytest.mark.parametrize(("config", "environ", "exp"), [
    ("judge:\n  concurrency: true\n", {}, "'judge.concurrency' in {file} must be an integer between 1 and 256 (got True)"),
    ("judge:\n  temperature: 2.5\n", {}, "'judge.temperature' in {file} must be a number between 0 and 2 (got 2.5)"),
    ("judge:\n  response_format: xml\n", {},
     "'judge.response_format' in {file} must be one of json_schema, json_object (got 'xml')"),
    ("judge:\n  budget: -1\n", {}, "'judge.budget' in {file} must be a number >= 0 (got -1)"),
    ("judge:\n  model: '  '\n", {}, "'judge.model' in {file} must be a non-empty string (got '  ')"),
    ("strict: false\n", {"QAREPORT_SMTP_TIMEOUT": "0"},
     "environment variable QAREPORT_SMTP_TIMEOUT must be a number >= 0.001 (got '0')"),
    ("testcase_cache: false\n", {}, "{file}: 'testcase_cache' is no longer a setting: the parse cache it turned off "
                                     "is gone (it saved too little to keep); remove it"),
    ("email:\n  security: tls\n", {}, "'email.security' in {file} must be one of starttls, ssl, none (got 'tls')"),
    ("steps_semantics: 7\n", {}, "{file}:1: 'steps_semantics' must be 5 or 6, graphrag-eval's major version whose "
                                 "steps rules apply (got 7)"),
])
def test_a_wrong_value_is_named_by_its_source_and_its_fields_declaration(tmp_path, config, environ, exp):
    from qareport.errors import SettingsError

    (tmp_path / "qareport.yaml").write_text(config)
    with pytest.raises(SettingsError) as info:
        resolve_settings(environ={"HOME": str(tmp_path), "OPENAI_API_KEY": "k", **environ}, cwd=tmp_path,
                         with_email=True)
    assert str(info.value) == exp.format(file=tmp_path / "qareport.yaml")


def test_values_from_the_environment_and_options_are_read_as_their_fields_types(tmp_path):
    settings = resolve_settings(environ={"HOME": str(tmp_path), "QAREPORT_SMTP_PORT": " 2525 ",
                                         "QAREPORT_SMTP_TIMEOUT": "12", "OPENAI_API_KEY": "k"},
                                cwd=tmp_path, with_email=True, run_options={"steps_semantics": "6"},
                                judge_options={"timeout": "7", "model": "  m  "})
    assert settings.email.port == 2525 and settings.email.timeout == 12.0
    assert settings.run.steps_semantics == 6
    assert settings.judge.timeout == 7.0 and settings.judge.model == "m"


def test_every_default_is_the_one_its_record_declares(tmp_path):
    from dataclasses import fields

    from qareport.judge.settings import JudgeSettings
    from qareport.settings import EmailSettings

    settings = resolve_settings(environ={"HOME": str(tmp_path), "OPENAI_API_KEY": "k"}, cwd=tmp_path, with_email=True)
    assert settings.run == RunSettings() and settings.email == EmailSettings()
    declared = JudgeSettings()
    for field in fields(JudgeSettings):
        if field.name not in ("api_key", "cache_path", "metrics"):  # the key and the cache come from the environment
            assert getattr(settings.judge, field.name) == getattr(declared, field.name), field.name


def test_the_help_says_the_defaults_the_records_declare(capsys):
    from qareport.judge.settings import CONFIG_KEYS, JudgeSettings
    from qareport.settings import DEFAULT_PORTS, EmailSettings

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    declared = JudgeSettings()
    for said in (f"(default {declared.model};", f"(default {declared.concurrency})", f"(default {declared.timeout:g})",
                 f"(default {declared.max_retries})", f"(default {RunSettings().acceptable_extras};",
                 f"(default {EmailSettings().timeout:g})", f"(default {DEFAULT_PORTS['starttls']} for STARTTLS"):
        assert said in shown, said
    assert f"(default {declared.relevance_questions})" in CONFIG_KEYS["relevance_questions"]


def test_the_documented_configuration_example_says_the_records_defaults():
    import re
    from pathlib import Path

    import yaml

    from qareport.judge.settings import DEFAULT_AZURE_API_VERSION, JudgeSettings

    page = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = page[page.index("## Every setting at its default"):]
    example = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    run = RunSettings()
    assert {key: example[key] for key in ("match_terms_by", "strict", "steps_semantics")} == {
        "match_terms_by": run.match_terms_by.value, "strict": run.strict, "steps_semantics": run.steps_semantics}
    assert example["indicator_selection"]["acceptable_extras"] == run.acceptable_extras
    judge, declared = example["judge"], JudgeSettings()
    for name in ("model", "embedding_model", "timeout", "max_retries", "concurrency", "relevance_questions",
                 "temperature", "response_format", "metrics"):
        assert judge[name] == (list(declared.metrics) if name == "metrics" else getattr(declared, name)), name
    assert judge["cache"] is declared.use_cache and str(judge["api_version"]) == DEFAULT_AZURE_API_VERSION


def test_the_evaluator_gets_its_options_from_the_settings_whole(tmp_path):
    from qareport.pipeline import RunOptions, given_run_settings

    (tmp_path / "qareport.yaml").write_text("strict: true\nsteps_semantics: 6\nindicator_selection:\n"
                                            "  acceptable_extras: 4\n")
    request = RunOptions(testcases=("t",), responses=("r",), match_terms_by=TermMatching.ID)
    settings = resolve(tmp_path, run_options=given_run_settings(request))
    assert settings.run.evaluation == EvaluationOptions(match_terms_by=TermMatching.ID, steps_semantics=6,
                                                        acceptable_extras=4)
    assert settings.run.strict is True  # a request that does not ask for --strict leaves the file's
    assert set(given_run_settings(request)) == set(RunSettings.model_fields)


def test_a_judge_that_is_off_still_has_its_metrics_checked(tmp_path):
    from qareport.errors import JudgeError

    (tmp_path / "qareport.yaml").write_text("judge:\n  enabled: false\n  metrics: [answer_f2]\n")
    with pytest.raises(JudgeError, match=r"'judge.metrics' in .*qareport.yaml must list some of answer_correctness"):
        resolve(tmp_path)


@pytest.mark.parametrize(("config", "environ", "exp"), [
    ("judge:\n  concurrency: 0\n", {}, "'judge.concurrency' in {file} must be an integer between 1 and 256 (got 0)"),
    ("match_terms_by: label\n", {}, "'match_terms_by' in {file} must be one of id_and_name, id (got 'label')"),
    ("strict: false\n", {"QAREPORT_SMTP_PORT": "smtp"},
     "environment variable QAREPORT_SMTP_PORT must be an integer between 1 and 65535 (got 'smtp')"),
])
def test_a_wrong_setting_is_a_usage_error_naming_its_source(tmp_path, monkeypatch, capsys, config, environ, exp):
    from conftest import RESPONSES, TESTCASES

    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "my.yaml").write_text(config)
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(tmp_path / "r.xlsx"), "--config",
                 str(tmp_path / "my.yaml"), "--email-to", "a@example.org", "--smtp-host", "localhost"])
    assert code == USAGE_ERROR
    assert capsys.readouterr().err == f"qareport: {exp.format(file=tmp_path / 'my.yaml')}\n"
    assert not (tmp_path / "r.xlsx").exists()


def test_version_and_usage_errors_do_not_wait_for_the_settings_to_be_imported():
    import subprocess
    import sys

    code = ("import sys\nfrom qareport.cli import main\n"
            "for argv in (['--version'], ['run', '--no-such-option']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print(sorted(name for name in ('qareport.settings', 'pydantic', 'qareport.kinds') if name in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr


def test_the_smtp_security_choices_are_the_settings():
    from qareport.cli import build_parser
    from qareport.settings import SECURITIES

    run = next(action for action in build_parser()._actions if action.dest == "command").choices["run"]
    assert tuple(next(a for a in run._actions if a.dest == "smtp_security").choices) == SECURITIES


def test_a_help_text_says_each_default_from_where_it_is_declared():
    import re

    from qareport.cli import build_parser

    commands = next(action for action in build_parser()._actions if action.dest == "command").choices
    written = [(name, action.option_strings, action.help) for name, command in commands.items()
               for action in command._actions if action.help and re.search(r"\(default -?[0-9]", action.help)]
    assert written == []  # a number written into a help text would drift from the setting's default
    run_help = commands["run"].format_help()
    assert "(default 0.8)" in run_help and "(default 0.5)" in run_help  # PassRules, RunOptions, filled in


# --- a value given as a command-line option is named by the option typed --------------------------


@pytest.mark.parametrize(("args", "exp"), [
    (["--grade-extras", "-1"], "qareport: option --grade-extras must be an integer >= 0 (got -1)"),
    (["--judge-budget", "-5"], "qareport: option --judge-budget must be a number >= 0 (got -5.0)"),
    (["--judge-concurrency", "0"], "qareport: option --judge-concurrency must be an integer between 1 and 256 (got 0)"),
    (["--email-to", "a@example.com", "--smtp-host", "127.0.0.1", "--smtp-port", "0"],
     "qareport: option --smtp-port must be an integer between 1 and 65535 (got 0)"),
])
def test_a_wrong_option_value_names_the_option_typed_not_the_setting(tmp_path, capsys, args, exp):
    root = REPO / "testcases"
    status = main(["run", str(root), "--responses", str(root / "responses"), "--output", str(tmp_path / "r.xlsx"),
                   "-q", *args])
    assert status == USAGE_ERROR
    assert capsys.readouterr().err.strip() == exp
    assert not (tmp_path / "r.xlsx").exists()


def test_every_option_named_in_messages_is_one_the_command_line_has():
    from test_docs import all_options

    from qareport.cli import build_parser
    from qareport.setting_sources import COMMAND_LINE_OPTIONS

    known = {option for _, option in all_options(build_parser())}
    named = {option for section in COMMAND_LINE_OPTIONS.values() for option in section.values()}
    assert named - known == set()
