"""The dashboard as an ASGI application: :func:`create_app`.

Server-rendered pages (Jinja2, autoescaped: args and error messages are
attacker-controlled text), each with a JSON twin under ``/api/``; actions are
POST forms that ask for confirmation first; live updates come over
server-sent events (``/events``), which tell the page *that* something changed
and let it fetch itself again. The one script is ``static/dashboard.js``;
every page reads fine without it.

Mount it in another ASGI application (``Mount("/jobs", create_app(...))``):
links start from the mount point (the request's ``root_path``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
)
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import jinja2
from markupsafe import escape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from jobdef.dashboard import actions, views
from jobdef.dashboard.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SECURITY_HEADERS,
    Auth,
    csrf_matches,
    new_csrf_token,
)
from jobdef.dashboard.store import Store
from jobdef.errors import JobdefError, UsageError
from jobdef.policy.registry import Registry
from jobdef.sheets.pipeline import load_registry

log = logging.getLogger("jobdef.dashboard")

HERE = Path(__file__).resolve().parent
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Seconds between two looks at the store for the live updates (both engines poll:
# PostgreSQL's notify channel tells of enqueues only, not of the other changes).
POLL_SECONDS = 1.0
# A comment line this often keeps proxies from closing a quiet event stream.
KEEPALIVE_SECONDS = 15.0
MAX_FORM_IDS = 5_000
MAX_FORM_BYTES = 1 << 20


class Dashboard:
    """The state behind the routes: the store, the sheets and the options."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        *,
        read_only: bool,
        base: Path | None,
        docs_url: str | None,
        sheet_link: str | None,
        poll_seconds: float,
    ) -> None:
        self.store = store
        self.registry = registry
        self.read_only = read_only
        self.base = base
        self.docs_url = docs_url
        self.sheet_link = sheet_link
        self.poll_seconds = poll_seconds
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,  # every template, whatever its name
            undefined=jinja2.StrictUndefined,
        )

    # -- rendering -------------------------------------------------------------

    def page(self, request: Request, template: str, status: int = 200, **context: Any) -> Response:
        token = request.cookies.get(CSRF_COOKIE) or new_csrf_token()
        root = request.scope.get("root_path", "")
        path = request.url.path
        here = path[len(root) :] if root and path.startswith(root) else path
        if request.url.query:
            here += "?" + request.url.query
        html = self.templates.get_template(template).render(
            root=root,
            here=here or "/",
            csrf=token,
            read_only=self.read_only,
            who=request.scope.get("jobdef_who", ""),
            engine=self.store.engine,
            **context,
        )
        response = HTMLResponse(html, status_code=status)
        if request.cookies.get(CSRF_COOKIE) != token:
            response.set_cookie(
                CSRF_COOKIE,
                token,
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
                path=root or "/",
            )
        return response

    def fail(self, request: Request, status: int, message: str, api: bool) -> Response:
        if api:
            return JSONResponse({"error": message}, status_code=status)
        return self.page(request, "error.html", status=status, title="Error", message=message)


def create_app(
    db_url: str,
    sheets: str | Path | Iterable[str | Path] | Registry,
    auth: Auth | None = None,
    *,
    read_only: bool = False,
    docs_url: str | None = None,
    sheet_link: str | None = None,
    clock: Callable[[], float] | None = None,
    poll_seconds: float = POLL_SECONDS,
) -> Starlette:
    """The dashboard of the job store at ``db_url`` for the jobs of ``sheets``.

    ``sheets``: a folder, files, or a loaded :class:`Registry`. ``auth``: the
    credentials every request must carry (None: none asked; serve on loopback
    only, which ``jobdef dashboard`` enforces). ``read_only``: no actions.
    ``docs_url``: where the pages of ``jobdef docs`` are served, for links
    (``{docs_url}/{job}.md``). ``sheet_link``: a link for a sheet value, with
    ``{file}`` and ``{line}`` (e.g. a repository's blob URL).

    The store must exist and be current (``jobdef db upgrade``).
    """
    if isinstance(sheets, Registry):
        registry, base = sheets, None
    else:
        paths = [sheets] if isinstance(sheets, str | Path) else list(sheets)
        registry = load_registry([Path(p) for p in paths])
        first = Path(paths[0]) if paths else None
        base = (first if first.is_dir() else first.parent).parent if first else None
    store = Store(db_url, clock=clock)
    state = Dashboard(
        store,
        registry,
        read_only=read_only,
        base=base,
        docs_url=docs_url,
        sheet_link=sheet_link,
        poll_seconds=poll_seconds,
    )
    routes = _routes(state)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        store.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.dashboard = state
    app.add_middleware(Guard, auth=auth)
    return app


# -- the guard: auth and headers on every response, static files included --------------


class Guard:
    """Asks for credentials (when configured) and adds the security headers."""

    def __init__(self, app: ASGIApp, auth: Auth | None) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.auth is not None:
            who = self.auth.who(headers.get("authorization"))
            if who is None:
                response = Response(
                    "authentication required\n",
                    status_code=401,
                    headers={"www-authenticate": self.auth.challenge, **SECURITY_HEADERS},
                    media_type="text/plain",
                )
                await response(scope, receive, send)
                return
        elif scope.get("jobdef_who"):
            # An application that mounts the dashboard and authenticated the caller
            # itself (jobdef.contrib.django.dashboard: a Django staff session) names them.
            who = str(scope["jobdef_who"])
        else:
            client = scope.get("client") or ("local", 0)
            who = f"anonymous@{client[0]}"
        scope["jobdef_who"] = who

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                present = {k.lower() for k, _ in raw}
                for name, value in SECURITY_HEADERS.items():
                    if name.encode() not in present:
                        raw.append((name.encode(), value.encode()))
                message["headers"] = raw
            await send(message)

        await self.app(scope, receive, send_with_headers)


# -- routes -----------------------------------------------------------------------------


def _routes(d: Dashboard) -> list[Route | Mount]:
    store, registry = d.store, d.registry

    def guarded(
        builder: Callable[[Request], dict[str, Any] | None], template: str, title: str
    ) -> tuple[Callable[[Request], Awaitable[Response]], Callable[[Request], Awaitable[Response]]]:
        async def html(request: Request) -> Response:
            return await run_in_threadpool(render, request, False)

        async def api(request: Request) -> Response:
            return await run_in_threadpool(render, request, True)

        def render(request: Request, as_json: bool) -> Response:
            try:
                data = builder(request)
            except UsageError as exc:
                return d.fail(request, 400, exc.message, as_json)
            except JobdefError as exc:
                return d.fail(request, 503, exc.message, as_json)
            if data is None:
                return d.fail(request, 404, "no such job", as_json)
            if as_json:
                return JSONResponse(data)
            return d.page(request, template, title=title, data=data)

        return html, api

    def job_id(request: Request) -> int:
        return int(request.path_params["job_id"])

    pages: list[tuple[str, Callable[[Request], dict[str, Any] | None], str, str]] = [
        ("/", lambda r: views.overview(store, registry), "overview.html", "Overview"),
        (
            "/jobs",
            lambda r: {
                **views.jobs(store, views.parse_filter(r.query_params, store.clock())),
                "job_names": sorted(registry.jobs),
                "states": views.STATES,
            },
            "jobs.html",
            "Jobs",
        ),
        (
            "/jobs/{job_id:int}",
            lambda r: views.job_detail(
                store,
                registry,
                job_id(r),
                base=d.base,
                docs_url=d.docs_url,
                sheet_link=d.sheet_link,
            ),
            "job.html",
            "Job",
        ),
        ("/dead", lambda r: views.dead_letter(store, registry), "dead.html", "Dead letter"),
        ("/schedules", lambda r: views.schedules(store, registry), "schedules.html", "Schedules"),
        ("/outbox", lambda r: views.outbox(store), "outbox.html", "Outbox"),
        ("/sheets", lambda r: views.sheets(registry), "sheets.html", "Sheets"),
    ]
    routes: list[Route | Mount] = []
    for path, builder, template, title in pages:
        html, api = guarded(builder, template, title)
        routes.append(Route(path, html, methods=["GET"]))
        routes.append(Route("/api" + ("/overview" if path == "/" else path), api, methods=["GET"]))
    routes += [
        Route("/events", _events(d), methods=["GET"]),
        Route("/actions/jobs", _action(d, _job_action), methods=["POST"]),
        Route("/actions/queues", _action(d, _queue_action), methods=["POST"]),
        Route("/actions/outbox", _action(d, _outbox_action), methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return routes


# -- actions ------------------------------------------------------------------------------

Form = Mapping[str, Any]
Handler = Callable[[Dashboard, Form, list[str], str], tuple[str, "actions.Outcome"]]


def _action(d: Dashboard, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        if d.read_only:
            return d.fail(request, 403, "the dashboard is read-only: actions are off", False)
        pairs = await _form_pairs(request)
        if pairs is None:
            return d.fail(request, 400, "post a form (application/x-www-form-urlencoded)", False)
        form = dict(pairs)
        if not csrf_matches(request.cookies.get(CSRF_COOKIE), form.get(CSRF_FIELD)):
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
        who = str(request.scope.get("jobdef_who", ""))
        if handler is _job_action and fields.get("scope") == "filter":
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
    try:
        return [int(i) for i in ids]
    except ValueError:
        raise UsageError("ids: whole numbers only") from None


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
            for last in actions.filter_steps(d.store, action, flt, who, note):
                so_far = f"{last.changed} of {last.asked} changed so far"
                yield f"<li>batch {last.batches}: {so_far}</li>\n"
        except JobdefError as exc:
            yield f'<li class="error">stopped: {escape(exc.message)}</li>\n'
        if last is not None:
            yield f'</ol><p class="done" role="status" id="outcome">{escape(last.text)}</p><ol>'
        yield tail

    return StreamingResponse(body(), media_type="text/html; charset=utf-8")


def _job_action(
    d: Dashboard, fields: Form, ids: list[str], who: str
) -> tuple[str, actions.Outcome]:
    action = fields.get("action", "")
    if action not in actions.JOB_ACTIONS:
        raise UsageError(f"action: use one of {', '.join(actions.JOB_ACTIONS)}")
    note = str(fields.get("note", ""))[:2000]
    back = _safe_back(fields, "/jobs")
    numbers = _int_ids(ids)
    if not numbers:
        raise UsageError("no job selected; tick the jobs first")
    return back, actions.on_jobs(d.store, action, numbers, who, note)


def _queue_action(
    d: Dashboard, fields: Form, ids: list[str], who: str
) -> tuple[str, actions.Outcome]:
    queue = str(fields.get("queue", ""))
    known = {str(q["queue"]) for q in views.queue_depths(d.store)} | set(d.registry.queues)
    known |= {job.queue for job in d.registry}
    if queue not in known:
        raise UsageError(f"no queue named {queue[:60]!r} in the sheets or the job store")
    outcome = actions.set_paused(d.store, queue, fields.get("paused") == "yes", who)
    return _safe_back(fields, "/"), outcome


def _outbox_action(
    d: Dashboard, fields: Form, ids: list[str], who: str
) -> tuple[str, actions.Outcome]:
    numbers = _int_ids(ids)
    if not numbers:
        raise UsageError("no message selected")
    return _safe_back(fields, "/outbox"), actions.retry_outbox(d.store, numbers, who)


# -- live updates -------------------------------------------------------------------------


def _fingerprint(store: Store) -> tuple[Any, ...]:
    """What changes when anything a page shows may have: the newest ids, queue depths."""
    [newest] = store.rows("newest_ids", cap=views.COUNT_CAP)
    queues = tuple(
        (q["queue"], q["paused"], q["queued"], q["running"]) for q in views.queue_depths(store)
    )
    return (tuple(newest.values()), queues)


def _events(d: Dashboard) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return StreamingResponse(
            _stream(d, request),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    return endpoint


async def _stream(d: Dashboard, request: Request) -> AsyncIterator[str]:
    """A ``change`` event each time the store's fingerprint moves, checked every poll."""
    last: tuple[Any, ...] | None = None
    quiet_since = time.monotonic()
    yield "retry: 3000\n\n"
    while not await request.is_disconnected():
        try:
            current = await run_in_threadpool(_fingerprint, d.store)
        except JobdefError:
            current = None
        if last is not None and current is not None and current != last:
            yield "event: change\ndata: {}\n\n"
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > KEEPALIVE_SECONDS:
            yield ": keepalive\n\n"
            quiet_since = time.monotonic()
        if current is not None:
            last = current
        await asyncio.sleep(d.poll_seconds)
