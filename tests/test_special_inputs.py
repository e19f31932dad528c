"""Inputs that are not files: a device given as responses or linked to as a test file is named as
what it is, a usage error before any work when given on the command line (never "a link to
something that does not exist", never a run of missing cases). Every input is generated here."""

from __future__ import annotations

import os

import pytest

from qareport.cli import main
from qareport.exit_status import USAGE_ERROR
from qareport.input_files import special_file

CASE = """\
- template_id: t1
  questions:
    - id: q1
      question_text: How many?
      reference_answer: three
"""
RESPONSE = '[{"question_id": "q1", "actual_answer": "three", "actual_steps": []}]'

needs_dev_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")


def inputs(tmp_path):
    (tmp_path / "qa.yaml").write_text(CASE)
    (tmp_path / "r.json").write_text(RESPONSE)
    return tmp_path / "qa.yaml", tmp_path / "r.json"


@needs_dev_zero
def test_a_device_given_as_responses_is_a_usage_error_that_names_it(tmp_path, capsys):
    cases, _ = inputs(tmp_path)
    out = tmp_path / "week.xlsx"
    assert main(["run", str(cases), "-r", "/dev/zero", "--output", str(out), "--no-llm", "-q"]) == USAGE_ERROR
    err = capsys.readouterr().err
    assert err == ("qareport: --responses /dev/zero: a character device, not a file or a folder; give a file or a "
                   "folder of files\n")
    assert not out.exists()


@needs_dev_zero
def test_a_test_file_linked_to_a_device_is_named_as_a_link_to_it(tmp_path, capsys):
    cases, responses = inputs(tmp_path)
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    assert main(["run", str(tmp_path / "zero.yaml"), str(cases), "-r", str(responses), "--output",
                 str(tmp_path / "week.xlsx"), "--no-llm", "-q"]) == USAGE_ERROR
    err = capsys.readouterr().err
    assert (f"TESTCASES {tmp_path / 'zero.yaml'}: a link to /dev/zero, a character device, not a file or a folder"
            in err)
    assert "does not exist" not in err
    # inside a folder, the same link is a problem of its own and the rest is read
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "qa.yaml").write_text(CASE)
    (folder / "zero.yaml").symlink_to("/dev/zero")
    assert main(["run", str(folder), "-r", str(responses), "--output", str(tmp_path / "week.xlsx"), "--no-llm",
                 "-q"]) == 0
    err = capsys.readouterr().err
    assert f"{folder / 'zero.yaml'}: a link to /dev/zero, a character device, not a file; it is not read" in err


def test_files_folders_and_nothing_are_not_special(tmp_path):
    cases, _ = inputs(tmp_path)
    assert [special_file(p) for p in (cases, tmp_path, tmp_path / "none.yaml")] == [None, None, None]
