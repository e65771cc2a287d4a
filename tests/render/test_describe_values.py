"""Policy values read as a person would write them, in both languages."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.policy.backoff import retry_timeline
from jobdef.policy.model import BackoffPolicy, ErrorClass, IdempotencyPolicy, RetentionPolicy
from jobdef.policy.registry import Registry
from jobdef.render import describe
from jobdef.sheets.pipeline import load_registry

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry([REPO / "jobdefs"])


def test_reservation_mail_items_read_as_written_in_japanese(registry: Registry) -> None:
    job = registry.job("send_reservation_mail")
    values = {
        item.key: describe.item_value(job, item.key, "ja", registry.channels)
        for item in describe.ITEMS
    }
    assert values["name"] == "send_reservation_mail（予約確定メール送信）"
    assert values["max_attempts"] == "5回"
    assert values["backoff"] == "指数バックオフ（初回10秒、上限10分）＋ジッター"
    assert values["timeout"] == "30秒"
    assert values["retention"] == "doneは30日、deadは対応が終わるまで"
    assert values["args"] == "reservation_id（予約ID）"
    assert values["errors_retry"].startswith(
        "ConnectionError（接続エラー）、TimeoutError（タイムアウト）"
    )
    assert values["errors_fatal"] == (
        "jobdef.examples.errors.InvalidAddress（宛先メールアドレスが不正）、"
        "jobdef.examples.errors.Cancelled（予約が取り消し済み）"
    )
    # Who is told (the channel's description), through what (its name and type), when.
    assert (
        values["notify"] == "The operations team's chat room（ops-chat, webhook）へ、退避したとき"
    )


def test_reservation_mail_items_read_as_written_in_english(registry: Registry) -> None:
    job = registry.job("send_reservation_mail")
    assert describe.item_value(job, "name", "en") == "send_reservation_mail (予約確定メール送信)"
    assert describe.item_value(job, "max_attempts", "en") == "5 attempts"
    assert describe.item_value(job, "backoff", "en") == (
        "exponential backoff (first 10s, max 10m) + jitter"
    )
    assert describe.item_value(job, "retention", "en") == "done for 30d, dead until resolved"


def test_the_thirteen_items_are_the_classic_sheet_in_order() -> None:
    assert [item.label("ja") for item in describe.ITEMS] == [
        "ジョブ名",
        "起点",
        "引数",
        "最大試行回数",
        "待ち時間",
        "タイムアウト",
        "冪等キー",
        "再試行するエラー",
        "再試行しないエラー",
        "エラー時の退避先",
        "通知先",
        "再実行の手順",
        "保存期間",
    ]
    assert [item.hint("ja") for item in describe.ITEMS] == [
        "コード上の名前と日本語名",
        "どの操作・どのデータの発生で登録されるか",
        "ジョブに渡す値",
        "初回を含めて何回まで実行するか",
        "再試行までの間隔の方式と上限",
        "1回の実行に許す時間",
        "何を組み合わせて作るか",
        "一時的とみなすエラーの種類",
        "すぐ退避するエラーの種類",
        "回数を使い切ったジョブをどこに残すか",
        "退避されたときに誰へ何で知らせるか",
        "退避したジョブをどう戻すか",
        "完了・退避したジョブをいつまで残すか",
    ]
    assert all(item.label("en") and item.hint("en") for item in describe.ITEMS)


@pytest.mark.parametrize(
    ("policy", "en", "ja"),
    [
        (
            BackoffPolicy("exponential", 5.0, multiplier=3, max=300.0, jitter="decorrelated"),
            "exponential backoff (first 5s, x3 each time, max 5m) + decorrelated jitter",
            "指数バックオフ（初回5秒、3倍ずつ、上限5分）＋ジッター（decorrelated）",
        ),
        (
            BackoffPolicy("exponential", 10.0, jitter="none"),
            "exponential backoff (first 10s, no cap)",
            "指数バックオフ（初回10秒、上限なし）",
        ),
        (
            BackoffPolicy("linear", 60.0, max=600.0, jitter="equal"),
            "linear backoff (1m more each time, max 10m) + equal jitter",
            "線形バックオフ（1分ずつ増加、上限10分）＋ジッター（equal）",
        ),
        (BackoffPolicy("fixed", 30.0), "fixed wait of 30s", "固定（30秒）"),
        (
            BackoffPolicy("list", 0.0, delays=(60.0, 300.0)),
            "listed waits (1m, 5m, then the last again)",
            "指定の間隔（1分、5分、以降は最後の値）",
        ),
    ],
)
def test_every_backoff_strategy_reads_in_words(policy: BackoffPolicy, en: str, ja: str) -> None:
    assert describe.backoff(policy, "en") == en
    assert describe.backoff(policy, "ja") == ja


def test_retention_with_durations_and_forever() -> None:
    assert describe.retention(RetentionPolicy(done=7 * 86400, dead=14 * 86400), "ja") == (
        "doneは7日、deadは14日"
    )
    assert describe.retention(RetentionPolicy(), "en") == "done forever, dead until resolved"


def test_errors_name_what_an_unlisted_error_does() -> None:
    classes = (ErrorClass("ConnectionError", "接続エラー"), ErrorClass("OSError"))
    assert describe.errors(classes, "ja", others=True) == (
        "ConnectionError（接続エラー）、OSError、その他のエラー"
    )
    assert describe.errors((), "en") == "none"


def test_idempotency_shows_the_recipe_and_the_dedupe_window() -> None:
    policy = IdempotencyPolicy(key="order-{order_id}:points", dedupe_window=7 * 86400)
    assert (
        describe.idempotency(policy, "ja") == "order-{order_id}:points（完了後7日は重複とみなす）"
    )
    assert describe.idempotency(IdempotencyPolicy(), "en") == "none (every enqueue adds a job)"


def test_worst_case_says_whether_the_schedule_fits_the_deadline(registry: Registry) -> None:
    timeline = retry_timeline(registry.job("send_reservation_mail"))
    assert describe.worst_case(timeline, "en") == "5m, fits the deadline of 2h"
    assert describe.worst_case(timeline, "ja") == "5分、期限2時間に収まる"
    export = retry_timeline(registry.job("export_csv"))
    assert describe.worst_case(export, "en") == "4h5m, no deadline"


def test_rate_is_written_in_the_unit_that_makes_it_whole() -> None:
    assert describe.rate(100 / 60, "en") == "100/m"
    assert describe.rate(100 / 60, "ja") == "100件/分"
    assert describe.rate(2.0, "en") == "2/s"


def test_field_values_cover_every_effective_field(registry: Registry) -> None:
    for job in registry:
        for path in describe.effective_fields(job):
            assert describe.field_value(job, path, "en")
            assert describe.field_value(job, path, "ja")
    job = registry.job("award_member_points")
    assert describe.field_value(job, "backoff.initial", "ja") == "5秒"
    assert describe.field_value(job, "backoff.multiplier", "en") == "3"
    assert describe.field_value(job, "retention.dead", "en") == "until_resolved"


def test_origin_text_names_the_file_and_line_relative_to_the_project(registry: Registry) -> None:
    job = registry.job("award_member_points")
    assert describe.origin_text(job.origin("on_reclaim"), "en", REPO).startswith(
        "Defaults jobdefs/defaults.yaml:"
    )
    assert describe.origin_text(job.origin("timeout"), "ja", REPO).startswith(
        "シート jobdefs/award_member_points.yaml:"
    )
    assert describe.origin_text(job.origin("notify.key_args"), "en") == "built-in default"


def test_the_notify_cell_says_who_through_what_and_when() -> None:
    from jobdef.policy.model import ChannelPolicy, NotifyPolicy
    from jobdef.render import describe

    chat = ChannelPolicy("ops-chat", "webhook", {"description": "運用担当のチャット"})
    policy = NotifyPolicy(channel="ops-chat", events=("dead",))
    assert (
        describe.notify(policy, chat, "ja")
        == "運用担当のチャット（ops-chat, webhook）へ、退避したとき"
    )
    assert describe.notify(policy, chat, "en") == (
        "運用担当のチャット (ops-chat, webhook) when a job goes dead"
    )
    bare = ChannelPolicy("ops-log", "log")
    both = NotifyPolicy(channel="ops-log", events=("dead", "retry"))
    assert describe.notify(both, bare, "en") == "ops-log (log) when a job goes dead or is retried"
    assert describe.notify(both, bare, "ja") == "ops-log（log）へ、退避したとき・再試行するとき"
