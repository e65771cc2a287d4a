"""docs/sheet-reference.md: every field of every kind of document, from the shipped schema.

For each field: its type, whether it is required, its default, what it does (the
schema's description, which editors also show on hover), the rules of ``jobdef
validate`` that check it and an example line. ``python -m jobdef.sheets.reference``
prints the page; a test checks that docs/sheet-reference.md is what it prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from jobdef.sheets.rules import all_rules
from jobdef.sheets.schema_check import schema

KINDS = ("Job", "Workflow", "Defaults", "Channel", "Queue")

# Every field is checked for its shape by these (unknown, missing, wrong type, a value
# not allowed, a limit or pattern broken, too large an integer, a NUL character).
SHAPE_RULES = ("JD101", "JD102", "JD103", "JD104", "JD105", "JD109", "JD110")

# The rules that check a field beyond its shape, by the field's dotted path. A path
# matches itself and the fields under it (``backoff`` covers ``backoff.max``).
JOB_RULES: Mapping[str, tuple[str, ...]] = {
    "name": ("JD271",),
    "title": ("JD254", "JD261"),
    "description": ("JD261",),
    "owner": ("JD261",),
    "trigger": ("JD261",),
    "mode": ("JD281", "JD283", "JD311"),
    "schedule": ("JD281", "JD282", "JD283", "JD285"),
    "timezone": ("JD284",),
    "handler": ("JD301", "JD302", "JD303"),
    "args": (
        "JD106",
        "JD107",
        "JD108",
        "JD111",
        "JD112",
        "JD113",
        "JD114",
        "JD241",
        "JD245",
        "JD285",
        "JD303",
    ),
    "rerun": ("JD261",),
    "decision": ("JD311",),
    "queue": ("JD274",),
    "max_attempts": ("JD221", "JD234"),
    "backoff": ("JD201", "JD211", "JD212", "JD213", "JD214", "JD215", "JD216", "JD217", "JD221"),
    "timeout": ("JD201", "JD221", "JD222"),
    "deadline": ("JD201", "JD221", "JD222"),
    "idempotency.key": ("JD241", "JD242", "JD243", "JD244", "JD245", "JD285"),
    "idempotency.dedupe_window": ("JD201", "JD291"),
    "errors": ("JD231", "JD232", "JD233", "JD234", "JD235"),
    "notify.channel": ("JD251", "JD253"),
    "notify.events": ("JD252",),
    "notify.key_args": ("JD255",),
    "retention": ("JD201", "JD291", "JD292"),
    "limits.args_bytes": ("JD112",),
    "result.store": ("JD333",),
    "result.max_bytes": ("JD202", "JD331"),
    "result.retention": ("JD201", "JD332"),
    "result.schema": ("JD333", "JD334", "JD335", "JD336", "JD337", "JD338", "JD339"),
    "result.public": ("JD333", "JD336", "JD337", "JD338", "JD339"),
    "result.notify": ("JD333", "JD336", "JD337", "JD338", "JD339", "JD340"),
}
CHANNEL_RULES: Mapping[str, tuple[str, ...]] = {
    "name": ("JD273",),
    "url_env": ("JD253",),
    "user_env": ("JD253",),
    "password_env": ("JD253",),
    "headers_env": ("JD253", "JD254"),
    "from": ("JD254",),
    "to": ("JD254",),
    "timeout": ("JD201",),
    "digest_after": ("JD201",),
}
QUEUE_RULES: Mapping[str, tuple[str, ...]] = {"name": ("JD273", "JD274")}
_STEP_ARGS = ("JD357", "JD361", "JD362", "JD363", "JD364", "JD365", "JD366", "JD367", "JD368")
WORKFLOW_RULES: Mapping[str, tuple[str, ...]] = {
    "name": ("JD356",),
    "title": ("JD261",),
    "description": ("JD261",),
    "args": ("JD106", "JD107", "JD108", "JD111", "JD113", "JD114", "JD364", "JD365"),
    "idempotency.key": ("JD241", "JD242", "JD243", "JD244", "JD245"),
    "idempotency.dedupe_window": ("JD201",),
    "deadline": ("JD201", "JD371"),
    "notify.channel": ("JD251",),
    "notify.key_args": ("JD373",),
    "steps": ("JD355", "JD358", "JD371"),
    "steps.<name>.job": ("JD351", "JD372"),
    "steps.<name>.after": ("JD352", "JD353", "JD354", "JD367"),
    "steps.<name>.args": _STEP_ARGS,
    "finally.job": ("JD351", "JD372"),
    "finally.args": _STEP_ARGS,
}


def _in_defaults(path: str) -> bool:
    node: Mapping[str, Any] = schema()["definitions"]["Defaults"]
    for part in path.split("."):
        node = node.get("properties", {}).get(part, {})
    return bool(node)


RULES_BY_KIND: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "Job": JOB_RULES,
    # The Job fields a Defaults document may write too (its `name` is no job's).
    "Defaults": {
        field: rules
        for field, rules in JOB_RULES.items()
        if field != "name" and _in_defaults(field)
    },
    "Workflow": WORKFLOW_RULES,
    "Channel": CHANNEL_RULES,
    "Queue": QUEUE_RULES,
}
# Checked in every document of the kind (JD261: secrets; JD272: two Defaults, one field).
KIND_RULES: Mapping[str, tuple[str, ...]] = {
    "Job": ("JD261",),
    "Workflow": ("JD261",),
    "Defaults": ("JD261", "JD272"),
    "Channel": ("JD261",),
    "Queue": (),
}

_DEFAULT = re.compile(r"\s*Default: (.+?)(?:\.(?:\s|$)|$)")
_EXAMPLE = re.compile(r"e\.g\. `([^`]+)`")


def _resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/definitions/"):
        target = schema()["definitions"][ref.rsplit("/", 1)[1]]
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _type(node: Mapping[str, Any]) -> str:
    if "$ref" in node and node["$ref"].endswith("/duration"):
        return "duration (`10s`, `5m`, `1h30m`)"
    if "$ref" in node and node["$ref"].endswith("/bytes"):
        return "size (`65536`, `64KiB`, `1MiB`)"
    node = _resolve(node)
    if "const" in node:
        return f"always `{node['const']}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "oneOf" in node or "anyOf" in node:
        options = [_type(option) for option in node.get("oneOf", node.get("anyOf", []))]
        return " or ".join(dict.fromkeys(options))
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        items = node.get("items", {})
        return f"list of {_type(items) if isinstance(items, dict) and items else 'values'}"
    if kind == "object" and "properties" not in node:
        return "mapping"
    if kind == "string" and "pattern" in node:
        return f"string matching `{node['pattern']}`"
    if kind in ("integer", "number") and ("minimum" in node or "maximum" in node):
        low, high = node.get("minimum"), node.get("maximum")
        if low is not None and high is not None:
            return f"{kind}, {low} to {high}"
        return f"{kind}, at least {low}" if low is not None else f"{kind}, at most {high}"
    return str(kind or "any")


def _split_default(text: str) -> tuple[str, str]:
    """The description without its ``Default: ...`` sentence, and that default."""
    found = _DEFAULT.search(text)
    if found is None:
        return text, ""
    return (text[: found.start()] + text[found.end() :]).strip(), found.group(1).strip()


def _example(key: str, node: Mapping[str, Any], description: str) -> str:
    found = _EXAMPLE.search(description)
    resolved = _resolve(node)
    if found:
        value = found.group(1)
    elif "const" in resolved:
        value = str(resolved["const"])
    elif "enum" in resolved:
        value = str(resolved["enum"][0])
    elif "$ref" in node and node["$ref"].endswith("/duration"):
        value = "30s"
    elif "$ref" in node and node["$ref"].endswith("/bytes"):
        value = "64KiB"
    elif resolved.get("type") == "boolean":
        value = "true"
    elif resolved.get("type") in ("integer", "number"):
        value = str(resolved.get("minimum", 1))
    elif resolved.get("type") == "array":
        value = "[...]"
    else:
        return ""
    return f"`{key}: {value}`"


def _fields(
    node: Mapping[str, Any], prefix: str = ""
) -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """``(dotted path, schema node, required)`` of every field, parents before children."""
    required = set(node.get("required", ()))
    for key, child in node.get("properties", {}).items():
        path = f"{prefix}{key}"
        yield path, child, key in required
        resolved = _resolve(child)
        if "properties" in resolved:
            yield from _fields(resolved, f"{path}.")
        entry = resolved.get("additionalProperties")
        if isinstance(entry, dict) and "required" in entry:  # a map of named entries: steps
            yield from _fields(entry, f"{path}.<name>.")


def _rules_of(kind: str, path: str) -> list[str]:
    table = RULES_BY_KIND[kind]
    found = [
        rule
        for field, rules in table.items()
        if path == field or path.startswith(field + ".") or field.startswith(path + ".")
        for rule in rules
    ]
    return sorted(set(found))


def _link(rule_id: str, names: Mapping[str, str]) -> str:
    return f"[{rule_id}](rules.md#{rule_id.lower()}) `{names[rule_id]}`"


def _anchor(kind: str, path: str) -> str:
    plain = path.replace("<", "").replace(">", "")
    return f"{kind.lower()}-{plain.replace('.', '-').replace('_', '-').lower()}"


def reference_markdown() -> str:
    """The page (a test checks that docs/sheet-reference.md is this)."""
    names = {rule.id: rule.name for rule in all_rules()}
    definitions = schema()["definitions"]
    shape = ", ".join(f"[{r}](rules.md#{r.lower()})" for r in SHAPE_RULES)
    lines = [
        "# Sheet reference",
        "",
        "Generated from the schema (`python -m jobdef.sheets.reference > "
        "docs/sheet-reference.md`); editors show the same descriptions on hover.",
        "A sheet file holds one or more documents separated by `---`; each has "
        "`apiVersion: jobdef/v1` and a `kind`: "
        + ", ".join(f"[{kind}](#{kind.lower()})" for kind in KINDS)
        + ".",
        "",
        f"Every field is also checked for its shape ({shape}): an unknown or missing "
        "field, a wrong type, a value not allowed, a broken limit, too large an integer "
        "or a NUL character is an error that names the line and what to write instead.",
        "",
    ]
    for kind in KINDS:
        node = definitions[kind]
        lines += [f"## {kind}", "", str(node.get("description", _kind_line(node))), ""]
        if KIND_RULES[kind]:
            every = ", ".join(_link(r, names) for r in KIND_RULES[kind])
            lines += [f"Every field of a {kind} is also checked by {every}.", ""]
        lines += ["| Field | Type | Required | Default |", "| --- | --- | --- | --- |"]
        fields = list(_fields(node))
        for path, child, required in fields:
            text, default = _split_default(str(_resolve(child).get("description", "")))
            lines.append(
                f"| [`{path}`](#{_anchor(kind, path)}) | {_cell(_type(child))} | "
                f"{'yes' if required else 'no'} | {_cell(default) or '-'} |"
            )
        lines.append("")
        for path, child, required in fields:
            description = str(_resolve(child).get("description", ""))
            text, default = _split_default(description)
            lines += [
                f'<a id="{_anchor(kind, path)}"></a>',
                f"### {kind} `{path}`",
                "",
                text or "(no description)",
                "",
                f"- Type: {_type(child)}",
                f"- Required: {'yes' if required else 'no'}",
                f"- Default: {default or ('none: it must be written' if required else 'unset')}",
            ]
            rules = _rules_of(kind, path)
            if rules:
                lines.append("- Checked by: " + ", ".join(_link(r, names) for r in rules))
            example = _example(path.rsplit(".", 1)[-1], child, description)
            if example:
                lines.append(f"- Example: {example}")
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _kind_line(node: Mapping[str, Any]) -> str:
    kind = node.get("properties", {}).get("kind", {})
    return str(kind.get("description", ""))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def field_paths() -> dict[str, list[str]]:
    """Kind -> every dotted field path of the schema (for tests and tools)."""
    return {kind: [path for path, _, _ in _fields(schema()["definitions"][kind])] for kind in KINDS}


if __name__ == "__main__":
    print(reference_markdown(), end="")
