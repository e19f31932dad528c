"""graphrag-eval's and statgpt's real data handled right (issue 18, items 3 to 8): structured answers,
the results file's per-question records, RAGAS's arithmetic, steps problems that say where and what
to do, `validate` refusing what `run` refuses, and inputs that used to pass in silence.

Inputs are small and made here, shaped as the published runs and ground-truth files are.
"""

from __future__ import annotations

import json

import pytest

from qareport import qa
from qareport.retrieval_context import ragas_average_precision, with_context_scores


# --- RAGAS's 1e-10 (item 5) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "verdicts, exp",
    [
        ([True], 1 / (1 + 1e-10)),
        ([True, True], 2 / (2 + 1e-10)),
        ([False, True], 0.5 / (1 + 1e-10)),
        ([True, False, True, True, False], (1 + 2 / 3 + 3 / 4) / (3 + 1e-10)),
        ([], 0.0),
        ([False, False], 0.0),
    ],
)
def test_context_precision_divides_by_relevant_plus_ragas_epsilon(verdicts, exp):
    assert ragas_average_precision(verdicts) == exp


def _retrieval_result(actual_texts, reference_texts):
    actual = json.dumps([{"id": str(n), "text": text} for n, text in enumerate(actual_texts)])
    reference = json.dumps([{"id": str(n), "text": text} for n, text in enumerate(reference_texts)])
    return qa.evaluate_question(
        template_id="t",
        question={"id": "q1", "question_text": "Which transformers are in Oslo?",
                  "reference_steps": [[{"name": "retrieval", "args": {"k": 5}, "output": reference}]]},
        response={"question_id": "q1", "actual_answer": "T1 and T2",
                  "actual_steps": [{"name": "retrieval", "id": "call_1", "status": "success", "args": {"k": 5},
                                    "output": actual}]},
    )


def test_a_perfect_retrieval_context_scores_as_graphrag_eval_5_2_scores_it():
    texts = ["Transformer OSLO T1 is in Substation Oslo.", "Transformer OSLO T2 is in Substation Oslo."]
    step = with_context_scores(_retrieval_result(texts, texts))["actual_steps"][0]
    # the numbers graphrag-eval 5.2.0 wrote into the published runs
    assert step["retrieval_context_recall"] == 1.0
    assert step["retrieval_context_precision"] == 0.99999999995
    assert step["retrieval_context_f1"] == 2 * (1.0 * 0.99999999995) / (1.0 + 0.99999999995)
