"""What a worker stores and logs about a job with a sensitive arg and a webhook whose
secret is its path: no password, no piece of the path, in the outbox row, the job's
stored error (whose handler quoted the password), the message sent or the worker's log.

A real ``jobdef worker --burst --log-args`` process runs the job (its handler refuses
it, so it dies and its notification is written), then delivers the message to a
receiver on loopback that refuses it with a body quoting the path it was posted to,
as chat receivers answer an unknown hook.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import textwrap
from pathlib import Path

import pytest
from notify_servers import WebhookServer, free_port

from jobdef.backends import open_backend
from jobdef.backends.records import OutboxRecord
from jobdef.errors import DeliveryError
from jobdef.notify.channels.webhook import WebhookSender
from jobdef.notify.checks import Channel
from jobdef.notify.lanes import ChannelLane, Outcome
from jobdef.notify.message import Message, single_message
from jobdef.notify.render import Renderer
from jobdef.notify.sample import sample_notification
from jobdef.redact import MASK
from jobdef.runtime import connect
from jobdef.sheets.pipeline import load_registry
from support.workers import start_process, worker_command, worker_env

HERE = Path(__file__).parent
HOOK_ENV = "NOTIFY_SECRET_HOOK_URL"
PASSWORD = "Hunter2-correct-horse"
# A Slack-style webhook path: the last three segments are the secret.
TEAM, BOT, TOKEN = "T0SECRET1", "B0SECRET2", "XySecretToken9abcDEF"
HOOK_PATH = f"/services/{TEAM}/{BOT}/{TOKEN}"
SECRET_PIECES = (PASSWORD, HOOK_PATH, TEAM, BOT, TOKEN)


def write_sheets(folder: Path) -> Path:
    folder.mkdir()
    (folder / "jobs.yaml").write_text(
        textwrap.dedent(
            f"""\
            apiVersion: jobdef/v1
            kind: Channel
            name: chat
            type: webhook
            url_env: {HOOK_ENV}
            format: json
            timeout: 5s
            ---
            apiVersion: jobdef/v1
            kind: Job
            name: sign_in
            owner: test-team
            handler: notify_handlers:refuse_sign_in
            args:
              user: {{type: string}}
              password: {{type: string, sensitive: true}}
            max_attempts: 1
            timeout: 30s
            errors:
              fatal: [PermissionError]
              default: fatal
            notify: {{channel: chat, events: [dead], key_args: [user, password]}}
            rerun: jobdef requeue --job sign_in --state dead
            """
        ),
        encoding="utf-8",
    )
    return folder


def assert_no_secret(text: str, where: str) -> None:
    for piece in SECRET_PIECES:
        assert piece not in text, f"{where} holds {piece!r}:\n{text}"


@pytest.mark.slow
def test_a_worker_stores_and_logs_neither_a_sensitive_arg_nor_the_webhook_path(
    tmp_path: Path,
) -> None:
    webhook = WebhookServer(status=404, path=HOOK_PATH, quote_path=True).start()
    try:
        url = f"sqlite:///{tmp_path / 'jobs.db'}"
        sheets = write_sheets(tmp_path / "sheets")
        queue = connect(url, load_registry([sheets]))
        job_id = queue.enqueue("sign_in", {"user": "ann", "password": PASSWORD}).id
        queue.close()

        log = tmp_path / "worker.log"
        command = worker_command(url, sheets, "--burst", "--log-args")
        env = worker_env(HERE, env={HOOK_ENV: webhook.url})
        worker = start_process(command, log, env=env).process
        assert worker.wait(60) == 0, log.read_text()
    finally:
        webhook.stop()

    # The receiver got the message (and refused it, quoting its path).
    [received] = webhook.received
    assert received.path == HOOK_PATH
    assert received.body["key_args"] == {"user": "ann", "password": MASK}
    assert_no_secret(json.dumps(received.body), "the message sent")

    text = log.read_text()
    assert f"webhook http://127.0.0.1:{webhook.port} answered HTTP 404" in text
    assert f'"password":"{MASK}"' in text  # --log-args, as shown
    assert_no_secret(text, "the worker's log")

    # The stored rows: the outbox's error and payload as shown, the job's args whole.
    backend = open_backend(url)
    try:
        [pending] = backend.outbox_pending()
        record = backend.get(job_id)
        attempts = backend.attempts(job_id)
    finally:
        backend.close()
    assert pending.last_error is not None
    assert pending.last_error.startswith(
        f"webhook http://127.0.0.1:{webhook.port} answered HTTP 404"
    )
    assert "no such hook" in pending.last_error  # the receiver's words stay, its quote goes
    assert_no_secret(pending.last_error, "the outbox row's error")
    assert_no_secret(json.dumps(pending.notification.payload), "the outbox row's payload")
    assert record is not None
    assert record.state == "dead"
    assert record.args == {"user": "ann", "password": PASSWORD}  # the handler's, whole
    # The handler quoted the password in its exception: stored without it, as notified.
    assert record.last_error is not None
    assert record.last_error.message.startswith("sign-in of ann with *** refused by the test")
    [attempt] = attempts
    assert attempt.error is not None
    assert attempt.error.message.startswith("sign-in of ann with *** refused")
    assert_no_secret(record.last_error.traceback, "the stored traceback")
    assert received.body["error_message"].startswith("sign-in of ann with *** refused")
    # Nothing else in the database file holds the path either.
    with sqlite3.connect(tmp_path / "jobs.db") as conn:
        dumped = "\n".join(conn.iterdump())
    for piece in (HOOK_PATH, TEAM, BOT, TOKEN):
        assert piece not in dumped


def _message() -> Message:
    return single_message(sample_notification("chat", 0.0), Renderer())


def test_an_unreachable_webhook_is_named_by_its_origin_alone() -> None:
    port = free_port()  # nothing listens there
    sender = WebhookSender(f"http://127.0.0.1:{port}{HOOK_PATH}?sig={TOKEN}", timeout=5)
    with pytest.raises(DeliveryError) as raised:
        sender.send(_message())
    assert raised.value.message.startswith(f"webhook http://127.0.0.1:{port} unreachable")
    assert_no_secret(raised.value.message, "the error")


def test_text_quoting_the_url_keeps_its_origin_and_loses_the_rest() -> None:
    url = f"https://hooks.example.test{HOOK_PATH}?sig=Sig0123456789"
    sender = WebhookSender(url, headers={"Authorization": "Bearer tok-0123456789"}, timeout=5)
    # What a library or a receiver might write: the whole URL, pieces of its path and
    # query, a header value.
    text = (
        f"cannot open {url}: bad path {HOOK_PATH[1:]}, token {TOKEN}, "
        "signature Sig0123456789, auth Bearer tok-0123456789"
    )
    scrubbed = sender.scrub(text)
    assert scrubbed.startswith("cannot open https://hooks.example.test: bad path ")
    assert_no_secret(scrubbed, "the scrubbed text")
    assert "Sig0123456789" not in scrubbed
    assert "tok-0123456789" not in scrubbed


class _BrokenWebhook(WebhookSender):
    """A webhook sender with a bug that raises outside its own error handling, naming
    its URL (the lanes' catch-all is what stands between it and the store and the log)."""

    def body(self, message: Message) -> dict[str, object]:
        raise RuntimeError(f"bug while building the body for {self.url}")


def test_a_sender_bug_is_stored_and_logged_scrubbed_by_its_channel(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"https://hooks.example.test{HOOK_PATH}"
    channel = Channel("chat", "webhook", _BrokenWebhook(url), Renderer())
    outcomes: list[Outcome] = []
    lane = ChannelLane(channel, outcomes.append, max_wait=60)
    notification = sample_notification("chat", 0.0)
    record = OutboxRecord(1, notification, attempts=0, next_at=0.0, created_at=0.0)
    with caplog.at_level(logging.ERROR, logger="jobdef.outbox"):
        lane.submit([[record]])
        lane.close(30)
    [outcome] = outcomes
    assert (
        outcome.error == "RuntimeError: bug while building the body for https://hooks.example.test"
    )
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "unexpected error while sending" in logged
    assert "Traceback" in logged  # the bug is still told in full, without the secret
    assert_no_secret(logged, "the outbox log")
