"""Args schemas as the sheet writes them: validate checks them, enqueue checks args by them.

Each test loads a real sheet (``load_registry``) and enqueues into a real SQLite
queue: what validate passes, enqueue can check, and enqueue stores only args
the sheet allows.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jobdef.errors import ArgsError
from jobdef.runtime.queue import Queue, connect
from jobdef.sheets.build import args_schema
from jobdef.sheets.pipeline import load_registry
from jobdef.sheets.schema_fast import UnsupportedSchema, compile_schema

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: sample_job
handler: app.jobs:sample
args:
{args}
max_attempts: 1
timeout: 30s
errors:
  default: fatal
"""


@pytest.fixture
def enqueue(tmp_path: Path) -> Any:
    """``enqueue(args_yaml)`` -> a function storing one call's args (or raising ArgsError)."""
    opened: list[Queue] = []

    def make(args_yaml: str) -> Any:
        sheet = tmp_path / f"sheet{len(opened)}.yaml"
        sheet.write_text(SHEET.format(args=args_yaml), encoding="utf-8")
        queue = connect(f"sqlite:///{tmp_path / 'jobs.db'}", load_registry([sheet]))
        opened.append(queue)

        def call(args: dict[str, Any]) -> dict[str, Any]:
            stored = queue.enqueue("sample_job", args)
            record = queue.get(stored.id)
            assert record is not None
            return dict(record.args)

        return call

    yield make
    for queue in opened:
        queue.close()


def test_an_object_arg_keeps_its_draft07_required_list(enqueue: Any) -> None:
    call = enqueue("  filter: {type: object, properties: {foo: {}}, required: [foo]}")
    with pytest.raises(ArgsError, match=r"args\.filter: 'foo' is a required property"):
        call({"filter": {}})
    assert call({"filter": {"foo": 1}}) == {"filter": {"foo": 1}}


def test_required_false_still_makes_an_arg_optional(enqueue: Any) -> None:
    call = enqueue("  note: {type: string, required: false}\n  n: {type: integer}")
    assert call({"n": 1}) == {"n": 1}
    with pytest.raises(ArgsError, match="'n' is a required property"):
        call({"note": "x"})


def test_args_schema_keeps_a_list_and_drops_only_the_boolean(enqueue: Any) -> None:
    schema = args_schema({"a": {"type": "object", "required": ["x"]}, "b": {"required": False}})
    assert schema["properties"] == {"a": {"type": "object", "required": ["x"]}, "b": {}}
    assert schema["required"] == ["a"]


def test_a_ref_to_definitions_resolves_inside_the_arg(enqueue: Any) -> None:
    call = enqueue(
        "  window:\n"
        "    definitions: {day: {type: integer, minimum: 1, maximum: 31}}\n"
        "    type: object\n"
        "    properties: {first: {$ref: '#/definitions/day'}, last: {$ref: '#/definitions/day'}}"
    )
    assert call({"window": {"first": 1, "last": 31}}) == {"window": {"first": 1, "last": 31}}
    with pytest.raises(ArgsError, match=r"args\.window\.last: 32 is greater than the maximum"):
        call({"window": {"first": 1, "last": 32}})


def test_a_ref_to_hash_is_the_arg_itself_so_trees_recurse(enqueue: Any) -> None:
    call = enqueue(
        "  tree:\n"
        "    type: object\n"
        "    properties: {label: {type: string}, children: {type: array, items: {$ref: '#'}}}\n"
        "    additionalProperties: false"
    )
    ok = {"tree": {"label": "a", "children": [{"label": "b", "children": []}]}}
    assert call(ok) == ok
    with pytest.raises(ArgsError, match=r"args\.tree\.children\[0\]\.children\[0\]\.label: 5"):
        call({"tree": {"children": [{"children": [{"label": 5}]}]}})


_INNER = {
    "$id": "http://example.com/inner.json",
    "definitions": {"a": {"type": "integer"}},
    "properties": {"v": {"$ref": "#/definitions/a"}},
}


@pytest.mark.parametrize(
    ("schema", "valid", "invalid"),
    [
        # ~0 and ~1 are ~ and / in a pointer; %22 is a percent-encoded quote.
        (
            {
                "definitions": {"a~b": {"type": "integer"}, "c/d": {"type": "string"}},
                "properties": {
                    "x": {"$ref": "#/definitions/a~0b"},
                    "y": {"$ref": "#/definitions/c~1d"},
                },
            },
            {"x": 1, "y": "s"},
            {"x": "1"},
        ),
        (
            {
                "definitions": {'q"t': {"type": "integer"}},
                "properties": {"x": {"$ref": "#/definitions/q%22t"}},
            },
            {"x": 1},
            {"x": "1"},
        ),
        # A pointer through a list index.
        ({"items": [{"type": "integer"}, {"$ref": "#/items/0"}]}, [1, 2], [1, "2"]),
        # "#/definitions/a" under an embedded $id is that document's, not the root's.
        (
            {"$id": "http://example.com/root.json", "properties": {"inner": _INNER}},
            {"inner": {"v": 1}},
            {"inner": {"v": "x"}},
        ),
        # A recursive ref: the nested level is checked, not assumed valid.
        (
            {"properties": {"foo": {"$ref": "#"}}, "additionalProperties": False},
            {"foo": {"foo": {}}},
            {"foo": {"bar": False}},
        ),
    ],
)
def test_the_fast_check_reads_pointers_or_gives_up(
    enqueue: Any, schema: Any, valid: Any, invalid: Any
) -> None:
    try:
        check = compile_schema(schema)
    except UnsupportedSchema:
        pass  # giving up is fine: the caller asks jsonschema
    else:
        assert (check(valid), check(invalid)) == (True, False)
    call = enqueue(f"  value: {json.dumps(schema)}")
    assert call({"value": valid}) == {"value": valid}
    with pytest.raises(ArgsError):
        call({"value": invalid})


@pytest.mark.parametrize(
    "schema",
    [
        {"$id": "http://example.com/root.json", "properties": {"inner": _INNER}},
        {"$ref": "#/definitions/missing"},
        {"$ref": "#"},
        {
            "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
            "$ref": "#/definitions/a",
        },
        {"type": "strnig"},
        {"pattern": "^\\p{L}+$"},
        {"minimum": "5"},
        {"enum": 3},
    ],
)
def test_the_fast_check_never_raises_anything_but_unsupported(schema: Any) -> None:
    try:
        check = compile_schema(schema)
    except UnsupportedSchema:
        return
    check({"any": "value"})


def test_a_schema_the_fast_check_gives_up_on_is_ready_after_validate(tmp_path: Path) -> None:
    from jobdef.sheets.args_check import ArgsCheck, args_check

    sheet = tmp_path / "sheet.yaml"
    sheet.write_text(SHEET.format(args="  ids: {type: array, maxItems: 3}"), encoding="utf-8")
    policy = load_registry([sheet]).job("sample_job")
    assert args_check(policy).ready
    assert not ArgsCheck(policy.args_schema).ready  # what enqueue would have met without it


@pytest.mark.parametrize(
    "arg",
    [
        "{type: strnig}",
        "{type: int}",
        "{type: string, pattern: '^\\p{L}+$'}",
        "{$ref: '#/definitions/nope'}",
        "{$ref: '#', type: integer}",
        # A ref may point into keywords a validator ignores beside it.
        "{$ref: '#/definitions/a', definitions: {a: {pattern: '\\p{L}'}}}",
    ],
)
def test_schemas_enqueue_cannot_check_fail_validate(tmp_path: Path, arg: str) -> None:
    from jobdef.errors import SheetError

    sheet = tmp_path / "sheet.yaml"
    sheet.write_text(SHEET.format(args=f"  item: {arg}"), encoding="utf-8")
    with pytest.raises(SheetError, match=r"sheet\.yaml:\d+:\d+: .*JD10[678]"):
        load_registry([sheet])


def test_a_lazy_check_first_used_by_two_threads_at_once_compiles_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shipped schemas' checks compile each property at first use and are shared by
    the threads of a process: a thread that reaches a ref another is still compiling
    waits for it, instead of calling its unfinished forward."""
    from jobdef.sheets.schema_fast import Compiler

    slow_pattern = Compiler._pattern

    def pattern(self: Compiler, value: str, schema: Any) -> Any:
        time.sleep(0.3)  # the first thread is inside the ref's compile this long
        return slow_pattern(self, value, schema)

    monkeypatch.setattr(Compiler, "_pattern", pattern)
    name = {"$ref": "#/definitions/name"}
    check = compile_schema(
        {
            "definitions": {"name": {"type": "string", "pattern": "^a"}},
            "properties": {"first": name, "second": name},
        },
        lazy=True,
    )
    answers: dict[str, Any] = {}

    def use(key: str) -> None:
        try:
            answers[key] = check({key: "ada"})
        except Exception as exc:  # what the second thread raised without the lock
            answers[key] = exc

    threads = [threading.Thread(target=use, args=(key,)) for key in ("first", "second")]
    threads[0].start()
    time.sleep(0.1)
    threads[1].start()
    for thread in threads:
        thread.join()
    assert answers == {"first": True, "second": True}
    assert check({"second": "bob"}) is False
