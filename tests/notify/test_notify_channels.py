"""Each channel type delivers to a real receiver on loopback (or a real program)."""

from __future__ import annotations

import dataclasses
import email
import json
import logging
import sys
from email import policy as email_policy
from pathlib import Path

import pytest
from notify_servers import SmtpServer, WebhookServer, free_port

from jobdef.errors import DeliveryError
from jobdef.notify.channels import build_sender
from jobdef.notify.message import digest_message, single_message
from jobdef.notify.render import Renderer
from jobdef.notify.sample import sample_notification
from jobdef.policy.model import ChannelPolicy
from jobdef.policy.values import freeze

AT = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def channel(type_: str, **settings: object) -> ChannelPolicy:
    return ChannelPolicy(name="ops", type=type_, settings=freeze(settings))  # type: ignore[arg-type]


def message(template: str | None = None):
    return single_message(sample_notification("ops", AT), Renderer(template))


def test_webhook_json_posts_the_full_event_with_its_message_id(webhook: WebhookServer) -> None:
    env = {"HOOK_URL": webhook.url, "HOOK_TOKEN": "Bearer abc"}
    sender = build_sender(
        channel("webhook", url_env="HOOK_URL", headers_env={"Authorization": "HOOK_TOKEN"}), env
    )
    sent = message()
    sender.send(sent)

    [request] = webhook.received
    assert request.headers["X-Jobdef-Message-Id"] == sent.message_id
    assert request.headers["Authorization"] == "Bearer abc"
    assert request.headers["Content-Type"].startswith("application/json")
    body = request.body
    assert body["message_id"] == sent.message_id
    assert body["event"] == "dead"
    assert body["job"] == "jobdef_notify_test"
    assert body["title"] == "Test message from `jobdef notify test`"
    assert body["job_id"] == 0
    assert body["key_args"] == {"order_id": 12345}
    assert (body["attempts_used"], body["max_attempts"]) == (3, 3)
    assert body["error_type"] == "ConnectionError"
    assert "refused" in body["error_message"]
    assert body["at_iso"] == "2026-01-01T00:00:00Z"
    assert body["requeue_command"] == "jobdef requeue 0"
    assert body["channel"] == "ops"
    assert body["text"] == sent.text


@pytest.mark.parametrize("fmt", ["slack", "chat"])
def test_webhook_chat_format_posts_a_text_message(webhook: WebhookServer, fmt: str) -> None:
    env = {"HOOK_URL": webhook.url}
    sender = build_sender(channel("webhook", url_env="HOOK_URL", format=fmt), env)
    sender.send(message())

    [request] = webhook.received
    assert list(request.body) == ["text"]
    text = request.body["text"]
    assert "dead: jobdef_notify_test" in text
    assert "order_id=12345" in text
    assert "ConnectionError" in text
    assert "jobdef requeue 0" in text


def test_slack_format_escapes_what_slack_reads_as_markup(webhook: WebhookServer) -> None:
    sent = message("{{ error_message }} <@channel> & <!here>")
    sender = build_sender(channel("webhook", url_env="U", format="slack"), {"U": webhook.url})
    sender.send(sent)
    assert webhook.received[0].body["text"].endswith("&lt;@channel&gt; &amp; &lt;!here&gt;")


def test_webhook_error_answer_is_a_failed_delivery_without_the_secret_url(
    webhook: WebhookServer,
) -> None:
    webhook.status = 503
    url = webhook.url + "/T000/secret-token"
    sender = build_sender(channel("webhook", url_env="HOOK_URL"), {"HOOK_URL": url})
    with pytest.raises(DeliveryError, match="HTTP 503") as caught:
        sender.send(message())
    assert "secret-token" not in caught.value.message


def test_webhook_server_down_is_a_failed_delivery_without_the_secret_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/hook/secret-token"
    sender = build_sender(channel("webhook", url_env="HOOK_URL", timeout="2s"), {"HOOK_URL": url})
    with pytest.raises(DeliveryError, match="unreachable") as caught:
        sender.send(message())
    assert "secret-token" not in caught.value.message


def test_webhook_digest_lists_every_event(webhook: WebhookServer) -> None:
    notes = [sample_notification("ops", AT + i) for i in range(3)]
    digest = digest_message("ops", notes, Renderer())
    sender = build_sender(channel("webhook", url_env="HOOK_URL"), {"HOOK_URL": webhook.url})
    sender.send(digest)

    body = webhook.received[0].body
    assert body["event"] == "digest"
    assert body["count"] == 3
    assert [e["message_id"] for e in body["events"]] == [n.message_id for n in notes]
    assert body["text"].count("jobdef requeue 0") == 3


def test_email_is_delivered_through_smtp_with_login(smtp_server: SmtpServer) -> None:
    env = {"SMTP_USER": "alerts", "SMTP_PASSWORD": "s3cret-pass"}
    sender = build_sender(
        channel(
            "email",
            host="127.0.0.1",
            port=smtp_server.port,
            security="none",
            user_env="SMTP_USER",
            password_env="SMTP_PASSWORD",
            **{"from": "jobdef@example.test", "to": ["ops@example.test", "oncall@example.test"]},
        ),
        env,
    )
    sent = message()
    sender.send(sent)

    assert smtp_server.logins == ["alerts"]
    [raw] = smtp_server.messages
    mail = email.message_from_bytes(raw, policy=email_policy.default)
    assert mail["From"] == "jobdef@example.test"
    assert mail["To"] == "ops@example.test, oncall@example.test"
    assert mail["Subject"] == sent.subject
    assert mail["X-Jobdef-Message-Id"] == sent.message_id
    assert mail["Message-ID"].startswith("<notify-test-ops-")
    body = mail.get_content()
    assert "order_id=12345" in body
    assert "jobdef requeue 0" in body


def test_email_server_down_is_a_failed_delivery() -> None:
    sender = build_sender(
        channel(
            "email",
            host="127.0.0.1",
            port=free_port(),
            security="none",
            timeout="2s",
            **{"from": "a@example.test", "to": ["b@example.test"]},
        ),
        {},
    )
    with pytest.raises(DeliveryError, match="unreachable"):
        sender.send(message())


def test_command_receives_the_event_as_json_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "event.json"
    script = (
        "import os, sys; data = sys.stdin.read(); "
        f"open({str(out)!r}, 'w').write(os.environ['JOBDEF_MESSAGE_ID'] + '\\n' + data)"
    )
    sender = build_sender(channel("command", command=[sys.executable, "-c", script]), {})
    sent = message()
    sender.send(sent)

    header, _, data = out.read_text().partition("\n")
    assert header == sent.message_id
    document = json.loads(data)
    assert document["message_id"] == sent.message_id
    assert document["job"] == "jobdef_notify_test"
    assert document["key_args"] == {"order_id": 12345}


def test_command_failure_is_a_failed_delivery_with_its_stderr() -> None:
    script = "import sys; sys.stderr.write('pager refused'); sys.exit(3)"
    sender = build_sender(channel("command", command=[sys.executable, "-c", script]), {})
    with pytest.raises(DeliveryError, match="status 3: pager refused"):
        sender.send(message())


def test_command_past_its_timeout_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    sender = build_sender(
        channel("command", command=[sys.executable, "-c", script], timeout="500ms"), {}
    )
    with pytest.raises(DeliveryError, match="timeout"):
        sender.send(message())
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists()


def test_log_channel_says_a_dead_job_in_words_on_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from jobdef.telemetry.logs import JsonFormatter, LogSettings, TextFormatter

    sender = build_sender(channel("log"), {})
    sent = message()
    with caplog.at_level(logging.INFO, logger="jobdef.notify"):
        sender.send(sent)
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    text = TextFormatter(LogSettings(), ()).format(record)
    assert "\n" not in text
    assert "{" not in text  # words, not a JSON document
    assert " jobdef.notify WARNING [jobdef] dead: jobdef_notify_test (Test message from " in text
    assert " | attempts: 3 of 3 | last error: ConnectionError: " in text
    assert " | re-run: jobdef requeue 0 (procedure: " in text
    assert text.endswith(f" | message id: {sent.message_id} queue=default channel=ops")
    assert len(text) < 500
    # As a JSON line, the event's fields are the line's, for a pipeline to alert on.
    line = json.loads(JsonFormatter(LogSettings(), ()).format(record))
    assert line["message"] == text.split(" WARNING ", 1)[1].split(" queue=")[0]
    assert (line["event"], line["job"], line["job_id"]) == ("dead", "jobdef_notify_test", 0)
    assert (line["message_id"], line["channel"]) == (sent.message_id, "ops")
    assert (line["error_type"], line["attempts_used"], line["max_attempts"]) == (
        "ConnectionError",
        3,
        3,
    )


def test_log_channel_logs_a_digest_one_line_per_event(caplog: pytest.LogCaptureFixture) -> None:
    notifications = [sample_notification("ops", AT + i) for i in range(3)]
    notifications = [
        dataclasses.replace(n, message_id=f"{n.message_id}-{i}")
        for i, n in enumerate(notifications)
    ]
    sent = digest_message("ops", notifications, Renderer())
    with caplog.at_level(logging.INFO, logger="jobdef.notify"):
        build_sender(channel("log"), {}).send(sent)
    assert [r.message_id for r in caplog.records] == [n.message_id for n in notifications]
    for record in caplog.records:
        assert record.getMessage().startswith("dead jobdef_notify_test job 0 (order_id=12345): ")
        assert record.getMessage().endswith("re-run: jobdef requeue 0")


def test_channel_template_reshapes_the_text() -> None:
    sent = message("{{ job }} #{{ job_id }} died after {{ attempts_used }}: {{ error_type }}")
    assert sent.text == "jobdef_notify_test #0 died after 3: ConnectionError"


def test_template_sandbox_refuses_python_internals_and_falls_back() -> None:
    sent = message("{{ job.__class__.__mro__[1].__subclasses__() }}")
    assert "object" not in sent.text.splitlines()[0]
    assert sent.text.startswith("[jobdef] dead: jobdef_notify_test")
    assert "the channel template failed: SecurityError" in sent.text


def test_email_carries_japanese_text(smtp_server: SmtpServer) -> None:
    settings = {"host": "127.0.0.1", "port": smtp_server.port, "security": "none"}
    settings |= {"from": "jobdef@example.test", "to": ["ops@example.test"]}
    sender = build_sender(channel("email", **settings), {})
    sender.send(message("{{ job }}: 予約確定メール送信が失敗しました ({{ error_type }})"))

    mail = email.message_from_bytes(smtp_server.messages[0], policy=email_policy.default)
    assert mail.get_content().strip() == (
        "jobdef_notify_test: 予約確定メール送信が失敗しました (ConnectionError)"
    )
