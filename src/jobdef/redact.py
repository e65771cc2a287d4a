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

Job args are hidden by :func:`shown_args`, the one place that decides which args a
page, a log line, an export, a notification or a listing may show: an arg whose
schema says ``sensitive: true``, or that says nothing and whose name says secret
(:func:`secret_name`), is shown as :data:`MASK`; inside the others, a key whose
name says secret is masked too. The stored row keeps every value: the handler
reads it. A receipt, which the application's own user sees, shows fewer: only the
args whose schema says ``public: true`` (:func:`public_names`).

A channel URL is shown as :func:`url_origin` alone (``https://hooks.example``):
chat webhooks hold their secret in the path, and a receiver that quotes its path
back (``no such hook /services/T/B/XXXX``) gets it replaced by
:func:`url_path_secrets`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy

MASK = "***"

# scheme://user:password@  (user without ':' '/' '@'; the password runs to the last '@'
# before a blank, so an unencoded '/', '@' or '?' in it is covered too). The scheme is
# optional: a URL whose scheme is not one (``0://``, ``\x1b[://``) hides its password too.
# Linear time on any text (stored errors run to 64 KiB): a scheme starts only where no
# scheme character precedes it, and a password is at most 1024 characters.
# (This and _SECRET_PARAM are compiled on first use, which re's cache keeps: the checks of
# sheets, which use this module for secret_name, never redact.)
_USERINFO = (
    r"(?P<head>(?:(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*)?://[^\s:/@]*:)[^\s]{0,1024}@"
)
# name=value where the name says secret, in a query string or a libpq keyword string.
_SECRET_PARAM = (
    r"(?i)(?P<head>(?:^|(?<=[?&;\s,({\[\"']))[\w.\-]*?"
    r"(?:password|passwd|pwd|token|secret|api_?key|apikey|signature|sig)\s*=\s*)"
    r"(?P<value>[^&;\s\"'#]+)"
)
# Shorter pieces of a secret are not searched for: they would hide ordinary words.
_MIN_PIECE = 3


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without passwords, secret parameters and any of ``secrets``."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = re.sub(_USERINFO, lambda m: f"{m.group('head')}{MASK}@", text)
    return re.sub(_SECRET_PARAM, lambda m: f"{m.group('head')}{MASK}", text)


def url_secrets(url: str) -> list[str]:
    """The secret parts of ``url`` to pass to :func:`redact` for text that quotes them
    out of context (a driver's error naming a "port" cut from a password with a '/').

    The password (as :func:`redact` finds it), the values of secret parameters, and
    each piece of those split at a reserved character.
    """
    found: list[str] = []
    match = re.search(_USERINFO, url)
    if match:
        found.append(url[match.end("head") : match.end() - 1])
    found.extend(m.group("value") for m in re.finditer(_SECRET_PARAM, url))
    pieces = [p for s in found for p in re.split(r"[/?#@:&;=\s\"']", s)]
    return [s for s in dict.fromkeys(found + pieces) if len(s) >= _MIN_PIECE]


# A name that says it holds a secret: the whole name or its last word (after '_', '-',
# '.' or a camelCase step). The last word only: ``token_count``, ``author`` and
# ``password_policy`` are not secrets, ``db_password`` and ``clientSecret`` are.
_SECRET_NAME = re.compile(
    r"(?:^|[_.\-]|(?<=[a-z0-9])(?=[A-Z]))(?i:password|passwd|pwd|passphrase|secret|token|"
    r"(?:api|access|secret|private|signing|encryption|session)[_\-]?key|apikey|"
    r"credentials?|auth|cookie)$"
)
# Containers shown inside an arg before the rest is cut (args are stored at most
# 32 levels deep; an older row or a foreign runtime's may be deeper).
_MAX_SHOWN_DEPTH = 64


def secret_name(name: str) -> bool:
    """Whether a field or arg called ``name`` says it holds a secret (``password``,
    ``api_key``, ``client_secret``, ``access_token``, ``privateKey``, ...)."""
    return _SECRET_NAME.search(name) is not None


def sensitive_arg(name: str, schema: Any) -> bool:
    """Whether the arg ``name`` with the JSON Schema ``schema`` is hidden wherever args are
    shown: its ``sensitive: true|false`` when it says one, else whether its name says secret."""
    flag = schema.get("sensitive") if isinstance(schema, Mapping) else None
    return flag if isinstance(flag, bool) else secret_name(name)


def sensitive_names(policy: JobPolicy | None, names: Iterable[str]) -> set[str]:
    """Those of ``names`` that :func:`shown_args` hides for the job of ``policy``."""
    schemas = policy.args_schema.get("properties", {}) if policy is not None else {}
    return {name for name in names if sensitive_arg(name, schemas.get(name))}


def public_arg(name: str, schema: Any) -> bool:
    """Whether the arg ``name`` with the JSON Schema ``schema`` may be shown on a receipt
    (the status endpoint an application shows its own user): only when it says
    ``public: true``, and never when it is sensitive (:func:`sensitive_arg`; JD114
    refuses a sheet that says both)."""
    flag = schema.get("public") if isinstance(schema, Mapping) else None
    return flag is True and not sensitive_arg(name, schema)


def public_names(policy: JobPolicy | None, names: Iterable[str]) -> set[str]:
    """Those of ``names`` that a receipt of the job of ``policy`` may show (none without a
    sheet)."""
    schemas = policy.args_schema.get("properties", {}) if policy is not None else {}
    return {name for name in names if name in schemas and public_arg(name, schemas[name])}


def _shown_value(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return redact(value)
    if depth >= _MAX_SHOWN_DEPTH:
        return "…" if isinstance(value, Mapping | list | tuple) else value
    if isinstance(value, Mapping):
        hidden = {key for key in value if isinstance(key, str) and secret_name(key)}
        return {
            key: MASK if key in hidden else _shown_value(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_shown_value(item, depth + 1) for item in value]
    return value


def shown_args(policy: JobPolicy | None, args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` as every display shows them: sensitive args (:func:`sensitive_arg`) as
    :data:`MASK`, keys that say secret inside the others too, URL passwords redacted.

    ``policy`` is the job's sheet, or None for a job no loaded sheet defines (then
    only names decide). Only displays call this: the stored row keeps the values.
    """
    hidden = sensitive_names(policy, args)
    return {
        name: MASK if name in hidden else _shown_value(value, 1) for name, value in args.items()
    }


def shown_fields(policy: JobPolicy | None, value: Any, names: Iterable[str]) -> dict[str, Any]:
    """The top-level fields ``names`` of a job's result ``value`` as a notification or a
    receipt shows them: only those the value has (none when it is not an object), each
    as :func:`shown_args` shows an arg. A field that ``result.schema`` marks
    ``sensitive: true``, or whose name says secret while its schema says nothing, is
    :data:`MASK` (JD338 and JD339 catch both in the sheet; this holds for a value
    stored before the sheet changed too); inside the others, keys that say secret are
    masked and URL passwords redacted."""
    if not isinstance(value, Mapping):
        return {}
    schema = policy.result.schema if policy is not None else None
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    schemas = props if isinstance(props, Mapping) else {}
    return {
        name: MASK if sensitive_arg(name, schemas.get(name)) else _shown_value(value[name], 1)
        for name in names
        if name in value
    }


def shown_result(policy: JobPolicy | None, value: Any) -> Any:
    """A job's whole stored result as a page shows it to an operator: an object's fields
    as :func:`shown_fields` shows them, any other value with URL passwords redacted and
    keys that say secret masked inside."""
    if isinstance(value, Mapping):
        return shown_fields(policy, value, [key for key in value if isinstance(key, str)])
    return _shown_value(value, 1)


def sensitive_values(policy: JobPolicy | None, args: Mapping[str, Any]) -> list[str]:
    """The text of every value :func:`shown_args` hides in ``args``, to pass to
    :func:`redact` as ``secrets`` for text a handler wrote (an exception that quotes its
    password). Values shorter than three characters are left, as in
    :func:`url_path_secrets`."""
    found: list[str] = []

    def leaves(value: Any, depth: int) -> None:
        if isinstance(value, Mapping):
            for item in value.values():
                if depth < _MAX_SHOWN_DEPTH:
                    leaves(item, depth + 1)
        elif isinstance(value, list | tuple):
            for item in value:
                if depth < _MAX_SHOWN_DEPTH:
                    leaves(item, depth + 1)
        elif value is not None and not isinstance(value, bool):
            found.append(str(value))

    def inside(value: Any, depth: int) -> None:
        if depth >= _MAX_SHOWN_DEPTH:
            return
        if isinstance(value, Mapping):
            for key, item in value.items():
                (leaves if isinstance(key, str) and secret_name(key) else inside)(item, depth + 1)
        elif isinstance(value, list | tuple):
            for item in value:
                inside(item, depth + 1)

    hidden = sensitive_names(policy, args)
    for name, value in args.items():
        (leaves if name in hidden else inside)(value, 1)
    return [s for s in dict.fromkeys(found) if len(s) >= _MIN_PIECE]


def url_origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, the only part of a channel URL ever shown
    (``https://hooks.slack.com`` for a Slack webhook); ``<url>`` when it has no host."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return "<url>"
    if not parts.scheme or not host:
        return "<url>"
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}" + (f":{port}" if port is not None else "")


def url_path_secrets(url: str) -> list[str]:
    """What of ``url`` lies past its origin, to pass to :func:`redact` as ``secrets`` for
    text a receiver wrote: the path with its query, the path, the query, each path segment
    and query value (decoded too), and :func:`url_secrets`. Pieces shorter than three
    characters are left: they would hide ordinary words."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    path, query = parts.path, parts.query
    found = [f"{path}?{query}" if query else path, path, query, parts.fragment]
    found += path.split("/")
    found += [value for pair in query.split("&") for value in pair.split("=")[1:]]
    found += [unquote(piece) for piece in found]
    found += url_secrets(url)
    return [s for s in dict.fromkeys(found) if len(s.strip("/")) >= _MIN_PIECE]
