"""``jobdef notify test CHANNEL`` and the checks that run at worker start and in validate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from notify_servers import WebhookServer, free_port

from jobdef.cli import main
from jobdef.errors import ChannelError
from jobdef.notify.checks import build_channels, check_channel_env
from jobdef.policy.model import ChannelPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from jobdef.sheets.pipeline import load_registry


def test_notify_test_sends_a_sample_message_to_the_webhook(
    example_sheets: Path,
    webhook: WebhookServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPS_CHAT_WEBHOOK_URL", webhook.url)
    assert main(["notify", "test", "ops-chat", "--sheets", str(example_sheets)]) == 0

    [request] = webhook.received
    assert "dead: jobdef_notify_test" in request.body["text"]  # ops-chat is format: slack
    assert request.headers["X-Jobdef-Message-Id"].startswith("notify-test:ops-chat:")
    assert "sent a sample message to ops-chat (webhook)" in capsys.readouterr().out


def test_notify_test_reports_a_failed_delivery_with_exit_1(
    example_sheets: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    monkeypatch.setenv("OPS_CHAT_WEBHOOK_URL", f"http://127.0.0.1:{port}/hook")
    assert main(["notify", "test", "ops-chat", "--sheets", str(example_sheets)]) == 1
    err = capsys.readouterr().err
    assert f"delivery to ops-chat failed: webhook http://127.0.0.1:{port} unreachable" in err
    assert "/hook" not in err  # the URL past its origin is never printed


@pytest.mark.slow
def test_notify_test_with_a_missing_variable_is_one_line_without_traceback(
    example_sheets: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPS_CHAT_WEBHOOK_URL"}
    program = "import sys; from jobdef.cli import main; sys.exit(main())"
    argv = ["notify", "test", "ops-chat", "--sheets", str(example_sheets)]
    result = subprocess.run(
        [sys.executable, "-c", program, *argv],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "channels.yaml" in result.stderr
    assert "environment variable OPS_CHAT_WEBHOOK_URL is not set" in result.stderr


def test_notify_test_names_the_known_channels_for_an_unknown_one(
    example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["notify", "test", "nope", "--sheets", str(example_sheets)]) == 2
    assert "(channels: ops-chat, ops-log)" in capsys.readouterr().err


def test_log_channel_needs_nothing_from_the_environment(
    example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["notify", "test", "ops-log", "--sheets", str(example_sheets)]) == 0


def test_check_channel_env_lists_every_missing_variable_and_setting() -> None:
    channels = {
        "hook": ChannelPolicy(
            "hook",
            "webhook",
            freeze({"url_env": "HOOK_URL", "headers_env": {"Authorization": "HOOK_TOKEN"}}),
            file="channels.yaml",
        ),
        "mail": ChannelPolicy(
            "mail", "email", freeze({"user_env": "SMTP_USER", "password_env": "SMTP_PASSWORD"})
        ),
        "page": ChannelPolicy("page", "command", freeze({"template": "{% if %}"})),
    }
    problems = check_channel_env(Registry(jobs={}, channels=channels), {}, names=list(channels))
    text = [str(p) for p in problems]

    assert any("'hook' url_env: environment variable HOOK_URL is not set" in t for t in text)
    assert any("'hook' headers_env: environment variable HOOK_TOKEN" in t for t in text)
    assert any("'mail' host: an email channel needs `host`" in t for t in text)
    assert any("'mail' to:" in t for t in text)
    assert any("'mail' user_env: environment variable SMTP_USER" in t for t in text)
    assert any("'mail' password_env: environment variable SMTP_PASSWORD" in t for t in text)
    assert any("'page' command:" in t for t in text)
    assert any("'page' template: the Jinja2 template does not compile" in t for t in text)
    assert all(t.startswith("channels.yaml:") for t in text if "'hook'" in t)


def test_check_channel_env_refuses_a_non_http_url_without_printing_it() -> None:
    channels = {"hook": ChannelPolicy("hook", "webhook", freeze({"url_env": "HOOK_URL"}))}
    registry = Registry(jobs={}, channels=channels)
    [problem] = check_channel_env(registry, {"HOOK_URL": "file:///etc/passwd"}, names=["hook"])
    assert "must hold an http:// or https:// URL" in str(problem)
    assert "passwd" not in str(problem)


def test_worker_start_check_covers_the_channels_jobs_use(example_sheets: Path) -> None:
    registry = load_registry([example_sheets])
    problems = check_channel_env(registry, {})
    assert [(p.channel, p.field) for p in problems] == [("ops-chat", "url_env")]
    with pytest.raises(ChannelError, match="OPS_CHAT_WEBHOOK_URL"):
        build_channels(registry, {})
    ready = build_channels(registry, {"OPS_CHAT_WEBHOOK_URL": "https://chat.example.test/h"})
    assert sorted(ready) == ["ops-chat", "ops-log"]


def test_worker_start_fails_with_one_clear_error_when_a_channel_variable_is_missing(
    example_sheets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jobdef.backends import open_backend
    from jobdef.runtime import Worker

    monkeypatch.delenv("OPS_CHAT_WEBHOOK_URL", raising=False)
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    try:
        with pytest.raises(ChannelError, match="OPS_CHAT_WEBHOOK_URL is not set"):
            Worker(backend, load_registry([example_sheets]))
    finally:
        backend.close()


def test_validate_check_env_reports_a_missing_variable_at_its_line(
    example_sheets: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPS_CHAT_WEBHOOK_URL", raising=False)
    assert main(["validate", str(example_sheets)]) == 0  # the sheets alone are fine
    capsys.readouterr()

    assert main(["validate", str(example_sheets), "--check-env"]) == 1
    out = capsys.readouterr().out
    assert "channels.yaml:9:10: error JD253 channel 'ops-chat' url_env: environment " in out
    assert "OPS_CHAT_WEBHOOK_URL is not set" in out

    monkeypatch.setenv("OPS_CHAT_WEBHOOK_URL", "https://chat.example.test/hooks/abc")
    assert main(["validate", str(example_sheets), "--check-env", "--format", "json"]) == 0
    assert "chat.example.test" not in capsys.readouterr().out


def test_validate_check_env_points_at_the_channel_for_a_missing_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "channels.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Channel\nname: pager\ntype: email\n"
        "host: smtp.example.test\nto: [ops@example.test]\n",
        encoding="utf-8",
    )
    (tmp_path / "job.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Job\nname: nightly\nhandler: app.jobs:nightly\n"
        "max_attempts: 1\nerrors: {default: fatal}\n"
        "notify: {channel: pager, events: [dead]}\n",
        encoding="utf-8",
    )
    code = main(["validate", str(tmp_path), "--check-env"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "channels.yaml:4:7: error JD253 channel 'pager' from: an email channel needs" in out
