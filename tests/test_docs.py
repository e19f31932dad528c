"""Guards against drift between the code and what users read: the README, the documentation site
under docs/ and its reference pages, which docs/hooks/reference.py generates from the code."""

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import qareport
from qareport.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
README_MOST_LINES = 300
IMAGE_MOST_BYTES = 300 * 1024


def _load_hook():
    spec = importlib.util.spec_from_file_location("docs_reference_hook", DOCS / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _load_hook()


def all_options(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield from ((name, o) for _, o in all_options(subparser))
        for option in action.option_strings:
            if option.startswith("--") and option not in ("--help",):
                yield "", option


def _subcommands():
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(commands.choices)


def _sections(markdown: str) -> dict[str, str]:
    """The generated CLI page split by its `## `qareport NAME`` headings."""
    parts = re.split(r"^## `qareport ([\w-]+)`.*$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def _guide_pages() -> dict[Path, str]:
    """The hand-written pages of the site (the generated ones are not on disk)."""
    return {path: path.read_text(encoding="utf-8") for path in DOCS.rglob("*.md")}


def test_every_command_line_option_is_in_the_generated_cli_reference():
    sections = _sections(HOOK.cli_reference())
    missing = sorted(f"{command} {option}".strip() for command, option in all_options(build_parser())
                     if command and f"`{option}`" not in sections.get(command, ""))
    assert missing == []


def test_every_subcommand_has_a_reference_section_and_a_guide_page_that_names_it():
    sections = _sections(HOOK.cli_reference())
    guide = "\n".join(_guide_pages().values())
    assert [name for name in _subcommands() if name not in sections] == []
    assert [name for name in _subcommands() if f"qareport {name}" not in guide] == []


def test_every_subcommand_is_in_the_readme():
    assert [name for name in _subcommands() if f"qareport {name}" not in README] == []


def test_every_configuration_key_is_in_the_generated_configuration_reference():
    from qareport import settings
    from qareport.config_file import RUN_CONFIG_KEYS
    from qareport.judge.settings import CONFIG_KEYS

    page = HOOK.configuration_reference()
    sections = dict(zip(*[iter(re.split(r"^## (.+)$", page, flags=re.MULTILINE)[1:])] * 2))
    expected = {
        "Top level": list(RUN_CONFIG_KEYS),
        "`indicator_selection:`": list(settings.INDICATOR_SELECTION_KEYS),
        "`judge:`": list(CONFIG_KEYS),
        "`email:`": list(settings.EMAIL_CONFIG_KEYS),
    }
    missing = [f"{section} {key}" for section, keys in expected.items() for key in keys
               if f"| `{key}` |" not in sections.get(section, "")]
    assert missing == []


def test_the_generated_configuration_reference_gives_each_setting_its_declared_default():
    from qareport.judge.settings import JudgeSettings

    page = HOOK.configuration_reference()
    assert "| `steps_semantics` | 5 or 6, graphrag-eval's major version whose steps rules apply | `5` |" in page
    assert "| `acceptable_extras` | an integer >= 0 | `2` | `--grade-extras` |" in page
    assert f"requests in flight at most (default {JudgeSettings.concurrency})" in page


def test_the_library_reference_documents_every_exported_name_where_it_is_defined():
    page = HOOK.api_reference()
    blocks = re.findall(r"^::: ([\w.]+)$", page, flags=re.MULTILINE)
    assert sorted(block.rsplit(".", 1)[1] for block in blocks) == sorted(
        name for name in qareport.__all__ if name != "__version__")
    for block in blocks:
        module, name = block.rsplit(".", 1)
        assert getattr(sys.modules[module], name) is getattr(qareport, name)


def test_the_troubleshooting_page_lists_every_exit_status_from_the_code():
    from qareport import exit_status

    assert HOOK.EXIT_STATUSES_MARKER in (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    table = HOOK.exit_status_table()
    constants = {name: value for name, value in vars(exit_status).items() if name.isupper() and isinstance(value, int)}
    assert constants and all(f"| {value} | `{name}` |" in table for name, value in constants.items())


def test_the_readme_stays_a_short_guide():
    assert len(README.splitlines()) <= README_MOST_LINES


def test_the_screenshots_are_small():
    images = sorted((DOCS / "images").glob("*.png"))
    assert images
    assert [image.name for image in images if image.stat().st_size > IMAGE_MOST_BYTES] == []


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _relative_links(path: Path):
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)  # code is not links
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        yield target.split("#", 1)[0]


def test_every_relative_link_in_the_readme_and_the_docs_resolves():
    generated = {DOCS / name for name in HOOK.GENERATED}
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *_guide_pages()]
    broken = []
    for page in pages:
        for target in _relative_links(page):
            resolved = (page.parent / target).resolve()
            if not resolved.exists() and resolved not in generated:
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_the_link_check_finds_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[ok](page.md) [gone](missing.md#part) [web](https://example.com) ![img](pic.png)\n"
                    "```\n[in code](nowhere.md)\n```\n", encoding="utf-8")
    assert [t for t in _relative_links(page) if not (page.parent / t).exists()] == ["missing.md", "pic.png"]


def test_the_public_api_is_exactly_the_exported_names():
    public = sorted(
        name for name in dir(qareport)
        if not name.startswith("_") and name not in ("annotations", "import_module", "Any")
        and not isinstance(getattr(qareport, name), types.ModuleType)
    )
    assert sorted(n for n in qareport.__all__ if n != "__version__") == public
    for name in qareport.__all__:
        assert getattr(qareport, name) is not None


def test_the_documented_azure_set_up_judges_through_its_deployments(tmp_path, monkeypatch):
    import json

    import yaml
    from openai_stub import serve_stub

    from qareport.cli import main

    page = (DOCS / "judge.md").read_text(encoding="utf-8")
    section = page[page.index("### A worked set-up"):]
    config = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    with serve_stub() as server:
        config["judge"]["azure_endpoint"] = server.root_url  # the documented file, pointed at the loopback server
        (tmp_path / "qareport.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-test-key")
        status = main(["run", str(ROOT / "testcases"), "-r", str(ROOT / "testcases" / "responses"),
                       "-o", "report.xlsx", "--results", "results.json", "--quiet"])
    assert status == 0
    assert {r.path for r in server.requests} == {"/openai/deployments/qa-judge/chat/completions",
                                                   "/openai/deployments/qa-embed/embeddings"}
    assert {r.headers.get("api-key") for r in server.requests} == {"azure-test-key"}
    judged = {m["key"]: m for m in json.loads((tmp_path / "results.json").read_text())["judge"]["metrics"]}
    assert judged["answer_f1"]["judged"] > 0 and judged["answer_relevance"]["judged"] > 0


@pytest.mark.slow
def test_the_documentation_site_builds_with_no_warning(tmp_path):
    for package in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(package)
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert "WARNING" not in built.stderr
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert all(option in cli for _, option in all_options(build_parser()))
    assert (tmp_path / "site" / "reference" / "api" / "index.html").stat().st_size > 10_000


def test_the_quick_start_commands_are_the_ones_ci_runs():
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    # one command: the install, then the gates (types, linter), each stopping it when it fails, then the tests
    command = ('python -m pip install -q --upgrade "pip>=25.1" && python -m pip install -q . --group dev '
               "&& python -m mypy --strict qareport && python -m ruff check && python -m pytest && python -m pytest -m slow -n 2")
    assert command in [line.strip() for line in README.splitlines()]
    assert command in [line.strip() for line in ci.splitlines()]
    assert "qareport run testcases --responses testcases/responses --output report.xlsx" in README


DECISIONS = {"qareport.clustered_statistics": ("clustered_interval", "wilson_interval", "clustered_paired_change",
                                              "minimum_detectable_change", "holm", "benjamini_hochberg"),
             "qareport.attempt_statistics": ("separate_attempts", "chance_of_at_least", "pass_at_k", "pass_hat_k",
                                             "suite_pass_rates")}


def test_the_how_sure_page_names_each_decision_function_the_code_defines():
    page = (DOCS / "how-sure.md").read_text(encoding="utf-8")
    modules = {name: importlib.import_module(name) for name in DECISIONS}
    undefined = [f"{module}.{name}" for module, names in DECISIONS.items() for name in names
                 if not callable(getattr(modules[module], name, None))]
    unnamed = [name for names in DECISIONS.values() for name in names if f"`{name}`" not in page]
    assert (undefined, unnamed) == ([], [])
