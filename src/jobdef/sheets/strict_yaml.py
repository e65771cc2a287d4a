"""Strict YAML reading: YAML 1.2 core typing, a position on every node, no surprises.

The tree is built from the parser's *events*, never through PyYAML's constructor:

- an anchor or alias is reported at the event and never expanded, so a 1 KB
  alias bomb costs what 1 KB of text costs;
- plain scalars get YAML 1.2 core types (``on``/``yes`` stay strings, ``010``
  is 10, ``1:30`` is a string); values that a YAML 1.1 reader would type
  differently get a "quote it" warning;
- duplicate keys, ``<<`` merge keys, non-string keys and explicit tags are
  errors with the line and column of the offending node;
- what YAML libraries read otherwise than the YAML spec says is an error (JD014),
  not a guess: ``[?x]`` is the text ``?x``, not a key ``x``; ``"value"# note``,
  ``[a]#note`` and ``[a,#note]`` are invalid, not comments; a plain ``-`` in
  ``[ ]``; directives; the next line of a ``[ ]``, ``{ }`` or quoted value not
  indented more than its block.

Two parsers, one answer. libyaml's C parser is about 7x faster than PyYAML's
pure-Python one, but the two disagree on some input (tabs between tokens,
directives, tags, ``?`` inside ``[ ]``/``{ }``, a comment glued to a block scalar
header; 27 cases of the yaml-test-suite). The pure-Python parser, which every
PyYAML has, is the reference: the C parser reads a file only when it parses
without error and holds none of those constructs; any other file is read (or
its error reported) by the pure-Python parser. So ``jobdef validate`` finds the
same on a machine without libyaml, only slower (tests/sheets/test_yaml_suite.py
checks this on the whole suite).

Nothing here raises for bad input: every problem is a
:class:`~jobdef.sheets.diagnostics.Diagnostic`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import INTEGER_TEXT_LIMIT, Document, OverlongInteger, Path_, Position
from jobdef.sheets.files import read_regular
from jobdef.sheets.rules import loading as rules
from jobdef.sheets.yaml_errors import error_diagnostic

# The reference parser, in every PyYAML; the fast one when PyYAML was built with libyaml.
_REFERENCE: Any = yaml.SafeLoader
_FAST: Any = getattr(yaml, "CSafeLoader", None)

# A plain scalar that YAML forbids inside [ ] or { }: a dash followed by a space or nothing.
_LONE_DASH = re.compile(r"-(?:$|[ \t])")
# A block scalar header with a comment glued to it (``>#``): libyaml takes it, YAML does not.
# (Compiled on first use, which re's cache keeps: few sheets hold a "#" in such a header.)
_GLUED_HEADER_COMMENT = r"[|>][-+0-9]*#"


def _parsers_may_differ(text: str) -> bool:
    """Text the two parsers may read differently, found before the fast one is tried:
    a tab, a directive line."""
    return "\t" in text or "\n%" in text or text.startswith("%")


MAX_BYTES = 1024 * 1024

_STR_TAG = "tag:yaml.org,2002:str"
_QUOTES = ("'", '"')

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT10 = re.compile(r"^[-+]?[0-9]+$")
_INT8 = re.compile(r"^0o[0-7]+$")
_INT16 = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")

# Plain scalars a YAML 1.1 reader types differently (https://yaml.org/type/).
_YAML11_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")
_YAML11_BINARY = re.compile(r"^[-+]?0b[0-1_]+$")
_YAML11_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_YAML11_UNDERSCORE = re.compile(r"^[-+]?(?:[0-9][0-9_]*_[0-9_]*)(?:\.[0-9_]*)?$")
_YAML11_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?$"
)


# A plain scalar is a number only if it starts with one of these; the other
# non-strings of the core schema are the few words of _WORDS.
_NUMBER_FIRST = frozenset("0123456789+-.")
_WORDS = {**_BOOL, "null": None, "Null": None, "NULL": None, "~": None, "": None}


def resolve_plain(text: str) -> Any:
    """The YAML 1.2 core type of a plain (unquoted) scalar."""
    if text in _WORDS:
        return _WORDS[text]
    if text[0] not in _NUMBER_FIRST:
        return text
    if _INT10.match(text):  # an integer too long for int() stays text for rule JD109
        return int(text) if len(text) <= INTEGER_TEXT_LIMIT else OverlongInteger(text)
    if _INT8.match(text):
        return int(text[2:], 8)
    if _INT16.match(text):
        return int(text[2:], 16)
    if _FLOAT.match(text):
        return float(text)
    if _INF.match(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN.match(text):
        return float("nan")
    return text


# A plain scalar that YAML 1.1 types differently is one of the boolean words
# or starts with a digit or a sign.
_YAML11_WORDS = frozenset(
    [
        "y",
        "Y",
        "yes",
        "Yes",
        "YES",
        "n",
        "N",
        "no",
        "No",
        "NO",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
    ]
)
_YAML11_FIRST = frozenset("0123456789+-")


def yaml11_suspect(text: str) -> bool:
    """Cheap test: could a YAML 1.1 reader type this plain scalar differently?"""
    return text in _YAML11_WORDS or (text != "" and text[0] in _YAML11_FIRST)


def yaml11_reading(text: str) -> str | None:
    """What a YAML 1.1 reader makes of a plain scalar, when that differs from YAML 1.2."""
    if not yaml11_suspect(text):
        return None
    if text in _YAML11_WORDS:
        return "the boolean " + ("true" if text.lower() in ("y", "yes", "on") else "false")
    if _YAML11_SEXAGESIMAL.match(text):
        return "a base-60 number (1:30 is 90)"
    if _YAML11_TIMESTAMP.match(text):
        return "a date"
    if _YAML11_BINARY.match(text):
        return "a binary number"
    if _YAML11_OCTAL.match(text) and text.lstrip("+-") not in ("0",):
        return "an octal number (010 is 8)"
    if _YAML11_UNDERSCORE.match(text):
        return "a number with the underscores dropped"
    if _INT8.match(text):
        return "the string " + repr(text)
    return None


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "the boolean " + str(value).lower()
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return f"the string {value!r}"


# Never compared nor printed (as _Frame below).
@dataclass(repr=False, eq=False)
class LoadedFile:
    """One sheet file read: its documents and what is wrong with it."""

    path: str
    documents: list[Document]
    diagnostics: list[Diagnostic]


class _Discard:
    """Marks a key whose value must not be stored (a duplicate or a non-string key)."""


_DISCARD = _Discard()


# Never compared nor printed: without the generated __eq__ and __repr__, each of which
# costs `jobdef validate` start-up time.
@dataclass(slots=True, repr=False, eq=False)
class _Frame:
    """One mapping or list being built, with what its next event needs to know."""

    container: dict[Any, Any] | list[Any]
    path: Path_
    live: bool
    key: Any = None  # pending key of a mapping; None when the next scalar is a key
    key_pos: Position = (0, 0)
    has_key: bool = False
    seen: dict[str, int] = field(default_factory=dict)
    flow: bool = False
    indent: int = -1  # the column (0-based) of a block collection's entries


class _Builder:
    """Turns parser events into documents, reporting what a strict reader refuses."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        # Nesting depth of [ ] / { } and where the outermost one starts (an index).
        self._flow_depth = 0
        self._flow_start = 0
        self._flow_line = 0  # 0-based, as the parsers' marks
        self._flow_indent = -1  # the indent of the block the outermost one is in
        self._question = "?" in text
        self._document_from = 0  # where the text before the next document starts
        # Set when the events show a construct the two parsers may read differently
        # (a tag, a ? inside [ ] or { }): the reference parser must read the file.
        self.parsers_may_differ = False
        self.documents: list[Document] = []
        self.diagnostics: list[Diagnostic] = []
        self._stack: list[_Frame] = []
        self._doc: Document | None = None
        # Anchors and aliases: the first of each is reported, the rest only counted,
        # so an alias bomb gives two lines, not thousands.
        self._refs: dict[str, list[Any]] = {}

    def _reference(self, what: str, pos: Position, message: str) -> None:
        seen = self._refs.setdefault(what, [pos, message, 0])
        seen[2] += 1

    def finish(self) -> None:
        for what, (pos, message, count) in self._refs.items():
            plural = "aliases" if what == "alias" else "anchors"
            more = f" ({count - 1} more {plural} in this file)" if count > 1 else ""
            self._report(rules.ANCHOR_ALIAS, pos, message + more)
        self._refs.clear()

    def _report(self, rule: Any, pos: Position, message: str) -> None:
        self.diagnostics.append(rule.at(self.file, pos[0], pos[1], message))

    @staticmethod
    def _pos(event: Any) -> Position:
        mark = event.start_mark
        return (mark.line + 1, mark.column + 1)

    def feed(self, event: Any) -> None:
        kind = type(event)
        if kind is yaml.ScalarEvent:  # most events: dispatch them first
            self._scalar(event)
        elif kind is yaml.MappingStartEvent:
            self._start(event, {})
        elif kind is yaml.SequenceStartEvent:
            self._start(event, [])
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            frame = self._stack.pop()
            if frame.flow:
                self._end_flow(event)
            self._attach(frame.container, None, frame.live, finished=True, path=frame.path)
        elif kind is yaml.AliasEvent:
            pos = self._pos(event)
            self._reference(
                "alias",
                pos,
                f"alias *{event.anchor} is not allowed in a sheet; write the value out, "
                "or move shared values into a Defaults document",
            )
            self._value(None, pos)
        elif kind is yaml.DocumentStartEvent:
            self._directives(event.end_mark.index)
            self._stack = []
            self._doc = None
        elif kind is yaml.DocumentEndEvent:
            self._document_from = event.end_mark.index
            self._doc = None

    # -- what YAML libraries misread (JD014); positions are character indexes of the text

    def _misread(self, index: int, message: str) -> None:
        line_start = self.text.rfind("\n", 0, index) + 1
        line = self.text.count("\n", 0, index) + 1
        self.diagnostics.append(
            rules.YAML_MISREAD.at(self.file, line, index - line_start + 1, message)
        )

    def _directives(self, document_at: int) -> None:
        """Directive lines (%YAML, %TAG, ...) before a document: none in a sheet."""
        before = self.text[self._document_from : document_at]
        if "%" not in before:
            return
        for found in re.finditer(r"^%\S*", before, re.MULTILINE):
            self._misread(
                self._document_from + found.start(),
                f"directive {found.group()} is not allowed in a sheet (YAML libraries "
                "disagree on directives, and a sheet is YAML 1.2 without one); remove the line",
            )

    def _flow_node(self, event: Any, plain_text: str | None) -> None:
        """Checks of a node inside [ ] or { }: ``?x`` and a lone ``-`` are misread."""
        index = event.start_mark.index
        if self._question and index > 0 and self.text[index - 1] == "?":
            word = plain_text or "text"
            self._misread(
                index - 1,
                f"YAML libraries read ?{word} inside [ ] or {{ }} as the key {word}, though "
                f'YAML says it is the text ?{word}; quote it ("?{word}"), or write '
                f"`? {word}` with a space if a key is meant",
            )
        if plain_text is not None and _LONE_DASH.match(plain_text):
            self._misread(
                index,
                "a plain - inside [ ] or { } is not a value in YAML, though YAML "
                'libraries read it as the text "-"; quote it: "-"',
            )

    def _glued_comment(self, end: int) -> None:
        """``"value"# note`` and ``[a]# note``: YAML wants a space before a comment."""
        if end < len(self.text) and self.text[end] == "#":
            self._misread(
                end,
                "a comment needs a space before its #; YAML libraries take this one as a "
                "comment though YAML refuses it: write `value  # comment`",
            )

    def _flow_scalar(self, event: Any, text: str, plain: bool, pos: Position) -> Position:
        """The checks of a scalar inside [ ] or { } that may need them; its position."""
        self._flow_node(event, text if plain else None)
        if plain and not text:  # the parsers place an empty value differently here
            return self._next_token(event.start_mark.index)
        return pos

    def _next_token(self, index: int) -> Position:
        """The position of the first token at or after ``index`` (comments skipped).

        An empty value inside [ ] or { } has no text of its own: libyaml marks it at
        the next token, PyYAML's parser right after the ``:``; both are given the former.
        """
        text = self.text
        while index < len(text):
            char = text[index]
            if char == "#":
                found = text.find("\n", index)
                index = len(text) if found < 0 else found
            elif char in " \t\r\n":
                index += 1
            else:
                break
        return _line_col(text, index)

    def _end_flow(self, event: Any) -> None:
        self._flow_depth -= 1
        end = event.end_mark.index
        self._glued_comment(end)
        if self._flow_depth == 0:
            span = self.text[self._flow_start : end]
            if self._question and "?" in span:
                self.parsers_may_differ = True
            if ",#" in span:
                self._comma_comments(self._flow_start, span)
            if event.end_mark.line != self._flow_line:
                self._under_indented(self._flow_start, end, self._flow_indent, "[ ] or { }")

    def _comma_comments(self, start: int, span: str) -> None:
        """``[a,#note]``: a comment right after a comma, outside quotes, is glued too."""
        quote = ""
        index = 0
        while index < len(span):
            char = span[index]
            if quote:
                escaped = char == "\\" if quote == '"' else span.startswith("''", index)
                if escaped:
                    index += 1  # skip the escaped character
                elif char == quote:
                    quote = ""
            elif char in "'\"" and (index == 0 or span[index - 1] in " \t\n[{,:"):
                quote = char
            elif char == "#":
                if span[index - 1] == ",":
                    self._glued_comment(start + index)
                    return
                end = span.find("\n", index)  # a comment: skip to its end
                index = end if end >= 0 else len(span)
                continue
            index += 1

    def _styled(self, event: Any) -> None:
        """A quoted value: no comment glued to it, its next lines indented. A block of
        text: the parsers differ on a comment glued to its header (``>#``)."""
        if event.style not in _QUOTES:
            start = event.start_mark.index
            end = self.text.find("\n", start)
            header = self.text[start : end if end >= 0 else len(self.text)]
            if "#" in header and re.match(_GLUED_HEADER_COMMENT, header):
                self.parsers_may_differ = True
            return
        self._glued_comment(event.end_mark.index)
        if event.end_mark.line != event.start_mark.line and not self._flow_depth and self._stack:
            indent = self._stack[-1].indent
            self._under_indented(
                event.start_mark.index, event.end_mark.index, indent, "quoted value"
            )

    def _under_indented(self, start: int, end: int, indent: int, what: str) -> None:
        """The next lines of a multi-line flow node must be indented more than its parent.

        YAML libraries take ``key: [a,`` followed by ``b]`` at the key's column; the
        YAML spec (and stricter readers) do not.
        """
        if indent < 0:
            return
        first = self.text.count("\n", 0, start) + 1
        offset = start
        for number, line in enumerate(self.text[start:end].split("\n")):
            if number:
                content = line.lstrip(" ")
                blank = content.strip(" \t\r") == ""
                comment = what != "quoted value" and content.startswith("#")
                if not blank and not comment and len(line) - len(content) <= indent:
                    self._misread(
                        offset,
                        f"line {first + number} continues the {what} of line {first} but is "
                        f"not indented more than the block it is in (column {indent + 1}); "
                        "YAML libraries take it, YAML does not: indent it",
                    )
                    return
            offset += len(line) + 1

    def _check_node(self, event: Any, pos: Position) -> None:
        if event.tag is not None:  # PyYAML's parser reads some tags otherwise (``!!str,``)
            self.parsers_may_differ = True
        if event.anchor is not None:
            self._reference(
                "anchor",
                pos,
                f"anchor &{event.anchor} is not allowed in a sheet; remove it and write "
                "shared values once in a Defaults document",
            )
        tag = event.tag
        if tag is not None and tag not in (_STR_TAG, "!"):
            self._report(
                rules.EXPLICIT_TAG,
                pos,
                f"tag {tag} is not allowed in a sheet; remove it (quote the value if it "
                "must stay a string)",
            )

    def _scalar(self, event: Any) -> None:
        # The hot path of the loader (half of all scalars are keys): written out inline.
        mark = event.start_mark
        pos = (mark.line + 1, mark.column + 1)
        tag = event.tag
        if tag is not None or event.anchor is not None:
            self._check_node(event, pos)
        text = event.value
        plain = tag is None and not event.style
        if event.style:
            self._styled(event)
        if self._flow_depth and (self._question or not text or text[0] == "-"):
            pos = self._flow_scalar(event, text, plain, pos)
        if not plain:
            value: Any = text
        elif text in _WORDS:
            value = _WORDS[text]
        elif text[0] in _NUMBER_FIRST:
            value = resolve_plain(text)
        else:
            value = text
        if not self._stack:
            self._value(value, pos)
            return
        frame = self._stack[-1]
        container = frame.container
        suspect = plain and (text in _YAML11_WORDS or text[:1] in _YAML11_FIRST)
        if type(container) is dict:
            if not frame.has_key:
                if suspect or type(value) is not str or value in frame.seen or text == "<<":
                    self._key(frame, value, text, plain, pos)
                else:  # the common case: a new, plain field name
                    frame.has_key = True
                    frame.key_pos = pos
                    frame.seen[value] = pos[0]
                    frame.key = value
                return
            if suspect:
                self._warn_yaml11(text, value, pos)
            key, frame.key, frame.has_key = frame.key, None, False
            if key is _DISCARD or not frame.live:
                return
            container[key] = value
            child = (*frame.path, key)
            doc = self._doc
            assert doc is not None
            doc.positions[child] = pos
            doc.key_positions[child] = frame.key_pos
        else:
            if suspect:
                self._warn_yaml11(text, value, pos)
            if frame.live and self._doc is not None:
                self._doc.positions[(*frame.path, len(container))] = pos
            # `type(...) is dict` above (faster than isinstance) does not narrow the else
            # branch; the loader only ever builds plain dicts and lists.
            cast("list[Any]", container).append(value)

    def _warn_yaml11(self, text: str, value: Any, pos: Position, key: bool = False) -> None:
        reading = yaml11_reading(text)
        if reading is None:
            return
        what = "key" if key else "value"
        self._report(
            rules.YAML11_AMBIGUOUS,
            pos,
            f"plain {what} {text} is {_describe(value)} in YAML 1.2 but {reading} to a "
            f"YAML 1.1 reader (PyYAML's default, Ruby, old Go); quote it: {text!r}"
            if not key
            else f"plain key {text} is a string in YAML 1.2 but {reading} to a YAML 1.1 "
            f"reader (PyYAML's default, Ruby, old Go); quote it: {text!r}",
        )

    def _key(self, frame: _Frame, value: Any, text: str, plain: bool, pos: Position) -> None:
        frame.has_key = True
        frame.key_pos = pos
        if plain and text == "<<":
            self._report(
                rules.MERGE_KEY,
                pos,
                "merge key << is not allowed in a sheet; write the fields out, or move "
                "shared values into a Defaults document",
            )
            frame.key = _DISCARD
            return
        if not isinstance(value, str):
            self._report(
                rules.NON_STRING_KEY,
                pos,
                f"key {text} is {_describe(value)}, not a field name; quote it "
                f'("{text}") if a string is meant',
            )
            frame.key = _DISCARD
            return
        if plain and yaml11_suspect(text):
            self._warn_yaml11(text, value, pos, key=True)
        if value in frame.seen:
            self._report(
                rules.DUPLICATE_KEY,
                pos,
                f"key {value!r} is already defined at line {frame.seen[value]}; "
                "keep one of them (YAML readers disagree on which one wins)",
            )
            frame.key = _DISCARD
            return
        frame.seen[value] = pos[0]
        frame.key = value

    def _start(self, event: Any, container: dict[Any, Any] | list[Any]) -> None:
        pos = self._pos(event)
        self._check_node(event, pos)
        if self._flow_depth:
            self._flow_node(event, None)
        flow = bool(event.flow_style)
        parent = self._stack[-1] if self._stack else None
        if flow:
            if self._flow_depth == 0:
                self._flow_start = event.start_mark.index
                self._flow_line = event.start_mark.line
                self._flow_indent = parent.indent if parent is not None else -1
            self._flow_depth += 1
        live = True
        path: Path_ = ()
        if parent is not None:
            if isinstance(parent.container, dict):
                if not parent.has_key:
                    self._report(
                        rules.NON_STRING_KEY,
                        pos,
                        "a mapping or list cannot be a key; keys of a sheet are field names",
                    )
                    parent.has_key = True
                    parent.key = _DISCARD
                    parent.key_pos = pos
                live = parent.live and parent.key is not _DISCARD
                path = (*parent.path, parent.key) if live else ()
            else:
                live = parent.live
                path = (*parent.path, len(parent.container))
        self._stack.append(
            _Frame(
                container=container,
                path=path,
                live=live,
                key_pos=pos,
                flow=flow,
                indent=-1 if flow else event.start_mark.column,
            )
        )
        if self._doc is None:
            self._doc = Document(data=container, file=self.file, line=pos[0], column=pos[1])
            self.documents.append(self._doc)
        if live and self._doc is not None:
            self._doc.positions[path] = pos
            if parent is not None and isinstance(parent.container, dict):
                self._doc.key_positions[path] = parent.key_pos

    def _value(self, value: Any, pos: Position) -> None:
        if not self._stack:
            doc = Document(data=value, file=self.file, line=pos[0], column=pos[1])
            doc.positions[()] = pos
            self.documents.append(doc)
            return
        self._attach(value, pos, self._stack[-1].live, finished=False, path=None)

    def _attach(
        self, value: Any, pos: Position | None, live: bool, *, finished: bool, path: Path_ | None
    ) -> None:
        """Store a finished node in its parent (a collection's position was noted at start)."""
        if not self._stack:
            return  # the document root, already registered at its start
        parent = self._stack[-1]
        if isinstance(parent.container, dict):
            key = parent.key
            parent.has_key = False
            parent.key = None
            if key is _DISCARD or not parent.live:
                return
            parent.container[key] = value
            if not finished and self._doc is not None and pos is not None:
                child = (*parent.path, key)
                self._doc.positions[child] = pos
                self._doc.key_positions[child] = parent.key_pos
        else:
            if not finished and parent.live and self._doc is not None and pos is not None:
                self._doc.positions[(*parent.path, len(parent.container))] = pos
            parent.container.append(value)


def _line_col(text: str, index: int) -> Position:
    before = text[:index]
    line = before.count("\n") + 1
    return line, index - (before.rfind("\n") + 1) + 1


def _feed(loader_class: Any, text: str, builder: _Builder) -> None:
    """Parse ``text`` into ``builder``; the parser's errors propagate."""
    loader = loader_class(text)
    try:
        get_event, scalar, feed = loader.get_event, builder._scalar, builder.feed
        while True:  # the hot loop: scalars (most events) skip the dispatch
            event = get_event()
            if type(event) is yaml.ScalarEvent:
                scalar(event)
            elif event is None or type(event) is yaml.StreamEndEvent:
                break
            else:
                feed(event)
    finally:
        loader.dispose()


def _fast_read(text: str, file: str) -> _Builder | None:
    """The C parser's reading, when it has one and it is sure to be the reference's."""
    if _FAST is None or _parsers_may_differ(text):
        return None
    builder = _Builder(file, text)
    try:
        _feed(_FAST, text, builder)
    except yaml.YAMLError:
        return None  # errors are reported by the reference parser, with its marks
    return None if builder.parsers_may_differ else builder


def parse_text(
    text: str, file: str, *, fast: bool = True
) -> tuple[list[Document], list[Diagnostic]]:
    """Read every document of ``text``; problems come back as diagnostics.

    ``fast=False`` reads with the pure-Python parser only: the answer is the same
    (the module docstring says why), only slower.
    """
    builder = _fast_read(text, file) if fast else None
    if builder is not None:
        builder.finish()
        return builder.documents, builder.diagnostics
    builder = _Builder(file, text)
    try:
        _feed(_REFERENCE, text, builder)
    except yaml.MarkedYAMLError as exc:
        builder.diagnostics.append(error_diagnostic(file, text, exc))
        builder.documents = builder.documents[:-1] if builder._stack else builder.documents
    except yaml.reader.ReaderError as exc:
        line, column = _line_col(text, exc.position)
        builder.diagnostics.append(
            rules.NOT_UTF8.at(
                file,
                line,
                column,
                f"character #x{exc.character:04x} is not allowed in YAML text; "
                "is this a binary file? Save the sheet as plain UTF-8 text",
            )
        )
        builder.documents = []
    except yaml.YAMLError as exc:  # any other parser complaint, without a mark
        builder.diagnostics.append(
            rules.YAML_SYNTAX.at(file, 1, 1, f"YAML error: {exc}; fix the YAML syntax")
        )
        builder.documents = []
    finally:
        builder.finish()
    return builder.documents, builder.diagnostics


def read_file(path: Path, display: str | None = None, *, fast: bool = True) -> LoadedFile:
    """Read and parse one sheet file. Raises ``OSError`` only when it cannot be read at all
    (:class:`~jobdef.sheets.files.RefusedFile` for a symlink or a file that is not regular).

    ``fast=False``: the pure-Python parser only (see :func:`parse_text`)."""
    file = display or str(path)
    raw = read_regular(path, MAX_BYTES)  # never a symlink, a FIFO or a device
    if len(raw) > MAX_BYTES:
        size = os.lstat(path).st_size / (1024 * 1024)
        return LoadedFile(
            file,
            [],
            [
                rules.TOO_LARGE.at(
                    file,
                    1,
                    1,
                    f"file is {size:.1f} MiB, over the 1 MiB limit of a sheet file; "
                    "split it into one file per job",
                )
            ],
        )
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        return LoadedFile(
            file,
            [],
            [
                rules.NOT_UTF8.at(
                    file,
                    line,
                    1,
                    "file contains NUL bytes: this is a binary file, not a sheet; "
                    "remove it from the sheets folder or save the sheet as UTF-8 text",
                )
            ],
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        good = raw[: exc.start].decode("utf-8", errors="replace")
        line, column = _line_col(good, len(good))
        return LoadedFile(
            file,
            [],
            [
                rules.NOT_UTF8.at(
                    file,
                    line,
                    column,
                    f"byte 0x{raw[exc.start]:02x} is not UTF-8; save the file as UTF-8 "
                    "(sheets are read as UTF-8 only)",
                )
            ],
        )
    return load_text(text, file, fast=fast)


def load_text(text: str, file: str, *, fast: bool = True) -> LoadedFile:
    """The sheet documents of decoded ``text``: the mappings, and what is wrong."""
    documents, diagnostics = parse_text(text, file, fast=fast)
    usable: list[Document] = []
    for doc in documents:
        if doc.data is None:
            continue  # an empty document between two `---`
        if not isinstance(doc.data, dict):
            diagnostics.append(
                rules.NOT_A_MAPPING.at(
                    file,
                    doc.line,
                    doc.column,
                    f"a sheet document must be a mapping of fields, got {_describe(doc.data)}"
                    if not isinstance(doc.data, list)
                    else "a sheet document must be a mapping of fields, got a list; "
                    "start with `apiVersion: jobdef/v1` and `kind: ...`",
                )
            )
            continue
        usable.append(doc)
    if not usable and not diagnostics:
        diagnostics.append(
            rules.EMPTY_FILE.at(
                file,
                1,
                1,
                "file holds no sheet; write at least `apiVersion: jobdef/v1` and `kind: ...`, "
                "or delete the file",
            )
        )
    return LoadedFile(file, usable, diagnostics)
