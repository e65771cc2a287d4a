"""The classes :func:`~jobdef.records.record` declares compare, hash and show themselves
as the methods ``@dataclass(frozen=True)`` would generate for them, and stay as frozen,
without compiling those methods at import."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import pytest

from jobdef.backends.records import Receipt
from jobdef.policy import model
from jobdef.records import Record, record
from jobdef.sheets.document import Document

MODEL = [
    cls
    for cls in vars(model).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == model.__name__
]
# The modules that declare classes @record, and every such class in them.
_DECLARING = (
    "jobdef.backends",
    "jobdef.backends.elsewhere",
    "jobdef.backends.engines",
    "jobdef.backends.flows",
    "jobdef.backends.records",
    "jobdef.backends.transitions",
    "jobdef.backends.workers",
    "jobdef.policy.backoff",
    "jobdef.policy.fields",
    "jobdef.policy.model",
    "jobdef.policy.queue_controls",
    "jobdef.policy.registry",
    "jobdef.project",
    "jobdef.runtime.receipts",
    "jobdef.sheets.diagnostics",
    "jobdef.sheets.document",
    "jobdef.sheets.rules.args",
    "jobdef.sheets.rules.base",
)
ON_RECORD = [
    cls
    for name in _DECLARING
    for cls in vars(importlib.import_module(name)).values()
    if isinstance(cls, type) and issubclass(cls, Record) and cls.__module__ == name
]
OWN_REPR = {Receipt}  # shows only the start of its token


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
def test_the_frozen_classes_compile_none_of_repr_eq_hash_or_setattr(cls: type) -> None:
    assert issubclass(cls, Record)
    assert dataclasses.is_dataclass(cls)
    assert not {"__eq__", "__hash__", "__setattr__", "__delattr__"} & set(vars(cls))
    assert ("__repr__" in vars(cls)) == (cls in OWN_REPR)
    assert "__slots__" in vars(cls)  # an empty slot is how __init__ may still set a field


def test_every_record_class_is_checked_here() -> None:
    assert len(ON_RECORD) >= 50
    assert set(MODEL) <= set(ON_RECORD)


@pytest.mark.parametrize("cls", ON_RECORD, ids=lambda cls: cls.__name__)
def test_records_are_shown_compared_and_hashed_as_generated_methods_would(cls: type) -> None:
    generated = dataclasses.make_dataclass(cls.__name__, _copied_fields(cls), frozen=True)
    generated.__qualname__ = cls.__qualname__
    required = {
        f.name: f"value of {f.name}"
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    ours, theirs = cls(**required), generated(**required)
    if cls not in OWN_REPR:
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
    for f in dataclasses.fields(cls):  # frozen, as a generated __setattr__ would keep it
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(ours, f.name, "changed")
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(ours, f.name)
    assert ours == cls(**required)


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
    @record
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


@pytest.mark.parametrize("cls", ON_RECORD, ids=lambda cls: cls.__name__)
def test_init_takes_the_fields_as_the_generated_one_would(cls: type) -> None:
    generated = dataclasses.make_dataclass(cls.__name__, _copied_fields(cls), frozen=True)
    ours = inspect.signature(cls).parameters
    theirs = inspect.signature(generated).parameters
    assert list(ours) == list(theirs)
    for name, param in ours.items():
        assert param.kind == theirs[name].kind
        spec = cls.__dataclass_fields__[name]  # type: ignore[attr-defined]
        if spec.default is not dataclasses.MISSING:
            assert param.default == theirs[name].default
        else:  # required, or made fresh by its default_factory at each call
            assert (param.default is inspect.Parameter.empty) == (
                spec.default_factory is dataclasses.MISSING
            )


def test_a_default_factory_makes_a_fresh_value_for_each_instance() -> None:
    first, second = Document({}, "a.yaml"), Document({}, "a.yaml")
    assert first.positions == {}
    assert first.positions is not second.positions
    given: dict[Any, Any] = {("kind",): (1, 7)}
    assert Document({}, "a.yaml", positions=given).positions is given


def test_a_record_is_made_only_of_a_subclass_of_record_with_plain_fields() -> None:
    class Plain:
        value: int

    with pytest.raises(TypeError, match="subclass of Record"):
        record(Plain)

    class KeywordOnly(Record):
        value: int = dataclasses.field(default=0, kw_only=True)

    with pytest.raises(TypeError, match="plain fields only"):
        record(KeywordOnly)


def test_a_record_pickles_copies_and_replaces_as_a_frozen_dataclass() -> None:
    import copy
    import pickle

    origin = model.Origin("a.yaml", 3, 7, "defaults")
    assert pickle.loads(pickle.dumps(origin)) == origin
    assert copy.deepcopy(origin) == origin == copy.copy(origin)
    assert dataclasses.replace(origin, column=1) == model.Origin("a.yaml", 3, 1, "defaults")
