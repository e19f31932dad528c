"""The command line's habits: long options never abbreviated, the nearest option or command offered
for a mistyped one, examples in every command's help that parse, and `qareport cache`."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from qareport.caches import CACHES
from qareport.cli import main
from qareport.cli_parser import build_parser
from qareport.judge.cache import JudgeCache

REPO = Path(__file__).resolve().parent.parent
TESTCASES = str(REPO / "testcases")
RESPONSES = str(REPO / "testcases" / "responses")


def _usage_error(capsys, argv: list[str]) -> str:
    """The one line a usage error prints, having checked its exit status (2)."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    return captured.err


def test_every_parser_refuses_abbreviated_long_options():
    parser = build_parser()
    assert parser.allow_abbrev is False
    assert {name: command.allow_abbrev for name, command in parser.commands.items()} == dict.fromkeys(
        ["run", "email", "validate", "answer-correctness", "cache"], False)


def test_an_abbreviated_option_is_an_error_that_names_the_option_meant(capsys):
    err = _usage_error(capsys, ["run", TESTCASES, "-r", RESPONSES, "--base", "last.xlsx"])
    assert err == ("qareport run: error: unrecognized arguments: --base last.xlsx; did you mean --baseline? "
                   "(see 'qareport run --help')\n")


@pytest.mark.parametrize(("argv", "exp"), [
    (["validate", TESTCASES, "--respones", RESPONSES], "did you mean --responses?"),
    (["run", TESTCASES, "-r", RESPONSES, "--judge-batch-wai=5"], "did you mean --judge-batch-wait?"),
    (["email", "r.xlsx", "--emal", "m.eml"], "did you mean --eml?"),
    (["answer-correctness", "-i", "a.tsv", "-o", "b.tsv", "--concurency", "2"], "did you mean --concurrency?"),
])
def test_a_mistyped_option_is_answered_with_the_nearest_of_its_command(capsys, argv, exp):
    err = _usage_error(capsys, argv)
    assert err.startswith(f"qareport {argv[0]}: error: unrecognized arguments: ") and exp in err


def test_an_option_like_none_gets_no_guess(capsys):
    err = _usage_error(capsys, ["validate", TESTCASES, "--zzzzzz"])
    assert "did you mean" not in err and "unrecognized arguments: --zzzzzz" in err


@pytest.mark.parametrize(("typed", "exp"), [("rn", "run"), ("validat", "validate"), ("answer", "answer-correctness"),
                                           ("cahce", "cache")])
def test_a_mistyped_command_is_answered_with_the_nearest_command(capsys, typed, exp):
    err = _usage_error(capsys, [typed, TESTCASES])
    assert err == f"qareport: error: unknown command {typed!r}; did you mean {exp}? (see 'qareport --help')\n"


def test_every_commands_help_ends_with_examples_that_parse():
    parser = build_parser()
    for name, command in parser.commands.items():
        help_text = command.format_help()
        assert "\nexamples:\n" in help_text, name
        examples = [line.strip() for line in help_text.split("\nexamples:\n")[1].splitlines() if line.strip()]
        assert examples and all(example.startswith(f"qareport {name}") for example in examples), examples
        for example in examples:
            parsed = build_parser().parse_args(shlex.split(example)[1:])  # a usage error would exit
            assert parsed.command == name


def test_the_commands_list_and_usage_errors_do_not_import_pandas():
    code = ("import sys\nfrom qareport.cli import main\n"
            "for argv in (['--help'], ['rn'], ['run', 'x', '-r', 'y', '--base', 'z']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print(sorted(name for name in ('pandas', 'openpyxl', 'openai') if name in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr


def test_answer_correctness_is_a_qareport_subcommand(capsys, tmp_path):
    assert main(["answer-correctness", "-i", str(tmp_path / "no.tsv"), "-o", str(tmp_path / "out.tsv")]) == 2
    assert capsys.readouterr().err == f"answer-correctness: {tmp_path / 'no.tsv'}: no such file\n"


# --- qareport cache ---------------------------------------------------------------------------------


@pytest.fixture
def cache_home(tmp_path, monkeypatch) -> Path:
    """An XDG cache home holding a judge cache of 3 replies."""
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    judge = JudgeCache(home / "qareport" / "judge.sqlite3")
    for n in range(3):
        judge.put(f"key{n}", kind="chat", model="m", value={"reply": "x" * 1000})
    judge.close()
    return home / "qareport"


def test_the_cache_command_shows_each_cache_its_place_entries_and_size(capsys, cache_home):
    assert main(["cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    judge_size = sum(path.stat().st_size for path in cache_home.glob("judge.sqlite3*"))
    assert lines[0] == f"judge: {cache_home / 'judge.sqlite3'}: 3 entries, {judge_size / 1000:.1f} kB"
    assert lines[1].startswith("  the judge's replies")
    assert len(lines) == 2 * len(CACHES)


def test_the_cache_command_says_a_cache_not_made_yet_is_empty_and_does_not_make_it(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "none"))
    assert main(["cache", "show", "judge"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"judge: {tmp_path / 'none' / 'qareport' / 'judge.sqlite3'}: empty (not created yet)")
    assert not (tmp_path / "none").exists()


def test_cache_clear_with_a_name_clears_that_cache_alone(capsys, cache_home):
    assert main(["cache", "clear", "judge"]) == 0
    assert capsys.readouterr().out.startswith(f"judge: {cache_home / 'judge.sqlite3'}: removed 3 entries (")
    assert not list(cache_home.glob("judge.sqlite3*"))


def test_cache_clear_clears_every_cache_and_a_second_clear_finds_them_empty(capsys, cache_home):
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.count(": removed ") == len(CACHES)
    assert os.listdir(cache_home) == []
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.count(": was empty") == len(CACHES)


def test_cache_path_names_a_judge_cache_kept_elsewhere(capsys, tmp_path, cache_home):
    elsewhere = tmp_path / "shared" / "replies.sqlite3"
    elsewhere.parent.mkdir()
    JudgeCache(elsewhere).close()
    assert main(["cache", "show", "judge", "--cache-path", str(elsewhere)]) == 0
    assert capsys.readouterr().out.startswith(f"judge: {elsewhere}: 0 entries, ")
    assert main(["cache", "clear", "judge", "--cache-path", str(elsewhere)]) == 0
    assert not elsewhere.exists() and (cache_home / "judge.sqlite3").exists()


def test_an_unknown_cache_name_is_a_usage_error_with_the_nearest_name(capsys, cache_home):
    assert main(["cache", "clear", "judg"]) == 2
    assert capsys.readouterr().err == "qareport: no cache named 'judg'; did you mean judge? (the caches: judge)\n"
    assert (cache_home / "judge.sqlite3").exists()


def test_a_cache_that_cannot_be_removed_is_one_line_and_exit_status_2(capsys, tmp_path, cache_home):
    folder = tmp_path / "a-folder"  # where a judge cache file should be: not ours to remove, even for root
    folder.mkdir()
    assert main(["cache", "clear", "judge", "--cache-path", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"qareport: cannot remove {folder} (") and err.endswith("); remove it by hand\n")
    assert folder.is_dir() and (cache_home / "judge.sqlite3").exists()


def test_the_installed_command_shows_and_clears_the_caches_and_refuses_an_abbreviation(cache_home):
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home.parent)}
    shown = subprocess.run([sys.executable, "-m", "qareport", "cache"], capture_output=True, text=True, env=env,
                           timeout=120)
    assert shown.returncode == 0 and "judge: " in shown.stdout and ": 3 entries, " in shown.stdout, shown.stderr
    cleared = subprocess.run([sys.executable, "-m", "qareport", "cache", "clear"], capture_output=True, text=True,
                             env=env, timeout=120)
    assert cleared.returncode == 0 and os.listdir(cache_home) == [], cleared.stderr
    refused = subprocess.run([sys.executable, "-m", "qareport", "validate", TESTCASES, "--resp", RESPONSES],
                             capture_output=True, text=True, env=env, timeout=120)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr.endswith("did you mean --responses? (see 'qareport validate --help')\n")
