"""The reference answer as a kind of target: answer correctness and relevance, judged by an LLM.

The judge (`qareport.judge`) gives graphrag-eval's answer keys of a turn, which make its new
result (`TurnResult.qa`, a `QuestionScores`); this kind reads them: a case's value is the mean
over its turns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from qareport.errors import NOT_JUDGED
from qareport.evaluation_options import PassRules
from qareport.input_shapes import optional_text, plain
from qareport.kinds.kind_base import Kind, mean_over_turns
from qareport.kinds.kind_records import Column, ColumnPlace, Metric, OutputText
from qareport.kinds.qa_turn import QA_TURN, Answer, answer_of
from qareport.question_scores import answer_text
from qareport.records import CaseResult


def _answer_as_kept(answer: Any) -> str | None:
    """The answer as the Compare sheet shows it: a text as it is, a structured one as JSON."""
    if answer is None:
        return None
    if isinstance(answer, str):
        return answer
    return json.dumps(answer, ensure_ascii=False, default=str)


def _qa_text(key: str) -> Callable[[CaseResult], str | None]:
    """A text key of the case; prefixed with the turn number when several turns have it. A structured
    answer shows its text parts (`answer_text`)."""

    def value(result: CaseResult) -> str | None:
        texts = [(t.number, answer_text(t.qa.value(key))) for t in result.turns
                 if t.qa is not None and t.qa.value(key) not in (None, "")]
        if not texts:
            return None
        if len(texts) == 1:
            return texts[0][1]
        return "\n".join(f"Turn {number}: {text}" for number, text in texts)

    return value


def _relevance_questions(result: CaseResult) -> str | None:
    """The questions the judge generated from the answer (noncommittal ones marked)."""
    lines = []
    for turn in result.turns:
        for item in turn.qa.answer_relevance_questions if turn.qa is not None else ():
            if isinstance(item, dict):
                mark = " (noncommittal)" if item.get("noncommittal") else ""
                lines.append(f"• {item.get('question', '')}{mark}")
    return "\n".join(lines) or None


def _judge_errors(result: CaseResult) -> str | None:
    errors = []
    for turn in result.turns:
        if turn.qa is None:
            continue
        for key, value in turn.qa.items():
            if key.endswith("_error") and key != "steps_error" and value:
                errors.append(f"{key}: {value}")
        for step in turn.qa.actual_steps or []:
            for key, value in step.items():
                if key.startswith("retrieval_") and key.endswith("_error") and value:
                    errors.append(f"{step.get('id')} {key}: {value}")
    return "\n".join(errors) or None


class ReferenceAnswer(Kind):
    """The system's final answer, against the reference answer and the question (LLM-judged)."""

    name = "reference_answer"
    label = "reference answer"
    metrics = (
        Metric("answer_recall", "answer recall"),
        Metric("answer_precision", "answer precision"),
        Metric("answer_f1", "answer F1", headline=True),
        Metric("answer_relevance", "answer relevance", headline=True),
    )

    in_questions = True
    shared = QA_TURN
    output_text = OutputText("answer", "answer", lambda output: _answer_as_kept(answer_of(output)))

    @property
    def output_key(self) -> str:
        return "actual_answer"

    def read_target(self, target: Mapping[str, Any], *, line: int | None) -> str | None:
        """The reference answer as written (`NO` stays NO)."""
        return optional_text(target, self.name)  # type: ignore[arg-type]

    def parse_output(self, turn: Mapping[str, Any], *, line: int | None) -> Answer | None:
        """The answer; a structured one (content parts) stays data: JSON in the results file, its
        text in a cell."""
        answer = turn.get(self.output_key)
        return plain(answer) if isinstance(answer, (dict, list)) else None if answer is None else str(answer)

    def attempt_metrics(self, result: CaseResult) -> dict[str, float | None]:
        scored = [t.qa for t in result.turns if t.qa is not None]
        return {m.key: mean_over_turns(qa.value(m.key) for qa in scored) for m in self.metrics}

    def pass_rule(self, rules: PassRules) -> str:
        return f"answer F1 {rules.answer_f1:g} or above (--answer-pass-f1)"

    def passes(self, result: CaseResult, rules: PassRules) -> bool | None:
        f1 = self.attempt_metrics(result)["answer_f1"]
        return None if f1 is None or not self.has_target(result.case) else f1 >= rules.answer_f1

    def explain(self, result: CaseResult) -> str | None:
        reasons = []
        for turn in result.turns:
            qa = turn.qa
            if qa is None:
                continue
            f1 = qa.answer_f1
            if isinstance(f1, (int, float)) and f1 < 1:
                why = str(qa.answer_correctness_reason or "").strip().split("\n")[0]
                reasons.append(f"answer F1 {f1:.2f}" + (f": {why}" if why else ""))
            elif qa.answer_eval_error:
                # the judge failed (the API) or its reply could not be used: the judge errors column says which
                not_judged = str(qa.answer_eval_error).startswith(NOT_JUDGED)
                reasons.append("answer not judged (the judge failed)" if not_judged else "answer judgment failed")
        return "; ".join(reasons) or None

    def present(self, results: Sequence[CaseResult]) -> bool:
        """A reference answer in a test case, or an answer in a response: either gets the columns."""
        return any(self.has_target(r.case) for r in results) or any(
            answer_of(o) is not None for r in results if r.response and r.response.status == "success"
            for o in r.response.turns
        )

    def overview_columns(self, results: Sequence[CaseResult], *, templates_dir: str | None) -> list[Column]:
        """The answers themselves and the judge's columns (`Column.judge`: the Overview shows those
        when the run has a judge, whatever this week's answers hold)."""
        def score(header: str, key: str, width: float, place: ColumnPlace) -> Column:
            return Column(header, lambda result: self.case_metrics(result).get(key), width, "score", score=True,
                          place=place, metric=key, judge=True)

        return [
            score("answer F1", "answer_f1", 9, "score"),
            score("answer relevance", "answer_relevance", 10, "score"),
            score("answer recall", "answer_recall", 9, "number"),
            score("answer precision", "answer_precision", 9, "number"),
            Column("reference answer", _qa_text("reference_answer"), 40, wrap=True),
            Column("actual answer", _qa_text("actual_answer"), 50, wrap=True),
            Column("relevance questions", _relevance_questions, 40, wrap=True, judge=True),
            Column("judge reason", _qa_text("answer_correctness_reason"), 40, wrap=True, judge=True),
            Column("judge errors", _judge_errors, 30, wrap=True, judge=True),
        ]


ANSWERS = ReferenceAnswer()
