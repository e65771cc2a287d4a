"""The POST endpoints of the actions: CSRF check, confirmation, then the verbs.

A post without ``confirm=yes`` only renders the confirmation page; with it,
the action runs (:mod:`jobdef.dashboard.actions`) and the result page says
what changed. A read-only dashboard refuses every post.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl

from markupsafe import escape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from jobdef.dashboard import actions, views
from jobdef.dashboard.security import CSRF_FIELD, csrf_valid
from jobdef.dashboard.site import Dashboard
from jobdef.errors import JobdefError, UsageError

MAX_FORM_IDS = 5_000
MAX_FORM_BYTES = 1 << 20


Form = Mapping[str, Any]
Handler = Callable[[Dashboard, Form, list[str], str], tuple[str, "actions.Outcome"]]


def action_endpoint(
    d: Dashboard, handler: Handler, many: str = "ids"
) -> Callable[[Request], Awaitable[Response]]:
    """The POST endpoint of ``handler``; ``many``: the field a form repeats, once per
    job or message id (``ids``) or dead letter group (``groups``)."""

    async def endpoint(request: Request) -> Response:
        if d.read_only:
            return d.fail(request, 403, "the dashboard is read-only: actions are off", False)
        pairs = await _form_pairs(request)
        if pairs is None:
            return d.fail(request, 400, "post a form (application/x-www-form-urlencoded)", False)
        form = dict(pairs)
        who = str(request.scope.get("jobdef_who", ""))
        if not csrf_valid(d.secret, who, form.get(CSRF_FIELD)):
            return d.fail(
                request,
                403,
                "the form's CSRF token is missing or does not match; reload the page and retry",
                False,
            )
        fields = {k: v for k, v in pairs if k != many}
        ids = [v for k, v in pairs if k == many]
        try:
            ask = await run_in_threadpool(_ask, d, handler, fields, ids)
        except UsageError as exc:
            return d.fail(request, 400, exc.message, False)
        except JobdefError as exc:
            return d.fail(request, 503, exc.message, False)
        if fields.get("confirm") != "yes":
            hidden = (CSRF_FIELD, "confirm", FATAL_FIELD)
            return d.page(
                request,
                "confirm.html",
                title="Check before acting",
                fields={k: v for k, v in fields.items() if k not in hidden},
                many=many,
                ids=ids,
                **ask,
            )
        if ask["fatal"] and fields.get(FATAL_FIELD) != "yes":
            return d.fail(request, 400, _fatal_refusal(ask["fatal"]), False)
        if handler is job_action and fields.get("scope") == "filter":
            return _bulk(d, request, fields, who)
        try:
            back, outcome = await run_in_threadpool(handler, d, fields, ids, who)
        except UsageError as exc:
            return d.fail(request, 400, exc.message, False)
        except JobdefError as exc:
            return d.fail(request, 503, exc.message, False)
        return d.page(request, "done.html", title="Done", outcome=outcome, back=back)

    return endpoint


# The confirmation's tick that a requeue of jobs dead of a fatal error is meant.
FATAL_FIELD = "fatal_ok"
# Lines of the fatal warning; the rest are counted.
MAX_WARNINGS = 5


def _ask(d: Dashboard, handler: Handler, fields: Form, ids: list[str]) -> dict[str, Any]:
    """What the confirmation shows: the question, the label of the button that does it,
    and why a requeue among it will fail again (the sheet's fatal errors)."""
    action = str(fields.get("action", ""))
    if handler is queue_action:
        word = "Pause" if fields.get("paused") == "yes" else "Resume"
        return {"question": f"{word} queue {fields.get('queue', '')}?", "button": word, "fatal": []}
    if handler is outbox_action:
        count = f"{len(ids)} outbox message{'s' if len(ids) != 1 else ''}"
        return {"question": f"Retry delivery of {count} now?", "button": "Retry", "fatal": []}
    if handler is flow_action:
        numbers = _int_ids(ids)
        if len(numbers) != 1:
            raise UsageError("ids: cancel one flow at a time, from its page")
        return {"question": f"Cancel flow {numbers[0]}?", "button": "Cancel the flow", "fatal": []}
    if handler is dead_action:
        groups = _groups(d, ids)
        if action not in actions.GROUP_ACTIONS:
            takes = " or ".join(actions.GROUP_ACTIONS)
            raise UsageError(f"action: a dead letter group takes {takes}")
        question = f"{action.capitalize()} {'; '.join(_group_text(d, g) for g in groups)}?"
        fatal = [] if action != "requeue" else _fatal_groups(d, groups)
        return {"question": question, "button": action.capitalize(), "fatal": fatal}
    if action not in views.JOB_ACTIONS:
        raise UsageError(f"action: use one of {', '.join(views.JOB_ACTIONS)}")
    button = "Cancel the jobs" if action == "cancel" else action.capitalize()
    if fields.get("scope") == "filter":
        state = views.FROM_STATE[action]
        question = f"{action.capitalize()} every {state} job matching the filter?"
        fatal = _fatal_filter(d, fields) if action == "requeue" else []
        return {"question": question, "button": button, "fatal": fatal}
    if not ids:
        raise UsageError("no job selected; tick the jobs first")
    if len(ids) == 1:
        question = f"{action.capitalize()} job {ids[0]}?"
        button = "Cancel the job" if action == "cancel" else button
    else:
        more = f" and {len(ids) - 20} more" if len(ids) > 20 else ""
        question = f"{action.capitalize()} {len(ids)} jobs: {', '.join(ids[:20])}{more}?"
    fatal = _fatal_jobs(d, _int_ids(ids)) if action == "requeue" else []
    return {"question": question, "button": button, "fatal": fatal}


def _fatal_jobs(d: Dashboard, ids: list[int]) -> list[str]:
    """A line for each dead job among ``ids`` whose last error its sheet calls fatal."""
    lines = []
    for job_id in ids:
        record = d.store.call(d.store.verbs.get, job_id)
        if record is None or record.state != "dead" or record.last_error is None:
            continue
        reason = views.fatal_reason(d.registry, record.job, record.last_error.type)
        if reason is not None:
            lines.append(f"job {job_id} ({record.job}) died of {record.last_error.type}: {reason}")
    return lines


def _fatal_groups(d: Dashboard, groups: list[tuple[str, str]]) -> list[str]:
    lines = []
    for job, error_type in groups:
        reason = views.fatal_reason(d.registry, job, error_type)
        if reason is not None:
            lines.append(f"the dead {job} jobs that raised {error_type}: {reason}")
    return lines


def _fatal_filter(d: Dashboard, fields: Form) -> list[str]:
    """The dead letter groups of the filter's job (every job when it names none) that the
    sheet calls fatal: some of the jobs the filter matches may be among them."""
    job = fields.get("job")
    names = [str(job)] if job else [policy.name for policy in d.registry]
    lines = []
    for name in names:
        for row in d.store.rows("dead_groups", job=name, cap=views.DEAD_SAMPLE):
            reason = views.fatal_reason(d.registry, name, str(row["error_type"]))
            if reason is not None:
                lines.append(f"dead {name} jobs that raised {row['error_type']}: {reason}")
    return lines


def _fatal_refusal(lines: list[str]) -> str:
    return (
        f"not requeued: {lines[0]}, so it fails the same way unless its cause was fixed; "
        "fix the cause, then tick 'The cause is fixed' on the confirmation"
        + (f" ({len(lines) - 1} more such)" if len(lines) > 1 else "")
    )


async def _form_pairs(request: Request) -> list[tuple[str, str]] | None:
    """The fields of a urlencoded form, in order; None for another body or one too big.

    The forms are small and never upload files, so this needs no multipart parser.
    """
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    try:
        return parse_qsl(
            body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FORM_IDS + 50
        )
    except (UnicodeDecodeError, ValueError):
        return None


def _int_ids(ids: list[str]) -> list[int]:
    if len(ids) > MAX_FORM_IDS:
        raise UsageError(f"at most {MAX_FORM_IDS} ids at once; use 'all matching the filter'")
    numbers = [views.parse_id(i) for i in ids]
    if None in numbers:
        raise UsageError("ids: job and message ids are whole numbers from 1 to 2^63 - 1 (0-9)")
    return [n for n in numbers if n is not None]


def _safe_back(fields: Mapping[str, str], default: str) -> str:
    back = fields.get("back", "")
    return back if back.startswith("/") and not back.startswith("//") else default


FILTER_FIELDS = ("state", "job", "queue", "since", "until", "q")


def _bulk(d: Dashboard, request: Request, fields: Mapping[str, str], who: str) -> Response:
    """Every job matching the posted filter, the page written as each batch is done:
    the operator watches the progress, with or without JavaScript."""
    action = fields.get("action", "")
    try:
        if action not in views.JOB_ACTIONS:
            raise UsageError(f"action: use one of {', '.join(views.JOB_ACTIONS)}")
        flt = views.parse_filter(
            {k: v for k, v in fields.items() if k in FILTER_FIELDS}, d.store.clock()
        )
    except UsageError as exc:
        return d.fail(request, 400, exc.message, False)
    note = fields.get("note", "")[:2000]
    back = _safe_back(fields, "/jobs")
    page = d.page(request, "progress.html", title="Working", back=back)
    head, _, tail = bytes(page.body).decode("utf-8").partition("<!--progress-->")

    def body() -> Iterator[str]:
        yield head
        last = None
        try:
            for last in actions.filter_steps(d.store, action, flt, who, note, through=d.app):
                so_far = f"{last.changed} of {last.asked} changed so far"
                yield f"<li>batch {last.batches}: {so_far}</li>\n"
        except JobdefError as exc:
            yield f'<li class="error">stopped: {escape(exc.message)}</li>\n'
        if last is not None:
            yield f'</ol><p class="done" role="status" id="outcome">{escape(last.text)}</p><ol>'
        yield tail

    return StreamingResponse(body(), media_type="text/html; charset=utf-8")


def job_action(d: Dashboard, fields: Form, ids: list[str], who: str) -> tuple[str, actions.Outcome]:
    action = fields.get("action", "")
    if action not in views.JOB_ACTIONS:
        raise UsageError(f"action: use one of {', '.join(views.JOB_ACTIONS)}")
    note = str(fields.get("note", ""))[:2000]
    back = _safe_back(fields, "/jobs")
    numbers = _int_ids(ids)
    if not numbers:
        raise UsageError("no job selected; tick the jobs first")
    return back, actions.on_jobs(d.store, action, numbers, who, note, through=d.app)


def queue_action(
    d: Dashboard, fields: Form, ids: list[str], who: str
) -> tuple[str, actions.Outcome]:
    queue = str(fields.get("queue", ""))
    known = {str(q["queue"]) for q in views.queue_depths(d.store)} | set(d.registry.queues)
    known |= {job.queue for job in d.registry}
    if queue not in known:
        raise UsageError(f"no queue named {queue[:60]!r} in the sheets or the job store")
    outcome = actions.set_paused(d.store, queue, fields.get("paused") == "yes", who)
    return _safe_back(fields, "/"), outcome


def outbox_action(
    d: Dashboard, fields: Form, ids: list[str], who: str
) -> tuple[str, actions.Outcome]:
    numbers = _int_ids(ids)
    if not numbers:
        raise UsageError("no message selected")
    return _safe_back(fields, "/outbox"), actions.retry_outbox(d.store, numbers, who)


def _groups(d: Dashboard, values: list[str]) -> list[tuple[str, str]]:
    """The ``["JOB", "ERROR TYPE"]`` groups of a dead letter form, each job in the sheets."""
    if not values:
        raise UsageError("no dead letter group selected; tick the groups first")
    if len(values) > MAX_FORM_IDS:
        raise UsageError(f"at most {MAX_FORM_IDS} groups at once")
    groups = []
    for value in values:
        try:
            group = json.loads(value)
        except ValueError:
            group = None
        if not (
            isinstance(group, list) and len(group) == 2 and all(isinstance(g, str) for g in group)
        ):
            raise UsageError(
                f"groups: {value[:60]!r} is not a group; "
                'a dead letter group is ["JOB", "ERROR TYPE"]'
            )
        if group[0] not in d.registry.jobs:
            raise UsageError(f"groups: no job named {group[0][:60]!r} in the sheets")
        groups.append((group[0], group[1][:500]))
    return list(dict.fromkeys(groups))


def _group_text(d: Dashboard, group: tuple[str, str]) -> str:
    """``the 2 dead ship_order jobs that raised ConnectionError`` (counted among the
    newest DEAD_SAMPLE dead jobs of the job, as the dead letter groups them)."""
    job, error_type = group
    rows = d.store.rows("dead_groups", job=job, cap=views.DEAD_SAMPLE)
    count = sum(int(r["count"]) for r in rows if r["error_type"] == error_type)
    sampled = sum(int(r["count"]) for r in rows) >= views.DEAD_SAMPLE
    number = f"at least {count:,}" if sampled else f"the {count:,}"
    raised = "that stored no error" if error_type == "(none)" else f"that raised {error_type}"
    return f"{number} dead {job} job{'s' if count != 1 else ''} {raised}"


def dead_action(
    d: Dashboard, fields: Form, values: list[str], who: str
) -> tuple[str, actions.Outcome]:
    """Requeue or resolve every dead job of the posted dead letter groups."""
    note = str(fields.get("note", ""))[:2000]
    groups = _groups(d, values)
    action = str(fields.get("action", ""))
    outcome = actions.on_groups(d.store, action, groups, who, note, through=d.app)
    return _safe_back(fields, "/dead"), outcome


def flow_action(
    d: Dashboard, fields: Form, ids: list[str], who: str
) -> tuple[str, actions.Outcome]:
    """Cancel the posted flow (the one action a flow takes)."""
    if fields.get("action") != "cancel":
        raise UsageError("action: a flow takes cancel")
    numbers = _int_ids(ids)
    if len(numbers) != 1:
        raise UsageError("ids: cancel one flow at a time, from its page")
    note = str(fields.get("note", ""))[:2000]
    outcome = actions.cancel_flows(d.store, numbers, who, note)
    return _safe_back(fields, f"/flows/{numbers[0]}"), outcome
