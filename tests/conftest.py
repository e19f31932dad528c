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


SLOW_TESTS = (
    # LibreOffice opens, renders, re-saves or recalculates a workbook
    "tests/test_carried_cases.py::test_the_carried_rows_survive_a_libreoffice_resave_of_the_workbook",
    "tests/test_libreoffice.py",
    "tests/test_four_weeks.py",  # four weekly runs with a judge, an SMTP server and a LibreOffice re-save
    "tests/test_baseline_and_trend.py::test_the_trend_lists_a_run_once_when_its_workbook_was_re_saved_by_libreoffice",
    "tests/test_judge_agreement.py::test_a_typed_judge_wrong_correctness_survives_a_libreoffice_round_trip_and_counts_next_week",
    "tests/test_review.py::test_the_analysts_round_trip_libreoffice_resave_sorted_overview_typed_review_next_weeks_baseline",
    "tests/test_review.py::test_the_summary_counts_the_regressions_still_to_review_and_follows_the_analysts_typing",
    "tests/test_summary_sheet.py::test_libreoffice_recalculates_the_links_to_the_sorted_rows_and_keeps_the_names_shown",
    # a child interpreter: the command as a user runs it, stopped, limited, on odd terminals, as another user
    "tests/test_faults_process.py",
    "tests/test_baseline_and_trend.py::test_a_results_file_that_is_not_a_qareport_run_is_refused_as_a_baseline",
    "tests/test_frames.py::test_importing_the_pipeline_and_the_cli_does_not_import_pandas",
    "tests/test_frames.py::test_pandas_is_imported_by_a_summary_only_when_it_has_groups_to_count",
    "tests/test_hostile_input.py::test_a_non_utf8_tsv_is_one_line_naming_the_file",
    "tests/test_hostile_input.py::test_an_unreadable_folder_among_the_inputs_is_named",
    "tests/test_hostile_input.py::test_deeply_nested_yaml_is_refused_with_its_line_without_exhausting_the_stack",
    "tests/test_judge_batch.py::test_a_batch_created_by_a_run_stopped_before_it_recorded_it_is_found_by_its_file",
    "tests/test_judge_batch.py::test_a_run_stopped_by_sigterm_after_submitting_is_picked_up_by_the_next_run",
    "tests/test_judge_cache.py::test_a_cache_in_a_folder_that_cannot_be_written_is_skipped",
    "tests/test_judge_cache.py::test_a_run_with_a_faulty_judge_cache_writes_the_judged_workbook",
    "tests/test_run_end_to_end.py::test_the_command_works_from_another_directory",
    "tests/test_scheduled_job.py::test_an_output_folder_that_cannot_be_written_is_refused_before_any_work",
    # simulations (hundreds of suites drawn to check a rate), and fast paths checked against the slow way on large inputs
    "tests/test_case_row_memory.py::test_a_run_read_back_holds_each_fact_text_once_and_its_outputs_as_stored_until_shown",
    "tests/test_case_row_memory.py::test_the_hidden_results_sheet_encodes_each_case_as_it_is_written",
    "tests/test_clustered_statistics.py::test_a_uniform_drop_as_large_as_the_minimum_detectable_change_is_detected_about_80_percent_of_the_time",
    "tests/test_clustered_statistics.py::test_the_clustered_interval_covers_the_population_mean_95_percent_of_the_time_and_the_naive_one_does_not",
    "tests/test_clustered_statistics.py::test_under_a_template_level_null_the_clustered_test_keeps_its_false_alarm_rate_and_the_naive_one_does_not",
    "tests/test_clustered_statistics.py::test_with_every_case_its_own_cluster_the_test_is_the_case_sign_flip_draw_for_draw",
    "tests/test_details_memory.py::test_holding_every_cases_details_rows_costs_little_a_row",
    "tests/test_fast_paths.py::test_a_column_read_whole_is_the_column_read_cell_by_cell",
    "tests/test_fast_paths.py::test_a_typed_value_converted_for_a_whole_column_is_the_cell_of_its_term",
    "tests/test_fast_paths.py::test_an_output_read_for_empty_bindings_without_parsing_counts_as_one_parsed",
    "tests/test_fast_paths.py::test_one_required_column_matches_as_the_mapping_search_finds",
    "tests/test_fast_paths.py::test_reference_groups_accepted_as_they_are_are_those_each_group_check_accepts",
    "tests/test_fast_paths.py::test_scoring_makes_no_reference_cycles_so_the_collector_can_rest",
    "tests/test_fast_paths.py::test_the_cells_of_a_column_of_mixed_datatypes_are_each_terms_cell",
    "tests/test_fast_paths.py::test_the_successful_calls_found_in_one_pass_are_those_the_checks_and_statuses_give",
    "tests/test_fast_paths.py::test_the_verdicts_kept_with_an_evaluation_are_those_worked_out_on_demand",
    "tests/test_judge_noise.py::test_the_three_components_are_estimated_without_bias_on_simulated_data",
    "tests/test_sparql_tables.py::test_fast_search_agrees_with_brute_force",
    # waits that are the behaviour under test: a lock held, a polling interval, work still pending
    "tests/test_judge_batch.py::test_the_polling_interval_never_passes_judge_batch_poll",
    "tests/test_judge_batch.py::test_told_not_to_wait_the_run_submits_and_stops_and_a_rerun_collects_the_same_batch",
    "tests/test_judge_cache.py::test_a_locked_cache_waits_a_couple_of_seconds_then_is_skipped",
    "tests/test_judge_cache.py::test_the_cache_given_up_during_a_run_stops_asking_it",
    "tests/test_judge_speed.py::test_the_runners_wait_for_finished_work_does_not_grow_with_the_work_still_pending",
    # several whole runs in one test: this week and the last, a history of weeks, a round of reviews
    "tests/test_attempts_judge.py::test_an_answer_passes_at_the_answer_f1_threshold_which_is_configurable",
    "tests/test_baseline_and_trend.py::test_a_baseline_whose_hidden_data_was_edited_is_read_with_each_value_converted_or_left_out_and_said",
    "tests/test_baseline_and_trend.py::test_a_baseline_whose_sheets_lack_the_dimension_element_is_still_a_baseline_for_run_and_email",
    "tests/test_baseline_and_trend.py::test_email_of_a_workbook_whose_hidden_data_was_edited_is_still_sent",
    "tests/test_baseline_and_trend.py::test_a_case_whose_test_changed_is_flagged_and_not_counted_as_a_regression",
    "tests/test_baseline_and_trend.py::test_a_results_file_is_a_baseline_too",
    "tests/test_ge6_run.py::test_a_baseline_of_the_other_semantics_is_compared_with_a_warning",
    "tests/test_ge6_run.py::test_custom_metrics_reach_overview_statistics_the_results_file_and_the_comparison",
    "tests/test_ge6_run.py::test_the_default_is_5x_and_the_configuration_file_may_choose_6x",
    "tests/test_judge_agreement.py::test_reviews_naming_a_metric_over_three_weeks_give_the_figures_a_hand_count_gives",
    "tests/test_kinds.py::test_a_registered_kinds_regression_leads_the_console_line_the_email_subject_and_its_verdict",
    "tests/test_kinds.py::test_the_writers_only_lay_out_the_case_values_the_report_model_computed_once",
    "tests/test_review.py::test_review_columns_are_found_the_way_an_analyst_names_them",
    "tests/test_review.py::test_reviews_survive_a_week_in_which_their_case_was_not_loaded_or_missing",
    "tests/test_carried_cases.py::test_a_week_with_a_broken_file_keeps_its_cases_out_of_its_figures_but_stores_their_last_rows",
    "tests/test_carried_cases.py::test_the_week_the_file_is_fixed_compares_its_cases_with_their_last_seen_results",
    "tests/test_carried_cases.py::test_a_case_not_loaded_two_weeks_running_keeps_its_last_seen_row_and_first_missed_week",
    "tests/test_carried_cases.py::test_the_results_file_carries_the_unloaded_cases_too",
    "tests/test_carried_cases.py::test_a_carried_row_an_edit_made_unreadable_is_left_out_with_a_problem",
)
"""The `slow` group (registered in pyproject.toml, left out of a plain `python -m pytest`; CI runs it
as `python -m pytest -m slow -n 2`): a test file, or a test by file and name (every parameter of
it). What makes a test slow is seldom visible in it (a child interpreter, LibreOffice, a simulation
of hundreds of suites), so the list is here, in one place, by the reason."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the tests `SLOW_TESTS` names `slow`; a name there that its file does not define is an
    error (a renamed test would quietly join the fast group)."""
    modules = {}
    for item in items:
        path = item.path.relative_to(REPO).as_posix() if item.path.is_relative_to(REPO) else str(item.path)
        name = f"{path}::{getattr(item, 'originalname', item.name)}"
        if path in SLOW_TESTS or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if getattr(item, "module", None) is not None:
            modules[path] = item.module
    stale = [entry for entry in SLOW_TESTS if "::" in entry and entry.split("::")[0] in modules
             and not hasattr(modules[entry.split("::")[0]], entry.split("::")[1])]
    if stale:
        raise pytest.UsageError(f"tests/conftest.py: SLOW_TESTS names {', '.join(stale)}, which its file does not "
                                "define: rename or remove the entry")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Say that the slow group was left out, and how to run it."""
    left_out = [item for item in terminalreporter.stats.get("deselected", ()) if item.get_closest_marker("slow")]
    if left_out:
        terminalreporter.write_line(f"{len(left_out)} slow tests left out (LibreOffice, child processes, simulations): "
                                    "run them with `python -m pytest -m slow -n 2`, or everything with -m ''")


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
