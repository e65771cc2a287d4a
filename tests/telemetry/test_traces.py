"""OpenTelemetry: the enqueue span in this process, each attempt's span in the worker's
handler process (or the worker, for an attempt killed at its timeout), the attempt a
child of the enqueue and linked to it, across the processes through the stored context."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobdef.backends.protocol import Backend
from jobdef.runtime.queue import Queue
from support import eventually

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

TRACING = Path(__file__).resolve().parent / "tracing"
EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> InMemorySpanExporter:
    """This process's finished spans; the provider is set once per process (OTel's rule)."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    EXPORTER.clear()
    return EXPORTER


def _hex(number: int, width: int) -> str:
    return f"0x{number:0{width}x}"


@pytest.mark.slow
def test_each_attempt_is_a_child_of_its_enqueue_and_linked_to_it(
    spans: InMemorySpanExporter, queue: Queue, backend: Backend, workers, tmp_path: Path
) -> None:
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("POST /reservations"):
        ids = {job: queue.enqueue(job, {"i": 1}).id for job in ("quick", "flaky", "slow")}
    enqueues = {span.attributes["jobdef.job"]: span for span in spans.get_finished_spans()
                if span.name == "send default"}  # fmt: skip
    assert set(enqueues) == set(ids)
    for job, span in enqueues.items():
        assert span.kind is trace.SpanKind.PRODUCER
        assert span.attributes["messaging.system"] == "jobdef"
        assert span.attributes["messaging.destination.name"] == "default"
        assert span.attributes["messaging.message.id"] == str(ids[job])
        stored = backend.get(ids[job]).trace_context  # type: ignore[union-attr]
        assert _hex(span.context.span_id, 16)[2:] in json.loads(stored)["traceparent"]

    traces = tmp_path / "traces.jsonl"
    pythonpath = f"{TRACING}:{Path(__file__).resolve().parent}"
    worker = workers.start(
        "--concurrency", "2", env={"JOBDEF_TEST_TRACES": str(traces), "PYTHONPATH": pythonpath}
    )  # fmt: skip
    assert worker  # PYTHONPATH above replaces the fixture's: the source is installed

    def attempts() -> list[dict]:
        if not traces.exists():
            return []
        found = [json.loads(line) for line in traces.read_text().splitlines()]
        found = [span for span in found if span["name"] == "process default"]
        return found if len(found) == 4 else []

    processed = eventually(attempts, 60, "four attempt spans")
    by_attempt = {
        (span["attributes"]["jobdef.job"], span["attributes"]["jobdef.attempt"]): span
        for span in processed
    }
    assert set(by_attempt) == {("quick", 1), ("flaky", 1), ("flaky", 2), ("slow", 1)}
    for (job, _attempt), span in by_attempt.items():
        enqueue = enqueues[job]
        assert span["kind"] == "SpanKind.CONSUMER"
        assert span["context"]["trace_id"] == _hex(enqueue.context.trace_id, 32)
        assert span["parent_id"] == _hex(enqueue.context.span_id, 16)
        [link] = span["links"]
        assert link["context"]["span_id"] == _hex(enqueue.context.span_id, 16)
        attributes = span["attributes"]
        assert attributes["messaging.system"] == "jobdef"
        assert attributes["messaging.operation.type"] == "process"
        assert attributes["messaging.destination.name"] == "default"
        assert attributes["messaging.message.id"] == str(ids[job])
    assert by_attempt[("quick", 1)]["status"]["status_code"] == "UNSET"
    failed = by_attempt[("flaky", 1)]
    assert failed["status"]["status_code"] == "ERROR"
    [event] = failed["events"]
    assert event["name"] == "exception"
    assert event["attributes"]["exception.type"] == "ConnectionError"
    # Killed at its timeout: the worker recorded the span, from its start to the kill.
    killed = by_attempt[("slow", 1)]
    assert killed["status"]["status_code"] == "ERROR"
    assert killed["attributes"]["error.type"].endswith("AttemptTimedOut")
    assert worker.stop() == 0


def test_without_a_tracer_provider_nothing_is_recorded_or_stored(db_url: str) -> None:
    """In a fresh process (this one has a provider once a test above set it)."""
    code = (
        "from jobdef.telemetry import traces\n"
        "from jobdef.runtime.queue import connect\n"
        "from jobdef.sheets.pipeline import load_registry\n"
        f"q = connect({db_url!r}, load_registry([{str(Path(__file__).parent / 'sheets')!r}]))\n"
        "job = q.enqueue('quick', {'i': 1}).id\n"
        "print(traces.enabled(), q.get(job).trace_context)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["False", "None"]


def test_an_attempt_without_a_provider_makes_no_span_and_reads_no_environment() -> None:
    """Asked at every attempt, in a process without a provider: one shared no-op context,
    no context manager made per attempt, no lookup of OTEL_PYTHON_TRACER_PROVIDER (a
    missing name costs os.environ a microsecond) after the first."""
    code = (
        "import sys\n"
        "from jobdef.telemetry import traces\n"
        "first = traces.attempt_span('quick', 'default', 1, 1, None)\n"
        "calls = []\n"
        "sys.setprofile(lambda frame, event, arg: event == 'call' and "
        "calls.append(frame.f_code.co_name))\n"
        "span = traces.attempt_span('quick', 'default', 2, 1, None)\n"
        "with span:\n"
        "    pass\n"
        "sys.setprofile(None)\n"
        "print(span is first, 'opentelemetry' in sys.modules, *calls)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    shared, imported, *calls = ran.stdout.split()
    assert (shared, imported) == ("True", "False")
    assert not {"get", "__getitem__", "helper", "__init__"} & set(calls), calls


def test_a_provider_named_in_the_environment_records_attempts() -> None:
    """OTEL_PYTHON_TRACER_PROVIDER, read once per process, still turns spans on where
    nothing imported opentelemetry."""
    code = "from jobdef.telemetry import traces\nprint(traces.enabled(), traces.enabled())\n"
    env = os.environ | {"OTEL_PYTHON_TRACER_PROVIDER": "sdk_tracer_provider"}
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert ran.stdout.split() == ["True", "True"]
