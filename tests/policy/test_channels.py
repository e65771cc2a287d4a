"""A channel's settings, read and checked without any sending code."""

from __future__ import annotations

from typing import Any

from jobdef.policy.channels import MailSettings, WebhookSettings, read_channel
from jobdef.policy.model import ChannelPolicy
from jobdef.policy.values import freeze

SECRET_URL = "https://hooks.example.test/T000/B000/s3cr3t"


def channel(kind: Any, **settings: Any) -> ChannelPolicy:
    return ChannelPolicy(name="ops", type=kind, settings=freeze(settings), file="channels.yaml")


def test_webhook_settings_carry_the_url_without_showing_it() -> None:
    settings, config = read_channel(
        channel("webhook", url_env="HOOK_URL", format="slack"), {"HOOK_URL": SECRET_URL}
    )
    assert config.problems == []
    assert isinstance(settings, WebhookSettings)
    assert settings.url == SECRET_URL
    assert settings.format == "slack"
    assert "s3cr3t" not in repr(settings)


def test_mail_settings_hide_the_password_and_default_the_port() -> None:
    settings, config = read_channel(
        channel(
            "email",
            host="smtp.example.test",
            to=["ops@example.test"],
            **{"from": "jobdef@example.test"},
            security="tls",
            user_env="SMTP_USER",
            password_env="SMTP_PASSWORD",
        ),
        {"SMTP_USER": "bot", "SMTP_PASSWORD": "hunter2"},
    )
    assert config.problems == []
    assert isinstance(settings, MailSettings)
    assert (settings.port, settings.password) == (465, "hunter2")
    assert "hunter2" not in repr(settings)


def test_every_problem_is_listed_at_once() -> None:
    _, config = read_channel(
        channel("webhook", url_env="HOOK_URL", timeout="soon", template="{% if %}"), {}
    )
    assert [p.field for p in config.problems] == ["url_env", "timeout", "template"]
    assert "HOOK_URL is not set" in config.problems[0].message
    assert "does not compile" in config.problems[2].message
