"""What a YAML syntax error is about: a tab only when the tab is the cause, else the error.

A tab is blamed (JD004) only when the parser stopped at that tab; any other
error is the parser's own message (JD001) at its place, with a hint for the
usual causes, even when the file has a tab elsewhere (a tab inside a block of
text is text). Errors are always read with the pure-Python parser (see
:mod:`jobdef.sheets.strict_yaml`), so the finding does not depend on whether
libyaml is installed.
"""

from __future__ import annotations

import yaml

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules import loading as rules

_SYNTAX_HINT = (
    "check the indentation and quote values that contain ': ', ' #', or start with a "
    "special character"
)
_CONTEXT_HINTS = {
    "while scanning an alias": "a plain value starting with * is read as an alias; quote it, "
    'such as schedule: "*/5 * * * *"',
    "while scanning an anchor": "a plain value starting with & is read as an anchor; quote it",
}
_UNCLOSED = {
    "while parsing a flow mapping": ("{", "}"),
    "while parsing a flow sequence": ("[", "]"),
}
_CHARACTER_HINTS = {
    "?": 'a ? inside [ ] or { } starts a key for YAML readers; quote the value ("a?b")',
    "#": "a comment needs a space before its #; write `value  # comment`",
}


def _line_col(text: str, index: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def tab_diagnostic(file: str, text: str, tab: int) -> Diagnostic:
    """JD004 for the tab at index ``tab``, where the parser stopped."""
    line, column = _line_col(text, tab)
    line_start = text.rfind("\n", 0, tab) + 1
    line_end = text.find("\n", tab)
    after = text[tab : len(text) if line_end < 0 else line_end].strip(" \t\r")
    if text[line_start:tab].strip(" \t") == "":
        message = "tab used for indentation; YAML allows only spaces here, so indent with spaces"
    elif after == "" or after.startswith("#"):
        message = "tab at the end of a line; PyYAML's parser refuses it, so remove it"
    else:
        message = (
            "tab used as a separator; PyYAML's parser refuses it here (libyaml takes it), "
            "so use spaces"
        )
    return rules.TAB_INDENT.at(file, line, column, message)


def syntax_diagnostic(file: str, text: str, exc: yaml.MarkedYAMLError) -> Diagnostic:
    """JD001 for a syntax error, at the parser's mark, with a hint for the usual causes."""
    mark = exc.problem_mark or exc.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    at = text[mark.index] if mark is not None and mark.index < len(text) else ""
    problem = exc.problem or "invalid YAML"
    context = f" ({exc.context})" if exc.context else ""
    hint = _CONTEXT_HINTS.get(exc.context or "") or _CHARACTER_HINTS.get(at, _SYNTAX_HINT)
    opened = exc.context_mark
    brackets = _UNCLOSED.get(exc.context or "")
    if brackets and opened is not None and mark is not None and mark.line > opened.line:
        hint = (
            f"is the {brackets[0]} at line {opened.line + 1}, column {opened.column + 1} "
            f"closed? Close it with {brackets[1]} (or quote the value if the "
            f"{brackets[0]} is text)"
        )
    message = f"YAML syntax error: {problem}{context}; {hint}"
    return rules.YAML_SYNTAX.at(file, line, column, message)


def error_diagnostic(file: str, text: str, exc: yaml.MarkedYAMLError) -> Diagnostic:
    """The one finding for a syntax error: the tab it stopped at, or the error itself."""
    mark = exc.problem_mark or exc.context_mark
    if mark is not None and mark.index < len(text) and text[mark.index] == "\t":
        return tab_diagnostic(file, text, mark.index)
    return syntax_diagnostic(file, text, exc)


__all__ = ["error_diagnostic", "syntax_diagnostic", "tab_diagnostic"]
