"""The frozen classes on :class:`~jobdef.records.Record` compare, hash and show themselves
as the methods ``@dataclass(frozen=True)`` would generate for them, which they no longer
compile at import."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from jobdef.policy import model
from jobdef.policy.backoff import Timeline, TimelineRow
from jobdef.policy.fields import PolicyField
from jobdef.project import Config
from jobdef.records import Record
from jobdef.sheets.diagnostics import Diagnostic, Location
from jobdef.sheets.document import Document
from jobdef.sheets.rules.base import Rule

MODEL = [
    cls
    for cls in vars(model).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == model.__name__
]
ON_RECORD = [
    *MODEL,
    Location,
    Diagnostic,
    Document,
    Rule,
    PolicyField,
    Timeline,
    TimelineRow,
    Config,
]


def _copied_fields(cls: type) -> list[tuple[str, Any, dataclasses.Field[Any]]]:
    return [
        (
            f.name,
            f.type,
            dataclasses.field(
                default=f.default,
                default_factory=f.default_factory,
                repr=f.repr,
                hash=f.hash,
                compare=f.compare,
            ),
        )
        for f in dataclasses.fields(cls)
    ]


@pytest.mark.parametrize("cls", ON_RECORD, ids=lambda cls: cls.__name__)
def test_the_frozen_classes_compile_none_of_repr_eq_or_hash(cls: type) -> None:
    assert issubclass(cls, Record)
    assert not {"__repr__", "__eq__", "__hash__"} & set(vars(cls))
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", MODEL, ids=lambda cls: cls.__name__)
def test_the_model_is_shown_compared_and_hashed_as_generated_methods_would(cls: type) -> None:
    generated = dataclasses.make_dataclass(cls.__name__, _copied_fields(cls), frozen=True)
    generated.__qualname__ = cls.__qualname__
    required = {
        f.name: f"value of {f.name}"
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    ours, theirs = cls(**required), generated(**required)
    assert repr(ours) == repr(theirs)
    assert ours == cls(**required)
    assert ours != theirs  # another class, as a generated __eq__ says too
    name = next(iter(required), None)
    if name is not None:
        assert ours != cls(**{**required, name: "another value"})
    try:
        expected_hash: int | None = hash(theirs)
    except TypeError:  # a mapping field: neither is hashable
        expected_hash = None
    if expected_hash is None:
        with pytest.raises(TypeError):
            hash(ours)
    else:
        assert hash(ours) == expected_hash


def test_an_origin_is_equal_hashed_and_shown_by_its_fields() -> None:
    origin = model.Origin("a.yaml", 3, 7)
    assert repr(origin) == "Origin(file='a.yaml', line=3, column=7, source='sheet')"
    assert origin == model.Origin("a.yaml", 3, 7)
    assert origin != model.Origin("a.yaml", 3, 8)
    assert origin != ("a.yaml", 3, 7, "sheet")
    assert len({origin, model.Origin("a.yaml", 3, 7)}) == 1
    assert hash(model.LimitsPolicy()) == hash(model.LimitsPolicy())  # one field
    with pytest.raises(dataclasses.FrozenInstanceError):
        origin.line = 4  # type: ignore[misc]
    assert dataclasses.replace(origin, line=4) == model.Origin("a.yaml", 4, 7)


def test_fields_left_out_of_comparison_or_repr_stay_out() -> None:
    @dataclasses.dataclass(frozen=True, repr=False, eq=False)
    class Pair(Record):
        kept: int
        hidden: int = dataclasses.field(default=0, repr=False, compare=False)
        unhashed: int = dataclasses.field(default=0, hash=False)

    assert (
        repr(Pair(1, 2, 3))
        == "test_fields_left_out_of_comparison_or_repr_stay_out.<locals>.Pair(kept=1, unhashed=3)"
    )
    assert Pair(1, 2) == Pair(1, 5)
    assert Pair(1, 0, 3) != Pair(1, 0, 4)
    assert hash(Pair(1, 0, 3)) == hash(Pair(1, 9, 4)) == hash((1,))
