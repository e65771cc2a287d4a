"""Who may see the dashboard and what each response forbids the browser.

Closed by default: ``jobdef dashboard`` on a host other than loopback refuses to
start without an :class:`Auth` (:func:`check_exposure`). Credentials come from
the environment (:func:`auth_from_env`): HTTP basic with
``JOBDEF_DASHBOARD_USER`` and the password in the file named by
``JOBDEF_DASHBOARD_PASSWORD_FILE``, or a bearer token in
``JOBDEF_DASHBOARD_TOKEN``. Both are compared in constant time.

Every POST carries a CSRF token: a random value in a ``SameSite=Strict``
cookie, echoed in a hidden form field (double submit); a form posted from
another site has neither. Every response carries a strict
Content-Security-Policy: scripts only from the dashboard's own static folder,
no inline script or style, no framing.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jobdef.errors import UsageError

CSRF_COOKIE = "jobdef_csrf"
# A bearer token shorter than this is refused: it could be guessed.
MIN_TOKEN_CHARS = 16
CSRF_FIELD = "csrf"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS: Mapping[str, str] = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


@dataclass(frozen=True, slots=True)
class Auth:
    """Credentials the dashboard accepts: basic (``user`` and ``password``) and/or a token."""

    user: str | None = None
    password: str | None = None
    token: str | None = None

    def __post_init__(self) -> None:
        if (self.user is None) != (self.password is None):
            raise UsageError("basic auth needs both a user and a password")
        if self.user is None and self.token is None:
            raise UsageError("auth needs a user and password, or a token")
        if self.password == "":
            raise UsageError("an empty password is no protection; set a real one")
        if self.token is not None and len(self.token) < MIN_TOKEN_CHARS:
            raise UsageError(
                f"the dashboard token has {len(self.token)} characters; use at least "
                f"{MIN_TOKEN_CHARS} random ones, e.g. python3 -c 'import secrets; "
                "print(secrets.token_urlsafe(32))'"
            )

    def __repr__(self) -> str:  # never print a credential
        kinds = [k for k, v in (("basic", self.user), ("token", self.token)) if v is not None]
        return f"Auth({', '.join(kinds)})"

    def who(self, authorization: str | None) -> str | None:
        """The name of the caller an ``Authorization`` header proves, or None."""
        if not authorization:
            return None
        scheme, _, value = authorization.partition(" ")
        scheme = scheme.lower()
        if scheme == "bearer" and self.token is not None:
            return "token" if _same(value.strip(), self.token) else None
        if scheme == "basic" and self.user is not None and self.password is not None:
            try:
                decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                return None
            user, sep, password = decoded.partition(":")
            # Both compared, always: the time taken says nothing about which was wrong.
            user_ok = _same(user, self.user)
            password_ok = _same(password, self.password)
            return self.user if sep and user_ok and password_ok else None
        return None

    @property
    def challenge(self) -> str:
        return 'Basic realm="jobdef", charset="UTF-8"' if self.user is not None else "Bearer"


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def auth_from_env(environ: Mapping[str, str] | None = None) -> Auth | None:
    """The :class:`Auth` the environment configures, or None when it sets none."""
    env = os.environ if environ is None else environ
    user = env.get("JOBDEF_DASHBOARD_USER") or None
    password_file = env.get("JOBDEF_DASHBOARD_PASSWORD_FILE") or None
    token = env.get("JOBDEF_DASHBOARD_TOKEN") or None
    if user is None and password_file is None and token is None:
        return None
    password = None
    if (user is None) != (password_file is None):
        raise UsageError(
            "basic auth needs both JOBDEF_DASHBOARD_USER and JOBDEF_DASHBOARD_PASSWORD_FILE "
            "(a file holding the password); set both, or JOBDEF_DASHBOARD_TOKEN alone"
        )
    if password_file is not None:
        try:
            password = Path(password_file).read_text("utf-8").rstrip("\r\n")
        except OSError as exc:
            raise UsageError(
                f"JOBDEF_DASHBOARD_PASSWORD_FILE {password_file}: cannot read it "
                f"({exc.strerror}); point it at a readable file that holds the password"
            ) from None
        if not password:
            raise UsageError(
                f"JOBDEF_DASHBOARD_PASSWORD_FILE {password_file} is empty; write the password in it"
            )
    return Auth(user=user, password=password, token=token)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable only from this machine."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, auth: Auth | None) -> None:
    """Refuse to serve on a non-loopback ``host`` without credentials."""
    if auth is None and not is_loopback(host):
        raise UsageError(
            f"refusing to serve the dashboard on {host} without authentication: set "
            "JOBDEF_DASHBOARD_USER and JOBDEF_DASHBOARD_PASSWORD_FILE, or "
            "JOBDEF_DASHBOARD_TOKEN, or serve on 127.0.0.1"
        )


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def csrf_matches(cookie: str | None, field: str | None) -> bool:
    """Whether a POST's form field repeats the cookie's CSRF token (constant time)."""
    if not cookie or not field:
        return False
    return _same(field, cookie)
