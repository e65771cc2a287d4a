"""Rules for what the JSON Schema refuses (JD1xx), each located at the offending node."""

from __future__ import annotations

from jobdef.sheets.rules.base import Rule

UNKNOWN_FIELD = Rule(
    "JD101",
    "unknown-field",
    "error",
    "A misspelt field would otherwise be ignored and its default silently used.",
)
MISSING_FIELD = Rule(
    "JD102",
    "missing-field",
    "error",
    "Some fields have no sensible default; the sheet must say them.",
)
WRONG_TYPE = Rule(
    "JD103",
    "wrong-type",
    "error",
    "A value of the wrong type means the sheet says something other than intended.",
)
NOT_ALLOWED = Rule(
    "JD104",
    "value-not-allowed",
    "error",
    "Fields with a fixed set of values accept only those; a typo must not pass.",
)
BAD_VALUE = Rule(
    "JD105",
    "bad-value",
    "error",
    "The value breaks a limit or format of the schema (range, length, pattern, uniqueness).",
)

RULES = (UNKNOWN_FIELD, MISSING_FIELD, WRONG_TYPE, NOT_ALLOWED, BAD_VALUE)
