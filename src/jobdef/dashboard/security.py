"""Who may see the dashboard and what each response forbids the browser.

Closed by default: ``jobdef dashboard`` on a host other than loopback refuses to
start without an :class:`Auth` (:func:`check_exposure`). Credentials come from
the environment (:func:`auth_from_env`): HTTP basic with
``JOBDEF_DASHBOARD_USER`` and the password in the file named by
``JOBDEF_DASHBOARD_PASSWORD_FILE``, or a bearer token in
``JOBDEF_DASHBOARD_TOKEN``. Both are compared in constant time.

Every request must name a host the dashboard serves (:class:`HostCheck`): a
page whose name an attacker rebinds to 127.0.0.1 sends its own name as
``Host`` and is refused, so it reads nothing. Every POST must come from the
dashboard's own pages: its ``Origin`` (else ``Referer``, else
``Sec-Fetch-Site``) names the host it was sent to (:func:`foreign_post`), and
its form carries the CSRF token, an HMAC of a server secret and the caller's
identity (:func:`csrf_token`). No cookie holds it, so a cookie planted by a
page on another port or a sibling domain proves nothing, and a page that
floods the cookie jar evicts nothing the dashboard needs. Every response
carries a strict Content-Security-Policy: scripts only from the dashboard's
own static folder, no inline script or style, no framing.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from jobdef.errors import UsageError

# A bearer token shorter than this is refused: it could be guessed.
MIN_TOKEN_CHARS = 16
CSRF_FIELD = "csrf"
# What the HMAC of the CSRF token is keyed with (a server secret) and told apart by.
CSRF_SECRET_BYTES = 32
# A configured secret shorter than this is refused: it could be guessed.
MIN_SECRET_BYTES = 16
_CSRF_PURPOSE = b"jobdef dashboard csrf\x00"

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


def new_secret() -> bytes:
    """A secret for :func:`csrf_token`, new for each process that does not configure one."""
    return secrets.token_bytes(CSRF_SECRET_BYTES)


def csrf_token(secret: bytes, who: str) -> str:
    """The CSRF token of the forms served to ``who``: the HMAC of ``who`` under ``secret``.

    Only the server can compute it, and it differs for each identity (a basic-auth
    user, ``token``, a Django staff user, ``anonymous@<address>``), so a token one
    caller was shown is worth nothing in another's post.
    """
    mac = hmac.new(secret, _CSRF_PURPOSE + who.encode("utf-8"), "sha256").digest()
    return base64.urlsafe_b64encode(mac).decode("ascii").rstrip("=")


def csrf_valid(secret: bytes, who: str, field: str | None) -> bool:
    """Whether a POST's form field holds ``who``'s CSRF token (constant time)."""
    if not field:
        return False
    return _same(field, csrf_token(secret, who))


# -- the Host and Origin checks -----------------------------------------------------------


def split_host(value: str) -> tuple[str, str]:
    """A ``Host`` header (or an origin's netloc) as its name, lowercase and without a
    trailing dot, and its port (``""`` when it names none); IPv6 keeps its brackets.
    ``("", "")`` when a port is anything but ASCII digits, or text follows the brackets.
    """
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[: end + 1], value[end + 1 :]
        if end < 0 or (rest and not rest.startswith(":")):
            return "", ""
        port = rest[1:]
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
    else:
        name, port = value, ""
    if port and not (port.isascii() and port.isdigit()):
        return "", ""
    return name.rstrip("."), port


# A name worth repeating in the advice; anything else is written NAME.
_HOST_NAME = re.compile(r"[a-z0-9.-]{1,60}|\[[0-9a-f:.]{2,45}\]")
# What an allowed host may be: a DNS name (Django's ALLOWED_HOSTS lets an underscore
# in) or an IP address, IPv6 in brackets.
_ALLOWED_NAME = re.compile(r"[a-z0-9_.-]{1,253}|\[[0-9a-f:.]{2,45}\]")
# What a refused Host is told to do, with {name}: the name it sent.
CLI_HOST_ADVICE = "start it with --allowed-host {name} (allowed_hosts= of create_app)"


class HostCheck:
    """Which ``Host`` headers the dashboard answers.

    By default the loopback names only: ``localhost``, ``127.0.0.1`` (any
    127.x address) and ``[::1]``, with any port. ``allowed``: more names, each
    exact (``jobs.example.com``), a domain and its subdomains (``.example.com``),
    or ``*`` for any host (when a proxy in front checks it), as Django's
    ``ALLOWED_HOSTS`` writes them.
    """

    def __init__(self, allowed: Iterable[str] = (), advice: str = CLI_HOST_ADVICE) -> None:
        self.allowed = tuple(dict.fromkeys(_pattern(p) for p in allowed))
        self.advice = advice

    def __repr__(self) -> str:
        return f"HostCheck({', '.join(self.allowed) or 'loopback only'})"

    def allows(self, host_header: str | None) -> bool:
        name, _ = split_host(host_header or "")
        if not name:
            return False
        if is_loopback(name):
            return True
        for pattern in self.allowed:
            if pattern in ("*", name):
                return True
            if pattern.startswith(".") and (name.endswith(pattern) or name == pattern[1:]):
                return True
        return False

    def refusal(self, host_header: str | None) -> str:
        """The one line a refused request is answered with: what to start it with."""
        if not host_header:
            return "the request names no Host; send the dashboard's host name in the Host header"
        name, _ = split_host(host_header)
        shown = repr(name[:60]) if name else repr(host_header[:60])
        fix = self.advice.format(name=name if _HOST_NAME.fullmatch(name) else "NAME")
        return f"host {shown} is not one this dashboard serves; if it is its name, {fix}"


def _pattern(value: str) -> str:
    """An allowed host as :meth:`HostCheck.allows` compares it; a value that names no
    host (a URL, a path) is one :class:`UsageError`."""
    text = value.strip().lower()
    if text == "*":
        return text
    dot = "." if text.startswith(".") else ""
    name, _ = split_host(text.removeprefix("."))
    if not _ALLOWED_NAME.fullmatch(name):
        raise UsageError(
            f"allowed host {value[:60]!r}: write a host name as the Host header sends it, "
            "e.g. jobs.example.com, .example.com (the domain and its subdomains) or * "
            "(no scheme, no path)"
        )
    return dot + name


# What a browser's Sec-Fetch-Site says of a request the dashboard's own page made.
_OWN_FETCH_SITES = ("same-origin", "none")


def foreign_post(headers: Mapping[str, str]) -> str | None:
    """Why a POST with ``headers`` (lowercase names) was not sent by a page of the host it
    was sent to, or None when it was (or when no header says: a client other than a
    browser, which the CSRF token still holds to account).

    A browser names the page a form was posted from in ``Origin``; an older one only
    in ``Referer``, or in ``Sec-Fetch-Site``. Either must name the ``Host`` the request
    was sent to, port included.
    """
    host = _netloc(*split_host(headers.get("host", "")))
    origin = headers.get("origin")
    if origin is not None:
        if _netloc_of(origin) != host:
            return f"the form was posted from another site ({origin[:80]})"
        return None
    referer = headers.get("referer")
    if referer:
        if _netloc_of(referer) != host:
            return "the form was posted from another site (its Referer)"
        return None
    site = headers.get("sec-fetch-site")
    if site is not None and site.lower() not in _OWN_FETCH_SITES:
        return f"the form was posted from another site (Sec-Fetch-Site: {site[:20]})"
    return None


def _netloc_of(url: str) -> str | None:
    """The ``host[:port]`` a URL names, its scheme's default port left out (as a
    browser's ``Host`` leaves it out), or None for ``null`` and anything that is not
    an http(s) URL."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    name, port = split_host(parts.netloc.rpartition("@")[2])
    if port == {"http": "80", "https": "443"}[parts.scheme]:
        port = ""
    return _netloc(name, port)


def _netloc(name: str, port: str) -> str:
    return f"{name}:{port}" if port else name
