"""OpenTelemetry spans: one per enqueue, one per attempt, tied by the job's stored context.

Optional: with ``opentelemetry-api`` installed (``jobdef[otel]``) and a tracer
provider set by the application (the SDK, or ``opentelemetry-instrument``),
:func:`enqueue_span` opens a PRODUCER span ``send <queue>`` around the store's
write and stores the current trace context (W3C ``traceparent``/``tracestate``,
through the global propagator) on each job it creates; :func:`attempt_span`,
in the handler process, opens a CONSUMER span ``process <queue>`` around the
handler. Without the package, or without a provider, both are a no-op and
nothing is stored.

The attempt span is a **child** of the enqueue's context and also **links** to
it. The messaging conventions recommend a link from a consumer span to each
message's creation context, and allow the creation context as parent when a
span processes a single message, which an attempt always does. As a child, the
handler's work (and the spans of the libraries it calls) shows in the trace of
the request that enqueued it, which is what one looks for; the link keeps it
findable by tools that start a trace per delivery. Every attempt of a job has
the same parent, so a retry an hour later joins the same trace.

The span is made in the handler process, so the spans the handler opens nest
under it. An attempt whose process was killed (its timeout) or died cannot end
its own span; the worker then records one for it, from the start its child
reported to the kill (:func:`ended_attempt_span`).

Attributes (messaging conventions): ``messaging.system`` = ``jobdef``,
``messaging.operation.type`` (``send``/``process``), ``messaging.operation.name``
(``enqueue``/``process``), ``messaging.destination.name`` = the queue,
``messaging.message.id`` = the job id, ``messaging.batch.message_count`` for an
enqueue of several; jobdef's own ``jobdef.job`` (the job's name) and
``jobdef.attempt``. An exception the handler raises is recorded on the span,
whose status is then ERROR.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

# The OpenTelemetry API, imported by _api() once spans can be recorded.
trace: Any = None
propagate: Any = None
otel_context: Any = None

SYSTEM = "jobdef"
_TRACER = "jobdef"
# A stored context is a few hundred bytes; a longer one is not read back.
_MAX_CONTEXT_CHARS = 4096


def _api() -> bool:
    """Import the OpenTelemetry API when a tracer provider can be set, and say whether it
    is here. A provider is set by code that imported ``opentelemetry`` already (the SDK,
    ``opentelemetry-instrument``) or named by ``OTEL_PYTHON_TRACER_PROVIDER``; in any
    other process the import (tens of milliseconds of every CLI enqueue) would buy a
    no-op. Asked again at each call, so a provider set later is seen (the environment
    is read once: :func:`_provider_named`)."""
    global trace, propagate, otel_context
    if trace is not None:
        return True
    if "opentelemetry" not in sys.modules and not _provider_named():
        return False
    try:
        from opentelemetry import context
        from opentelemetry import propagate as propagation
        from opentelemetry import trace as tracing
    except ImportError:  # the otel extra is not installed: every function here is a no-op
        return False
    trace, propagate, otel_context = tracing, propagation, context
    return True


@functools.cache
def _provider_named() -> bool:
    """Whether the environment names a tracer provider, read once per process: it is set
    when a process is launched, and asking ``os.environ`` for a name it lacks costs a
    microsecond, more than the rest of a no-op attempt span."""
    return bool(os.environ.get("OTEL_PYTHON_TRACER_PROVIDER"))


def enabled() -> bool:
    """Whether spans are recorded: the API is installed and a tracer provider is set."""
    if not _api():
        return False
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


@dataclass
class Enqueue:
    """What :func:`enqueue_span` gives its caller: the context to store on each job."""

    context: str | None = None
    _span: Any = field(default=None, repr=False)

    def stored(self, job_ids: Sequence[int]) -> None:
        """Name the jobs the enqueue created (or merged into) on its span."""
        if self._span is not None and len(job_ids) == 1:
            self._span.set_attribute("messaging.message.id", str(job_ids[0]))


@contextlib.contextmanager
def enqueue_span(job: str, queue: str, count: int = 1) -> Iterator[Enqueue]:
    """A PRODUCER span around an enqueue of ``count`` jobs of ``job`` to ``queue``."""
    if not enabled():
        yield Enqueue()
        return
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.operation.name": "enqueue",
        "messaging.destination.name": queue,
        "jobdef.job": job,
    }
    if count != 1:
        attributes["messaging.batch.message_count"] = count
    tracer = trace.get_tracer(_TRACER)
    with tracer.start_as_current_span(
        f"send {queue}", kind=trace.SpanKind.PRODUCER, attributes=attributes
    ) as span:
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        yield Enqueue(json.dumps(carrier, separators=(",", ":")) if carrier else None, span)


def _parent(stored: str | None) -> Any:
    """The OTel context of a stored trace context (``None``: none, or unreadable)."""
    if not stored or len(stored) > _MAX_CONTEXT_CHARS:
        return None
    try:
        carrier = json.loads(stored)
    except ValueError:
        return None
    if not isinstance(carrier, dict):
        return None
    return propagate.extract({str(k): str(v) for k, v in carrier.items()})


def _process_attributes(job: str, queue: str, job_id: int, attempt: int) -> dict[str, Any]:
    return {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": queue,
        "messaging.message.id": str(job_id),
        "jobdef.job": job,
        "jobdef.attempt": attempt,
    }


def _links(parent: Any) -> list[Any]:
    if parent is None:
        return []
    span_context = trace.get_current_span(parent).get_span_context()
    return [trace.Link(span_context)] if span_context.is_valid else []


_NO_SPAN = contextlib.nullcontext()


def attempt_span(
    job: str, queue: str, job_id: int, attempt: int, stored: str | None
) -> contextlib.AbstractContextManager[None]:
    """A CONSUMER span around one attempt's handler, child of and linked to the job's
    stored enqueue context; what the handler raises is recorded on it (and re-raised).
    Without a provider, one shared no-op: it is asked for at every attempt."""
    if not enabled():
        return _NO_SPAN
    return _recorded_attempt_span(job, queue, job_id, attempt, stored)


@contextlib.contextmanager
def _recorded_attempt_span(
    job: str, queue: str, job_id: int, attempt: int, stored: str | None
) -> Iterator[None]:
    parent = _parent(stored)
    tracer = trace.get_tracer(_TRACER)
    with tracer.start_as_current_span(
        f"process {queue}",
        context=parent,
        kind=trace.SpanKind.CONSUMER,
        attributes=_process_attributes(job, queue, job_id, attempt),
        links=_links(parent),
    ):
        yield


def ended_attempt_span(
    job: str,
    queue: str,
    job_id: int,
    attempt: int,
    stored: str | None,
    *,
    seconds: float | None,
    outcome: str,
    error_type: str,
) -> None:
    """The span of an attempt whose process could not end its own (killed at its timeout,
    or died), recorded by the worker: ERROR, from its start to now."""
    if not enabled():
        return
    parent = _parent(stored)
    now = time.time_ns()
    start = now - int((seconds or 0.0) * 1e9)
    attributes = _process_attributes(job, queue, job_id, attempt)
    attributes["error.type"] = error_type
    span = trace.get_tracer(_TRACER).start_span(
        f"process {queue}",
        context=parent if parent is not None else otel_context.Context(),
        kind=trace.SpanKind.CONSUMER,
        attributes=attributes,
        links=_links(parent),
        start_time=start,
    )
    span.set_status(trace.Status(trace.StatusCode.ERROR, f"attempt {outcome}"))
    span.end(end_time=now)
