"""One representation per option, one default, and typed settings carried end to end."""

from __future__ import annotations

import pytest

from qareport.cli import main
from qareport.evaluation import EvaluationOptions
from qareport.exit_status import USAGE_ERROR
from qareport.kinds.indicator_selection import score_indicator_selection
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
