"""Log lines: the JSON fields, the handlers' extras kept, no secret, args only when asked.

The formatters are tested in this process; test_worker_logs.py reads a real
worker's output."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from jobdef.backends.records import JobRecord
from jobdef.runtime.context import Context
from jobdef.telemetry.logs import FIELDS, MAX_ARGS_CHARS, LogSettings, formatter
from jobdef.telemetry.observer import WorkerTelemetry

SECRET = "s3cr3t-value-of-the-environment"


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """What the root logger writes in JSON, hiding SECRET as an environment secret."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    settings = LogSettings(logging.DEBUG, "json", "w1")
    handler.setFormatter(formatter(settings, {"PAYMENT_API_TOKEN": SECRET}))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)


def _record(**changes: object) -> JobRecord:
    values: dict[str, object] = {
        "id": 42,
        "job": "send_reservation_mail",
        "queue": "mail",
        "priority": 0,
        "args": {"reservation_id": 7, "note": "x" * 5000},
        "state": "running",
        "attempt": 1,
        "max_attempts": 3,
        "idempotency_key": None,
        "run_after": 0.0,
        "created_at": 0.0,
        "updated_at": 0.0,
    }
    values.update(changes)
    return JobRecord(**values)  # type: ignore[arg-type]


def _parsed(text: list[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in text]


def test_every_json_line_has_the_fields_in_order_and_the_extras_after(
    lines: io.StringIO,
) -> None:
    ctx = Context(job_id=42, job="mail", attempt=2, max_attempts=3, idempotency_key=None)
    ctx.logger.info("sent to %s", "guest", extra={"to": "a@example.com", "count": 3})
    logging.getLogger("jobdef.worker").info("plain worker line")
    parsed = _parsed(lines.getvalue().splitlines())
    assert [list(line)[: len(FIELDS)] for line in parsed] == [list(FIELDS)] * 2
    first, second = parsed
    assert first["message"] == "sent to guest"
    assert (first["job"], first["job_id"], first["attempt"]) == ("mail", 42, 2)
    assert (first["to"], first["count"]) == ("a@example.com", 3)
    assert first["worker"] == "w1"
    assert first["logger"] == "jobdef.jobs.mail"
    assert second["job_id"] is None
    assert second["message"] == "plain worker line"


def test_no_secret_reaches_a_line_in_the_message_an_extra_or_a_traceback(
    lines: io.StringIO,
) -> None:
    log = logging.getLogger("jobdef.jobs.mail")
    log.warning("key %s", SECRET, extra={"url": "https://u:pw123456@h/x?token=abcdef"})
    try:
        raise RuntimeError(f"failed with {SECRET} and password=hunter22")
    except RuntimeError:
        log.exception("it broke")
    text = lines.getvalue()
    for secret in (SECRET, "pw123456", "abcdef", "hunter22"):
        assert secret not in text
    first, second = _parsed(text.splitlines())
    assert first["message"] == "key ***"
    assert first["url"] == "https://u:***@h/x?token=***"
    assert "RuntimeError: failed with *** and password=***" in str(second["exception"])


def test_the_attempt_line_names_the_outcome_and_duration_and_args_only_when_asked(
    lines: io.StringIO,
) -> None:
    quiet = WorkerTelemetry("w1")
    quiet.ran(42, 1, 0.0314)
    quiet.finished(_record(), "done")
    loud = WorkerTelemetry("w1", log_args=True)
    loud.finished(_record(attempt=2), "dead", error_type="ValueError", detail="dead: fatal")
    done, dead = _parsed(lines.getvalue().splitlines())
    assert done["message"] == "job 42 send_reservation_mail attempt 1 done in 31 ms"
    assert (done["outcome"], done["duration_ms"], done["queue"]) == ("done", 31.4, "mail")
    assert done["level"] == "info"
    assert "job_args" not in done
    assert dead["level"] == "warning"
    assert (dead["outcome"], dead["error_type"], dead["duration_ms"]) == (
        "dead",
        "ValueError",
        None,
    )
    args = str(dead["job_args"])
    assert args.startswith('{"reservation_id":7,"note":"xxx')
    assert len(args) < MAX_ARGS_CHARS + 30
    assert "chars)" in args


def test_the_text_format_appends_the_fields_that_are_set() -> None:
    settings = LogSettings(logging.INFO, "text", "w1")
    record = logging.LogRecord("jobdef.jobs.mail", logging.INFO, "", 0, "sent", (), None)
    record.job_id, record.attempt, record.to = 42, 1, "a@example.com"
    line = formatter(settings, {}).format(record)
    assert line.endswith(" jobdef.jobs.mail INFO sent job_id=42 attempt=1 to=a@example.com")


def test_a_hostile_extra_is_cut_escaped_and_kept_on_one_line(lines: io.StringIO) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    log = logging.getLogger("jobdef.jobs.mail")
    breaks = "a\nb\r\x85c\u2028d\u2029e\x1c"
    log.info("line %s", breaks, extra={"big": "x" * 100_000, "thing": Opaque(), "raw": breaks})
    text = lines.getvalue()
    [line] = text.splitlines()  # every kind of line break is escaped
    parsed = json.loads(line)
    assert parsed["message"] == f"line {breaks}"
    assert len(parsed["big"]) == 2000
    assert parsed["thing"] == "<opaque>"
    assert parsed["raw"] == breaks
