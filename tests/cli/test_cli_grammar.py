"""One grammar for every command: the test walks each subcommand's parser.

Every command is listed in TRAITS with what it does: ``sheets`` (reads sheets: takes
--sheets), ``db`` (reads the job database: takes --db), ``list`` (lists or shows things:
takes --format with text and json), ``writes`` (writes a file: takes -o/--output). A new
command fails here until it is listed, so its options are checked from the start. And
every option has a help text in plain sentences (no reStructuredText markup) that states
the default of an option taking a value.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from jobdef.cli import COMMANDS, build_parser

TRAITS: dict[str, set[str]] = {
    "init": set(),  # writes a project folder (DIR), not one file
    "schema": {"writes"},
    "validate": {"sheets", "list"},
    "docs": {"sheets", "writes"},
    "tsv": {"sheets", "writes"},
    "explain": {"sheets", "list"},
    "export": {"sheets", "writes"},
    "diff": {"sheets", "db", "list"},
    "new": {"sheets", "writes"},
    "worker": {"sheets", "db"},
    "enqueue": {"sheets", "db"},
    "start": {"sheets", "db"},
    "result": {"sheets", "db", "list"},
    "wait": {"sheets", "db", "list"},
    "status": {"sheets", "db", "list"},
    "jobs": {"sheets", "db", "list"},
    "queues": {"sheets", "db", "list"},
    "queues list": {"sheets", "db", "list"},
    "queues pause": {"sheets", "db"},
    "queues resume": {"sheets", "db"},
    "workers": {"db", "list"},
    "requeue": {"sheets", "db"},
    "resolve": {"db"},
    "cancel": {"db"},
    "prune": {"sheets", "db"},
    "demo": set(),
    "db": {"db"},
    "notify": set(),
    "notify test": {"sheets"},
    "dashboard": {"sheets", "db"},
    "check": {"sheets", "list"},
}

# What a help text must not hold: reStructuredText roles and literals, Sphinx fields.
RST = re.compile(r"``|:(?:func|class|meth|mod|data|attr|ref):`|^\s*:param", re.MULTILINE)
# Actions that take no value: their default is "off" and needs no words.
FLAG_ACTIONS = (
    argparse._StoreTrueAction,
    argparse._StoreFalseAction,
    argparse._StoreConstAction,
    argparse._CountAction,
    argparse._HelpAction,
    argparse._VersionAction,
    argparse._AppendConstAction,
)


def commands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command and nested action (``queues pause``) with its parser."""

    def walk(
        prefix: str, parser: argparse.ArgumentParser
    ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    full = f"{prefix} {name}".strip()
                    yield full, sub
                    yield from walk(full, sub)

    yield from walk("", build_parser())


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: action for action in parser._actions for flag in action.option_strings}


def _subcommands(parser: argparse.ArgumentParser) -> bool:
    return any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def grammar_problems(name: str, parser: argparse.ArgumentParser, traits: set[str]) -> list[str]:
    """What command ``name`` breaks of the grammar (empty when it keeps it)."""
    problems = []
    options = _options(parser)
    if "sheets" in traits and "--sheets" not in options:
        problems.append("reads sheets but takes no --sheets (options.add_sheets)")
    if "db" in traits and "--db" not in options:
        problems.append("reads the database but takes no --db (runtime_options.add_db)")
    if "list" in traits:
        fmt = options.get("--format")
        if fmt is None or not {"text", "json"} <= set(fmt.choices or ()):
            problems.append("lists things but takes no --format text|json (options.add_format)")
    if "writes" in traits:
        out, long = options.get("-o"), options.get("--output")
        if out is None or out is not long:
            problems.append("writes a file but takes no -o/--output (options.add_output)")
    for action in parser._actions:
        if isinstance(action, (argparse._SubParsersAction, argparse._HelpAction)):
            continue
        label = "/".join(action.option_strings) or action.dest
        text = action.help or ""
        if not text or text == argparse.SUPPRESS:
            problems.append(f"{label} has no help text")
            continue
        if RST.search(text):
            problems.append(f"{label}: help holds reStructuredText markup: {text!r}")
        takes_value = not isinstance(action, FLAG_ACTIONS) and action.nargs != 0
        optional = bool(action.option_strings) or action.nargs in ("?", "*")
        if takes_value and optional and not action.required and "default" not in text.lower():
            problems.append(f"{label}: help does not state the default: {text!r}")
    for text in (parser.description or "", parser.epilog or ""):
        if RST.search(text):
            problems.append(f"description holds reStructuredText markup: {text[:80]!r}")
    return problems


def test_every_command_is_classified() -> None:
    found = {name for name, _ in commands()}
    missing = sorted(found - set(TRAITS))
    assert not missing, (
        f"commands not listed in TRAITS of {__file__}: {missing}; say which of sheets, db, "
        "list, writes each one does, so its options are checked"
    )
    assert {name.split()[0] for name in found} == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(TRAITS))
def test_command_keeps_the_grammar(name: str) -> None:
    parsers = dict(commands())
    parser = parsers[name]
    traits = TRAITS[name]
    if _subcommands(parser) and not traits:
        # A group of actions (``queues pause``): each action is walked and checked
        # under its own name, so the group only has to reach them all.
        [group] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        assert group.choices
        assert all(f"{name} {action}" in parsers for action in group.choices)
        return
    assert grammar_problems(name, parser, traits) == []


def test_the_same_flag_means_the_same_thing_everywhere() -> None:
    metavars: dict[str, set[str]] = {}
    for name, parser in commands():
        for flag, action in _options(parser).items():
            # (init's --sheets names the folder it creates: not a sheets reader's option)
            if flag in ("--db", "--sheets") and flag[2:] in TRAITS.get(name, set()):
                metavars.setdefault(flag, set()).add(str(action.metavar))
    assert metavars == {"--db": {"URL"}, "--sheets": {"PATH"}}


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from jobdef import __version__
    from jobdef.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"jobdef {__version__}\n"


def test_the_walker_catches_what_it_names() -> None:
    """The rules find each kind of mistake (so a passing run means something)."""
    parser = argparse.ArgumentParser(prog="jobdef bad")
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--lease", default="30s", help="lease length (30s)")
    parser.add_argument("--job", help="see ``jobdef jobs``: the job (default: all)")
    problems = grammar_problems("bad", parser, {"sheets", "db", "list", "writes"})
    assert problems == [
        "reads sheets but takes no --sheets (options.add_sheets)",
        "reads the database but takes no --db (runtime_options.add_db)",
        "lists things but takes no --format text|json (options.add_format)",
        "writes a file but takes no -o/--output (options.add_output)",
        "--limit has no help text",
        "--lease: help does not state the default: 'lease length (30s)'",
        "--job: help holds reStructuredText markup: 'see ``jobdef jobs``: the job (default: all)'",
    ]
