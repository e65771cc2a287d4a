"""The POST endpoints of the actions: CSRF check, confirmation, then the verbs.

A post without ``confirm=yes`` only renders the confirmation page; with it,
the action runs (:mod:`jobdef.dashboard.actions`) and the result page says
what changed. A read-only dashboard refuses every post.
"""

from __future__ import annotations

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


def action_endpoint(d: Dashboard, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
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
        fields = {k: v for k, v in pairs if k != "ids"}
        ids = [v for k, v in pairs if k == "ids"]
        if fields.get("confirm") != "yes":
            return d.page(
                request,
                "confirm.html",
                title="Confirm",
                fields={k: v for k, v in fields.items() if k not in (CSRF_FIELD, "confirm")},
                ids=ids,
                question=_question(fields, ids),
            )
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


def _question(fields: Mapping[str, str], ids: list[str]) -> str:
    action = fields.get("action", "")
    if "queue" in fields:
        return f"{'Pause' if fields.get('paused') == 'yes' else 'Resume'} queue {fields['queue']}?"
    if fields.get("scope") == "filter":
        return f"{action.capitalize()} every job matching the filter?"
    if fields.get("kind") == "outbox":
        return f"Retry delivery of {len(ids)} outbox message(s) now?"
    return f"{action.capitalize()} {len(ids)} job(s): {', '.join(ids[:20])}?"


def _safe_back(fields: Mapping[str, str], default: str) -> str:
    back = fields.get("back", "")
    return back if back.startswith("/") and not back.startswith("//") else default


FILTER_FIELDS = ("state", "job", "queue", "since", "until", "q")


def _bulk(d: Dashboard, request: Request, fields: Mapping[str, str], who: str) -> Response:
    """Every job matching the posted filter, the page written as each batch is done:
    the operator watches the progress, with or without JavaScript."""
    action = fields.get("action", "")
    try:
        if action not in actions.JOB_ACTIONS:
            raise UsageError(f"action: use one of {', '.join(actions.JOB_ACTIONS)}")
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
    if action not in actions.JOB_ACTIONS:
        raise UsageError(f"action: use one of {', '.join(actions.JOB_ACTIONS)}")
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
