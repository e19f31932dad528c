"""Fixtures shared by the whole suite."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from openai_stub import serve_stub

REPO = Path(__file__).resolve().parent.parent
TESTCASES = REPO / "testcases"
RESPONSES = TESTCASES / "responses"


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch, tmp_path_factory):
    """No test sees the developer's API keys, SMTP login or judge cache."""
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "AZURE_OPENAI_", "QAREPORT_")) or name == "SOURCE_DATE_EPOCH":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def server():
    """The loopback OpenAI-compatible server (`openai_stub`), for one test."""
    with serve_stub() as stub:
        yield stub


def judge_settings(server, tmp_path, **overrides):
    """Judge settings that reach `server` with a test key: one worker, no SDK retries, answer
    correctness only, a cache of the test's own; `overrides` change any of them."""
    from qareport.judge import JudgeSettings

    values = dict(base_url=server.url, api_key="sk-test", cache_path=str(tmp_path / "judge.sqlite3"),
                  timeout=5.0, max_retries=0, metrics=("answer_correctness",), concurrency=1)
    values.update(overrides)
    return JudgeSettings(**values)


def run_qareport(*args: str, cwd: str | Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the installed command in a child process, as a user would."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "qareport", *map(str, args)],
        cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300,
    )


NOBODY = 65534
NO_PASSWD_UID = 54321  # a user id no passwd database names


@dataclass(frozen=True)
class OtherUser:
    """A user other than the one running the tests, for tests of file modes: root reads and writes
    whatever the modes say, so under root (how CI runs) a mode can only be tested from a child
    process that runs as someone else. `folder` is a scratch folder that user owns."""

    how: str  # "this user" (not root), "nobody" (setuid) or "user namespace" (unshare --map-user)
    folder: Path
    prefix: tuple[str, ...] = ()
    uid: int | None = None

    def run_qareport(self, *args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """`python -m qareport ARGS` as that user, in `folder`, with its cache in `folder`."""
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}
        full_env.update(HOME=str(self.folder), XDG_CACHE_HOME=str(self.folder / ".cache"))
        full_env.update(env or {})
        return subprocess.run([*self.prefix, sys.executable, "-m", "qareport", *map(str, args)], cwd=self.folder,
                              env=full_env, capture_output=True, text=True, timeout=300,
                              user=self.uid, group=self.uid, extra_groups=[] if self.uid is not None else None)

    def give(self, path: Path) -> Path:
        """Make `path` (made by this process) that user's, as if it had made it."""
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)
        return path


def _runs_qareport(prefix: tuple[str, ...], uid: int | None) -> bool:
    """Whether a child started this way can import qareport (its interpreter and files readable)."""
    try:
        probe = subprocess.run([*prefix, sys.executable, "-c", "import os, qareport; print(os.getuid())"], cwd="/",
                               capture_output=True, text=True, timeout=120, user=uid, group=uid,
                               extra_groups=[] if uid is not None else None)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0 and probe.stdout.strip() not in ("", "0")


@functools.lru_cache(maxsize=1)
def _other_user_way() -> tuple[str, tuple[str, ...], int | None] | None:
    """How this machine can run a child as another user: not root, this user; as root, `nobody` when
    it can read the interpreter and qareport, else a user namespace in which this process's files
    are the child's own but root's privileges are gone (modes apply to it as to their owner)."""
    if not hasattr(os, "geteuid"):
        return None
    if os.geteuid() != 0:
        return "this user", (), None
    if _runs_qareport((), NOBODY):
        return "nobody", (), NOBODY
    unshare = shutil.which("unshare")
    prefix = (unshare, "--user", f"--map-user={NO_PASSWD_UID}") if unshare else ()
    if unshare and _runs_qareport(prefix, None):
        return "user namespace", prefix, None
    return None


@pytest.fixture
def other_user(tmp_path_factory):
    """An `OtherUser` with a scratch folder of its own (outside pytest's root-only temporary root),
    removed afterwards; skips only where no other user can be had (not POSIX, or root without a
    readable interpreter for `nobody` and without user namespaces)."""
    way = _other_user_way()
    if way is None:
        pytest.skip("file modes need a user other than root: not POSIX, or neither `nobody` nor a user "
                    "namespace can run qareport here")
    how, prefix, uid = way
    folder = Path(tempfile.mkdtemp(prefix="qareport-other-user-"))
    try:
        user = OtherUser(how, folder, prefix, uid)
        user.give(folder)
        yield user
    finally:
        for path in [folder, *folder.rglob("*")]:  # what a test locked must open again to be removed
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o700)
        shutil.rmtree(folder, ignore_errors=True)


REVIEW_COUNTS = ("=COUNTA(Overview!", "=SUMPRODUCT((LEFT(Overview!")
"""Formulas a report holds: the Summary's live counts of the analyst's reviews, and links by id."""

_CONSTANT = r'(?:"(?:[^"]|"")*")(?:&"(?:[^"]|"")*")*'
LINK_BY_ID = re.compile(
    r"""=HYPERLINK\("#'(?P<sheet>Overview|Changes)'!(?P<column>[A-Z])"&MATCH\((?P<value>""" + _CONSTANT
    + r"""),'(?P=sheet)'!\$(?P=column):\$(?P=column),0\),(?P<shown>""" + _CONSTANT + r""")\)$""")


def _constant_text(constant: str) -> str:
    return "".join(piece[1:-1].replace('""', '"') for piece in re.findall(r'"(?:[^"]|"")*"', constant))


def link_by_id(formula: object) -> tuple[str, str, str, str] | None:
    """(sheet, column, value looked up, text shown) of a link-by-id formula, or None for any other
    formula or value. The looked-up value with MATCH's escapes (~*, ~?, ~~) undone."""
    match = LINK_BY_ID.match(str(formula)) if isinstance(formula, str) else None
    if match is None:
        return None
    value = re.sub(r"~([*?~])", r"\1", _constant_text(match["value"]))
    return match["sheet"], match["column"], value, _constant_text(match["shown"])


def link_target_row(formula: object, workbook) -> int | None:
    """The row a link-by-id formula leads to now, found as MATCH would (the first exact match)."""
    found = link_by_id(formula)
    if found is None:
        return None
    sheet, column, value, _ = found
    return next((cell.row for cell in workbook[sheet][column] if str(cell.value) == value), None)


def foreign_formulas(workbook) -> list[str]:
    """Every formula cell of an openpyxl workbook that is not one of the review counts."""
    return [f"{ws.title}!{cell.coordinate}" for ws in workbook.worksheets for row in ws.iter_rows() for cell in row
            if cell.data_type == "f" and not (ws.title == "Summary" and str(cell.value).startswith(REVIEW_COUNTS))
            and link_by_id(cell.value) is None]


def typed_row(case_id: str, **values: object):
    """A `CaseRow` as tests write one: its fields by name (lists as given are made tuples), and any
    other keyword a metric (`typed_row("a", status="success", macro_recall=1.0)`)."""
    from dataclasses import fields

    from qareport.case_record import CaseRow

    names = {field.name for field in fields(CaseRow)}
    given = {key: tuple(value) if key in ("groups", "targets") and isinstance(value, list) else value
             for key, value in values.items() if key in names}
    metrics = {key: value for key, value in values.items() if key not in names}
    if metrics:
        given["metrics"] = {**given.get("metrics", {}), **metrics}
    return CaseRow(case_id, **given)
