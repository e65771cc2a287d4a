"""Rules of the strict YAML loader (JD0xx): what a sheet file must be before it is read."""

from __future__ import annotations

from jobdef.sheets.rules.base import Rule

YAML_SYNTAX = Rule(
    "JD001", "yaml-syntax", "error", "A file that does not parse cannot say anything reliable."
)
NOT_UTF8 = Rule(
    "JD002",
    "not-utf8-text",
    "error",
    "Sheets are UTF-8 text; binary or other encodings would be read as something else.",
)
TOO_LARGE = Rule(
    "JD003",
    "file-too-large",
    "error",
    "A sheet over 1 MiB is not a sheet; the limit also bounds the work of one file.",
)
TAB_INDENT = Rule(
    "JD004",
    "tab-indentation",
    "error",
    "YAML forbids tabs for indentation; editors show them at different widths.",
)
DUPLICATE_KEY = Rule(
    "JD005",
    "duplicate-key",
    "error",
    "With a key written twice, readers silently disagree on which value wins.",
)
ANCHOR_ALIAS = Rule(
    "JD006",
    "anchor-or-alias",
    "error",
    "Anchors and aliases hide values from review and allow alias bombs; use Defaults.",
)
MERGE_KEY = Rule(
    "JD007",
    "merge-key",
    "error",
    "`<<` merge keys are YAML 1.1 only and hide values from review; use Defaults.",
)
NON_STRING_KEY = Rule(
    "JD008",
    "non-string-key",
    "error",
    "Keys of a sheet are field names; a number, boolean or null key is a mistake.",
)
YAML11_AMBIGUOUS = Rule(
    "JD009",
    "yaml11-ambiguous",
    "warning",
    "A YAML 1.1 reader (PyYAML's default, Ruby, old Go) would type this plain value differently.",
)
EMPTY_FILE = Rule("JD010", "empty-file", "error", "An empty sheet file is almost always a mistake.")
NOT_A_MAPPING = Rule(
    "JD011",
    "document-not-mapping",
    "error",
    "Every document of a sheet is a mapping with apiVersion and kind.",
)
EXPLICIT_TAG = Rule(
    "JD012",
    "explicit-tag",
    "error",
    "YAML tags change how values are typed, out of sight of the schema.",
)
NO_SHEETS = Rule(
    "JD013",
    "no-sheets",
    "error",
    "A folder without sheets usually means the wrong path, and a silent pass would hide it.",
)
YAML_MISREAD = Rule(
    "JD014",
    "yaml-misread",
    "error",
    "YAML libraries read this otherwise than the YAML spec says; jobdef refuses it, not guesses.",
)

RULES = (
    YAML_SYNTAX,
    NOT_UTF8,
    TOO_LARGE,
    TAB_INDENT,
    DUPLICATE_KEY,
    ANCHOR_ALIAS,
    MERGE_KEY,
    NON_STRING_KEY,
    YAML11_AMBIGUOUS,
    EMPTY_FILE,
    NOT_A_MAPPING,
    EXPLICIT_TAG,
    NO_SHEETS,
    YAML_MISREAD,
)
