"""The web dashboard: the sheet's plan beside what really ran (``jobdef[dashboard]``).

``create_app(db_url, sheets, auth=...)`` is an ASGI application (Starlette);
``jobdef dashboard`` serves it with uvicorn. See docs/dashboard.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobdef.dashboard.security import Auth, auth_from_env

if TYPE_CHECKING:
    from jobdef.dashboard.app import create_app

__all__ = ["Auth", "auth_from_env", "create_app"]


def __getattr__(name: str) -> Any:
    # Starlette is imported only when the app is built: the extra may be missing.
    if name == "create_app":
        from jobdef.dashboard.app import create_app

        return create_app
    raise AttributeError(name)
