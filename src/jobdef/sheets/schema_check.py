"""Check documents against the shipped JSON Schema and say, at the offending node, what to write.

Every error ``jsonschema`` finds is reported (nothing stops at the first),
located by walking its path through the positions the loader recorded:
an unknown key at the key, a missing field at the mapping that lacks it, a
bad value at the value. Errors at the same node come most relevant first
(``jsonschema``'s ``relevance``, the key of ``best_match``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_, Position
from jobdef.sheets.rules import schema as rules
from jobdef.sheets.schema_fast import Check, compile_schema
from jobdef.sheets.words import did_you_mean

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

KINDS = ("Job", "Workflow", "Channel", "Defaults", "Queue")

_NAME_PATTERN = "^[a-z][a-z0-9_]*$"
_SLUG_PATTERN = "^[a-z][a-z0-9_-]*$"
_ENV_PATTERN = "^[A-Z][A-Z0-9_]*$"
_CLASS_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$"
_PATTERN_HINTS = {
    _NAME_PATTERN: "use lower-case letters, digits and _, starting with a letter "
    "(e.g. send_reservation_mail)",
    "^[a-z_][a-z0-9_]*$": "use lower-case letters, digits and _ (e.g. reservation_id)",
    _SLUG_PATTERN: "use lower-case letters, digits, - and _, starting with a letter "
    "(e.g. ops-chat)",
    _ENV_PATTERN: "write the NAME of an environment variable (upper case, digits, _), "
    "such as OPS_CHAT_WEBHOOK_URL, never the secret itself",
    _CLASS_PATTERN: "write an exception class: a builtin name (TimeoutError) or a dotted "
    "path (smtplib.SMTPServerDisconnected)",
    "^(\\d+(\\.\\d+)?(ms|s|m|h|d))+$": "write a number with a unit (ms, s, m, h, d), "
    'such as "30s", "5m" or "1h30m"',
    "^[0-9]+/(s|m|h)$": "write a count per unit of time, such as 100/m",
    "^(args\\.[a-z_][a-z0-9_]*|steps\\.[a-z][a-z0-9_]*\\.result)(\\.[A-Za-z_][A-Za-z0-9_]*)*$": (
        "write args.<name> (the flow's arg) or steps.<step>.result, each optionally "
        "followed by .<field>, such as steps.charge.result.charge_id"
    ),
}
_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}
_REQUIRED_HINTS = {
    "apiVersion": "add `apiVersion: jobdef/v1`",
    "kind": f"add `kind:` with one of {', '.join(KINDS)}",
    "handler": "add `handler: package.module:function`",
    "name": "add `name:` with a unique name",
    "class": "add `class:` with the exception class",
}


def _required_hint(name: str) -> str:
    if name == "type":  # a Channel's: one of the types the schema lists
        kinds = schema()["definitions"]["Channel"]["properties"]["type"]["enum"]
        return f"add `type:` with one of {', '.join(kinds)}"
    return _REQUIRED_HINTS.get(name, "add it")


def schema_text() -> str:
    """The shipped draft-07 JSON Schema of apiVersion jobdef/v1, as written."""
    # A plain path, not importlib.resources: that import alone costs more start-up
    # time than validating a dozen sheets, and the package is never zipped.
    return (Path(__file__).parent / "schema" / "jobdef-v1.schema.json").read_text("utf-8")


@cache
def schema() -> dict[str, Any]:
    """The shipped draft-07 schema of apiVersion jobdef/v1."""
    loaded: dict[str, Any] = json.loads(schema_text())
    return loaded


@cache
def _fast_check() -> Check:
    return compile_schema(schema(), lazy=True)  # shipped: compiles whole (a test)


@cache
def _validator() -> Any:
    from jsonschema import Draft7Validator

    return Draft7Validator(schema())


def describe(value: Any) -> str:
    """A value as a message shows it: ``the string '5'``, ``null``, ``a list``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


def dotted(path: Path_) -> str:
    """``("errors", "retry", 2)`` -> ``errors.retry[2]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _kind_of(doc: Document) -> str:
    kind = doc.data.get("kind")
    return kind if kind in KINDS else "sheet"


def _where(path: Path_, doc: Document) -> str:
    return f" in {dotted(path)}" if path else f" of a {_kind_of(doc)}"


class _Finding:
    """One reportable problem derived from a jsonschema error."""

    def __init__(self, rule: Any, path: Path_, position: Position, message: str) -> None:
        self.rule, self.path, self.position, self.message = rule, path, position, message


def _position(doc: Document, path: Path_, key: bool = False) -> Position:
    """The key of ``path`` (when asked and it has one), else its value, else its nearest parent."""
    if key and path in doc.key_positions:
        return doc.key_positions[path]
    while path:
        if path in doc.positions:
            return doc.positions[path]
        path = path[:-1]
    return doc.positions.get((), (doc.line, doc.column))


def _pattern_message(error: ValidationError, field: str) -> str:
    pattern: Any = error.validator_value  # see _findings about the stubs' "unset"
    hint = _PATTERN_HINTS.get(pattern, f"it must match {pattern}")
    return f"{field}{error.instance!r} is not valid here; {hint}"


def _findings(error: ValidationError, doc: Document) -> Iterator[_Finding]:
    path: Path_ = tuple(error.absolute_path)
    field = f"{dotted(path)}: " if path else ""
    # A validator sets every attribute of the errors it yields; the stubs also allow
    # "unset" (for errors built by hand), hence str() and the Any.
    kind = str(error.validator)
    value: Any = error.instance
    rule_value: Any = error.validator_value
    subschema: Any = error.schema
    schema_path = list(error.absolute_schema_path)
    if kind == "additionalProperties":
        known = subschema.get("properties", {})
        for key in value:
            if key in known:
                continue
            where = _where(path, doc)
            hint = did_you_mean(str(key), known) or (
                "; remove it, or run `jobdef schema` to see the known fields"
            )
            yield _Finding(
                rules.UNKNOWN_FIELD,
                (*path, key),
                _position(doc, (*path, key), key=True),
                f"unknown field {key!r}{where}{hint}",
            )
        return
    if kind == "required":
        name = error.message.split("'")[1] if "'" in error.message else str(error.message)
        hint = _required_hint(name)
        yield _Finding(
            rules.MISSING_FIELD,
            (*path, name),
            _position(doc, path, key=True),
            f"missing required field {name!r}{_where(path, doc)}; {hint}",
        )
        return
    if "propertyNames" in schema_path:
        key_path = (*path, value)
        hint = _PATTERN_HINTS.get(rule_value, "rename it")
        yield _Finding(
            rules.BAD_VALUE,
            key_path,
            _position(doc, key_path, key=True),
            f"{field}name {value!r} is not allowed; {hint}",
        )
        return
    position = _position(doc, path)
    if kind == "enum":
        allowed = [str(item) for item in rule_value]
        hint = did_you_mean(str(value), allowed) if isinstance(value, str) else ""
        yield _Finding(
            rules.NOT_ALLOWED,
            path,
            position,
            f"{field}{value!r} is not allowed{hint} (allowed: {', '.join(allowed)})",
        )
    elif kind == "const":
        yield _Finding(
            rules.NOT_ALLOWED,
            path,
            position,
            f"{field}must be {rule_value!r}, got {describe(value)}",
        )
    elif kind == "type":
        expected = rule_value
        names = [expected] if isinstance(expected, str) else list(expected)
        words = " or ".join(_TYPE_WORDS.get(name, name) for name in names)
        yield _Finding(
            rules.WRONG_TYPE,
            path,
            position,
            f"{field}expected {words}, got {describe(value)}{_type_hint(names, value)}",
        )
    elif kind == "pattern":
        yield _Finding(rules.BAD_VALUE, path, position, _pattern_message(error, field))
    elif kind in ("minimum", "exclusiveMinimum", "maximum"):
        bound = rule_value
        limits = {"minimum": "at least", "exclusiveMinimum": "more than", "maximum": "at most"}
        yield _Finding(
            rules.BAD_VALUE,
            path,
            position,
            f"{field}{value!r} is out of range; write a number {limits[kind]} {bound}",
        )
    elif kind in ("minItems", "minLength"):
        yield _Finding(
            rules.BAD_VALUE,
            path,
            position,
            f"{field}must not be empty; add at least {rule_value} "
            f"{'item' if kind == 'minItems' else 'character'}, or remove the field",
        )
    elif kind == "maxLength":
        yield _Finding(
            rules.BAD_VALUE,
            path,
            position,
            f"{field}is {len(value)} characters long; shorten it to {rule_value} at most",
        )
    elif kind == "uniqueItems":
        yield _Finding(
            rules.BAD_VALUE, path, position, f"{field}lists an item twice; remove the duplicate"
        )
    else:
        yield _Finding(
            rules.BAD_VALUE,
            path,
            position,
            f"{field}{error.message}; see `jobdef schema` for what this field accepts",
        )


def check_error(error: ValidationError, doc: Document, rule: Any) -> Iterator[Diagnostic]:
    """The diagnostics of one ``jsonschema`` error in ``doc``, worded as for the shipped
    schema, under ``rule`` (another schema's findings: an arg's schema, say)."""
    for finding in _findings(error, doc):
        line, column = finding.position
        yield rule.at(doc.file, line, column, finding.message)


def _type_hint(names: list[str], value: Any) -> str:
    if isinstance(value, str) and ("integer" in names or "number" in names):
        try:
            float(value)
        except ValueError:
            return ""
        return "; remove the quotes"
    if "string" in names and isinstance(value, bool | int | float):
        return "; quote it"
    if "object" in names and value is None:
        return "; fill in its fields or remove the key"
    return ""


def _owned(path: Path_, owned: Collection[Path_]) -> bool:
    return any(path[: len(prefix)] == prefix for prefix in owned)


def check_document(doc: Document, owned: Collection[Path_] = ()) -> list[Diagnostic]:
    """Every schema error of one document; errors under an ``owned`` path are left to a rule
    that already reported them with a more precise message."""
    if _fast_check()(doc.data):
        return []
    from jsonschema.exceptions import relevance

    errors = sorted(_validator().iter_errors(doc.data), key=relevance, reverse=True)
    # best_match descends into oneOf/anyOf branches; do the same for each error.
    from jsonschema.exceptions import best_match

    diagnostics: list[Diagnostic] = []
    seen: set[tuple[Path_, str]] = set()
    for error in errors:
        chosen = best_match([error]) if error.context else error
        for finding in _findings(chosen or error, doc):
            if _owned(finding.path, owned) or (finding.path, finding.message) in seen:
                continue
            seen.add((finding.path, finding.message))
            line, column = finding.position
            diagnostics.append(finding.rule.at(doc.file, line, column, finding.message))
    return diagnostics
