"""TLS is verified: a receiver whose certificate the system does not trust gets nothing.

A private CA (trustme) signs the loopback servers' certificates; pointing
``SSL_CERT_FILE`` at it is how a deployment trusts an internal CA too.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from notify_servers import SmtpServer, WebhookServer

from jobdef.errors import DeliveryError
from jobdef.notify.channels import build_sender
from jobdef.notify.message import single_message
from jobdef.notify.render import Renderer
from jobdef.notify.sample import sample_notification
from jobdef.policy.model import ChannelPolicy
from jobdef.policy.values import freeze


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def server_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return context


@pytest.fixture
def trust_ca(ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))


@pytest.fixture
def https_webhook(server_context: ssl.SSLContext) -> Iterator[WebhookServer]:
    server = WebhookServer(tls=server_context).start()
    yield server
    server.stop()


def message():
    return single_message(sample_notification("ops", 1_767_225_600.0), Renderer())


def mail_channel(port: int, security: str) -> ChannelPolicy:
    settings = {
        "host": "127.0.0.1",
        "port": port,
        "security": security,
        "timeout": "5s",
        "from": "jobdef@example.test",
        "to": ["ops@example.test"],
    }
    return ChannelPolicy(name="mail", type="email", settings=freeze(settings))


def test_https_webhook_with_a_trusted_certificate_is_delivered(
    https_webhook: WebhookServer, trust_ca: None
) -> None:
    channel = ChannelPolicy("ops", "webhook", freeze({"url_env": "HOOK_URL"}))
    build_sender(channel, {"HOOK_URL": https_webhook.url}).send(message())
    assert len(https_webhook.received) == 1


def test_https_webhook_with_an_untrusted_certificate_is_refused(
    https_webhook: WebhookServer,
) -> None:
    channel = ChannelPolicy("ops", "webhook", freeze({"url_env": "HOOK_URL"}))
    sender = build_sender(channel, {"HOOK_URL": https_webhook.url})
    with pytest.raises(DeliveryError, match="CERTIFICATE_VERIFY_FAILED"):
        sender.send(message())
    assert https_webhook.received == []


@pytest.mark.parametrize("security", ["starttls", "tls"])
def test_email_over_tls_with_a_trusted_certificate_is_delivered(
    server_context: ssl.SSLContext, trust_ca: None, security: str
) -> None:
    option = {security: server_context}
    server = SmtpServer(**option).start()  # type: ignore[arg-type]
    try:
        build_sender(mail_channel(server.port, security), {}).send(message())
        assert len(server.messages) == 1
    finally:
        server.stop()


@pytest.mark.parametrize("security", ["starttls", "tls"])
def test_email_over_tls_with_an_untrusted_certificate_is_refused(
    server_context: ssl.SSLContext, security: str
) -> None:
    option = {security: server_context}
    server = SmtpServer(**option).start()  # type: ignore[arg-type]
    try:
        sender = build_sender(mail_channel(server.port, security), {})
        with pytest.raises(DeliveryError, match="CERTIFICATE_VERIFY_FAILED"):
            sender.send(message())
        assert server.messages == []
    finally:
        server.stop()
