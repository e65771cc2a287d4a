"""Every policy value in words, English or Japanese: the one place that decides how values read.

The generated docs, the TSV tables, ``jobdef explain`` and the review tools all
call these functions, so a value reads the same everywhere, e.g.
``backoff(job.backoff, "ja")`` -> ``指数バックオフ（初回10秒、上限10分）＋ジッター``.

The API, all pure functions of the frozen policy objects:

- :data:`ITEMS` and :func:`sheet_rows`: the 13 items of the classic job
  definition sheet (label, what to write, this job's value), and :data:`RESULT_ITEM`
  after them for a job whose sheet or Defaults declares a ``result:``;
- :func:`item_value`: one of those values by item key;
- :func:`effective_fields`, :func:`field_value`, :func:`origin_text` (:func:`origin_texts`): every
  effective field by its sheet path (``backoff.initial``), as written, and
  where it came from (:func:`display_path` shortens the file name);
- value formatters reused by the above: :func:`duration`, :func:`wait_range`,
  :func:`attempts`, :func:`backoff`, :func:`retention`, :func:`errors`,
  :func:`error_class`, :func:`error_action`, :func:`args`, :func:`idempotency`, :func:`notify`,
  :func:`dead_letter`, :func:`on_reclaim`, :func:`job_name`, :func:`trigger`,
  :func:`rate`, :func:`worst_case`, :func:`lost_attempts`, :func:`recommendation`, :func:`yes_no`,
  :func:`size`, :func:`result`, :func:`result_schema`, :func:`result_fields`;
- :data:`DECISION_QUESTIONS` and :func:`decision_answers`: the sync / async /
  batch decision flow's questions and a job's answers.

``lang`` is ``"en"`` or ``"ja"`` everywhere. Texts are plain (not escaped):
escape them for their output with :mod:`jobdef.render.escape`.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobdef.policy.backoff import Timeline, cut_by_max
from jobdef.policy.durations import format_duration
from jobdef.policy.fields import FIELDS, JOB_FIELDS, declares_result, policy_value
from jobdef.policy.leases import DEFAULT_LEASE
from jobdef.policy.model import (
    BackoffPolicy,
    ChannelPolicy,
    ErrorClass,
    IdempotencyPolicy,
    JobPolicy,
    NotifyPolicy,
    Origin,
    ResultPolicy,
    RetentionPolicy,
)
from jobdef.policy.sizes import format_size
from jobdef.redact import public_arg, sensitive_arg


def _pick(lang: str, en: str, ja: str) -> str:
    return ja if lang == "ja" else en


def _join(parts: Sequence[str], lang: str) -> str:
    return _pick(lang, ", ", "、").join(parts)


def _paren(text: str, note: str, lang: str) -> str:
    """``text (note)``, with full-width brackets in Japanese."""
    return _pick(lang, f"{text} ({note})", f"{text}（{note}）")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# --- single values --------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def duration(seconds: float | None, lang: str = "en", none: str | None = None) -> str:
    """A duration as a person writes it (``1h30m``, ``1時間30分``); ``none`` when unset."""
    if seconds is None:
        return none if none is not None else _pick(lang, "none", "なし")
    if not math.isfinite(seconds):
        return _pick(lang, "unbounded", "上限なし")
    return format_duration(seconds, lang)


def wait_range(low: float, high: float, lang: str = "en") -> str:
    """A wait with jitter: ``0s–10s``, or one value when there is no spread."""
    if low == high:
        return duration(low, lang)
    return f"{duration(low, lang)}{_pick(lang, '–', '〜')}{duration(high, lang)}"


def worst_case(timeline: Timeline, lang: str = "en") -> str:
    """The worst-case retry window and the deadline verdict: ``5m, fits the deadline of 2h``."""
    window = duration(timeline.worst_case, lang)
    if timeline.deadline is None:
        return _pick(lang, f"{window}, no deadline", f"{window}、期限なし")
    limit = duration(timeline.deadline, lang)
    if timeline.fits_deadline:
        return _pick(
            lang, f"{window}, fits the deadline of {limit}", f"{window}、期限{limit}に収まる"
        )
    return _pick(
        lang,
        f"{window}, does NOT fit the deadline of {limit}",
        f"{window}、期限{limit}に収まらない",
    )


def lost_attempts(timeline: Timeline, lang: str = "en") -> str:
    """What the "latest start if lost" column assumes: the lease and the reclaim interval.

    A lost attempt (its worker died or froze) is back in the queue only after its
    lease ran out and a reclaimer found it. Which lease the worker held the sheet
    cannot say: the worker's default unless ``jobdef explain --lease`` named another.
    """
    lease, every = duration(timeline.lease, lang), duration(timeline.reclaim_interval, lang)
    if timeline.lease == DEFAULT_LEASE:
        return _pick(
            lang,
            "Latest start if lost: every earlier attempt was lost (its worker died or "
            f"froze), each back after its timeout + the worker's default lease {lease} + "
            f"a reclaim every {every}; a worker run with a longer --lease can start later.",
            "喪失時の最遅開始: それまでの試行がすべて失われた場合（ワーカーの停止・フリーズ）。"
            f"各回はタイムアウト＋ワーカーの既定のリース{lease}＋{every}ごとの回収の後に戻る。"
            "より長い --lease で動かすワーカーでは、さらに遅れることがある。",
        )
    return _pick(
        lang,
        "Latest start if lost: every earlier attempt was lost (its worker died or froze), "
        f"each back after its timeout + the lease of {lease} (--lease) + a reclaim every "
        f"{every}.",
        "喪失時の最遅開始: それまでの試行がすべて失われた場合（ワーカーの停止・フリーズ）。"
        f"各回はタイムアウト＋リース{lease}（--lease）＋{every}ごとの回収の後に戻る。",
    )


def yes_no(value: bool | None, lang: str = "en") -> str:
    """``yes``/``no`` (``はい``/``いいえ``); ``—`` for an unknown (``None``)."""
    if value is None:
        return "—"
    return _pick(lang, "yes", "はい") if value else _pick(lang, "no", "いいえ")


_RATE_UNITS = (("s", "秒", 1.0), ("m", "分", 60.0), ("h", "時間", 3600.0))


def rate(per_second: float, lang: str = "en") -> str:
    """A queue's start rate as written in a sheet: ``100/m`` (``100件/分``)."""
    for en, ja, size in _RATE_UNITS:
        count = per_second * size
        if abs(count - round(count)) < 1e-9:
            return _pick(lang, f"{round(count)}/{en}", f"{round(count)}件/{ja}")
    return _pick(lang, f"{per_second:g}/s", f"{per_second:g}件/秒")


def attempts(count: int, lang: str = "en") -> str:
    """``5 attempts`` / ``5回`` (the first run included)."""
    return _pick(lang, f"{count} attempt{'s' if count != 1 else ''}", f"{count}回")


_JITTER = {
    "none": ("", ""),
    "full": (" + jitter", "＋ジッター"),
    "equal": (" + equal jitter", "＋ジッター（equal）"),
    "decorrelated": (" + decorrelated jitter", "＋ジッター（decorrelated）"),
}


def _cut(policy: BackoffPolicy, seconds: float) -> float:
    return seconds if policy.max is None else min(policy.max, seconds)


def backoff(policy: BackoffPolicy, lang: str = "en", *, retries: int | None = None) -> str:
    """The wait between attempts in words: strategy, first wait, growth, cap, jitter.

    A list or fixed wait that ``max`` cuts (among the ``retries`` a job has) is shown as
    it runs, cut, with the cap named: the words then agree with the timeline.
    """
    cap = (
        _pick(lang, f"max {duration(policy.max, lang)}", f"上限{duration(policy.max, lang)}")
        if policy.max is not None
        else _pick(lang, "no cap", "上限なし")
    )
    first = duration(policy.initial, lang)
    if policy.strategy == "exponential":
        parts = [_pick(lang, f"first {first}", f"初回{first}")]
        if policy.multiplier != 2:
            factor = _number(policy.multiplier)
            parts.append(_pick(lang, f"x{factor} each time", f"{factor}倍ずつ"))
        parts.append(cap)
        text = _paren(
            _pick(lang, "exponential backoff", "指数バックオフ"), _join(parts, lang), lang
        )
    elif policy.strategy == "linear":
        step = _pick(lang, f"{first} more each time", f"{first}ずつ増加")
        text = _paren(
            _pick(lang, "linear backoff", "線形バックオフ"), _join([step, cap], lang), lang
        )
    elif policy.strategy == "list" and policy.jitter == "decorrelated":
        # Decorrelated jitter draws every wait from initial up, whatever the strategy.
        return _paren(
            _pick(lang, "decorrelated jitter", "ジッター（decorrelated）"),
            _join([_pick(lang, f"first {first}", f"初回{first}"), cap], lang),
            lang,
        ) + _pick(lang, "; the listed waits are not used", "。指定の間隔は使われない")
    elif policy.strategy == "list":
        cut = bool(cut_by_max(policy, retries))
        listed = policy.delays or (policy.initial,)
        waits = [duration(_cut(policy, d) if cut else d, lang) for d in listed]
        waits.append(_pick(lang, "then the last again", "以降は最後の値"))
        if cut:
            waits.append(cap)
        text = _paren(_pick(lang, "listed waits", "指定の間隔"), _join(waits, lang), lang)
    else:
        cut = bool(cut_by_max(policy, retries))
        wait = duration(_cut(policy, policy.initial) if cut else policy.initial, lang)
        text = _pick(lang, f"fixed wait of {wait}", f"固定（{wait}）")
        if cut:
            text += _pick(lang, f" ({cap})", f"（{cap}）")
    en, ja = _JITTER[policy.jitter]
    return text + _pick(lang, en, ja)


def retention(policy: RetentionPolicy, lang: str = "en") -> str:
    """``done for 30d, dead until resolved`` / ``doneは30日、deadは対応が終わるまで``."""
    done = (
        _pick(lang, "done forever", "doneは無期限")
        if policy.done is None
        else _pick(
            lang, f"done for {duration(policy.done, lang)}", f"doneは{duration(policy.done, lang)}"
        )
    )
    dead = (
        _pick(lang, "dead until resolved", "deadは対応が終わるまで")
        if policy.dead is None
        else _pick(
            lang, f"dead for {duration(policy.dead, lang)}", f"deadは{duration(policy.dead, lang)}"
        )
    )
    return _join([done, dead], lang)


def error_class(entry: ErrorClass, lang: str = "en") -> str:
    """``ConnectionError (接続エラー)``, or the bare class name without a description."""
    return _paren(entry.name, entry.description, lang) if entry.description else entry.name


def errors(classes: Sequence[ErrorClass], lang: str = "en", *, others: bool = False) -> str:
    """Error classes in words; ``others`` adds "any other error" (what ``errors.default`` gets)."""
    parts = [error_class(entry, lang) for entry in classes]
    if others:
        parts.append(_pick(lang, "any other error", "その他のエラー"))
    return _join(parts, lang) if parts else _pick(lang, "none", "なし")


def error_action(action: str, lang: str = "en") -> str:
    """What an error does to the job: ``retry`` -> ``retried``, ``fatal`` -> ``dead at once``."""
    if action == "retry":
        return _pick(lang, "retried while attempts remain", "回数が残っていれば再試行")
    return _pick(lang, "dead at once", "すぐ退避")


_TYPES_JA = {
    "integer": "整数",
    "number": "数値",
    "string": "文字列",
    "boolean": "真偽値",
    "array": "配列",
    "object": "オブジェクト",
    "null": "null",
}


def args(schema: Mapping[str, Any], lang: str = "en") -> str:
    """Each arg with its description (or its type), ``sensitive`` when pages, logs and
    messages hide its value (:func:`jobdef.redact.sensitive_arg`), ``shown on receipts`` when
    a receipt may show it (:func:`jobdef.redact.public_arg`), ``optional`` when not
    required."""
    required = set(schema.get("required", ()))
    parts = []
    for name, arg in schema.get("properties", {}).items():
        notes = []
        if arg.get("description"):
            notes.append(str(arg["description"]))
        elif isinstance(arg.get("type"), str):
            notes.append(_TYPES_JA.get(arg["type"], arg["type"]) if lang == "ja" else arg["type"])
        if sensitive_arg(name, arg):
            notes.append(_pick(lang, "sensitive", "秘匿"))
        elif public_arg(name, arg):
            notes.append(_pick(lang, "shown on receipts", "受付で表示"))
        if name not in required:
            notes.append(_pick(lang, "optional", "任意"))
        parts.append(_paren(name, _join(notes, lang), lang) if notes else name)
    return _join(parts, lang) if parts else _pick(lang, "none", "なし")


def idempotency(policy: IdempotencyPolicy, lang: str = "en") -> str:
    """The key recipe, and how long after the job finished a repeat is still a duplicate."""
    if not policy.key:
        return _pick(lang, "none (every enqueue adds a job)", "なし（登録のたびに新しいジョブ）")
    if policy.dedupe_window is None:
        return policy.key
    window = duration(policy.dedupe_window, lang)
    return _paren(
        policy.key,
        _pick(
            lang,
            f"still a duplicate {window} after the job finished",
            f"完了後{window}は重複とみなす",
        ),
        lang,
    )


_EVENTS = {
    "dead": ("goes dead", "退避したとき"),
    "retry": ("is retried", "再試行するとき"),
    "timeout": ("times out", "タイムアウトしたとき"),
    "reclaimed": ("is reclaimed from a dead worker", "停止したワーカーから回収したとき"),
    "done": ("is done", "完了したとき"),
}


def notify(
    policy: NotifyPolicy,
    channel: ChannelPolicy | None = None,
    lang: str = "en",
    carries: Sequence[str] = (),
    receipt: bool = False,
) -> str:
    """Who is told, through what, of which events: ``The ops team's chat (ops-chat, webhook)
    when a job goes dead`` / ``運用担当のチャット（ops-chat, webhook）へ、退避したとき``; a
    channel without a description is ``ops-chat (webhook)``. ``carries``: the fields of the
    job's result that its ``done`` notification carries (``result.notify``), named after it;
    ``receipt``: say that it carries the job's receipt too (:func:`job_notify` says so
    for a job that declares a ``result:``, so a classic sheet's text stays as it was)."""
    if not policy.channel:
        return _pick(lang, "nobody", "通知しない")
    who = policy.channel
    if channel is not None:
        description = str(channel.settings.get("description") or "").strip()
        if description:
            who = _paren(description, f"{policy.channel}, {channel.type}", lang)
        else:
            who = _paren(policy.channel, channel.type, lang)
    if not policy.events:
        return _pick(lang, f"{who}, no events", f"{who}、通知するイベントなし")
    en = " or ".join(_EVENTS[event][0] for event in policy.events)
    ja = "・".join(_EVENTS[event][1] for event in policy.events)
    text = _pick(lang, f"{who} when a job {en}", f"{who}へ、{ja}")
    if "done" not in policy.events or not (carries or receipt):
        return text
    fields = _join(list(carries), lang)
    if carries and receipt:
        en, ja = f"the receipt and the result's {fields}", f"受付番号と結果の{fields}"
    elif carries:
        en, ja = f"the result's {fields}", f"結果の{fields}"
    else:
        en, ja = "the receipt", "受付番号"
    return text + _pick(lang, f" (done carries {en})", f"（完了時は{ja}を添える）")


def job_notify(job: JobPolicy, channel: ChannelPolicy | None, lang: str = "en") -> str:
    """:func:`notify` of ``job``: the result fields its done notification carries (none
    when nothing is stored), and its receipt when the job declares a ``result:``."""
    carries = job.result.notify if job.result.store else ()
    return notify(job.notify, channel, lang, carries, receipt=declares_result(job))


def size(value: int, lang: str = "en") -> str:
    """A size as a sheet writes it: ``64KiB``, ``1MiB``, ``1000B``."""
    return format_size(value)


def result_schema(schema: Mapping[str, Any] | None, lang: str = "en") -> str:
    """A result's JSON Schema in brief: its fields as :func:`args` lists args, or its type."""
    if schema is None:
        return _pick(lang, "none", "なし")
    if isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        return args(schema, lang)
    kind = schema.get("type")
    if isinstance(kind, str):
        return _TYPES_JA.get(kind, kind) if lang == "ja" else kind
    return _pick(lang, "a JSON Schema", "JSON Schema")


def result_fields(public: bool | Sequence[str], lang: str = "en") -> str:
    """What a receipt shows of a result: ``the whole value``, ``none`` or the fields."""
    if public is True:
        return _pick(lang, "the whole value", "値全体")
    if not public:
        return _pick(lang, "none", "なし")
    return _join([str(name) for name in public], lang)


def result(policy: ResultPolicy, retention_done: float | None, lang: str = "en") -> str:
    """What becomes of the handler's return value, in words: ``stored (at most 64KiB,
    kept 7d, checked against its schema); shown on receipts: total`` /
    ``保存する（64KiBまで、7日保持、スキーマで検査）。受付で表示: total``.

    ``retention_done`` is the job's ``retention.done``: a result kept as long as its
    job's row says so instead of a duration of its own.
    """
    if not policy.store:
        return _pick(
            lang, "not stored (the return value is dropped)", "保存しない（戻り値は捨てる）"
        )
    if policy.retention is None:
        kept = _pick(lang, "kept as long as the job", "ジョブと同じ期間保持")
    else:
        days = duration(policy.retention, lang)
        same = policy.retention == retention_done
        kept = _pick(
            lang,
            f"kept {days} like the job" if same else f"kept {days}",
            f"ジョブと同じ{days}保持" if same else f"{days}保持",
        )
    notes = [
        _pick(lang, f"at most {size(policy.max_bytes)}", f"{size(policy.max_bytes)}まで"),
        kept,
    ]
    if policy.schema is not None:
        notes.append(_pick(lang, "checked against its schema", "スキーマで検査"))
    parts = [_paren(_pick(lang, "stored", "保存する"), _join(notes, lang), lang)]
    if policy.public:
        shown = result_fields(policy.public, lang)
        parts.append(_pick(lang, f"shown on receipts: {shown}", f"受付で表示: {shown}"))
    if policy.notify:
        sent = _join(list(policy.notify), lang)
        parts.append(_pick(lang, f"in the done notification: {sent}", f"完了通知に: {sent}"))
    return _pick(lang, "; ", "。").join(parts)


def dead_letter(target: str, lang: str = "en") -> str:
    """Where a job that cannot succeed is kept."""
    if target == "table":
        return _pick(lang, "the jobs table, state dead", "jobsテーブル（状態dead）")
    return target


def on_reclaim(action: str, lang: str = "en") -> str:
    """What happens to a running job whose worker died (its lease expired)."""
    if action == "retry":
        return _pick(
            lang,
            "when its lease expires the attempt counts as failed with a timeout; "
            "the job is retried while attempts remain, then goes dead",
            "リースが切れた時点でその回はタイムアウトの失敗と数え、回数が残っていれば再試行、"
            "使い切ったら退避",
        )
    return _pick(
        lang,
        "when its lease expires the job goes dead at once",
        "リースが切れた時点ですぐ退避",
    )


def recommendation(mode: str, deciding: str | None, declared: str, lang: str = "en") -> str:
    """The decision flow's verdict, and whether the sheet's ``mode`` agrees.

    ``async, decided by calls_external_systems (the sheet says async)``
    """
    if deciding is None:
        why = _pick(lang, "no answer decides", "決め手になる回答なし")
    else:
        why = _pick(lang, f"decided by {deciding}", f"{deciding}の回答で決定")
    agree = _pick(
        lang,
        f"the sheet says {declared}"
        if declared == mode
        else f"the sheet says {declared}: check it",
        f"シートは{declared}" if declared == mode else f"シートは{declared}、要確認",
    )
    return _pick(lang, f"{mode}, {why} ({agree})", f"{mode}（{why}、{agree}）")


def job_name(job: JobPolicy, lang: str = "en") -> str:
    """``send_reservation_mail (予約確定メール送信)``: the code name and the human name."""
    return _paren(job.name, job.title, lang) if job.title else job.name


def trigger(job: JobPolicy, lang: str = "en") -> str:
    """What enqueues the job; a batch job adds its cron line and time zone."""
    text = job.trigger or _pick(lang, "not written", "未記入")
    if job.mode == "batch" and job.schedule:
        return _paren(text, _join([f"cron {job.schedule}", job.timezone], lang), lang)
    return text


# --- the 13 items of the classic sheet -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Item:
    """One row of the classic job definition sheet: its key, label and what to write."""

    key: str
    label_en: str
    label_ja: str
    hint_en: str
    hint_ja: str

    def label(self, lang: str = "en") -> str:
        return _pick(lang, self.label_en, self.label_ja)

    def hint(self, lang: str = "en") -> str:
        return _pick(lang, self.hint_en, self.hint_ja)


ITEMS: tuple[Item, ...] = (
    Item("name", "Job name", "ジョブ名", "Code name and human name", "コード上の名前と日本語名"),
    Item(
        "trigger",
        "Trigger",
        "起点",
        "Which operation or data makes the job get enqueued",
        "どの操作・どのデータの発生で登録されるか",
    ),
    Item("args", "Arguments", "引数", "Values passed to the job", "ジョブに渡す値"),
    Item(
        "max_attempts",
        "Max attempts",
        "最大試行回数",
        "How many runs in total, the first included",
        "初回を含めて何回まで実行するか",
    ),
    Item(
        "backoff",
        "Wait between attempts",
        "待ち時間",
        "How the wait before a retry grows, and its cap",
        "再試行までの間隔の方式と上限",
    ),
    Item("timeout", "Timeout", "タイムアウト", "Time allowed for one run", "1回の実行に許す時間"),
    Item(
        "idempotency",
        "Idempotency key",
        "冪等キー",
        "What the key is made of",
        "何を組み合わせて作るか",
    ),
    Item(
        "errors_retry",
        "Errors retried",
        "再試行するエラー",
        "Kinds of error taken as transient",
        "一時的とみなすエラーの種類",
    ),
    Item(
        "errors_fatal",
        "Errors not retried",
        "再試行しないエラー",
        "Kinds of error that bury the job at once",
        "すぐ退避するエラーの種類",
    ),
    Item(
        "dead_letter",
        "Dead-letter place",
        "エラー時の退避先",
        "Where a job that used up its attempts is kept",
        "回数を使い切ったジョブをどこに残すか",
    ),
    Item(
        "notify",
        "Notify",
        "通知先",
        "Who is told, and through what, when a job goes dead",
        "退避されたときに誰へ何で知らせるか",
    ),
    Item(
        "rerun",
        "Re-run procedure",
        "再実行の手順",
        "How to bring a dead job back",
        "退避したジョブをどう戻すか",
    ),
    Item(
        "retention",
        "Retention",
        "保存期間",
        "How long done and dead jobs are kept",
        "完了・退避したジョブをいつまで残すか",
    ),
)


# The row after the 13 for a job that declares a `result:`: the classic sheet has no such
# item, and the tables of a job that declares none keep the 13 rows exactly.
RESULT_ITEM = Item(
    "result",
    "Result",
    "結果",
    "Whether the return value is kept, how big and how long, and who sees it",
    "戻り値を残すか、大きさと期間、誰に見せるか",
)


def sheet_items(job: JobPolicy) -> tuple[Item, ...]:
    """The items of ``job``'s sheet: the 13, and :data:`RESULT_ITEM` when it declares a
    ``result:`` (:func:`jobdef.policy.fields.declares_result`)."""
    return (*ITEMS, RESULT_ITEM) if declares_result(job) else ITEMS


def overview_items(jobs: Iterable[JobPolicy]) -> tuple[Item, ...]:
    """The columns of a table of ``jobs``: the 13 items, and :data:`RESULT_ITEM` when one of
    them declares a ``result:`` (each job's own result policy then fills its cell)."""
    return (*ITEMS, RESULT_ITEM) if any(declares_result(job) for job in jobs) else ITEMS


def item_value(
    job: JobPolicy, key: str, lang: str = "en", channels: Mapping[str, ChannelPolicy] | None = None
) -> str:
    """The value of one of the :func:`sheet_items` for ``job``, in words."""
    if key == "name":
        return job_name(job, lang)
    if key == "trigger":
        return trigger(job, lang)
    if key == "args":
        return args(job.args_schema, lang)
    if key == "max_attempts":
        return attempts(job.max_attempts, lang)
    if key == "backoff":
        return backoff(job.backoff, lang, retries=job.max_attempts - 1)
    if key == "timeout":
        return duration(job.timeout, lang)
    if key == "idempotency":
        return idempotency(job.idempotency, lang)
    if key == "errors_retry":
        return errors(job.errors.retry, lang, others=job.errors.default == "retry")
    if key == "errors_fatal":
        return errors(job.errors.fatal, lang, others=job.errors.default == "fatal")
    if key == "dead_letter":
        return dead_letter(job.dead_letter, lang)
    if key == "notify":
        return job_notify(job, (channels or {}).get(job.notify.channel or ""), lang)
    if key == "rerun":
        return job.rerun or _pick(lang, "not written", "未記入")
    if key == "retention":
        return retention(job.retention, lang)
    if key == "result":
        return result(job.result, job.retention.done, lang)
    known = ", ".join(i.key for i in (*ITEMS, RESULT_ITEM))
    raise KeyError(f"no sheet item {key!r}; items are {known}")


def sheet_rows(
    job: JobPolicy, lang: str = "en", channels: Mapping[str, ChannelPolicy] | None = None
) -> list[tuple[str, str, str]]:
    """The classic sheet of ``job``: (label, what to write, value) for each of the 13 items,
    and the result row when the job declares one (:func:`sheet_items`)."""
    return [
        (item.label(lang), item.hint(lang), item_value(job, item.key, lang, channels))
        for item in sheet_items(job)
    ]


# --- effective fields, by sheet path ---------------------------------------------------------

# The questions of the sync / async / batch decision flow, by their field in `decision:`.
DECISION_QUESTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "time_triggered",
        "Does the clock start the work (not a user)?",
        "時刻が起点か（利用者の操作ではなく）",
    ),
    (
        "result_needed_at_once",
        "Does the caller need the result in its response?",
        "呼び出し側がその場で結果を必要とするか",
    ),
    ("done_within_seconds", "Does the work finish within a few seconds?", "数秒以内に終わるか"),
    ("calls_external_systems", "Does the work call external systems?", "外部システムを呼び出すか"),
    (
        "must_accept_when_external_down",
        "Must requests still be accepted while the external system is down?",
        "外部システムの停止中も受け付け続ける必要があるか",
    ),
)


def decision_answers(job: JobPolicy, lang: str = "en") -> list[tuple[str, str, str]]:
    """(field, question, answer) for each decision question; empty without a ``decision`` block."""
    if job.decision is None:
        return []
    return [
        (name, _pick(lang, en, ja), yes_no(getattr(job.decision, name), lang))
        for name, en, ja in DECISION_QUESTIONS
    ]


def effective_fields(job: JobPolicy) -> tuple[str, ...]:
    """The sheet paths that shape ``job``, in sheet order; fields its strategy ignores left out."""
    return tuple(field.path for field in JOB_FIELDS if field.applies(job))


def field_value(job: JobPolicy, path: str, lang: str = "en") -> str:
    """The effective value at sheet path ``path`` (``backoff.initial``), written as in a sheet."""
    none = _pick(lang, "none", "なし")
    field = FIELDS[path]
    kind = field.kind
    value = policy_value(job, path)
    if kind == "args":
        return args(value, lang)
    if kind in ("answer", "flag"):
        return yes_no(value, lang)
    if kind == "bytes":
        return size(value)
    if kind == "schema":
        return result_schema(value, lang)
    if kind == "selection":
        return result_fields(value, lang)
    if field.inherits and job.origin(path) is None:  # the value of the field it inherits
        return _paren(field_value(job, field.inherits, lang), field.inherits, lang)
    unset = field.unset
    if value is None and unset:
        return unset  # the word a sheet writes for it: until_resolved
    if kind == "duration":
        return duration(value, lang)
    if kind == "durations":
        return _join([duration(d, lang) for d in value], lang) or none
    if kind == "errors":
        return errors(value, lang)
    if isinstance(value, tuple):
        return _join([str(v) for v in value], lang) or none
    if isinstance(value, float):
        return _number(value)
    if value is None or value == "":
        return none
    return str(value)


@functools.lru_cache(maxsize=64)
def _resolved(folder: str | Path, cwd: str) -> Path:
    # The base folder of every file of a registry: resolved once, not once per file.
    return Path(folder).resolve()


def display_path(file: str, base: str | Path | None = None) -> str:
    """``file`` relative to ``base`` when it lies below it, with ``/`` separators."""
    if base is None or not file:
        return Path(file).as_posix() if file else file
    # A relative path is relative to the working directory: it is part of the cache key.
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory is gone: only absolute paths resolve
        cwd = ""
    return _display_path(file, base, cwd)


@functools.lru_cache(maxsize=4096)
def _display_path(file: str, base: str | Path, cwd: str) -> str:
    try:
        relative = os.path.relpath(Path(file).resolve(), _resolved(base, cwd))
    except ValueError:  # another drive on Windows
        relative = file
    if not relative.startswith(".."):
        file = relative
    return Path(file).as_posix()


def origin_text(origin: Origin | None, lang: str = "en", base: str | Path | None = None) -> str:
    """Where a value came from: ``sheet jobdefs/x.yaml:12``, ``Defaults ...:3``, built-in."""
    return origin_texts([origin], lang, base)[0]


def origin_texts(
    origins: Sequence[Origin | None], lang: str = "en", base: str | Path | None = None
) -> list[str]:
    """:func:`origin_text` of each origin (of one job: each file name is shortened once)."""
    shown: dict[str, str] = {}
    texts = []
    for origin in origins:
        if origin is None or origin.source == "builtin":
            texts.append(_pick(lang, "built-in default", "組み込みの既定値"))
            continue
        file = shown.get(origin.file)
        if file is None:
            file = shown[origin.file] = display_path(origin.file, base)
        where = f"{file}:{origin.line}"
        if origin.source == "defaults":
            texts.append(f"Defaults {where}")
        else:
            texts.append(_pick(lang, f"sheet {where}", f"シート {where}"))
    return texts
