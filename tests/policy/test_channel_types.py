"""The channel types are declared once (policy/channels.py CHANNEL_TYPES); every other place
that knows them follows that declaration or fails here, naming the place to fix.

The shipped schema is a static file that editors load, so it is held equal to the
declaration here rather than generated; the senders are found by the types' names.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from jobdef.policy.channels import CHANNEL_TYPES, type_description
from jobdef.sheets.document import Document
from jobdef.sheets.schema_check import check_document, schema

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _type_property() -> dict[str, object]:
    node: dict[str, object] = schema()["definitions"]["Channel"]["properties"]["type"]
    return node


def test_the_schema_enum_lists_the_declared_types_in_order() -> None:
    assert _type_property()["enum"] == list(CHANNEL_TYPES), (
        "sheets/schema/jobdef-v1.schema.json: the Channel `type` enum differs from "
        "policy/channels.py CHANNEL_TYPES; write the enum in the declaration's order, then "
        "`jobdef schema -o .jobdef/jobdef-v1.schema.json`"
    )


def test_the_schema_describes_each_type_as_declared() -> None:
    assert _type_property()["description"] == type_description(), (
        "sheets/schema/jobdef-v1.schema.json: the Channel `type` description should read "
        f"{type_description()!r}"
    )


@pytest.mark.parametrize("name", list(CHANNEL_TYPES))
def test_each_type_has_a_sender_module_named_as_the_type(name: str) -> None:
    try:
        module = importlib.import_module(f"jobdef.notify.channels.{name}")
    except ModuleNotFoundError:
        pytest.fail(f"no sender for channel type {name!r}: write jobdef/notify/channels/{name}.py")
    assert callable(getattr(module, "build", None)), f"notify/channels/{name}.py has no build()"


@pytest.mark.parametrize("name", list(CHANNEL_TYPES))
def test_the_notifications_page_has_a_row_for_each_type(name: str) -> None:
    page = (DOCS / "notifications.md").read_text("utf-8")
    assert re.search(rf"^\| `{name}` \|", page, re.MULTILINE), (
        f"docs/notifications.md: the channel table has no row for `{name}`"
    )


def test_a_channel_without_type_is_told_every_declared_type() -> None:
    doc = Document(
        data={"apiVersion": "jobdef/v1", "kind": "Channel", "name": "ops"},
        file="ops.yaml",
        line=1,
        column=1,
    )
    (finding,) = check_document(doc)
    assert finding.message.endswith("add `type:` with one of " + ", ".join(CHANNEL_TYPES))
