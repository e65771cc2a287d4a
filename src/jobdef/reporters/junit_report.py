"""JUnit XML: one test case per sheet file, failed by its errors (and warnings under --strict)."""

from __future__ import annotations

from collections import defaultdict
from xml.etree import ElementTree as ET

from jobdef.reporters import Report
from jobdef.sheets.diagnostics import Diagnostic


def _line(d: Diagnostic) -> str:
    return f"{d.file}:{d.line}:{d.column}: {d.severity} {d.code} {d.message}"


def render(report: Report) -> str:
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for d in report.diagnostics:
        by_file[d.file].append(d)
    files = list(dict.fromkeys([*report.files, *by_file]))
    failed = sum(1 for f in files if any(report.fails(d) for d in by_file[f]))
    root = ET.Element("testsuites", name="jobdef validate", tests=str(len(files)))
    suite = ET.SubElement(
        root, "testsuite", name="jobdef validate", tests=str(len(files)), failures=str(failed)
    )
    for file in files:
        case = ET.SubElement(suite, "testcase", classname="jobdef.validate", name=file)
        failing = [d for d in by_file[file] if report.fails(d)]
        other = [d for d in by_file[file] if not report.fails(d)]
        if failing:
            noun = "finding" if len(failing) == 1 else "findings"
            failure = ET.SubElement(
                case,
                "failure",
                message=f"{len(failing)} {noun}: {failing[0].code} {failing[0].message}",
                type=failing[0].code,
            )
            failure.text = "\n".join(_line(d) for d in failing)
        if other:
            ET.SubElement(case, "system-out").text = "\n".join(_line(d) for d in other)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
