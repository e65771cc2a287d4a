"""The ``slack`` channel posts a Slack message (a header, then sections) to a receiver on
loopback, as Slack's incoming webhooks take it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from notify_servers import WebhookServer

from jobdef.cli import main
from jobdef.errors import DeliveryError
from jobdef.notify.channels import build_sender
from jobdef.notify.channels.slack import SECTION_CHARS, sections
from jobdef.notify.channels.webhook import slack_escape
from jobdef.notify.message import digest_message, single_message
from jobdef.notify.render import Renderer
from jobdef.notify.sample import sample_notification
from jobdef.policy.channels import read_channel
from jobdef.policy.model import ChannelPolicy
from jobdef.policy.values import freeze

AT = 1_767_225_600.0  # 2026-01-01T00:00:00Z
PAGE = Path(__file__).resolve().parents[2] / "docs" / "notifications.md"


def slack(**settings: object) -> ChannelPolicy:
    return ChannelPolicy(name="ops-slack", type="slack", settings=freeze(settings))


def _texts(body: dict[str, object]) -> list[str]:
    blocks = body["blocks"]
    assert isinstance(blocks, list)
    return [b["text"]["text"] for b in blocks if b["type"] == "section"]


def test_slack_posts_the_summary_as_header_and_the_text_below_it(webhook: WebhookServer) -> None:
    sent = single_message(sample_notification("ops-slack", AT), Renderer())
    build_sender(slack(url_env="SLACK_URL"), {"SLACK_URL": webhook.url}).send(sent)

    [request] = webhook.received
    assert request.headers["X-Jobdef-Message-Id"] == sent.message_id
    body = request.body
    assert body["text"] == slack_escape(sent.subject)  # what Slack's notification shows
    header = body["blocks"][0]
    assert header == {"type": "header", "text": {"type": "plain_text", "text": sent.subject}}
    text = "\n".join(_texts(body))
    assert sent.subject not in text  # said once, by the header
    for shown in ("order_id=12345", "ConnectionError", "jobdef requeue 0", sent.message_id):
        assert shown in text


def test_slack_escapes_what_slack_reads_as_markup(webhook: WebhookServer) -> None:
    template = "{{ error_message }} <@channel> & <!here|everyone>"
    sent = single_message(sample_notification("ops-slack", AT), Renderer(template))
    build_sender(slack(url_env="U"), {"U": webhook.url}).send(sent)

    [text] = _texts(webhook.received[0].body)
    assert text.endswith("&lt;@channel&gt; &amp; &lt;!here|everyone&gt;")
    assert "<" not in text


def test_a_long_digest_goes_out_in_sections_cut_at_line_ends(webhook: WebhookServer) -> None:
    notes = [sample_notification("ops-slack", AT + i) for i in range(60)]
    digest = digest_message("ops-slack", notes, Renderer())
    assert len(digest.text) > 2 * SECTION_CHARS
    build_sender(slack(url_env="U"), {"U": webhook.url}).send(digest)

    texts = _texts(webhook.received[0].body)
    assert len(texts) >= 3
    assert all(len(text) <= SECTION_CHARS for text in texts)
    # Cut at line ends only: the sections joined by line breaks are the whole text.
    body = "\n".join(digest.text.strip().splitlines()[1:])  # after the header's line
    assert "\n".join(texts) == slack_escape(body)
    assert "\n".join(texts).count("re-run: jobdef requeue 0") == 60


@pytest.mark.parametrize(
    "line",
    ["&" * 5000, "a<b>" * 2000, "x" * 2999 + "&" + "y" * 10],
    ids=["ampersands", "brackets", "one-at-the-cut"],
)
def test_a_line_longer_than_a_section_is_cut_between_escaped_characters(line: str) -> None:
    pieces = sections(line)
    assert all(len(piece) <= SECTION_CHARS for piece in pieces)
    assert "".join(pieces) == slack_escape(line)
    for piece in pieces:
        assert re.fullmatch(r"([^&]|&amp;|&lt;|&gt;)*", piece), piece[-8:]


def test_slacks_refusal_is_a_failed_delivery_with_its_reason_not_the_url(
    webhook: WebhookServer,
) -> None:
    webhook.status, webhook.answer = 404, "no_service"
    url = webhook.url + "/services/T000/B000/XXXXSECRET"
    sender = build_sender(slack(url_env="U"), {"U": url})
    with pytest.raises(DeliveryError, match="HTTP 404") as caught:
        sender.send(single_message(sample_notification("ops-slack", AT), Renderer()))
    assert "no_service" in caught.value.message
    assert "XXXXSECRET" not in caught.value.message


@pytest.mark.parametrize(
    ("settings", "environ", "said"),
    [
        ({}, {}, "a slack channel needs `url_env`"),
        ({"url_env": "SLACK_URL"}, {}, "environment variable SLACK_URL is not set"),
        ({"url_env": "SLACK_URL"}, {"SLACK_URL": "hooks.slack.com/x"}, "http:// or https://"),
    ],
)
def test_a_slack_channel_that_cannot_deliver_says_why(
    settings: dict[str, str], environ: dict[str, str], said: str
) -> None:
    problems = read_channel(slack(**settings), environ)[1].problems
    assert [p.field for p in problems] == ["url_env"]
    assert said in problems[0].message
    assert "hooks.slack.com/x" not in problems[0].message


def test_the_docs_example_is_a_channel_that_notify_test_delivers_through(
    tmp_path: Path,
    webhook: WebhookServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = PAGE.read_text("utf-8")
    [example] = [b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if "type: slack" in b]
    (tmp_path / "channels.yaml").write_text(example, "utf-8")
    monkeypatch.setenv("OPS_SLACK_WEBHOOK_URL", webhook.url)

    assert main(["notify", "test", "ops-slack", "--sheets", str(tmp_path)]) == 0
    assert "sent a sample message to ops-slack (slack)" in capsys.readouterr().out
    [request] = webhook.received
    assert request.body["blocks"][0]["type"] == "header"
