"""Message text: one sandboxed Jinja2 template per channel, and the digest layout.

A channel's ``template`` reshapes the text of one event; its variables are the
event payload's fields (``job``, ``title``, ``job_id``, ``key_args``,
``attempts_used``, ``max_attempts``, ``error_type``, ``error_message``,
``at_iso``, ``rerun``, ``requeue_command``, ``message_id``, ...; a ``done`` event
also ``receipt`` and, when the sheet's ``result.notify`` names fields, ``result``,
a mapping of those fields). Templates run
in Jinja2's immutable sandbox: a sheet author can shape text, not call into
Python, and its cost is bounded: no number or text too large to print, at most
:data:`MAX_TEXT_CHARS` of text and :data:`TEMPLATE_SECONDS` of work. A template
that fails or passes a bound while rendering one event does not lose the
message: the built-in text goes out instead, with a line saying why.
"""

from __future__ import annotations

import functools
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import Any

from jobdef.policy.channels import compile_template

DEFAULT_TEMPLATE = """\
{% if flow_id is defined %}\
[jobdef] flow {{ event }}: {{ job }}{% if title %} ({{ title }}){% endif %}, flow {{ flow_id }}
{% if key_args %}key args: {% for name, value in key_args.items() %}{{ name }}={{ value }}\
{% if not loop.last %}, {% endif %}{% endfor %}
{% endif %}steps: {% for name, state in steps.items() %}{{ name }} {{ state }}\
{% if not loop.last %}, {% endif %}{% endfor %}
{% if note %}cancelled: {{ note }}
{% endif %}when: {{ at_iso }}
message id: {{ message_id }}{% else %}\
[jobdef] {{ event }}: {{ job }}{% if title %} ({{ title }}){% endif %}, job {{ job_id }}
{% if key_args %}key args: {% for name, value in key_args.items() %}{{ name }}={{ value }}\
{% if not loop.last %}, {% endif %}{% endfor %}
{% endif %}attempts: {{ attempts_used }} of {{ max_attempts }}
{% if error_type %}last error: {{ error_type }}: {{ error_message }}
{% endif %}{% if result is mapping %}result: {% for name, value in result.items() %}\
{{ name }}={{ value }}{% if not loop.last %}, {% endif %}\
{% else %}(the value has none of the fields result.notify names){% endfor %}
{% endif %}{% if receipt %}receipt: {{ receipt }}
{% endif %}when: {{ at_iso }}
re-run: {{ requeue_command }}{% if rerun %} (procedure: {{ rerun }}){% endif %}
message id: {{ message_id }}{% endif %}"""

# One line per event inside a digest (after "- "), and on the log channel.
DIGEST_LINE_TEMPLATE = """\
{{ event }} {{ job }} job {{ job_id }}\
{% if key_args %} ({% for name, value in key_args.items() %}{{ name }}={{ value }}\
{% if not loop.last %}, {% endif %}{% endfor %}){% endif %}\
{% if error_type %}: {{ error_type }}: {{ error_message | truncate(160, true) }}{% endif %}\
{% if result is mapping and result %} result: {% for name, value in result.items() %}\
{{ name }}={{ value }}{% if not loop.last %}, {% endif %}{% endfor %}{% endif %}\
{% if receipt %} receipt: {{ receipt }}{% endif %}\
 [{{ at_iso }}] re-run: {{ requeue_command }}"""

# What one channel template may cost: its text, and the time it may work on it.
MAX_TEXT_CHARS = 20_000
TEMPLATE_SECONDS = 1.0
_MAX_REASON_CHARS = 200


@functools.cache
def _built_in(source: str) -> Any:
    """A built-in layout, compiled at its first use: a process that never renders a
    message (most workers, most commands) does not import Jinja2 for it."""
    return compile_template(source)


class TemplateLimit(Exception):
    """A channel template ran past :data:`TEMPLATE_SECONDS` or :data:`MAX_TEXT_CHARS`."""


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def render_bounded(template: Any, item: Mapping[str, Any]) -> str:
    """``template`` rendered with ``item``, stopped past :data:`TEMPLATE_SECONDS` of work
    or :data:`MAX_TEXT_CHARS` of text (:class:`TemplateLimit`).

    The time limit is checked at each line the template's compiled code runs (a trace
    function of this thread only); the sandbox (:func:`compile_template`) keeps any
    single operation small, so no step runs long between two checks.
    """
    deadline = time.monotonic() + TEMPLATE_SECONDS

    def check(frame: FrameType, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise TemplateLimit(f"ran longer than {TEMPLATE_SECONDS:g}s")
        return check

    previous = sys.gettrace()
    sys.settrace(check)
    try:
        parts: list[str] = []
        size = 0
        for chunk in template.generate(item):
            size += len(chunk)
            if size > MAX_TEXT_CHARS:
                raise TemplateLimit(f"wrote more than {MAX_TEXT_CHARS} characters")
            parts.append(chunk)
    finally:
        sys.settrace(previous)
    return "".join(parts)


def subject_for(item: Mapping[str, Any]) -> str:
    """A one-line summary of one event (mail subject, log message)."""
    title = f" ({item['title']})" if item.get("title") else ""
    if item.get("flow_id") is not None:  # a flow's end (jobdef.backends.flows)
        return (
            f"[jobdef] flow {item.get('event')}: {item.get('job')}{title}, flow {item['flow_id']}"
        )
    return f"[jobdef] {item.get('event')}: {item.get('job')}{title}, job {item.get('job_id')}"


def digest_subject(channel: str, items: Sequence[Mapping[str, Any]]) -> str:
    """A one-line summary of a digest: how many events of which kind and job."""
    kinds = Counter(f"{item.get('event')} {item.get('job')}" for item in items)
    summary = ", ".join(f"{count} {kind}" for kind, count in kinds.most_common())
    return f"[jobdef] digest for {channel}: {len(items)} events ({summary})"


class Renderer:
    """Turns event payloads into text for one channel."""

    def __init__(self, template: str | None = None) -> None:
        self._template = compile_template(template) if template else None

    def event_text(self, item: Mapping[str, Any]) -> str:
        """The text of one event: the channel template, else the built-in layout."""
        if self._template is not None:
            try:
                return render_bounded(self._template, item).strip()
            except Exception as exc:
                fallback = str(_built_in(DEFAULT_TEMPLATE).render(item))
                why = first_line(f"{type(exc).__name__}: {exc}")[:_MAX_REASON_CHARS]
                return f"{fallback}\n(the channel template failed: {why})"
        return str(_built_in(DEFAULT_TEMPLATE).render(item))

    def digest_text(self, channel: str, items: Sequence[Mapping[str, Any]]) -> str:
        """A digest: a summary line, then one line per event (every event is listed)."""
        lines = [
            digest_subject(channel, items),
            "More events than the channel's digest_after per minute; grouped here:",
        ]
        lines.extend(f"- {event_line(item)}" for item in items)
        return "\n".join(lines)


def event_line(item: Mapping[str, Any]) -> str:
    """One event on one line: what happened to which job, its error, how to re-run it."""
    return str(_built_in(DIGEST_LINE_TEMPLATE).render(item))
