"""What ``opentelemetry-instrument`` does for a real deployment, for the trace tests: every
process of the worker (parent and spawned handler processes, which inherit PYTHONPATH)
sets an SDK tracer provider at start, exporting each span as a JSON line to the file
named by JOBDEF_TEST_TRACES with the SDK's ConsoleSpanExporter."""

from __future__ import annotations

import os

_path = os.environ.get("JOBDEF_TEST_TRACES")
if _path:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    _out = open(_path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    _provider = TracerProvider()
    _exporter = ConsoleSpanExporter(
        out=_out, formatter=lambda span: span.to_json(indent=None) + "\n"
    )
    _provider.add_span_processor(SimpleSpanProcessor(_exporter))
    trace.set_tracer_provider(_provider)
