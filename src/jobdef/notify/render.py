"""Message text: one sandboxed Jinja2 template per channel, and the digest layout.

A channel's ``template`` reshapes the text of one event; its variables are the
event payload's fields (``job``, ``title``, ``job_id``, ``key_args``,
``attempts_used``, ``max_attempts``, ``error_type``, ``error_message``,
``at_iso``, ``rerun``, ``requeue_command``, ``message_id``, ...). Templates run
in Jinja2's immutable sandbox: a sheet author can shape text, not call into
Python. A template that fails while rendering one event does not lose the
message: the built-in text goes out instead, with a line saying why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from jinja2 import TemplateError

from jobdef.policy.channels import compile_template

DEFAULT_TEMPLATE = """\
[jobdef] {{ event }}: {{ job }}{% if title %} ({{ title }}){% endif %}, job {{ job_id }}
{% if key_args %}key args: {% for name, value in key_args.items() %}{{ name }}={{ value }}\
{% if not loop.last %}, {% endif %}{% endfor %}
{% endif %}attempts: {{ attempts_used }} of {{ max_attempts }}
{% if error_type %}last error: {{ error_type }}: {{ error_message }}
{% endif %}when: {{ at_iso }}
re-run: {{ requeue_command }}{% if rerun %} (procedure: {{ rerun }}){% endif %}
message id: {{ message_id }}"""

# One line per event inside a digest.
DIGEST_LINE_TEMPLATE = """\
- {{ event }} {{ job }} job {{ job_id }}\
{% if key_args %} ({% for name, value in key_args.items() %}{{ name }}={{ value }}\
{% if not loop.last %}, {% endif %}{% endfor %}){% endif %}\
{% if error_type %}: {{ error_type }}: {{ error_message | truncate(160, true) }}{% endif %}\
 [{{ at_iso }}] re-run: {{ requeue_command }}"""

_DEFAULT = compile_template(DEFAULT_TEMPLATE)
_DIGEST_LINE = compile_template(DIGEST_LINE_TEMPLATE)


def subject_for(item: Mapping[str, Any]) -> str:
    """A one-line summary of one event (mail subject, log message)."""
    title = f" ({item['title']})" if item.get("title") else ""
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
                return str(self._template.render(item)).strip()
            except (TemplateError, ArithmeticError, LookupError, TypeError, ValueError) as exc:
                fallback = str(_DEFAULT.render(item))
                return f"{fallback}\n(the channel template failed: {type(exc).__name__}: {exc})"
        return str(_DEFAULT.render(item))

    def digest_text(self, channel: str, items: Sequence[Mapping[str, Any]]) -> str:
        """A digest: a summary line, then one line per event (every event is listed)."""
        lines = [
            digest_subject(channel, items),
            "More events than the channel's digest_after per minute; grouped here:",
        ]
        lines.extend(str(_DIGEST_LINE.render(item)) for item in items)
        return "\n".join(lines)
