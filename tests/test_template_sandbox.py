"""A `--templates` folder is input, not trusted code: a template that reaches for Python's insides
is refused before any work, naming the file and line, and nothing it asks for runs; what a template
sees is only the values qareport renders it with."""

from __future__ import annotations

import re
import socket
from email import policy
from email.parser import BytesParser
from pathlib import Path

import jinja2
import pytest
from conftest import RESPONSES, TESTCASES
from jinja2 import meta
from jinja2.sandbox import SecurityError

from qareport.cli import main
from qareport.cli import main as qareport_cli_main
from qareport.templating import packaged_templates_dir, template_environment

TEMPLATES = ["indicator_selection_details.txt", "steps_details.txt", "email.txt", "email.html",
             "judge/answer_correctness.txt"]
ESCAPES = {
    "cycler's globals": "{{ cycler.__init__.__globals__.os.popen('touch %(marker)s').read() }}",
    "self's globals": "{{ self.__init__.__globals__['os'].popen('touch %(marker)s').read() }}",
    "a string's class": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "a key in brackets": "{{ turns['__class__'] }}",
    "the attr filter": "{{ turns|attr('__class__') }}",
    "a computed attribute name": "{%% set n = '__cla' ~ 'ss__' %%}{{ turns|attr(n) }}",
    "a computed attribute of map": "{%% set n = '__cla' ~ 'ss__' %%}{{ turns|map(attribute=n)|list }}",
    "a function's globals": "{{ lipsum.__globals__.os.popen('touch %(marker)s') }}",
}


def run(tmp_path: Path, folder: Path, *extra: str) -> int:
    return main(["run", str(TESTCASES), "--responses", str(RESPONSES), "--output", str(tmp_path / "out.xlsx"),
                 "--no-llm", "--templates", str(folder), *extra])


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("escape", list(ESCAPES))
def test_a_template_that_reaches_outside_is_a_usage_error_and_runs_nothing(tmp_path, capsys, template, escape):
    marker = tmp_path / "the-command-ran"
    folder = tmp_path / "templates"
    path = folder / template
    path.parent.mkdir(parents=True)
    path.write_text("Hello\n" + ESCAPES[escape] % {"marker": marker} + "\n", encoding="utf-8")

    assert run(tmp_path, folder) == 2

    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"qareport: {path}:2: ") and "Traceback" not in err[0]
    assert not marker.exists() and not (tmp_path / "out.xlsx").exists()


@pytest.mark.parametrize("source", [
    "{{ cycler.__init__.__globals__.os.popen('touch MARKER').read() }}",
    "{{ self.__init__.__globals__ }}",
    "{{ range.__self__ }}",
    "{{ namespace() }}",
    "{{ joiner() }}",
])
def test_rendering_refuses_escapes_even_without_the_check_before_the_run(tmp_path, source):
    marker = tmp_path / "MARKER"
    template = template_environment(None).from_string(source.replace("MARKER", str(marker)))
    with pytest.raises((SecurityError, jinja2.UndefinedError)):
        template.render(turns=[])
    assert not marker.exists()


def test_the_environment_has_no_global_names_and_refuses_private_attributes():
    environment = template_environment(None)
    assert dict(environment.globals) == {}
    assert isinstance(environment, jinja2.sandbox.ImmutableSandboxedEnvironment)
    with pytest.raises(SecurityError):
        environment.from_string("{{ x.__class__ }}").render(x="text")
    with pytest.raises(SecurityError):
        environment.from_string("{{ x.append(1) }}").render(x=[])  # values are not changed from a template
    with pytest.raises(jinja2.UndefinedError):  # still strict: an unknown name fails loudly
        environment.from_string("{{ nothing }}").render()


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.xlsx"
    assert main(["run", str(TESTCASES), "--responses", str(RESPONSES), "--output", str(path), "--no-llm", "-q"]) == 0
    return path


def email(report: Path, folder: Path, eml: Path) -> int:
    return main(["email", str(report), "--to", "team@example.com", "--eml", str(eml), "--templates", str(folder)])


@pytest.mark.parametrize("source", [
    "{{ config }}", "{{ settings }}", "{{ smtp }}", "{{ password }}", "{{ host }}", "{{ environ }}",
])
def test_an_email_template_cannot_name_settings_or_the_host(report, tmp_path, capsys, source):
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "email.txt").write_text(f"{{{{ verdict }}}}\n{source}\n", encoding="utf-8")
    capsys.readouterr()
    assert email(report, folder, tmp_path / "m.eml") == 2
    err = capsys.readouterr().err
    assert "qareport does not provide to email.txt" in err and not (tmp_path / "m.eml").exists()


def test_an_email_rendered_from_an_override_holds_only_the_report(report, tmp_path, monkeypatch):
    """Everything an email template is given, printed: nothing of the host, the SMTP login or its password."""
    monkeypatch.setenv("QAREPORT_SMTP_USER", "mailer")
    monkeypatch.setenv("QAREPORT_SMTP_PASSWORD", "s3cret-pa55word")
    folder = tmp_path / "templates"
    folder.mkdir()
    packaged = (packaged_templates_dir() / "email.txt").read_text(encoding="utf-8")
    every_name = " ".join("{{ %s }}" % name for name in sorted(
        meta.find_undeclared_variables(template_environment(None).parse(packaged))))
    (folder / "email.txt").write_text(packaged + "\n" + every_name + "\n", encoding="utf-8")
    eml = tmp_path / "m.eml"
    assert email(report, folder, eml) == 0
    message = BytesParser(policy=policy.default).parsebytes(eml.read_bytes())
    body = message.get_body(("plain",)).get_content()
    assert "Run of" in body and len(body.splitlines()[-1]) > 50  # the names are there, rendered
    words = set(re.findall(r"[\w.-]+", body))
    for secret in (socket.gethostname(), socket.getfqdn(), "s3cret-pa55word", "mailer", "password"):
        assert secret not in words, secret


def test_the_email_command_checks_the_templates_too(report, tmp_path, capsys):
    marker = tmp_path / "the-command-ran"
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "email.html").write_text(ESCAPES["cycler's globals"] % {"marker": marker}, encoding="utf-8")
    capsys.readouterr()
    assert email(report, folder, tmp_path / "m.eml") == 2
    err = capsys.readouterr().err
    assert f"{folder / 'email.html'}:1:" in err and "Traceback" not in err
    assert not marker.exists() and not (tmp_path / "m.eml").exists()


@pytest.mark.parametrize("escape", ["cycler's globals", "a string's class", "a computed attribute name"])
def test_a_prompt_override_that_reaches_outside_stops_answer_correctness_before_any_call(tmp_path, monkeypatch,
                                                                                         capsys, escape):
    from openai_stub import serve_stub


    marker = tmp_path / "the-command-ran"
    folder = tmp_path / "templates" / "judge"
    folder.mkdir(parents=True)
    (folder / "answer_correctness.txt").write_text(
        "{{ question }}\n" + ESCAPES[escape] % {"marker": marker}, encoding="utf-8")
    source = tmp_path / "in.tsv"
    source.write_text("Question\tReference answer\tActual answer\nq\tr\ta\n", encoding="utf-8")
    with serve_stub() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        status = qareport_cli_main(["answer-correctness", "-i", str(source), "-o", str(tmp_path / "out.tsv"), "-q",
                                              "--templates", str(tmp_path / "templates"),
                                              "--cache-path", str(tmp_path / "c.sqlite3")])
    assert status == 2 and server.chat_calls == 0 and not marker.exists()
    err = capsys.readouterr().err
    assert "judge/answer_correctness.txt" in err and "Traceback" not in err
