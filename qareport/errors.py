"""Exceptions raised by qareport.

    QAReportError                 anything qareport reports as one line on stderr
    ├── InputError                a file a user gave cannot be used (path, line, what to fix)
    │   └── ShapeError            a value inside a record has the wrong shape (becomes a Problem)
    ├── StrictModeError           --strict and at least one input problem
    ├── SettingsError             a setting is wrong: says where (option, environment variable, or
    │   │                         configuration file and key), what it must be, and what was found
    │   ├── JudgeSettingsError    ... a judge setting (also a JudgeError)
    │   └── EmailSettingsError    ... an email setting (also an EmailError)
    ├── UsageError                a command line that cannot be carried out (exit status 2)
    ├── JudgeError                the LLM judge cannot be set up (bad options, no such model)
    │   └── BatchesPending        judge batches still running when the run may wait no longer
    ├── JudgeOutputError          the judge replied, but not with what was asked for
    ├── MetricFailed              one metric of one case could not be computed (kept as its error)
    │   └── JudgeCallFailed       ... because the API failed (after the SDK's retries): not judged
    ├── JudgeAborted              the judge stops every worker: a fatal problem was found
    ├── EmailError                the email cannot be built or sent
    └── BaselineError             a --baseline / --history file is not a qareport run

Problems found in inputs are normally *collected* (see `records.Problem`) so the rest of the run
goes on; these exceptions are for what stops a command. `JudgeOutputError`, `MetricFailed` and
`JudgeAborted` never leave the judge: they carry a case's failure to the runner, which records it.
"""

from __future__ import annotations


class QAReportError(Exception):
    """Base class of every error qareport turns into a one-line message."""


class InputError(QAReportError):
    """An input file cannot be used; `path` and `line` say where."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.message = message
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = self.path or ""
        if where and self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}" if where else self.message


class StrictModeError(QAReportError):
    """--strict was given and inputs had problems."""


class JudgeError(QAReportError):
    """The LLM judge cannot be configured or reached at all."""


class EmailError(QAReportError):
    """The message cannot be built or sent (no server configured, server unreachable, refused)."""


class SettingsError(QAReportError):
    """A setting (command-line option, environment variable, configuration file key) is wrong."""


class JudgeSettingsError(SettingsError, JudgeError):
    """A judge setting is wrong."""


class EmailSettingsError(SettingsError, EmailError):
    """An email setting is wrong."""


class BaselineError(QAReportError):
    """A baseline or history file is not something qareport can compare with."""


class ShapeError(InputError):
    """A value of the wrong shape inside a test case or response; loading turns it into a Problem
    with the file it was read from. Kinds raise it from `parse_target` / `parse_output`."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message, line=line)


class UsageError(QAReportError):
    """A command line that cannot be carried out: a file named on it cannot be read, say."""


class JudgeOutputError(QAReportError):
    """The judge replied, but not with what was asked for."""

    def __init__(self, problem: str, content: str | None):
        super().__init__(problem)
        self.problem = problem
        self.content = content


class MetricFailed(QAReportError):
    """A metric of one case could not be computed; the message goes into its error key."""


class JudgeCallFailed(MetricFailed):
    """A judge call failed after the SDK's retries (an HTTP error, a timeout, a lost connection):
    the judgment could not be obtained, which is not the same as a reply that could not be used.
    Its metric's error text starts with NOT_JUDGED."""


NOT_JUDGED = "not judged: "
"""How the error text of a metric starts when the judgment could not be obtained (the API failed,
or the judge was stopped), as opposed to a reply the judge gave that could not be used."""
BUDGET_REACHED = "budget reached"
"""What follows NOT_JUDGED in the error text of a judgment the judge budget stopped
("not judged: budget reached: ...")."""


class JudgeAborted(QAReportError):
    """The run's judging stops: a fatal configuration problem was found by this call or another one."""


class BatchesPending(JudgeError):
    """Judge batches (`--judge-batch`) were submitted and are still running when the run may wait no
    longer (`--judge-batch-wait`): nothing is written; the same run again collects them. `batch_ids`
    names them."""

    def __init__(self, message: str, batch_ids: tuple[str, ...] = ()):
        super().__init__(message)
        self.batch_ids = batch_ids
