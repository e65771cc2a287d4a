"""Channels against hostile or careless input: secrets with a newline, URLs with a password,
receivers that trickle, a slow channel beside a fast one, templates that would never end."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from notify_servers import WebhookServer, free_port
from sqlite_outbox import NEW_YEAR_2026, bury_with, dead, open_store

from jobdef.backends.protocol import Backend
from jobdef.cli import main
from jobdef.errors import DeliveryError
from jobdef.notify.channels.email import MailSender
from jobdef.notify.channels.webhook import WebhookSender
from jobdef.notify.checks import Channel, build_channels, check_channel_env
from jobdef.notify.message import Message
from jobdef.notify.render import Renderer
from jobdef.notify.sender import OutboxSender, SenderSettings, SenderThread
from jobdef.policy.model import ChannelPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from support import ManualClock, eventually
from support.served import serve_in_thread

TOKEN = "Bearer tok-SECRET"


def webhook_registry(name: str = "ops", timeout: str = "2s", **settings: Any) -> Registry:
    policy = ChannelPolicy(
        name=name,
        type="webhook",
        settings=freeze({"url_env": "HOOK_URL", "timeout": timeout, **settings}),
    )
    return Registry(jobs={}, channels={name: policy})


def message(message_id: str = "m-1") -> Message:
    item = {"event": "dead", "job": "nightly", "message_id": message_id}
    return Message(channel="ops", message_id=message_id, items=(item,), subject="s", text="t")


class TricklingServer:
    """A server on 127.0.0.1 that answers one line a second, for ``lines`` s: HTTP header
    lines after a request, or with ``smtp`` an SMTP greeting that never ends."""

    def __init__(self, lines: int = 30, smtp: bool = False) -> None:
        self.lines = lines
        self.smtp = smtp
        self.port = free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def _serve(self) -> None:
        self._listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed by stop()
                return
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            try:
                if not self.smtp:
                    conn.recv(65536)
                conn.sendall(b"220-hello\r\n" if self.smtp else b"HTTP/1.1 200 OK\r\n")
                for n in range(self.lines):
                    if self._stop.wait(1.0):
                        return
                    conn.sendall(b"220-still here\r\n" if self.smtp else f"X-T{n}: x\r\n".encode())
                conn.sendall(b"Content-Length: 0\r\n\r\n")
            except OSError:
                return

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()


@pytest.fixture
def trickling() -> Iterator[TricklingServer]:
    server = TricklingServer()
    yield server
    server.stop()


def finishes_within(seconds: float, work: Callable[[], Any]) -> Any:
    """``work()``'s result, or a test failure when it takes longer than ``seconds``
    (the work goes on in a daemon thread: it may never end)."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # handed to the test's thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds}s"
    [(returned, value)] = outcome
    if not returned:
        raise value
    return value


# --- secrets read from *_env variables ----------------------------------------------


def test_a_header_secret_with_a_trailing_newline_is_sent_without_it(
    webhook: WebhookServer,
) -> None:
    registry = webhook_registry(headers_env={"Authorization": "HOOK_TOKEN"})
    environ = {"HOOK_URL": webhook.url + "\n", "HOOK_TOKEN": TOKEN + "\n"}
    assert check_channel_env(registry, environ, names=["ops"]) == []
    [channel] = build_channels(registry, environ, names=["ops"]).values()

    channel.sender.send(message())

    [request] = webhook.received
    assert request.headers["Authorization"] == TOKEN


def test_a_header_secret_with_a_line_break_inside_is_one_line_naming_the_variable() -> None:
    registry = webhook_registry(headers_env={"Authorization": "HOOK_TOKEN"})
    environ = {"HOOK_URL": "https://hooks.example/x", "HOOK_TOKEN": TOKEN + "\nX-Evil: 1"}
    [problem] = check_channel_env(registry, environ, names=["ops"])

    assert "HOOK_TOKEN" in str(problem)
    assert "tok-SECRET" not in str(problem)
    assert "\n" not in str(problem)


def test_a_webhook_url_with_user_and_password_and_no_port_is_refused_without_the_secret() -> None:
    registry = webhook_registry()
    [problem] = check_channel_env(
        registry, {"HOOK_URL": "http://user:pw-SECRET@127.0.0.1/hook"}, names=["ops"]
    )
    assert "HOOK_URL" in str(problem)
    assert "pw-SECRET" not in str(problem)


def test_notify_test_with_a_broken_header_secret_says_one_line_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    (sheets / "channels.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Channel\nname: ops\ntype: webhook\nurl_env: HOOK_URL\n"
        "headers_env:\n  Authorization: HOOK_TOKEN\n"
    )
    monkeypatch.setenv("HOOK_URL", f"http://127.0.0.1:{free_port()}/hook")
    monkeypatch.setenv("HOOK_TOKEN", TOKEN + "\r\nX-Evil: 1\n")
    code = main(["notify", "test", "ops", "--sheets", str(sheets)])

    out, err = capsys.readouterr()
    assert code in (1, 2)
    assert "Traceback" not in out + err
    assert "tok-SECRET" not in out + err
    assert "HOOK_TOKEN" in out + err


def test_a_failed_delivery_never_echoes_the_url_or_a_header_value() -> None:
    # Built by hand, past the checks: what the sender stores must still hide them.
    sender = WebhookSender(
        "http://user:pw-SECRET@127.0.0.1/hook", headers={"Authorization": TOKEN + "\n"}
    )
    with pytest.raises(DeliveryError) as failure:
        sender.send(message())
    assert "pw-SECRET" not in failure.value.message
    assert "tok-SECRET" not in failure.value.message


class EchoingServer(WebhookServer):
    """A receiver that answers 500 with the request's own URL and headers in the body."""

    def start(self) -> EchoingServer:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = f"bad request to {self.path}: {dict(self.headers)}".encode()
                self.send_response(500)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        serve_in_thread(self._server)
        return self


def test_no_stored_error_or_log_line_holds_the_url_token_or_a_header_value(
    outbox: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    server = EchoingServer().start()
    try:
        registry = webhook_registry(headers_env={"Authorization": "HOOK_TOKEN"})
        url = f"http://127.0.0.1:{server.port}/hook?token=url-SECRET"
        channels = build_channels(registry, {"HOOK_URL": url, "HOOK_TOKEN": TOKEN}, names=["ops"])
        bury_with(outbox, [dead(1), dead(2)])
        OutboxSender(outbox, channels, rng=random.Random(7)).run_once()
    finally:
        server.stop()
    rows = outbox.outbox_pending()
    assert len(rows) == 2
    assert all("HTTP 500" in (r.last_error or "") for r in rows)
    stored = " ".join(r.last_error or "" for r in rows) + caplog.text
    for secret in ("url-SECRET", "tok-SECRET"):
        assert secret not in stored


# --- a total deadline per delivery --------------------------------------------------


def test_the_webhook_timeout_bounds_the_whole_delivery_of_a_trickling_receiver(
    trickling: TricklingServer,
) -> None:
    sender = WebhookSender(trickling.url, timeout=2.0)
    started = time.monotonic()
    with pytest.raises(DeliveryError, match="within the channel timeout of 2s"):
        finishes_within(10, lambda: sender.send(message()))
    assert time.monotonic() - started < 4


def test_the_mail_timeout_bounds_the_whole_delivery_of_a_trickling_server() -> None:
    server = TricklingServer(smtp=True)
    try:
        sender = MailSender(
            "127.0.0.1",
            server.port,
            sender="a@x",
            recipients=["b@x"],
            security="none",
            timeout=2.0,
        )
        started = time.monotonic()
        with pytest.raises(DeliveryError, match="within the channel timeout of 2s"):
            finishes_within(10, lambda: sender.send(message()))
        assert time.monotonic() - started < 4
    finally:
        server.stop()


# --- one sender per channel ---------------------------------------------------------


@pytest.fixture
def outbox(tmp_path: Path) -> Iterator[Backend]:
    backend = open_store(tmp_path / "jobs.db", ManualClock(NEW_YEAR_2026))
    yield backend
    backend.close()


def two_channels(slow_url: str, fast_url: str) -> dict[str, Channel]:
    policies = {
        name: ChannelPolicy(
            name=name,
            type="webhook",
            settings=freeze({"url_env": f"{name.upper()}_URL", "timeout": "20s"}),
        )
        for name in ("slow", "fast")
    }
    environ = {"SLOW_URL": slow_url, "FAST_URL": fast_url}
    return build_channels(Registry(jobs={}, channels=policies), environ, names=list(policies))


def test_a_slow_channel_does_not_delay_another_in_the_sender_thread(
    tmp_path: Path, outbox: Backend, trickling: TricklingServer, webhook: WebhookServer
) -> None:
    bury_with(outbox, [dead(1, "slow"), dead(2, "fast")])  # the slow one is claimed first
    clock = ManualClock(NEW_YEAR_2026)
    thread = SenderThread(
        lambda: open_store(tmp_path / "jobs.db", clock),
        two_channels(trickling.url, webhook.url),
        SenderSettings(poll_interval=0.05),
        clock=clock,
    )
    started = time.monotonic()
    thread.start()
    try:
        eventually(lambda: webhook.received, timeout=5, what="the fast channel's message")
        assert time.monotonic() - started < 5
        pending = eventually(
            lambda: [r.notification.channel for r in outbox.outbox_pending()] == ["slow"],
            timeout=5,
            what="the fast message marked delivered while the slow one is being trickled",
        )
        assert pending
    finally:
        trickling.stop()
        thread.stop()


def test_a_round_sends_each_channel_from_its_own_thread(
    outbox: Backend, webhook: WebhookServer
) -> None:
    slow = WebhookServer(gate=threading.Event()).start()  # holds each request until released
    try:
        bury_with(outbox, [dead(1, "slow"), dead(2, "fast")])
        sender = OutboxSender(outbox, two_channels(slow.url, webhook.url), rng=random.Random(7))
        round_ = threading.Thread(target=sender.run_once, daemon=True)
        round_.start()
        eventually(lambda: webhook.received and slow.received, timeout=5, what="both sends")
        assert round_.is_alive()  # the slow channel is still waiting for its answer
    finally:
        assert slow.gate is not None
        slow.gate.set()
        slow.stop()
    round_.join(10)
    assert outbox.outbox_pending() == []


# --- templates with bounded cost ----------------------------------------------------

ITEM = {"event": "dead", "job": "nightly", "job_id": 7, "message_id": "m-7"}


@pytest.mark.parametrize(
    "template",
    [
        "{{ (9**9)**(9**9) }}",
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(1) }}",
        "{{ 'x' * 1000000000 }}",
        "{{ 'x'|center(999999999) }}",
        "{{ '%999999999d' % 1 }}",
        "{{ '{:>999999999}'.format(1) }}",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
    ],
    ids=[
        "huge-power",
        "recursive-macro",
        "huge-repeat",
        "huge-center",
        "huge-printf-width",
        "huge-format-width",
        "endless-loop",
        "huge-output",
    ],
)
def test_a_costly_template_falls_back_to_the_built_in_message(template: str) -> None:
    text = finishes_within(5, lambda: Renderer(template).event_text(ITEM))
    assert text.startswith("[jobdef] dead: nightly, job 7")
    assert "(the channel template failed: " in text
    assert len(text) < 1000


def test_a_bounded_template_still_renders() -> None:
    text = Renderer("{{ job|upper }} {{ 2**10 }} {{ '%5d'|format(3) }} {{ 'ab' * 3 }}")
    assert text.event_text(ITEM) == "NIGHTLY 1024     3 ababab"
