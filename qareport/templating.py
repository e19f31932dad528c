"""The one place Jinja2 environments are made.

Templates ship inside the package (`qareport/templates`, from the repository's `templates/`). A
user may point `--templates DIR` at a folder of their own: a template found there wins, the
packaged one is the fallback, so an override can replace a single file.

A template folder is input, not trusted code. Every template is rendered in Jinja2's immutable
sandbox (`ImmutableSandboxedEnvironment`): no attribute or key starting with `_` (so no way from a
value to its class, a function's globals or a module), no internal attributes of functions and
generators, no method that changes a list or a dict. The environment has no global names at all
(Jinja2's `range`, `dict`, `cycler`, `joiner`, `namespace` and `lipsum` are removed): a template sees
only the variables qareport renders it with, which are plain text, numbers, lists and mappings made
for it (no settings, no host name, no credentials). Filters and tests are Jinja2's built-in ones.
`unsafe_reaches` finds, before a run, what the sandbox would refuse while rendering.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from importlib import resources
from pathlib import Path

from jinja2 import ChoiceLoader, FileSystemLoader, StrictUndefined, nodes, select_autoescape
from jinja2.sandbox import (
    UNSAFE_ASYNC_GENERATOR_ATTRIBUTES,
    UNSAFE_COROUTINE_ATTRIBUTES,
    UNSAFE_FUNCTION_ATTRIBUTES,
    UNSAFE_GENERATOR_ATTRIBUTES,
    UNSAFE_METHOD_ATTRIBUTES,
    ImmutableSandboxedEnvironment,
)

UNSAFE_NAMES = frozenset(UNSAFE_FUNCTION_ATTRIBUTES | UNSAFE_METHOD_ATTRIBUTES | UNSAFE_GENERATOR_ATTRIBUTES
                         | UNSAFE_COROUTINE_ATTRIBUTES | UNSAFE_ASYNC_GENERATOR_ATTRIBUTES)


def packaged_templates_dir() -> Path:
    """The templates that ship with qareport."""
    source_tree = Path(__file__).resolve().parent.parent / "templates"
    if source_tree.is_dir():  # running from a checkout
        return source_tree
    return Path(str(resources.files("qareport.templates")))


@lru_cache(maxsize=8)
def template_environment(override_dir: str | None = None) -> ImmutableSandboxedEnvironment:
    """A strict, sandboxed environment without globals (see the module's docstring): an unknown
    variable in a template is an error, not an empty string.

    `.html` templates are autoescaped; `.txt` and `.md` templates (cells, prompts) are not.
    """
    loaders = []
    if override_dir:
        loaders.append(FileSystemLoader(override_dir))
    loaders.append(FileSystemLoader(str(packaged_templates_dir())))
    environment = ImmutableSandboxedEnvironment(
        loader=ChoiceLoader(loaders),
        undefined=StrictUndefined,
        autoescape=select_autoescape(enabled_extensions=("html", "htm", "xml"), default=False),
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.globals.clear()
    return environment


def _unsafe(name: object) -> bool:
    return isinstance(name, str) and (name.startswith("_") or name in UNSAFE_NAMES)


def unsafe_reaches(tree: nodes.Template) -> Iterator[tuple[int, str]]:
    """(line, what) for each place a parsed template reaches for what the sandbox refuses: an
    attribute or key starting with `_` or naming a function's or generator's internals, written
    with a dot, in brackets or as a filter's or test's argument (`attr("__class__")`), and an
    attribute name that is computed (`attr(name)`, `map(attribute=name)`), which cannot be checked
    before rendering."""
    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Filter, nodes.Test)):
        if isinstance(node, nodes.Getattr) and _unsafe(node.attr):
            yield node.lineno, f".{node.attr}"
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and _unsafe(node.arg.value):
            yield node.lineno, f"[{node.arg.value!r}]"
        elif isinstance(node, (nodes.Filter, nodes.Test)):
            names = [*(node.args if node.name == "attr" else ()),
                     *(keyword.value for keyword in node.kwargs if keyword.key == "attribute")]
            for argument in [*node.args, *(keyword.value for keyword in node.kwargs)]:
                if isinstance(argument, nodes.Const) and _unsafe(argument.value):
                    yield node.lineno, f"{node.name}({argument.value!r})"
            for name in names:
                if not isinstance(name, nodes.Const):
                    yield node.lineno, f"{node.name}() with an attribute name computed while rendering"
