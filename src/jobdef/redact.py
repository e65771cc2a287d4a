"""The one redaction of secrets from text that a user, a log or a table will read.

Every message, log line, stored error, repr and report that can hold a URL or a
header goes through :func:`redact`. It knows no scheme in particular: any
``scheme://user:password@`` loses its password, even one holding unencoded
reserved characters (``/``, ``?``, ``#``, ``@``, quotes: everything up to the
last ``@`` before a blank is taken as the password, which errs toward hiding too
much), and so do query or keyword parameters whose name says they are secret
(``password=``, ``token=``, ``secret=``, ``api_key=``, ...). Secrets the caller
knows (a header value, a webhook URL, the password of a database URL and the
pieces a parser may quote after splitting it at a reserved character) are
passed as ``secrets`` and replaced wherever they appear.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"

# scheme://user:password@  (user without ':' '/' '@'; the password runs to the last '@'
# before a blank, so an unencoded '/', '@' or '?' in it is covered too). The scheme is
# optional: a URL whose scheme is not one (``0://``, ``\x1b[://``) hides its password too.
# Linear time on any text (stored errors run to 64 KiB): a scheme starts only where no
# scheme character precedes it, and a password is at most 1024 characters.
_USERINFO = re.compile(
    r"(?P<head>(?:(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*)?://[^\s:/@]*:)[^\s]{0,1024}@"
)
# name=value where the name says secret, in a query string or a libpq keyword string.
_SECRET_PARAM = re.compile(
    r"(?P<head>(?:^|(?<=[?&;\s,({\[\"']))[\w.\-]*?"
    r"(?:password|passwd|pwd|token|secret|api_?key|apikey|signature|sig)\s*=\s*)"
    r"(?P<value>[^&;\s\"'#]+)",
    re.IGNORECASE,
)
# Shorter pieces of a secret are not searched for: they would hide ordinary words.
_MIN_PIECE = 3


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without passwords, secret parameters and any of ``secrets``."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = _USERINFO.sub(lambda m: f"{m.group('head')}{MASK}@", text)
    return _SECRET_PARAM.sub(lambda m: f"{m.group('head')}{MASK}", text)


def url_secrets(url: str) -> list[str]:
    """The secret parts of ``url`` to pass to :func:`redact` for text that quotes them
    out of context (a driver's error naming a "port" cut from a password with a '/').

    The password (as :func:`redact` finds it), the values of secret parameters, and
    each piece of those split at a reserved character.
    """
    found: list[str] = []
    match = _USERINFO.search(url)
    if match:
        found.append(url[match.end("head") : match.end() - 1])
    found.extend(m.group("value") for m in _SECRET_PARAM.finditer(url))
    pieces = [p for s in found for p in re.split(r"[/?#@:&;=\s\"']", s)]
    return [s for s in dict.fromkeys(found + pieces) if len(s) >= _MIN_PIECE]
