"""The Jinja2 environment that renders ``templates/``, and where those templates are found.

A team restyles its docs by pointing ``--templates DIR`` (or ``[tool.jobdef]
templates``) at a folder holding only the templates it changes; every other
template still comes from the built-in set.

Escaping is not left to each template: every ``{{ expression }}`` in a
``*.md.j2`` template goes through :func:`~jobdef.render.escape.markdown_cell`
unless a filter already made it safe (``inline``, ``mermaid``, ``link``) or it
is a macro's output, so a sheet value cannot inject Markdown or HTML, even
through a custom template. ``*.html.j2`` templates get Jinja's HTML
autoescaping; other templates (plain text, ``*.txt.j2``) are raw.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from jobdef.errors import ConfigError
from jobdef.render import describe
from jobdef.render.escape import markdown_cell, markdown_inline, mermaid_label
from jobdef.render.labels import translate

# src/jobdef/render/templates.py -> the repository root, for editable installs.
_REPO_TEMPLATES = Path(__file__).resolve().parents[3] / "templates"


def builtin_templates() -> Path:
    """The shipped templates: inside the wheel, else the repository's ``templates/``."""
    shipped = resources.files("jobdef") / "templates"
    if shipped.is_dir():
        return Path(str(shipped))
    return _REPO_TEMPLATES


def _autoescape(name: str | None) -> bool:
    # Markdown templates autoescape too, so that macro output stays Markup and
    # _finalize sees raw values only; _finalize returns them Markdown-escaped.
    return (name or "").endswith((".html.j2", ".html", ".md.j2"))


@functools.lru_cache(maxsize=4096)
def _markdown_markup(text: str) -> Markup:
    # Labels, durations and names repeat on every page: escape each text once. (A few
    # pages' worth: the texts of one page only, such as its file:line origins, would
    # otherwise fill the cache and live to the end of the process.)
    return Markup(markdown_cell(text))


@jinja2.pass_context
def _finalize(context: jinja2.runtime.Context, value: Any) -> Any:
    if isinstance(value, Markup) or not (context.name or "").endswith(".md.j2"):
        return value
    return _markdown_markup(str(value))


def _display_width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def text_table(
    rows: Sequence[Any],
    columns: Sequence[str] | None = None,
    header: Sequence[str] | None = None,
    indent: int = 2,
) -> str:
    """Rows as aligned plain-text columns (wide East Asian characters count double).

    ``columns`` names the attributes to take from each row object; without it
    each row is a sequence of cells. ``header`` is an optional first row.
    """
    if columns is not None:
        rows = [[getattr(row, column) for column in columns] for row in rows]
    cells = [[str(cell) for cell in row] for row in ([header] if header else []) + list(rows)]
    if not cells:
        return ""
    widths = [max(_display_width(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = []
    for row in cells:
        padded = [cell + " " * (widths[i] - _display_width(cell)) for i, cell in enumerate(row)]
        lines.append((" " * indent + "  ".join(padded)).rstrip())
    return "\n".join(lines)


_STATE = re.compile(r"^(\[\*\]|[A-Za-z_][A-Za-z0-9_]*)$")


def _mermaid_state(name: Any) -> Markup:
    """A state name of a Mermaid diagram: an identifier or ``[*]``, anything else made one."""
    text = str(name)
    return Markup(text if _STATE.match(text) else re.sub(r"\W+", "_", text, flags=re.ASCII) or "_")


def _link(text: Any, target: str) -> Markup:
    return Markup(f"[{markdown_inline(text)}]({quote(target)})")


def environment(lang: str = "en", overrides: str | Path | None = None) -> jinja2.Environment:
    """A Jinja2 environment for ``lang`` over ``overrides`` (if given) then the built-ins."""
    folders = [builtin_templates()]
    if overrides is not None:
        override = Path(overrides)
        if not override.is_dir():
            raise ConfigError(
                f"templates folder {str(override)!r} does not exist; create it, or fix "
                "--templates / [tool.jobdef] templates"
            )
        folders.insert(0, override)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(f) for f in folders], encoding="utf-8"),
        undefined=jinja2.StrictUndefined,
        autoescape=_autoescape,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.globals.update(lang=lang, t=partial(translate, lang=lang), describe=describe)
    env.filters.update(
        inline=lambda text: Markup(markdown_inline(text)),
        cell=lambda text: Markup(markdown_cell(text)),
        mermaid=lambda text: Markup(mermaid_label(text)),
        mermaid_state=_mermaid_state,
        link=_link,
        text_table=text_table,
    )
    return env


def render(env: jinja2.Environment, name: str, **context: Any) -> str:
    """Render template ``name``; a template error names the template and line."""
    try:
        return env.get_template(name).render(**context)
    except jinja2.TemplateNotFound as exc:
        raise ConfigError(
            f"template {exc.name!r} not found in the templates folder or the built-ins; "
            "name it as the built-in templates are named"
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(
            f"{exc.filename or exc.name}:{exc.lineno}: template syntax error: {exc.message}; "
            "fix the template"
        ) from None
    except jinja2.UndefinedError as exc:
        raise ConfigError(
            f"{_template_position(exc) or name}: the template uses an undefined value: "
            f"{exc.message}; check the variable names against the built-in templates"
        ) from None


def _template_position(exc: BaseException) -> str | None:
    """``file:line`` of the innermost template frame of ``exc`` (Jinja2 rewrites frames so)."""
    position = None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith(".j2"):
            position = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return position
