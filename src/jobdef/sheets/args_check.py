"""A job's args checked as its sheet says: each arg's schema is a draft-07 schema of its own.

``args_schema`` (:func:`jobdef.sheets.build.args_schema`) is one object schema
whose ``properties`` are the args' schemas. Validating args against it as one
schema would resolve a ``$ref: "#/definitions/..."`` or ``$ref: "#"`` written in
an arg against that wrapper, which the sheet's author never wrote. So
:class:`ArgsCheck` checks the wrapper's own keywords (which args exist, which
are required) on the args object, and then each arg's value against that arg's
schema as a root: its refs resolve inside it, as in any JSON Schema document.

Each root gets a fast yes/no check (:mod:`jobdef.sheets.schema_fast`) when it
compiles; ``jsonschema`` runs for the others, and to word what is wrong. Refs
are never fetched over the network: only the arg's own schema and the
standard meta-schemas are known (``jobdef validate`` refuses any other ref).
What is wrong with a sensitive arg (:func:`jobdef.redact.sensitive_arg`) is said
by the keyword it breaks, never by quoting the value.
:func:`args_check` builds the check of a policy once; validation builds it for
every job, so enqueue never meets a schema it cannot check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from jobdef.policy.values import thaw
from jobdef.redact import secret_name, sensitive_arg
from jobdef.sheets.schema_fast import Check, UnsupportedSchema, compile_schema

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy


class ArgError(NamedTuple):
    """One way args break the schema: where (path inside the args) and what."""

    path: tuple[str | int, ...]
    message: str


@cache
def draft7_meta_schema() -> dict[str, Any]:
    """The draft-07 meta-schema, read from the file ``jsonschema`` ships (via its
    ``jsonschema_specifications``) without importing either: validating a valid sheet
    imports no ``jsonschema`` at all."""
    import importlib.util  # here: only sheets with args read the meta-schema

    spec = importlib.util.find_spec("jsonschema_specifications")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("jsonschema-specifications is missing; reinstall jobdef")
    folder = Path(next(iter(spec.submodule_search_locations)))
    loaded: dict[str, Any] = json.loads(
        (folder / "schemas" / "draft7" / "metaschema.json").read_text("utf-8")
    )
    return loaded


META_SCHEMA_URI = "http://json-schema.org/draft-07/schema"


@cache
def known_refs() -> Any:
    """The only documents a ref may name besides its own schema: the draft-07
    meta-schema. A ``referencing`` registry that fetches nothing (its default)."""
    from referencing import Registry
    from referencing.jsonschema import DRAFT7

    meta = DRAFT7.create_resource(draft7_meta_schema())
    return Registry().with_resources([(META_SCHEMA_URI, meta), (META_SCHEMA_URI + "#", meta)])


def draft7_validator(schema: Any) -> Any:
    """A ``Draft7Validator`` for ``schema`` as a root document, never fetching a ref."""
    from jsonschema import Draft7Validator

    return Draft7Validator(schema, registry=known_refs())


class _Root:
    """One schema checked as a document of its own; a ``sensitive`` one words what is wrong
    without quoting the value (jsonschema's messages do: ``'hunter2' is too short``)."""

    def __init__(
        self, schema: Any, sensitive: bool = False, hidden: frozenset[str] = frozenset()
    ) -> None:
        self.schema = schema
        self.sensitive = sensitive
        self.hidden = hidden  # top-level fields whose values are never quoted
        try:
            self.fast: Check | None = compile_schema(schema) if isinstance(schema, dict) else None
        except UnsupportedSchema:
            self.fast = None
        self._validator: Any = None

    @property
    def validator(self) -> Any:
        if self._validator is None:
            self._validator = draft7_validator(self.schema)
        return self._validator

    def errors(self, value: Any, prefix: tuple[str | int, ...]) -> list[ArgError]:
        if self.fast is not None and self.fast(value):
            return []
        from referencing.exceptions import Unresolvable

        try:
            return [
                ArgError((*prefix, *e.absolute_path), _blind(e) if self._hide(e) else e.message)
                for e in self.validator.iter_errors(value)
            ]
        except (Unresolvable, RecursionError, re.error) as exc:  # `jobdef validate` refuses all
            what = {RecursionError: "a $ref loops", re.error: f"a pattern: {exc}"}.get(
                type(exc), f"$ref {exc} is unknown"
            )
            return [ArgError(prefix, f"the sheet's schema cannot be checked ({what})")]

    def _hide(self, error: Any) -> bool:
        """Whether the message of ``error`` would quote a secret: the arg is sensitive, or
        the value it quotes is under a key, or holds a key, whose name says secret (as
        :func:`jobdef.redact.shown_args` hides inside the args it shows)."""
        if self.sensitive:
            return True
        if error.absolute_path and error.absolute_path[0] in self.hidden:
            return True
        if any(isinstance(part, str) and secret_name(part) for part in error.absolute_path):
            return True
        return _holds_secret_key(error.instance)


def _holds_secret_key(value: Any, depth: int = 0) -> bool:
    if depth > 64:
        return True  # deeper than any stored args: not worth quoting anyway
    if isinstance(value, dict):
        return any(
            (isinstance(key, str) and secret_name(key)) or _holds_secret_key(item, depth + 1)
            for key, item in value.items()
        )
    if isinstance(value, list):
        return any(_holds_secret_key(item, depth + 1) for item in value)
    return False


def _blind(error: Any) -> str:
    """What a value breaks, named by the sheet's keyword and its value, never the call's."""
    rule = json.dumps(error.validator_value, ensure_ascii=False, default=str)
    rule = rule if len(rule) <= 60 else rule[:59] + "…"
    return f"breaks `{error.validator}: {rule}` (a sensitive value: it is not shown)"


class ArgsCheck:
    """The args check of one job: the wrapper's keywords, then each arg against its own root."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        plain = thaw(schema)
        properties = plain.get("properties", {})
        # The wrapper without the args' schemas: which names exist, which are required.
        self._object = _Root({**plain, "properties": dict.fromkeys(properties, True)})
        self._args = {
            name: _Root(sub, sensitive_arg(name, sub)) for name, sub in properties.items()
        }

    def errors(self, args: Mapping[str, Any]) -> list[ArgError]:
        """What is wrong with ``args`` (``[]`` when they are valid), sorted by path."""
        found = self._object.errors(dict(args), ())
        for name, root in self._args.items():
            if name in args:
                found.extend(root.errors(args[name], (name,)))
        return sorted(found, key=lambda e: list(map(str, e.path)))

    def passes(self, args: dict[str, Any]) -> bool:
        """Whether the fast checks alone find ``args`` valid: the answer of the common
        case, without the lists :meth:`errors` builds. False is not "invalid": a root the
        fast check does not compile, or args it refuses, are for :meth:`errors` to word."""
        fast = self._object.fast
        if fast is None or not fast(args):
            return False
        for name, root in self._args.items():
            if name in args and (root.fast is None or not root.fast(args[name])):
                return False
        return True

    def arg_errors(self, name: str, value: Any) -> list[ArgError]:
        """What is wrong with ``value`` as the arg ``name`` alone (a workflow step's literal);
        ``[]`` for a name the schema does not define."""
        root = self._args.get(name)
        return [] if root is None else root.errors(value, (name,))

    @property
    def ready(self) -> bool:
        """Whether every root is checkable without building anything: a fast check or a
        ``jsonschema`` validator already built."""
        roots = (self._object, *self._args.values())
        return all(root.fast is not None or root._validator is not None for root in roots)

    def prepare(self) -> None:
        """Build now (validation does) the ``jsonschema`` validator of every root the fast
        check does not compile: those are asked on every call."""
        for root in (self._object, *self._args.values()):
            if root.fast is None:
                _ = root.validator


class ResultCheck:
    """The check of a handler's return value against its sheet's ``result.schema`` (plain
    dicts and lists, as a worker's child receives it): one root, whose ``sensitive``
    top-level fields (as :func:`~jobdef.redact.sensitive_arg` reads an arg) and
    secret-sounding keys are never quoted in a message."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        plain = thaw(schema)
        properties = plain.get("properties") if isinstance(plain, dict) else None
        hidden = frozenset(
            name
            for name, sub in (properties.items() if isinstance(properties, dict) else ())
            if sensitive_arg(name, sub)
        )
        self._root = _Root(plain, hidden=hidden)

    def errors(self, value: Any) -> list[ArgError]:
        """What is wrong with ``value`` (``[]`` when it is valid), sorted by path."""
        return sorted(self._root.errors(value, ()), key=lambda e: list(map(str, e.path)))


_checks: dict[str, ArgsCheck] = {}


def args_check(policy: JobPolicy) -> ArgsCheck:
    """The args check of a job, built once per policy object (again if the policy changes)."""
    cached = _checks.get(policy.name)
    if cached is None or cached.schema is not policy.args_schema:
        cached = _checks[policy.name] = ArgsCheck(policy.args_schema)
    return cached
