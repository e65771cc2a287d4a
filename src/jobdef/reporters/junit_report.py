"""JUnit XML: one test case per sheet file, failed by its errors (and warnings under --strict).

The root is a single ``<testsuite>``, the one shape both the Ant JUnit schema and the
Jenkins xUnit one accept: ``tests``, ``failures``, ``errors`` (a file that could not be
read as a sheet at all: JD001 to JD014), ``time``, ``timestamp`` and ``hostname``, then
``properties``, one ``testcase`` per file (at most one ``failure`` or ``error`` each),
and ``system-out`` holding the findings that do not fail the run. File names are
relative to the project root.
"""

from __future__ import annotations

import socket
from collections import defaultdict
from datetime import UTC, datetime
from xml.etree import ElementTree as ET

from jobdef import __version__
from jobdef.render.escape import visible
from jobdef.reporters import Report
from jobdef.sheets.diagnostics import Diagnostic


def _line(report: Report, d: Diagnostic) -> str:
    return report.finding(d)


def _unreadable(d: Diagnostic) -> bool:
    """A finding of the loading rules (JD0xx): the file is not a sheet that could be checked."""
    return d.code.startswith("JD0") and d.severity == "error"


def render(report: Report) -> str:
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for d in report.diagnostics:
        by_file[d.file].append(d)
    files = list(dict.fromkeys([*report.files, *by_file]))
    failing = {f: [d for d in by_file[f] if report.fails(d)] for f in files}
    errors = sum(1 for f in files if failing[f] and _unreadable(failing[f][0]))
    failures = sum(1 for f in files if failing[f]) - errors
    seconds = f"{report.elapsed:.3f}"
    suite = ET.Element(
        "testsuite",
        name="jobdef validate",
        tests=str(len(files)),
        failures=str(failures),
        errors=str(errors),
        skipped="0",
        time=seconds,
        timestamp=(report.started or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S"),
        hostname=socket.gethostname() or "localhost",
    )
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="jobdef.version", value=__version__)
    ET.SubElement(properties, "property", name="strict", value=str(report.strict).lower())
    other: list[Diagnostic] = []
    for file in files:
        name = visible(report.path(file))
        case = ET.SubElement(suite, "testcase", classname="jobdef.validate", name=name, time="0")
        found = failing[file]
        other += [d for d in by_file[file] if not report.fails(d)]
        if found:
            noun = "finding" if len(found) == 1 else "findings"
            element = ET.SubElement(
                case,
                "error" if _unreadable(found[0]) else "failure",
                message=f"{len(found)} {noun}: {found[0].code} {visible(found[0].message)}",
                type=found[0].code,
            )
            element.text = "\n".join(_line(report, d) for d in found)
    ET.SubElement(suite, "system-out").text = "\n".join(_line(report, d) for d in other)
    ET.SubElement(suite, "system-err").text = ""
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, "unicode") + "\n"
