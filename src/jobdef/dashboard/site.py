"""The dashboard's state: the store, the sheets, the options, and how a page is rendered.

Every template is autoescaped (args and error messages are attacker-controlled
text); every page hands out the CSRF token its forms carry, bound to the caller
(:func:`~jobdef.dashboard.security.csrf_token`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from jobdef.dashboard import views
from jobdef.dashboard.security import csrf_token
from jobdef.dashboard.store import Store
from jobdef.errors import JobdefError
from jobdef.policy.registry import Registry

HERE = Path(__file__).resolve().parent


class Dashboard:
    """The state behind the routes: the store, the sheets and the options."""

    app: object | None = None
    """The Celery app or :class:`~jobdef.adapters.rq.SheetQueue` that a requeue sends the
    jobs which died there back through (``jobdef dashboard --app``); None: such a job
    is not requeued, and the result says how to give one."""

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
        lease: float,
        secret: bytes,
    ) -> None:
        self.store = store
        self.registry = registry
        self.read_only = read_only
        self.base = base
        self.docs_url = docs_url
        self.sheet_link = sheet_link
        self.poll_seconds = poll_seconds
        self.lease = lease
        self.secret = secret
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,  # every template, whatever its name
            undefined=jinja2.StrictUndefined,
        )

    # -- rendering -------------------------------------------------------------

    def page(self, request: Request, template: str, status: int = 200, **context: Any) -> Response:
        root = request.scope.get("root_path", "")
        path = request.url.path
        here = path[len(root) :] if root and path.startswith(root) else path
        if request.url.query:
            here += "?" + request.url.query
        since = context.pop("since", None)
        if since is None:
            since = self.since()
        html = self.templates.get_template(template).render(
            root=root,
            since=since,
            here=here or "/",
            csrf=self.csrf(request),
            read_only=self.read_only,
            who=request.scope.get("jobdef_who", ""),
            engine=self.store.engine,
            **context,
        )
        return HTMLResponse(html, status_code=status)

    def csrf(self, request: Request) -> str:
        """The CSRF token of the caller the Guard named (the forms carry it)."""
        return csrf_token(self.secret, str(request.scope.get("jobdef_who", "")))

    def since(self) -> str:
        """The token of the store's state now, for a page's event stream; take it before
        reading what the page shows, so a change made in between is not missed."""
        try:
            return views.token(views.fingerprint(self.store))
        except JobdefError:
            return ""

    def fail(self, request: Request, status: int, message: str, api: bool) -> Response:
        if api:
            return JSONResponse({"error": message}, status_code=status)
        return self.page(request, "error.html", status=status, title="Error", message=message)
