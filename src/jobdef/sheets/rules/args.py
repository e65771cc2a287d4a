"""Args schemas (JD106-JD108, JD111): each arg's schema is valid draft-07 that enqueue can
check, with no keyword it would ignore (jobdef's ``sensitive`` and ``public`` at the top of
an arg are read by the displays, :func:`jobdef.redact.sensitive_arg`, and by receipts,
:func:`jobdef.redact.public_arg`).

The shipped schema only says that an arg's schema is a mapping; these rules read
it as the JSON Schema it is, the way enqueue will (:mod:`jobdef.sheets.args_check`):
against the draft-07 meta-schema (with jobdef's ``required: true|false`` at the
top of an arg), every ``pattern`` compiled by Python's ``re`` (the dialect of
both checkers enqueue uses), every ``$ref`` resolved inside the arg's own schema.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any

from jobdef.records import Record, record
from jobdef.sheets.args_check import (
    args_check,
    draft7_meta_schema,
    draft7_validator,
    known_refs,
)
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.schema_check import check_error, dotted
from jobdef.sheets.schema_fast import Check, compile_schema
from jobdef.sheets.words import did_you_mean, near_miss

SCHEMA_INVALID = Rule(
    "JD106",
    "args-schema-invalid",
    "error",
    "An arg's schema that is not valid draft-07 JSON Schema fails every enqueue of its job "
    "(or checks something else than written).",
)
PATTERN_UNSUPPORTED = Rule(
    "JD107",
    "args-pattern-unsupported",
    "error",
    "Enqueue checks a `pattern` with Python's re; one it cannot compile (such as \\p{L}) "
    "fails every enqueue of the job.",
)
REF_UNRESOLVED = Rule(
    "JD108",
    "args-ref-unresolved",
    "error",
    "A `$ref` in an arg resolves inside that arg's own schema; any other target is never "
    "fetched, so enqueue could not check the arg.",
)
UNKNOWN_KEYWORD = Rule(
    "JD111",
    "args-unknown-keyword",
    "warning",
    "JSON Schema ignores a keyword it does not know, so a misspelt one (maxlength) checks "
    "nothing at all.",
)
RULES = (SCHEMA_INVALID, PATTERN_UNSUPPORTED, REF_UNRESOLVED, UNKNOWN_KEYWORD)

_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
_META = "http://json-schema.org/draft-07/schema#"


@record
class SchemaScope(Record):
    """A JSON Schema written in a sheet (an arg's, a result's): the rules that check it,
    how messages name it and who checks values against it, and jobdef's own keywords in it.

    ``owned`` maps each of jobdef's keywords to what it does; ``reads_own(path)`` says
    whether jobdef reads them in the schema node at ``path``, and ``home(path)`` where a
    misplaced one belongs.
    """

    invalid: Rule
    pattern: Rule
    ref: Rule
    unknown: Rule
    inside: str  # "this arg's schema"
    ref_hint: str  # where a $ref resolves, and what to write
    checker: str  # "enqueue"
    owned: Mapping[str, str]
    reads_own: Callable[[Path_], bool]
    home: Callable[[Path_], str]


ARG_SCOPE = SchemaScope(
    SCHEMA_INVALID,
    PATTERN_UNSUPPORTED,
    REF_UNRESOLVED,
    UNKNOWN_KEYWORD,
    inside="this arg's schema",
    ref_hint=(
        "; a $ref resolves inside the arg's own schema: write #/definitions/<name> with a "
        "definitions: block in that arg, or # for the arg's schema itself (refs are never "
        "fetched over the network)"
    ),
    checker="enqueue",
    owned={"sensitive": "hide that whole arg", "public": "show that whole arg on a receipt"},
    reads_own=lambda path: len(path) == 2,  # ("args", name): the top of an arg
    home=lambda path: f"it is read at the top of an arg only: write it in {dotted(path[:2])}",
)

# Keywords whose value is one schema, a list of schemas, or a mapping to schemas.
_ONE = (
    *("additionalItems", "additionalProperties", "contains", "propertyNames", "not"),
    *("if", "then", "else"),
)
_MANY = ("allOf", "anyOf", "oneOf")
_BY_NAME = ("properties", "patternProperties", "definitions", "dependencies")


def arg_schemas(doc: Document) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each arg of a Job or a Workflow as written, its schema without jobdef's boolean
    ``required``."""
    args = doc.data.get("args") if doc.kind in ("Job", "Workflow") else None
    if not isinstance(args, Mapping):
        return
    for name, schema in args.items():
        if isinstance(name, str) and isinstance(schema, Mapping):
            plain = dict(schema)
            if isinstance(plain.get("required"), bool):
                del plain["required"]
            yield name, plain


@cache
def meta_check() -> Check:
    """Whether a schema is valid draft-07 (the fast yes/no check)."""
    return compile_schema(draft7_meta_schema(), lazy=True)  # compiles whole (a test)


@cache
def meta_validator(*at: str) -> Any:
    """A validator of the document's schemas below the keys ``at`` against draft-07's
    meta-schema; ``"*"`` stands for every key of a mapping (``("args", "*")``)."""
    node: dict[str, Any] = {"$ref": _META}
    for key in reversed(at):
        node = {"additionalProperties": node} if key == "*" else {"properties": {key: node}}
    return draft7_validator(node)


def _where(doc: Document, path: Path_, key: bool = False) -> tuple[int, int]:
    if key and path in doc.key_positions:
        return doc.key_positions[path]
    while path:
        if path in doc.positions:
            return doc.positions[path]
        path = path[:-1]
    return doc.line, doc.column


def meta_findings(
    doc: Document, data: Mapping[str, Any], validator: Any, rule: Rule
) -> Iterator[tuple[Path_, Diagnostic]]:
    """What :func:`meta_validator` finds in ``data`` (the document's schemas, where the
    document holds them), under ``rule``."""
    from jsonschema.exceptions import best_match, relevance

    errors = sorted(validator.iter_errors(data), key=relevance, reverse=True)
    for error in errors:
        path: Path_ = tuple(error.absolute_path)
        value: Any = error.instance
        at_type = path[-1:] == ("type",) or (len(path) > 1 and path[-2] == "type")
        if at_type and isinstance(value, str) and value not in _TYPES:
            line, column = _where(doc, path)
            yield (
                path,
                rule.at(
                    doc.file,
                    line,
                    column,
                    f"{dotted(path)}: {value!r} is not a JSON Schema type"
                    f"{did_you_mean(value, _TYPES)} (types: {', '.join(_TYPES)})",
                ),
            )
            continue
        chosen = best_match([error]) if error.context else error
        for found in check_error(chosen or error, doc, rule):
            yield path, found


def _subschemas(schema: Any, path: Path_) -> Iterator[tuple[Any, Path_]]:
    """Every schema directly inside ``schema``, with its path; beside a ``$ref`` too: a
    validator ignores those keywords, but a ref may point into them."""
    if not isinstance(schema, Mapping):
        return
    for keyword in _ONE:
        if keyword in schema:
            yield schema[keyword], (*path, keyword)
    items = schema.get("items")
    if isinstance(items, list):
        yield from ((sub, (*path, "items", i)) for i, sub in enumerate(items))
    elif items is not None:
        yield items, (*path, "items")
    for keyword in _MANY:
        for i, sub in enumerate(schema.get(keyword) or ()):
            yield sub, (*path, keyword, i)
    for keyword in _BY_NAME:
        for name, sub in (schema.get(keyword) or {}).items():
            if not (keyword == "dependencies" and isinstance(sub, list)):
                yield sub, (*path, keyword, name)


def pattern_findings(
    doc: Document, schema: Any, path: Path_, scope: SchemaScope
) -> Iterator[tuple[Path_, Diagnostic]]:
    """Each ``pattern`` (and ``patternProperties`` key) of ``schema`` that Python's re does
    not compile."""
    if not isinstance(schema, Mapping):
        return
    written: list[tuple[str, Path_, bool]] = []
    if isinstance(schema.get("pattern"), str):
        written.append((schema["pattern"], (*path, "pattern"), False))
    written += [
        (key, (*path, "patternProperties", key), True)
        for key in schema.get("patternProperties") or {}
    ]
    for pattern, at, key in written:
        try:
            re.compile(pattern)
        except re.error as exc:
            hint = ", such as [^\\W\\d_] for \\p{L}" if "\\p{" in pattern else ""
            line, column = _where(doc, at, key=key)
            yield (
                at,
                scope.pattern.at(
                    doc.file,
                    line,
                    column,
                    f"{dotted(at)}: pattern {pattern!r} does not compile with Python's re "
                    f"({exc}); rewrite it in that dialect{hint}",
                ),
            )
    for sub, sub_path in _subschemas(schema, path):
        yield from pattern_findings(doc, sub, sub_path, scope)


def _ref_problem(resolver: Any, ref: str, scope: SchemaScope) -> str | None:
    """What is wrong with ``ref``: it names nothing, or refs lead back to it and no keyword
    is ever checked (its check would recurse forever); None when it names a schema."""
    from referencing.exceptions import Unresolvable

    seen: set[int] = set()
    while True:
        try:
            resolved = resolver.lookup(ref)
        except Unresolvable:
            return f"names nothing in {scope.inside}{scope.ref_hint}"
        target = resolved.contents
        if not isinstance(target, Mapping | bool):
            return "names no schema" + scope.ref_hint
        if not (isinstance(target, Mapping) and isinstance(target.get("$ref"), str)):
            return None
        if id(target) in seen:
            return (
                f"leads into a loop of refs that never reaches a keyword, so {scope.checker} "
                "would recurse forever; let one of the refs name a schema with keywords"
            )
        seen.add(id(target))
        resolver, ref = resolved.resolver, target["$ref"]


def _has_ref(schema: Any) -> bool:
    """Whether a ``$ref`` is written anywhere :func:`ref_findings` looks."""
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            return True
        pending.extend(sub for sub, _ in _subschemas(node, ()))
    return False


def ref_findings(
    doc: Document, root: Any, base: Path_, scope: SchemaScope
) -> Iterator[tuple[Path_, Diagnostic]]:
    """Each ``$ref`` in ``root`` (written at ``base``) that names no schema inside it."""
    if not _has_ref(root):  # most schemas have no ref: spare importing `referencing`
        return
    from referencing.jsonschema import DRAFT7

    registry = known_refs()
    pending: list[tuple[Any, Path_, Any]] = [(root, base, None)]
    while pending:
        schema, path, resolver = pending.pop()
        if not isinstance(schema, Mapping):
            continue
        resource = DRAFT7.create_resource(dict(schema))
        if resolver is None:
            resolver = registry.resolver_with_root(resource)
        elif "$id" in schema and "$ref" not in schema:
            resolver = resolver.in_subresource(resource)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            problem = _ref_problem(resolver, ref, scope)
            if problem is not None:
                at = (*path, "$ref")
                line, column = _where(doc, at)
                yield (
                    at,
                    scope.ref.at(
                        doc.file,
                        line,
                        column,
                        f"{dotted(at)}: {ref!r} {problem}",
                    ),
                )
        pending.extend((sub, sub_path, resolver) for sub, sub_path in _subschemas(schema, path))


def unknown_keyword_findings(
    doc: Document, schema: Any, path: Path_, scope: SchemaScope
) -> Iterator[tuple[Path_, Diagnostic]]:
    """Each keyword of ``schema`` that draft-07 does not know and jobdef does not read there."""
    if not isinstance(schema, Mapping):
        return
    known = draft7_meta_schema()["properties"]
    own = scope.owned if scope.reads_own(path) else {}
    for keyword in schema:
        if keyword in own:
            continue
        if isinstance(keyword, str) and keyword not in known and keyword != "writeOnly":
            at = (*path, keyword)
            line, column = _where(doc, at, key=True)
            close = near_miss(keyword, set(known) | set(own))
            if keyword in scope.owned:
                hint = f"; {scope.home(path)} to {scope.owned[keyword]}"
            elif close:
                hint = f"; did you mean {close!r}?"
            else:
                hint = "; remove it, or say it in description"
            yield (
                at,
                scope.unknown.at(
                    doc.file,
                    line,
                    column,
                    f"{dotted(path)}: {keyword!r} is not a draft-07 keyword, so it checks "
                    f"nothing{hint}",
                ),
            )
    for sub, sub_path in _subschemas(schema, path):
        yield from unknown_keyword_findings(doc, sub, sub_path, scope)


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    args = dict(arg_schemas(doc))
    if not args:
        return
    meta = meta_check()
    if not all(meta(schema) for schema in args.values()):
        yield from meta_findings(doc, {"args": args}, meta_validator("args", "*"), SCHEMA_INVALID)
        return  # patterns and refs of a schema that is not one are not worth reading
    for name, schema in args.items():
        yield from schema_findings(doc, schema, ("args", name), ARG_SCOPE)


def schema_findings(
    doc: Document, schema: Any, path: Path_, scope: SchemaScope
) -> Iterator[tuple[Path_, Diagnostic]]:
    """The patterns, refs and keywords of a schema that is valid draft-07, checked."""
    yield from pattern_findings(doc, schema, path, scope)
    yield from ref_findings(doc, schema, path, scope)
    yield from unknown_keyword_findings(doc, schema, path, scope)


def check(context: Context) -> Iterator[Diagnostic]:
    """Build the args check of every job now, so that enqueue finds it ready."""
    for _, policy in context.jobs:
        args_check(policy).prepare()
    return iter(())
