"""Credentials (JD261): secrets never live in sheets; channels name environment variables."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from typing import Any

from jobdef.redact import secret_name
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.base import Rule

CREDENTIAL = Rule(
    "JD261",
    "credential-in-sheet",
    "error",
    "Sheets are reviewed, copied into docs and committed; a secret in one leaks everywhere.",
)
RULES = (CREDENTIAL,)

# Compiled at the first value that holds a marker (below): most runs meet none.
_LOOKS_SECRET = (
    (r"(?i)[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", "a URL with user:password"),
    (
        r"(?i)[?&](?:token|access_token|api_key|apikey|key|secret|password|sig|signature)=[^&\s]+",
        "a URL with a token in its query",
    ),
    (r"hooks\.slack\.com/services/\S+", "a Slack webhook URL (the URL is the secret)"),
    (r"\bxox[abprs]-[0-9A-Za-z-]{10,}", "a Slack token"),
    (r"\b(?:ghp|gho|ghs|ghu)_[0-9A-Za-z]{20,}|\bgithub_pat_\w{20,}", "a GitHub token"),
    (r"\bAKIA[0-9A-Z]{16}\b", "an AWS access key"),
    (r"\b[sr]k_live_[0-9A-Za-z]{10,}", "a Stripe key"),
    (r"-----BEGIN [A-Z ]*PRIVATE KEY-----", "a private key"),
)
_FIX = "put it in an environment variable and name it with a `*_env` field (such as url_env)"


def _scalars(data: Any) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) under ``data`` whose value is not a mapping or list."""
    stack: list[tuple[Path_, Any]] = [((), data)]
    while stack:
        path, node = stack.pop()
        if type(node) is dict:
            stack.extend(((*path, key), value) for key, value in node.items())
        elif type(node) is list:
            stack.extend(((*path, index), value) for index, value in enumerate(node))
        elif path:
            yield path, node


# Each pattern above needs one of these substrings; most values have none of them.
_MARKERS = re.compile("://|=|xox|gh|AKIA|_live_|-----BEGIN")


def looks_secret(value: Any) -> str | None:
    """What kind of credential ``value`` looks like, or None."""
    if not isinstance(value, str) or _MARKERS.search(value) is None:
        return None
    for pattern, what in _compiled():
        if pattern.search(value):
            return what
    return None


@cache
def _compiled() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(pattern), what) for pattern, what in _LOOKS_SECRET)


@cache
def _secret_key(key: str) -> bool:
    """Whether a field named ``key`` holds a secret (``*_env`` names a variable instead)."""
    return secret_name(key) and not key.lower().endswith("_env")


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    for path, value in _scalars(doc.data):
        key = path[-1]
        what = None
        if (
            isinstance(key, str)
            and _secret_key(key)
            and isinstance(value, str | int | float)
            and not isinstance(value, bool)
            and value != ""
        ):
            what = f"a {key} value"
        else:
            what = looks_secret(value)
        if what is None:
            continue
        line, column = doc.positions.get(path, (doc.line, 1))
        field = ".".join(str(p) for p in path)
        yield (
            path,
            replace(
                CREDENTIAL.at(doc.file, line, column, f"{field}: looks like {what}; {_FIX}"),
                excerpt=False,  # never echo the secret into CI logs
            ),
        )
