"""One settings object: option > environment > configuration file > default, and where the file is."""

from __future__ import annotations

import pytest

from qareport.errors import EmailError, JudgeError, SettingsError
from qareport.settings import RunSettings, find_config_file, resolve_settings

KEY = "sk-test-settings-object-0123456789"


def resolve(tmp_path, environ=None, **kwargs):
    return resolve_settings(environ=environ or {"HOME": str(tmp_path)}, cwd=tmp_path, **kwargs)


def test_no_file_means_defaults(tmp_path):
    settings = resolve(tmp_path)
    assert settings.config_file is None
    assert settings.run == RunSettings()
    assert settings.judge is None and settings.judge_off_reason.startswith("No LLM judge configured")
    assert settings.email is None


def test_qareport_yaml_in_the_current_directory(tmp_path):
    (tmp_path / "qareport.yaml").write_text("strict: true\nmatch_terms_by: id\njudge:\n  model: gpt-4.1-mini\n")
    settings = resolve(tmp_path, environ={"OPENAI_API_KEY": KEY})
    assert settings.config_file == str(tmp_path / "qareport.yaml")
    assert settings.run.strict is True and settings.run.match_terms_by == "id"
    assert settings.judge.model == "gpt-4.1-mini"


def test_tool_qareport_in_pyproject_when_there_is_no_qareport_yaml(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.qareport]\ntemplates = "my-templates"\n\n'
        '[tool.qareport.judge]\nconcurrency = 3\n')
    settings = resolve(tmp_path, environ={"OPENAI_API_KEY": KEY})
    assert settings.config_file == str(tmp_path / "pyproject.toml")
    assert settings.run.templates == "my-templates"
    assert settings.judge.concurrency == 3
    (tmp_path / "qareport.yaml").write_text("templates: from-yaml\n")  # qareport.yaml comes first
    assert resolve(tmp_path).run.templates == "from-yaml"


def test_a_pyproject_without_the_table_is_not_a_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_config_file(None, tmp_path) is None


def test_config_option_names_the_file_and_must_exist(tmp_path):
    other = tmp_path / "team.yaml"
    other.write_text("strict: true\n")
    (tmp_path / "qareport.yaml").write_text("strict: false\n")
    assert resolve(tmp_path, config_path=str(other)).run.strict is True
    with pytest.raises(SettingsError, match=r"missing\.yaml: no such configuration file; check --config"):
        resolve(tmp_path, config_path=str(tmp_path / "missing.yaml"))


def test_the_environment_overrides_the_file_and_options_override_both(tmp_path):
    (tmp_path / "qareport.yaml").write_text(
        "judge:\n  base_url: http://file/v1\nemail:\n  host: file.example.com\n  port: 25\n")
    environ = {"OPENAI_BASE_URL": "http://env/v1", "QAREPORT_SMTP_HOST": "env.example.com",
               "HOME": str(tmp_path)}
    settings = resolve(tmp_path, environ=environ, with_email=True)
    assert settings.judge.base_url == "http://env/v1"
    assert settings.email.host == "env.example.com"
    assert settings.email.port == 25  # the file, where the environment has nothing
    settings = resolve(tmp_path, environ=environ, with_email=True,
                       judge_options={"base_url": "http://option/v1"}, email_options={"host": "option.example.com"})
    assert settings.judge.base_url == "http://option/v1"
    assert settings.email.host == "option.example.com"


def test_errors_name_the_file_and_the_key(tmp_path):
    (tmp_path / "qareport.yaml").write_text("judge:\n  concurrency: 0\n")
    with pytest.raises(JudgeError) as info:
        resolve(tmp_path, environ={"OPENAI_API_KEY": KEY})
    assert str(info.value) == (f"'judge.concurrency' in {tmp_path / 'qareport.yaml'} must be an integer "
                               "between 1 and 256 (got 0)")
    (tmp_path / "qareport.yaml").write_text("match_terms_by: label\n")
    with pytest.raises(SettingsError, match=r"'match_terms_by' in .*qareport.yaml must be one of id_and_name, id"):
        resolve(tmp_path)
    (tmp_path / "qareport.yaml").write_text("strict: yes please\n")
    with pytest.raises(SettingsError, match=r"qareport.yaml: 'strict' must be a bool \(got str\)"):
        resolve(tmp_path)
    (tmp_path / "qareport.yaml").unlink()
    (tmp_path / "pyproject.toml").write_text("[tool.qareport]\nemial = {}\n")
    with pytest.raises(SettingsError, match=r"pyproject.toml: unknown key 'tool.qareport.emial'"):
        resolve(tmp_path)


def test_environment_errors_name_the_variable(tmp_path):
    with pytest.raises(EmailError, match="environment variable QAREPORT_SMTP_PORT must be an integer"):
        resolve(tmp_path, environ={"QAREPORT_SMTP_PORT": "smtp"}, with_email=True)
    # a command that sends nothing is not stopped by a wrong email variable
    assert resolve(tmp_path, environ={"QAREPORT_SMTP_PORT": "smtp"}).email is None


def test_the_smtp_password_is_never_an_option_and_never_shown(tmp_path):
    environ = {"QAREPORT_SMTP_PASSWORD": "s3cret", "HOME": str(tmp_path)}
    settings = resolve(tmp_path, environ=environ, with_email=True, email_options={"password": "from-cli"})
    assert settings.email.password == "s3cret"
    assert "s3cret" not in repr(settings)


def test_port_465_means_ssl(tmp_path):
    settings = resolve(tmp_path, with_email=True, email_options={"host": "h", "port": 465})
    assert settings.email.security == "ssl"
