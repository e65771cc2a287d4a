"""Results (JD331-JD340): what a sheet says of its handler's return value holds together.

A stored value is bounded (JD331) and lives no longer than its job's row (JD332); a
value that is not stored has nothing to check, show or send (JD333). ``result.schema``
is a JSON Schema the worker checks each value against, so it is read as args' schemas
are (JD334, JD335). The fields a receipt shows (``public``) and the ``done``
notification carries (``notify``) are ones the value has (JD336, JD337), and none of
them holds a secret (JD338, JD339); fields for a notification nobody is sent are a
mistake too (JD340).

A top-level property of ``result.schema`` may say ``sensitive: true`` (the field holds
a secret: never shown, never sent) or ``sensitive: false`` (its name only sounds like
one), as an arg does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobdef.policy.durations import format_duration
from jobdef.policy.sizes import format_size
from jobdef.policy.values import RESULT_BYTES_MAX
from jobdef.redact import secret_name
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.args import (
    SchemaScope,
    meta_check,
    meta_findings,
    meta_validator,
    schema_findings,
)
from jobdef.sheets.rules.base import Rule, human
from jobdef.sheets.rules.context import Context
from jobdef.sheets.words import closest, listing

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy

BYTES_OVER_LIMIT = Rule(
    "JD331",
    "result-bytes-over-limit",
    "error",
    "A stored result is written with the job's done row and read by every status call; past "
    "1 MiB it belongs in a file or a table, returned by its id.",
)
RETENTION_OVER_DONE = Rule(
    "JD332",
    "result-retention-over-done",
    "error",
    "A stored result is deleted with its job's row at the latest; a longer retention "
    "promises what pruning breaks.",
)
NOT_STORED = Rule(
    "JD333",
    "result-not-stored",
    "error",
    "With `store: false` no value is kept: a schema, public fields or notified fields "
    "would check, show or send nothing.",
)
SCHEMA_INVALID = Rule(
    "JD334",
    "result-schema-invalid",
    "error",
    "The worker checks every returned value against result.schema; one that is not valid "
    "draft-07 (or whose pattern or $ref it cannot use) fails every attempt of the job.",
)
SCHEMA_UNKNOWN_KEYWORD = Rule(
    "JD335",
    "result-schema-unknown-keyword",
    "warning",
    "JSON Schema ignores a keyword it does not know, so a misspelt one checks nothing at all.",
)
FIELD_NOT_IN_SCHEMA = Rule(
    "JD336",
    "result-field-not-in-schema",
    "warning",
    "A field that result.schema does not define may be missing from every value; a "
    "misspelt name then shows or sends nothing.",
)
FIELD_IMPOSSIBLE = Rule(
    "JD337",
    "result-field-impossible",
    "error",
    "result.schema refuses every value holding this field (additionalProperties: false, or "
    "a value that is never an object), so it can never be shown or sent.",
)
FIELD_SENSITIVE = Rule(
    "JD338",
    "result-field-sensitive",
    "error",
    "A receipt is shown to whoever holds its token and a notification to a channel's "
    "readers; a field the schema marks sensitive must reach neither.",
)
FIELD_SECRET_UNMARKED = Rule(
    "JD339",
    "result-field-secret-unmarked",
    "warning",
    "A result field named like a secret (token, password, api_key) would be shown on a "
    "receipt or sent in a notification; the schema says `sensitive: false` if it is none.",
)
NOTIFY_UNSENT = Rule(
    "JD340",
    "result-notify-unsent",
    "warning",
    "Fields for the done notification travel only when the job notifies `done` through a "
    "channel; otherwise result.notify promises a message nobody gets.",
)
RULES = (
    BYTES_OVER_LIMIT,
    RETENTION_OVER_DONE,
    NOT_STORED,
    SCHEMA_INVALID,
    SCHEMA_UNKNOWN_KEYWORD,
    FIELD_NOT_IN_SCHEMA,
    FIELD_IMPOSSIBLE,
    FIELD_SENSITIVE,
    FIELD_SECRET_UNMARKED,
    NOTIFY_UNSENT,
)

_SCHEMA: Path_ = ("result", "schema")
_BRANCHES = ("allOf", "anyOf", "oneOf")


def _reads_sensitive(path: Path_) -> bool:
    """``sensitive`` is read on a field of the value: a top-level property of result.schema,
    or of one of its allOf / anyOf / oneOf branches."""
    if path[:2] != _SCHEMA:
        return False
    rest = path[2:]
    return (len(rest) == 2 and rest[0] == "properties") or (
        len(rest) == 4 and rest[0] in _BRANCHES and rest[2] == "properties"
    )


SCOPE = SchemaScope(
    SCHEMA_INVALID,
    SCHEMA_INVALID,
    SCHEMA_INVALID,
    SCHEMA_UNKNOWN_KEYWORD,
    inside="result.schema",
    ref_hint=(
        "; a $ref resolves inside result.schema: write #/definitions/<name> with a "
        "definitions: block in it, or # for result.schema itself (refs are never fetched "
        "over the network)"
    ),
    checker="the worker",
    owned={"sensitive": "say whether that field holds a secret"},
    reads_own=_reads_sensitive,
    home=lambda path: (
        "it is read on a top-level property only: write it in result.schema.properties.<field>"
    ),
)

# What each list hands its fields to, how, and to whom, for the messages.
_SHOWN_BY = {
    "public": ("a receipt", "show", "whoever holds the receipt"),
    "notify": ("the done notification", "send", "the channel's readers"),
}
_TYPE_WORDS = {
    "array": "a list",
    "boolean": "true or false",
    "integer": "an integer",
    "null": "null",
    "number": "a number",
    "string": "a string",
}


# Never compared nor printed: without the generated __eq__ and __repr__, each of which
# costs `jobdef validate` start-up time.
@dataclass(repr=False, eq=False)
class _Shape:
    """What result.schema says of the value's top-level fields.

    ``fields``: each field a ``properties`` block defines (at the top or in an allOf /
    anyOf / oneOf branch) and its schema; ``admitted``: whether a field is allowed past
    the top's ``additionalProperties: false`` (only the top's own properties and
    patternProperties are); ``never_object``: the schema's ``type`` when it excludes an
    object, else None.
    """

    fields: dict[str, Any] = field(default_factory=dict)
    top: set[str] = field(default_factory=set)
    patterns: list[str] = field(default_factory=list)
    closed: bool = False
    never_object: str | None = None

    def defined(self, name: str) -> bool:
        return name in self.fields or self._matched(name)

    def admitted(self, name: str) -> bool:
        return not self.closed or name in self.top or self._matched(name)

    def _matched(self, name: str) -> bool:
        for pattern in self.patterns:
            try:
                if re.search(pattern, name):
                    return True
            except re.error:  # JD334 says so
                return True
        return False


def _shape(schema: Mapping[str, Any]) -> _Shape | None:
    """The shape of the value ``schema`` describes; None when its fields are not readable
    here (a top-level ``$ref`` to something but a local definition)."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.removeprefix("#/definitions/")
        target = (schema.get("definitions") or {}).get(name) if name != ref else None
        return _shape(target) if isinstance(target, Mapping) and "$ref" not in target else None
    shape = _Shape()
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else None
    if kinds is not None and "object" not in kinds:
        shape.never_object = " or ".join(_TYPE_WORDS.get(str(k), str(k)) for k in kinds)
    own = schema.get("properties")
    if isinstance(own, Mapping):
        shape.fields.update(own)
        shape.top.update(own)
    branches = [b for key in _BRANCHES for b in schema.get(key) or () if isinstance(b, Mapping)]
    for branch in branches:
        if isinstance(branch.get("properties"), Mapping):
            for name, sub in branch["properties"].items():
                shape.fields.setdefault(name, sub)
    patterns = schema.get("patternProperties")
    shape.patterns = [p for p in patterns or () if isinstance(p, str)]
    shape.closed = schema.get("additionalProperties") is False
    return shape


def _at(doc: Document, path: Path_) -> tuple[int, int]:
    found: Path_ = path
    while found:
        if found in doc.positions:
            return doc.positions[found]
        found = found[:-1]
    return doc.line, doc.column


def _flag(schema: Any) -> bool | None:
    """The field schema's ``sensitive: true|false``, or None when it says neither."""
    flag = schema.get("sensitive") if isinstance(schema, Mapping) else None
    return flag if isinstance(flag, bool) else None


def _named_field(
    doc: Document, key: str, index: int, name: str, shape: _Shape | None
) -> Iterator[Diagnostic]:
    """What is wrong with field ``name``, item ``index`` of result.``key``."""
    line, column = _at(doc, ("result", key, index))
    where = f"result.{key}[{index}]"
    what, verb, whom = _SHOWN_BY[key]
    if shape is not None:
        if shape.never_object is not None:
            whole = " (public: true shows the whole value)" if key == "public" else ""
            yield FIELD_IMPOSSIBLE.at(
                doc.file,
                line,
                column,
                f"{where}: {name!r} names a field, but result.schema makes the value "
                f"{shape.never_object}, never an object with fields; remove it{whole}",
            )
            return
        if not shape.admitted(name):
            defines = listing(sorted(shape.top), "no properties")
            if name in shape.fields:
                fix = (
                    f"it is defined in an allOf/anyOf/oneOf branch, which that does not "
                    f"admit; move {name} into result.schema's own properties"
                )
            else:
                match = closest(name, shape.top)
                fix = f"did you mean {match!r}?" if match else "remove it here"
            yield FIELD_IMPOSSIBLE.at(
                doc.file,
                line,
                column,
                f"{where}: {name!r} is not a field the value may have: result.schema sets "
                f"additionalProperties: false and defines {defines}; {fix}",
            )
            return
        if not shape.defined(name):
            match = closest(name, shape.fields)
            fix = (
                f"did you mean {match!r}? (else add {name} to result.schema's properties)"
                if match
                else "add it to result.schema's properties, or remove it here"
            )
            yield FIELD_NOT_IN_SCHEMA.at(
                doc.file,
                line,
                column,
                f"{where}: {name!r} is not a field result.schema defines, so {what} may have "
                f"nothing to {verb} for it; {fix}",
            )
        flag = _flag(shape.fields.get(name))
    else:
        flag = None
    if flag is True:
        yield FIELD_SENSITIVE.at(
            doc.file,
            line,
            column,
            f"{where}: result.schema marks {name!r} `sensitive: true`, and {what} would "
            f"{verb} it to {whom}; remove it here",
        )
    elif flag is None and secret_name(name):
        yield FIELD_SECRET_UNMARKED.at(
            doc.file,
            line,
            column,
            f"{where}: {name!r} says it holds a secret, and {what} would {verb} it to "
            f"{whom}; remove it here, or write `sensitive: false` in "
            f"result.schema.properties.{name} if it is no secret",
        )


def _whole_value(doc: Document, shape: _Shape | None) -> Iterator[Diagnostic]:
    """``public: true`` shows every field: none may be a secret."""
    if shape is None:
        return
    line, column = _at(doc, ("result", "public"))
    marked = sorted(n for n, sub in shape.fields.items() if _flag(sub) is True)
    if marked:
        yield FIELD_SENSITIVE.at(
            doc.file,
            line,
            column,
            f"result.public: true shows the whole value, and result.schema marks "
            f"{', '.join(map(repr, marked))} `sensitive: true`; list the fields a receipt may "
            "show instead",
        )
    for name in sorted(n for n, sub in shape.fields.items() if _flag(sub) is None):
        if secret_name(name):
            yield FIELD_SECRET_UNMARKED.at(
                doc.file,
                line,
                column,
                f"result.public: true shows the whole value, with {name!r}, whose name says "
                "it holds a secret; list the fields a receipt may show instead, or write "
                f"`sensitive: false` in result.schema.properties.{name} if it is no secret",
            )


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    result = doc.data.get("result") if doc.kind == "Job" else None
    if not isinstance(result, Mapping):
        return
    schema = result.get("schema")
    shape: _Shape | None = None
    if isinstance(schema, Mapping):
        if not meta_check()(schema):
            data = {"result": {"schema": schema}}
            yield from meta_findings(doc, data, meta_validator(*_SCHEMA), SCHEMA_INVALID)
            return  # fields of a schema that is not one are not worth reading
        yield from schema_findings(doc, schema, _SCHEMA, SCOPE)
        shape = _shape(schema)
        if shape is None:  # a $ref this rule does not follow: say nothing of the fields
            return
    for key in ("public", "notify"):
        names = result.get(key)
        if names is True and key == "public":
            for found in _whole_value(doc, shape):
                yield ("result", key), found
        if not isinstance(names, list):
            continue
        for index, name in enumerate(names):
            if isinstance(name, str) and name:
                for found in _named_field(doc, key, index, name, shape):
                    yield ("result", key, index), found


def check(context: Context) -> Iterator[Diagnostic]:
    for doc, policy in context.jobs:
        result = policy.result
        if not result.store:
            yield from _unused(context, doc, policy)
            continue
        if result.max_bytes > RESULT_BYTES_MAX:
            yield BYTES_OVER_LIMIT.at_origin(
                context.where(doc, policy, "result.max_bytes"),
                f"result.max_bytes is {format_size(result.max_bytes)} ({result.max_bytes} "
                f"bytes), more than the {format_size(RESULT_BYTES_MAX)} a stored result may "
                "hold: it is written with the done job and read by every status call; store "
                "the data elsewhere (a file, a table) and return its id, or write "
                f"{format_size(RESULT_BYTES_MAX)} at most",
            )
        done, kept = policy.retention.done, result.retention
        if done is not None and kept is not None and kept > done:
            yield RETENTION_OVER_DONE.at_origin(
                context.where(doc, policy, "result.retention"),
                f"result.retention ({human(kept)}) is longer than retention.done "
                f"({human(done)}): a result is deleted with its job's row at the latest; "
                f"write {format_duration(done)} at most, or keep done jobs longer",
            )
        if result.notify:
            yield from _unsent(context, doc, policy)


def _unused(context: Context, doc: Document, policy: JobPolicy) -> Iterator[Diagnostic]:
    """``store: false`` beside fields that only a stored value gives a meaning."""
    result = policy.result
    uses = (
        ("result.schema", result.schema is not None, "checks a value"),
        ("result.public", result.public not in (False, ()), "shows a value on a receipt"),
        ("result.notify", bool(result.notify), "sends fields of a value"),
    )
    store = policy.origins.get("result.store")
    inherited = " (from Defaults)" if store is not None and store.source == "defaults" else ""
    for path, used, does in uses:
        if used:
            yield NOT_STORED.at_origin(
                context.where(doc, policy, path),
                f"{path} {does}, but result.store: false{inherited} keeps none; remove "
                f"{path}, or write store: true",
            )


def _unsent(context: Context, doc: Document, policy: JobPolicy) -> Iterator[Diagnostic]:
    """result.notify for a job that never sends a ``done`` notification."""
    notify = policy.notify
    if notify.channel and "done" in notify.events:
        return
    why = (
        "the job has no notify.channel"
        if not notify.channel
        else "notify.events does not include done"
    )
    fix = "add done to notify.events" if notify.channel else "name a channel in notify.channel"
    yield NOTIFY_UNSENT.at_origin(
        context.where(doc, policy, "result.notify"),
        f"result.notify names fields for the done notification, but {why}, so nobody gets "
        f"them; {fix}, or remove result.notify",
    )
