"""Answer relevance (RAGAS response relevancy): the judge writes questions the actual answer would
answer; their embeddings are compared with the real question's by cosine similarity. The mean
similarity counts only if at least one generated question is committal, else the score is 0.0.

Two steps per case: a chat call (`ask_questions`), then embeddings, which the runner batches over
cases (`relevance_of` once the vectors are there): a `judged_values.Relevance`.
"""

from __future__ import annotations

import base64
import binascii
import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.errors import MetricFailed
from qareport.judge.checks import check_generated_questions, vector_problem
from qareport.judge.client import JudgeClient
from qareport.judge.prompts import Prompts
from qareport.judge.usage import Ledger
from qareport.judged_values import ANSWER_RELEVANCE, GeneratedQuestion, Relevance

METRIC = ANSWER_RELEVANCE


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of the angle between two vectors; 0.0 when either has zero length.

    Can be negative for unrelated embeddings; RAGAS does not clip it, and neither does qareport.
    """
    if len(a) != len(b):
        raise ValueError(f"vectors must have the same length (got {len(a)} and {len(b)})")
    dot = math.fsum(x * y for x, y in zip(a, b))
    norm_a = math.sqrt(math.fsum(x * x for x in a))
    norm_b = math.sqrt(math.fsum(y * y for y in b))
    if norm_a == 0.0 or norm_b == 0.0:
        return 0.0
    return dot / (norm_a * norm_b)


def relevance_score(
    question_vector: Sequence[float],
    generated_vectors: Sequence[Sequence[float]],
    noncommittal: Sequence[bool],
) -> float:
    """RAGAS response relevancy: mean cosine similarity of the real question with each question
    generated from the answer, times 0 when every generated question is flagged noncommittal.

    Needs at least one generated question (the mean of nothing is undefined).
    """
    if not generated_vectors:
        raise ValueError("at least one generated question is needed")
    if len(noncommittal) != len(generated_vectors):
        raise ValueError("one noncommittal flag per generated question is needed")
    similarities = [cosine_similarity(question_vector, vector) for vector in generated_vectors]
    mean = math.fsum(similarities) / len(similarities)
    return mean * int(not all(noncommittal))


@dataclass(frozen=True, slots=True)
class GeneratedQuestions:
    """A case's generated questions, waiting for the embeddings of `inputs` (the real question
    first); `key` is the embeddings request's cache key."""

    questions: tuple[tuple[str, bool], ...]
    inputs: tuple[str, ...]
    key: str


def ask_questions(client: JudgeClient, prompts: Prompts, ledger: Ledger, *, question: str, actual: Any,
                  count: int) -> GeneratedQuestions:
    """The chat step; raises MetricFailed when it cannot be had."""
    if not str(question).strip():
        raise MetricFailed("the question is empty")
    if not str(actual).strip():
        raise MetricFailed("the actual answer is empty")
    prompt = prompts.render(METRIC, answer=actual, count=count)
    questions = client.ask_checked(METRIC, prompt, lambda c: check_generated_questions(c, count=count),
                                   ledger, retry_prompt=prompts.retry)
    inputs = (str(question), *(q for q, _ in questions))
    return GeneratedQuestions(tuple(questions), inputs, client.embeddings_key(list(inputs)))


def relevance_of(generated: GeneratedQuestions, vectors: Sequence[Sequence[float]]) -> Relevance:
    """The relevance of a case whose embeddings are known (the real question's vector first); raises
    MetricFailed when the score is not a finite number (it never counts as judged)."""
    score = relevance_score(vectors[0], vectors[1:], [flag for _, flag in generated.questions])
    if not math.isfinite(score):
        raise MetricFailed(f"the relevance computed from the embeddings is not a finite number ({score!r})")
    return Relevance(score, tuple(GeneratedQuestion(q, flag) for q, flag in generated.questions))


def encode_vectors(vectors: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Vectors as the cache stores them: float32 bytes in base64."""
    return {"vectors": [base64.b64encode(array("f", v).tobytes()).decode("ascii") for v in vectors]}


def decode_vectors(value: Any, count: int) -> list[list[float]] | None:
    """`count` usable vectors from a cached value, or None when it does not hold them (a vector
    that is not finite or all zeros, cached by an earlier version, is asked for again)."""
    encoded = value.get("vectors") if isinstance(value, Mapping) else None
    if not isinstance(encoded, list) or len(encoded) != count:
        return None
    vectors = []
    try:
        for item in encoded:
            vector = array("f")
            vector.frombytes(base64.b64decode(item))
            if not vector or vector_problem(vector):
                return None
            vectors.append(list(vector))
    except (TypeError, ValueError, binascii.Error):
        return None
    return vectors
