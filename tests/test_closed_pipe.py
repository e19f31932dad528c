"""A reader that goes away early (`qareport run ... 2>&1 | head`) costs nothing: the workbook is
written and the exit status is the run's own. Run for real, in a child process whose stdout and
stderr go to a pipe that the test closes after the first bytes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import RESPONSES, TESTCASES

from qareport.exit_status import REPORT_WRITTEN


@pytest.mark.parametrize("talk", [[], ["-v"]])
def test_a_run_whose_output_pipe_closes_early_still_writes_the_workbook_and_exits_0(tmp_path, talk):
    out = tmp_path / "week.xlsx"
    reader, writer = os.pipe()
    env = {k: v for k, v in os.environ.items() if k != "QAREPORT_DEBUG"}
    process = subprocess.Popen([sys.executable, "-m", "qareport", "run", str(TESTCASES), "--responses", str(RESPONSES),
                                "--output", str(out), "--no-llm", *talk], stdout=writer, stderr=writer, env=env)
    os.close(writer)
    try:
        assert os.read(reader, 10)  # like `head -c 10`: a few bytes, then the reader is gone
    finally:
        os.close(reader)
    assert process.wait(timeout=300) == REPORT_WRITTEN
    assert out.is_file()


def test_a_run_started_with_its_stderr_already_closed_still_writes_the_workbook(tmp_path):
    out = tmp_path / "week.xlsx"
    reader, writer = os.pipe()
    os.close(reader)  # nobody will ever read
    try:
        done = subprocess.run([sys.executable, "-m", "qareport", "run", str(TESTCASES), "--responses", str(RESPONSES),
                               "--output", str(out), "--no-llm"], stdout=subprocess.DEVNULL, stderr=writer,
                              timeout=300)
    finally:
        os.close(writer)
    assert done.returncode == REPORT_WRITTEN and out.is_file()
