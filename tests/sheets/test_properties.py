"""Property tests: random and mutated YAML never makes the loader or validator raise, and the
fast schema check always agrees with jsonschema."""

from __future__ import annotations

import copy
import math
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from jobdef.sheets.args_check import draft7_meta_schema
from jobdef.sheets.pipeline import validate_sheets
from jobdef.sheets.rules.args import meta_check
from jobdef.sheets.schema_check import _fast_check, schema
from jobdef.sheets.schema_fast import compile_schema
from jobdef.sheets.strict_yaml import parse_text

pytestmark = pytest.mark.slow  # property tests of many examples each

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "jobdefs").glob("*.yaml"))
EXAMPLE_TEXTS = [p.read_text(encoding="utf-8") for p in EXAMPLES]
EXAMPLE_DOCS = [doc.data for text in EXAMPLE_TEXTS for doc in parse_text(text, "x.yaml")[0]]
YAML_BITS = [
    ":",
    " ",
    "\n",
    "-",
    "[",
    "]",
    "{",
    "}",
    "&a",
    "*a",
    "<<",
    "!!",
    "'",
    '"',
    "\t",
    "#",
    "|",
    ">",
    "---",
    "on",
    "1:30",
    "010",
    "~",
    "?",
    ",",
    "  ",
]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=12),
    st.sampled_from(
        [
            "10s",
            "0s",
            "1:30",
            "exponential",
            "list",
            "retry",
            "dead",
            "{x}",
            "ConnectionError",
            "a.b:c",
            "Job",
            "Defaults",
            "until_resolved",
            "*/5 * * * *",
        ]
    ),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=8), children, max_size=4),
    ),
    max_leaves=8,
)


@st.composite
def mutated_text(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(EXAMPLE_TEXTS))
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        if not text:
            break
        at = draw(st.integers(min_value=0, max_value=len(text)))
        action = draw(st.sampled_from(["insert", "delete", "duplicate_line", "replace"]))
        if action == "insert":
            text = text[:at] + draw(st.sampled_from(YAML_BITS)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(min_value=1, max_value=20)) :]
        elif action == "duplicate_line":
            lines = text.splitlines(keepends=True)
            index = at % len(lines)
            lines.insert(index, lines[index])
            text = "".join(lines)
        else:
            text = text[:at] + draw(st.text(max_size=4)) + text[at + 1 :]
    return text


def _validate_text(text: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sheet.yaml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        result = validate_sheets([folder])
    for diagnostic in result.diagnostics:
        assert diagnostic.line >= 1
        assert diagnostic.column >= 1
        assert diagnostic.code.startswith("JD")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_never_escapes_the_loader(text: str) -> None:
    parse_text(text, "random.yaml")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_text())
def test_mutated_sheets_give_diagnostics_never_exceptions(text: str) -> None:
    _validate_text(text)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_give_diagnostics_never_exceptions(data: bytes) -> None:
    _validate_text(data)


@st.composite
def mutated_document(draw: st.DrawFn) -> Any:
    doc = copy.deepcopy(draw(st.sampled_from(EXAMPLE_DOCS)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        target = doc
        while isinstance(target, dict) and target and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(target, key=str)))
            if not isinstance(target[key], dict | list):
                break
            target = target[key] if isinstance(target[key], dict) else {"_": target[key]}
        if isinstance(target, dict) and target:
            key = draw(st.sampled_from(sorted(target, key=str)))
            action = draw(st.sampled_from(["replace", "delete", "add"]))
            if action == "replace":
                target[key] = draw(json_values)
            elif action == "delete":
                del target[key]
            else:
                target[draw(st.text(max_size=8))] = draw(json_values)
    return doc


@settings(max_examples=400, deadline=None)
@given(st.one_of(mutated_document(), json_values))
def test_fast_schema_check_agrees_with_jsonschema(doc: Any) -> None:
    expected = Draft7Validator(schema()).is_valid(doc)
    assert compile_schema(schema())(doc) == expected
    assert _fast_check()(doc) == expected  # the one validate uses: compiled lazily, shared
    assert meta_check()(doc) == Draft7Validator(Draft7Validator.META_SCHEMA).is_valid(doc)


def test_the_shipped_schemas_compile_whole() -> None:
    """validate compiles jobdef's schema and draft-07's meta-schema lazily, each property
    and pattern at its first use; compiled whole, neither is refused."""
    assert compile_schema(schema())(schema()) is False  # a schema is not a sheet
    assert compile_schema(draft7_meta_schema())(schema()) is True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_document())
def test_mutated_documents_give_diagnostics_never_exceptions(doc: Any) -> None:
    import yaml

    _validate_text(yaml.safe_dump(doc, allow_unicode=True))


arg_schemas = st.fixed_dictionaries(
    {"type": st.sampled_from(["integer", "number", "string", "boolean", "array", "object"])},
    optional={
        "minimum": st.integers(-5, 5),
        "maximum": st.integers(-5, 5),
        "exclusiveMinimum": st.integers(-5, 5),
        "minLength": st.integers(0, 3),
        "maxLength": st.integers(0, 3),
        "pattern": st.sampled_from(["^[a-z]+$", "x", "^[0-9]{2}"]),
        "enum": st.lists(st.one_of(st.integers(-2, 2), st.sampled_from(["a", "ab"])), min_size=1),
        "minItems": st.integers(0, 2),
        "uniqueItems": st.booleans(),
        "items": st.just({"type": "integer"}),
        "required": st.booleans(),
    },
)


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["a", "b"]), arg_schemas, max_size=2),
    st.dictionaries(st.sampled_from(["a", "b", "c"]), json_values, max_size=3),
)
def test_enqueue_args_check_agrees_with_jsonschema(args: dict[str, Any], values: Any) -> None:
    from jobdef.errors import ArgsError
    from jobdef.policy.model import JobPolicy
    from jobdef.policy.values import freeze
    from jobdef.runtime.queue import validate_args
    from jobdef.sheets.build import args_schema

    full = args_schema(args)
    policy = JobPolicy(name="j", handler="m:f", args_schema=freeze(full))
    try:
        validate_args(policy, values)
        accepted = True
    except ArgsError:
        accepted = False
    assert accepted == Draft7Validator(full).is_valid(values)


awkward_scalars = st.one_of(
    json_scalars,
    st.floats(),  # NaN and the infinities too
    st.text(alphabet=st.characters(codec=None), max_size=6),  # NUL, lone surrogates
    st.sampled_from([Decimal("1.5"), b"x", (1, 2), 2**70, "\x00", "\ud800", "é"]),
)


@settings(max_examples=400, deadline=None)
@example({"a": "\x00"})
@example({"\x00": 1})
@example({"a": "\ud800"})
@example({"\ud800": 1})
@example({"a": float("nan")})
@example({"a": -math.inf})
@example({1: 1})
@example({"a": Decimal("1.5")})
@example({"é": "ü", "a": True, "b": None, "c": 2**70, "d": 0.5})
@given(
    st.dictionaries(
        st.one_of(st.text(alphabet=st.characters(codec=None), max_size=4), st.integers(0, 3)),
        st.one_of(awkward_scalars, st.lists(awkward_scalars, max_size=2)),
        max_size=4,
    )
)
def test_the_shape_check_of_flat_args_answers_as_the_full_walk(args: dict[Any, Any]) -> None:
    """The quick answer for args without containers (the common case) is the walk's."""
    from jobdef.sheets.args_json import _shape_problem, _walk_problem

    assert _shape_problem(args, 32) == _walk_problem(args, 32)
