"""A yes/no JSON Schema check, compiled once into closures, for the common case: a valid sheet.

``jsonschema`` takes about 0.8 ms per sheet and 80 ms to import; most sheets
are valid, so :mod:`jobdef.sheets.schema_check` asks this check first and runs
``jsonschema`` (for its messages and ``best_match``) only on documents that
fail it. It covers the common draft-07 keywords and refuses to compile
(:class:`UnsupportedSchema`) a schema with any other keyword, a ``$ref`` other
than a JSON pointer into the schema itself, an embedded ``$id`` (which would
move the base of later refs) or a malformed keyword value, so it can never
quietly accept what ``jsonschema`` would refuse; the caller then asks
``jsonschema``. A property test and the JSON-Schema-Test-Suite hold the two to
the same answers.
"""

from __future__ import annotations

import _thread  # threading's lock, without importing threading at every validate
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

Check = Callable[[Any], bool]

# Keywords that describe and never constrain (``format`` included: draft-07 makes it an
# annotation unless a format checker is asked for, and jobdef's jsonschema asks for none).
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "definitions",
        "format",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
        "sensitive",  # jobdef's: the displays hide the arg (jobdef.redact.sensitive_arg)
        "public",  # jobdef's: a receipt may show the arg (jobdef.redact.public_arg)
    }
)


def _anything(value: Any) -> bool:
    """The check of the schema ``true``, which every value passes."""
    return True


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema defines it: ``1 == 1.0``, but ``true != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


class UnsupportedSchema(ValueError):
    """The schema uses a keyword, a ref or a value this checker does not implement."""


_NUMBER = (int, float)


def _expect(value: Any, kind: type | tuple[type, ...]) -> Any:
    """``value`` when it is of ``kind`` (never a bool), else give up on the schema."""
    if isinstance(value, bool) or not isinstance(value, kind):
        raise UnsupportedSchema(f"unexpected keyword value {value!r}")
    return value


def _pointer_target(root: Any, pointer: str) -> Any:
    """The node a ``#``/``#/a/b`` ref names: %-decoded, then ``~1`` -> ``/``, ``~0`` -> ``~``."""
    if pointer == "#":
        return root
    if not pointer.startswith("#/"):
        raise UnsupportedSchema(f"only a JSON pointer into the schema is supported, got {pointer}")
    target = root
    for raw in unquote(pointer[2:]).split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, list) and part.isdigit():
            index = int(part)
            if index >= len(target):
                raise UnsupportedSchema(f"$ref {pointer} points at nothing")
            target = target[index]
        elif isinstance(target, Mapping) and part in target:
            target = target[part]
        else:
            raise UnsupportedSchema(f"$ref {pointer} points at nothing")
    return target


class Compiler:
    def __init__(self, root: Mapping[str, Any], *, lazy: bool = False) -> None:
        self.root = root
        self.lazy = lazy
        self._refs: dict[str, Check] = {}
        # A lazy check is shared (one per process) and may be first used by two threads
        # at once: one compiles at a time, or the second could take a ref the first is
        # still compiling (its forward, whose cell is still empty).
        self._compiling = _thread.RLock()

    def _deferred(self, schema: Any) -> Check:
        """``schema``'s check, compiled at its first call when compiling lazily."""
        if not self.lazy or isinstance(schema, bool):
            return self.compile(schema)
        compiled: list[Check] = []

        def check(v: Any) -> bool:
            if not compiled:
                with self._compiling:
                    if not compiled:
                        compiled.append(self.compile(schema))
            return compiled[0](v)

        return check

    def ref(self, pointer: str) -> Check:
        if pointer not in self._refs:
            target = _pointer_target(self.root, pointer)
            # A recursive ref calls the finished check through this cell, never a placeholder.
            cell: list[Check] = []

            def forward(v: Any) -> bool:
                return cell[0](v)

            self._refs[pointer] = forward
            compiled = self.compile(target)
            if compiled is forward:  # refs alone lead back here: nothing would ever be checked
                raise UnsupportedSchema(f"$ref {pointer} leads back to itself")
            cell.append(compiled)
            self._refs[pointer] = compiled
        return self._refs[pointer]

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return _anything
        if schema is False:
            return lambda v: False
        if not isinstance(schema, Mapping):
            raise UnsupportedSchema(f"a schema is a mapping or a boolean, got {schema!r}")
        if "$id" in schema and schema is not self.root:
            raise UnsupportedSchema("an embedded $id changes the base of refs")
        if "$ref" in schema:  # draft-07: every keyword beside $ref is ignored
            return self._ref(schema["$ref"], schema)
        checks: list[Check] = []
        for keyword, value in schema.items():
            if keyword in _ANNOTATIONS:
                continue
            builder = getattr(self, "_" + keyword.lstrip("$"), None)
            if builder is None:
                raise UnsupportedSchema(f"keyword {keyword!r} is not supported")
            if keyword in ("then", "else"):
                continue  # compiled together with "if"
            check = builder(value, schema)
            if check is not _anything:  # e.g. properties whose schemas are all `true`
                checks.append(check)
        if not checks:
            return _anything
        if len(checks) == 1:
            return checks[0]

        def check_all(v: Any) -> bool:
            return all(check(v) for check in checks)

        return check_all

    def _ref(self, value: str, schema: Mapping[str, Any]) -> Check:
        return self.ref(_expect(value, str))

    def _type(self, value: str | list[str], schema: Mapping[str, Any]) -> Check:
        names = [value] if isinstance(value, str) else _expect(value, list)
        if not names or any(name not in _TYPES for name in names):
            raise UnsupportedSchema(f"type {value!r} is not a JSON Schema type")
        tests = [_TYPES[name] for name in names]
        if len(tests) == 1:
            return tests[0]
        return lambda v: any(test(v) for test in tests)

    def _enum(self, value: list[Any], schema: Mapping[str, Any]) -> Check:
        items = _expect(value, list)
        return lambda v: any(json_equal(v, item) for item in items)

    def _const(self, value: Any, schema: Mapping[str, Any]) -> Check:
        return lambda v: json_equal(v, value)

    def _pattern(self, value: str, schema: Mapping[str, Any]) -> Check:
        pattern = _expect(value, str)
        if self.lazy:  # re's own cache keeps it compiled after the first string
            return lambda v: not isinstance(v, str) or re.search(pattern, v) is not None
        search = re.compile(pattern).search
        return lambda v: not isinstance(v, str) or search(v) is not None

    def _minLength(self, value: int, schema: Mapping[str, Any]) -> Check:
        _expect(value, int)
        return lambda v: not isinstance(v, str) or len(v) >= value

    def _maxLength(self, value: int, schema: Mapping[str, Any]) -> Check:
        _expect(value, int)
        return lambda v: not isinstance(v, str) or len(v) <= value

    def _minimum(self, value: float, schema: Mapping[str, Any]) -> Check:
        _expect(value, _NUMBER)
        return lambda v: not _is_number(v) or v >= value

    def _maximum(self, value: float, schema: Mapping[str, Any]) -> Check:
        _expect(value, _NUMBER)
        return lambda v: not _is_number(v) or v <= value

    def _exclusiveMinimum(self, value: float, schema: Mapping[str, Any]) -> Check:
        _expect(value, _NUMBER)
        return lambda v: not _is_number(v) or v > value

    def _minItems(self, value: int, schema: Mapping[str, Any]) -> Check:
        _expect(value, int)
        return lambda v: not isinstance(v, list) or len(v) >= value

    def _uniqueItems(self, value: bool, schema: Mapping[str, Any]) -> Check:
        if not value:
            return _anything

        def unique(v: Any) -> bool:
            if not isinstance(v, list):
                return True
            return not any(json_equal(a, b) for i, a in enumerate(v) for b in v[i + 1 :])

        return unique

    def _items(self, value: Any, schema: Mapping[str, Any]) -> Check:
        if isinstance(value, list):
            raise UnsupportedSchema("tuple-form items is not supported")
        item = self.compile(value)
        return lambda v: not isinstance(v, list) or all(item(x) for x in v)

    def _required(self, value: list[str], schema: Mapping[str, Any]) -> Check:
        names = _expect(value, list)
        return lambda v: not isinstance(v, dict) or all(name in v for name in names)

    def _properties(self, value: Mapping[str, Any], schema: Mapping[str, Any]) -> Check:
        compiled = {name: self._deferred(sub) for name, sub in value.items()}
        props = {name: check for name, check in compiled.items() if check is not _anything}
        if not props:
            return _anything

        def properties(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for name, item in v.items():
                check = props.get(name)
                if check is not None and not check(item):
                    return False
            return True

        return properties

    def _additionalProperties(self, value: Any, schema: Mapping[str, Any]) -> Check:
        if "patternProperties" in schema:
            raise UnsupportedSchema("patternProperties is not supported")
        known = frozenset(schema.get("properties", {}))
        if value is False:
            return lambda v: not isinstance(v, dict) or known.issuperset(v)
        extra = self.compile(value)
        return lambda v: (
            not isinstance(v, dict)
            or all(extra(item) for name, item in v.items() if name not in known)
        )

    def _propertyNames(self, value: Any, schema: Mapping[str, Any]) -> Check:
        name = self.compile(value)
        return lambda v: not isinstance(v, dict) or all(name(key) for key in v)

    def _allOf(self, value: list[Any], schema: Mapping[str, Any]) -> Check:
        subs = [self.compile(sub) for sub in value]
        return lambda v: all(sub(v) for sub in subs)

    def _anyOf(self, value: list[Any], schema: Mapping[str, Any]) -> Check:
        subs = [self.compile(sub) for sub in value]
        return lambda v: any(sub(v) for sub in subs)

    def _oneOf(self, value: list[Any], schema: Mapping[str, Any]) -> Check:
        subs = [self.compile(sub) for sub in value]
        return lambda v: sum(1 for sub in subs if sub(v)) == 1

    def _if(self, value: Any, schema: Mapping[str, Any]) -> Check:
        test = self.compile(value)
        then = self.compile(schema.get("then", True))
        otherwise = self.compile(schema.get("else", True))
        return lambda v: then(v) if test(v) else otherwise(v)

    _then = _if  # looked up only to accept the keyword; compiled by _if
    _else = _if


def compile_schema(schema: Mapping[str, Any], *, lazy: bool = False) -> Check:
    """A function telling whether an instance is valid against ``schema``.

    Raises :class:`UnsupportedSchema`, and nothing else, for a schema it does not compile.
    ``lazy`` compiles each property's schema and each pattern when first used: for the
    schemas jobdef ships, which a test compiles whole, so that one `jobdef validate`
    compiles only what its sheets reach (half of the 4 ms the two cost whole).
    """
    try:
        return Compiler(schema, lazy=lazy).compile(schema)
    except UnsupportedSchema:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, re.error) as exc:
        raise UnsupportedSchema(f"cannot compile this schema: {exc}") from exc
