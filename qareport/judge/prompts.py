"""The judge's prompts: Jinja2 templates `templates/judge/<name>.txt`, overridable with a templates
folder (`--templates DIR`). Every template is rendered once with sample values when the judge is
built, so a broken override fails before any call is made."""

from __future__ import annotations

from typing import Any

import jinja2

from qareport.errors import JudgeError
from qareport.templating import template_environment

TEMPLATES = ("answer_correctness", "answer_relevance", "retrieval_answer_recall",
             "retrieval_answer_precision", "retrieval_context_recall", "retrieval_context_precision",
             "retry", "retry_values")
_SAMPLE_VARIABLES: dict[str, dict[str, Any]] = {
    "answer_correctness": {"question": "q", "reference_answer": "r", "actual_answer": "a"},
    "answer_relevance": {"answer": "a", "count": 3},
    "retrieval_answer_recall": {"question": "q", "reference_answer": "r", "contexts": ["c"]},
    "retrieval_answer_precision": {"question": "q", "answer": "a", "answer_kind": "answer",
                                   "answer_tag": "answer", "contexts": ["c"]},
    "retrieval_context_recall": {"question": "q", "reference": "r", "contexts": ["c"]},
    "retrieval_context_precision": {"question": "q", "reference": "r", "contexts": ["c"]},
    "retry": {"problem": "p"},
    "retry_values": {"problem": "p"},
}


class Prompts:
    """The loaded prompt templates; `render(name, **variables)` gives one prompt."""

    def __init__(self, templates_dir: str | None = None):
        environment = template_environment(templates_dir)
        self._templates: dict[str, jinja2.Template] = {}
        self.sources: dict[str, str] = {}
        """Each template's text as loaded: what the judge's identity hashes (`identity.prompts_hash`)."""
        for name in TEMPLATES:
            path = f"judge/{name}.txt"
            try:
                template = environment.get_template(path)
                if environment.loader is not None:
                    self.sources[name] = environment.loader.get_source(environment, path)[0]
                template.render(**_SAMPLE_VARIABLES[name])
            except jinja2.TemplateError as error:
                raise JudgeError(f"prompt template {path}: {error}") from None
            self._templates[name] = template

    def render(self, name: str, **variables: Any) -> str:
        return self._templates[name].render(**variables)

    def retry(self, problem: str) -> str:
        """What the judge is told when its reply could not be used."""
        return self.render("retry", problem=problem)

    def retry_values(self, problem: str) -> str:
        """The same, for a custom metric, whose reply is tab-separated values."""
        return self.render("retry_values", problem=problem)
