"""The one place Jinja2 environments are made.

Templates ship inside the package (`qareport/templates`, from the repository's `templates/`). A
user may point `--templates DIR` at a folder of their own: a template found there wins, the
packaged one is the fallback, so an override can replace a single file.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined, select_autoescape


def packaged_templates_dir() -> Path:
    """The templates that ship with qareport."""
    source_tree = Path(__file__).resolve().parent.parent / "templates"
    if source_tree.is_dir():  # running from a checkout
        return source_tree
    return Path(str(resources.files("qareport.templates")))


@lru_cache(maxsize=8)
def template_environment(override_dir: str | None = None) -> Environment:
    """A strict environment: an unknown variable in a template is an error, not an empty string.

    `.html` templates are autoescaped; `.txt` and `.md` templates (cells, prompts) are not.
    """
    loaders = []
    if override_dir:
        loaders.append(FileSystemLoader(override_dir))
    loaders.append(FileSystemLoader(str(packaged_templates_dir())))
    return Environment(
        loader=ChoiceLoader(loaders),
        undefined=StrictUndefined,
        autoescape=select_autoescape(enabled_extensions=("html", "htm", "xml"), default=False),
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
