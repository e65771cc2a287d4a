"""Each consequence of a sheet change as one sentence, in English or Japanese.

:mod:`jobdef.review.diff` decides *what* a change means (a kind, a severity and
the facts); this module only words it. Code spans are marked with backticks;
the renderer keeps them for Markdown and strips them for a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jobdef.render import describe
from jobdef.review.diff import Consequence


def _d(seconds: float | None, lang: str, none_en: str = "none", none_ja: str = "なし") -> str:
    return describe.duration(seconds, lang, none=none_ja if lang == "ja" else none_en)


def _fit(facts: Mapping[str, Any], lang: str) -> str:
    if facts["deadline"] is None:
        return ""
    deadline = _d(facts["deadline"], lang)
    if lang == "ja":
        return f"、期限{deadline}に{'収まる' if facts['fits_deadline'] else '収まらない'}"
    return f", {'within' if facts['fits_deadline'] else 'over'} the {deadline} deadline"


def _retry_window(f: Mapping[str, Any], lang: str) -> str:
    b, a = f["before"], f["after"]
    if lang == "ja":
        return (
            f"最悪の場合の所要時間（登録から最後の試行の終了まで）: "
            f"{_d(b['worst_case'], lang)}（{b['attempts']}回{_fit(b, lang)}）→ "
            f"{_d(a['worst_case'], lang)}（{a['attempts']}回{_fit(a, lang)}）"
        )
    return (
        "Worst case from enqueue to the end of the last attempt: "
        f"{_d(b['worst_case'], lang)} ({b['attempts']} attempts{_fit(b, lang)}) → "
        f"{_d(a['worst_case'], lang)} ({a['attempts']} attempts{_fit(a, lang)})."
    )


def _deadline_missed(f: Mapping[str, Any], lang: str) -> str:
    worst, deadline = _d(f["worst_case"], lang), _d(f["deadline"], lang)
    if lang == "ja":
        return (
            f"期限に収まらなくなる: 最後の試行は登録から最大{worst}後に終わるが、期限は{deadline}。"
        )
    return (
        f"No longer fits the deadline: the last attempt can end {worst} after enqueue, "
        f"the deadline is {deadline}."
    )


def _deadline_met(f: Mapping[str, Any], lang: str) -> str:
    worst, deadline = _d(f["worst_case"], lang), _d(f["deadline"], lang)
    if lang == "ja":
        return f"期限に収まるようになる: 最悪でも{worst}で、期限{deadline}以内。"
    return f"Now fits the deadline: {worst} at worst, within {deadline}."


def _attempts_lowered(f: Mapping[str, Any], lang: str) -> str:
    before, after = f["before"], f["after"]
    if lang == "ja":
        return (
            f"`max_attempts` を {before} から {after} に減らす: これから登録するジョブは{after}回で"
            f"退避する。登録済みのジョブは登録時の{before}回のままなので、しばらくはシートとキューの"
            "内容が食い違う。"
        )
    return (
        f"`max_attempts` lowered from {before} to {after}: jobs enqueued from now on go dead "
        f"after {after} attempts, while jobs already queued keep the {before} they were "
        "enqueued with, so for a while the sheet and the queue disagree."
    )


def _attempts_raised(f: Mapping[str, Any], lang: str) -> str:
    before, after = f["before"], f["after"]
    if lang == "ja":
        return (
            f"登録済みのジョブは登録時の `max_attempts` {before} のまま。"
            f"{after}回になるのは新しいジョブだけ。"
        )
    return (
        f"Jobs already queued keep the `max_attempts` of {before} they were enqueued with; "
        f"only new jobs get {after}."
    )


def _action(action: str, lang: str) -> str:
    return describe.error_action(action, lang)


def _error_class(f: Mapping[str, Any], lang: str) -> str:
    via = ""
    if not f["listed_after"]:
        via = (
            "（一覧から外れ `errors.default` に従う）"
            if lang == "ja"
            else " (unlisted now, so `errors.default` decides)"
        )
    if lang == "ja":
        change = f"{_action(f['before'], lang)} → {_action(f['after'], lang)}"
        return f"`{f['error']}` の扱いが変わる: {change}{via}。"
    return (
        f"`{f['error']}` is now {_action(f['after'], lang)} instead of "
        f"{_action(f['before'], lang)}{via}."
    )


def _error_default(f: Mapping[str, Any], lang: str) -> str:
    if lang == "ja":
        return (
            f"一覧にないエラーの扱いが変わる（`errors.default`: {f['before']} → {f['after']}）: "
            f"{_action(f['after'], lang)}。"
        )
    return (
        f"Errors not listed are now {_action(f['after'], lang)} "
        f"(`errors.default`: {f['before']} → {f['after']})."
    )


def _idempotency_recipe(f: Mapping[str, Any], lang: str) -> str:
    before, after = f["before"], f["after"]
    if after is None:
        if lang == "ja":
            return f"冪等キー `{before}` を削除: 同じ処理を何度登録しても重複として扱われなくなる。"
        return f"Idempotency key `{before}` removed: enqueues are no longer de-duplicated."
    old = f"`{before}`" if before else ("なし" if lang == "ja" else "none")
    reach = "".join(_recipe_reach(f, lang))
    if lang == "ja":
        return (
            f"冪等キーのレシピが変わる（{old} → `{after}`）: {reach}"
            "登録済みジョブのキーと一致しないため、待機中のジョブと同じ処理を登録し直すと二重に登録される。"
        )
    return (
        f"Idempotency key recipe changes ({old} → `{after}`): {reach}keys of jobs already "
        "queued will not match, so enqueuing the same work again while they wait adds a "
        "second job."
    )


def _count(n: int | None, lang: str, en: tuple[str, str], ja: str) -> str:
    """`` (3 jobs finished inside it in the store)`` when the store was asked; ``en`` is
    the phrase for one job and for several."""
    if n is None:
        return ""
    if lang == "ja":
        return f"（ジョブストアに {n} 件{ja}）"
    return f" ({n} {en[0] if n == 1 else en[1]} in the store)"


def _recipe_reach(f: Mapping[str, Any], lang: str) -> list[str]:
    """What a changed recipe does past the queued rows: the dedupe window, processed keys."""
    parts = []
    window = f.get("dedupe_window")
    if window is not None:
        span = _d(window, lang)
        if lang == "ja":
            parts.append(
                f"dedupe_window（{span}）内に完了したジョブのキーと一致しなくなり、"
                f"同じ処理の登録が重複とみなされず再び実行される"
                f"{_count(f.get('done_in_window'), lang, ('', ''), '')}。"
            )
        else:
            found = _count(
                f.get("done_in_window"),
                lang,
                ("job finished inside it", "jobs finished inside it"),
                "",
            )
            parts.append(
                f"jobs finished in the last {span} (the dedupe_window) no longer absorb an "
                f"enqueue of the same work, which runs again{found}; "
            )
    if f.get("first_run"):
        if lang == "ja":
            parts.append(
                "ハンドラーが first_run で記録した処理済みキーとも一致しなくなり、"
                "処理済みの仕事をもう一度行う"
                f"{_count(f.get('done'), lang, ('', ''), '（完了ジョブ、各1キー）')}。"
            )
        else:
            found = _count(
                f.get("done"), lang, ("done job with its key", "done jobs with their keys"), ""
            )
            parts.append(
                "the keys the handler recorded with first_run (processed_keys) no longer "
                f"match new enqueues, so work already done is done again{found}; "
            )
    return parts


def _retention_cut(f: Mapping[str, Any], lang: str) -> str:
    state = f["state"]
    forever = ("until resolved", "解決されるまで") if state == "dead" else ("forever", "無期限")
    before = _d(f["before"], lang, *forever)
    after = _d(f["after"], lang)
    if lang == "ja":
        return (
            f"{state} の保存期間を短縮（{before} → {after}）: "
            f"{after}より古い行は次の prune で削除される。"
        )
    return (
        f"Retention of {state} jobs cut from {before} to {after}: rows older than {after} "
        "are deleted at the next prune."
    )


def _channel_removed(f: Mapping[str, Any], lang: str) -> str:
    if lang == "ja":
        return f"通知先 `{f['channel']}` を削除: ジョブが退避しても誰にも知らされない。"
    return f"Notify channel `{f['channel']}` removed: nobody is told when a job goes dead."


def _channel_changed(f: Mapping[str, Any], lang: str) -> str:
    if lang == "ja":
        return f"通知先が `{f['before']}` から `{f['after']}` に変わる。"
    return f"Notifications go to `{f['after']}` instead of `{f['before']}`."


def _events_removed(f: Mapping[str, Any], lang: str) -> str:
    events = ", ".join(f["events"])
    if lang == "ja":
        return f"次のイベントは通知されなくなる: {events}。"
    return f"No longer notified about: {events}."


def _queue_changed(f: Mapping[str, Any], lang: str) -> str:
    before, after = f["before"], f["after"]
    if lang == "ja":
        return (
            f"キューが `{before}` から `{after}` に変わる: "
            f"登録済みのジョブは `{before}` に残るので、"
            f"空になるまで `{before}` を処理するワーカーを残すこと。"
        )
    return (
        f"Queue changes from `{before}` to `{after}`: jobs already queued stay in `{before}`; "
        f"keep a worker on `{before}` until it drains."
    )


def _on_reclaim(f: Mapping[str, Any], lang: str) -> str:
    if lang == "ja":
        what = "すぐ退避する" if f["after"] == "fail" else "再試行する"
        change = f"`on_reclaim`: {f['before']} → {f['after']}"
        return f"実行中にワーカーが停止したジョブは{what}（{change}）。"
    what = "goes dead at once" if f["after"] == "fail" else "is retried"
    return (
        f"A job whose worker dies mid-run now {what} (`on_reclaim`: {f['before']} → {f['after']})."
    )


def _args_required(f: Mapping[str, Any], lang: str) -> str:
    names = ", ".join(f"`{a}`" for a in f["args"])
    if lang == "ja":
        return f"必須の引数が増える（{names}）: 渡さない呼び出しは登録時に拒否される。"
    return f"New required args {names}: callers that do not pass them are refused at enqueue."


def _result_not_stored(f: Mapping[str, Any], lang: str) -> str:
    if lang == "ja":
        return (
            "戻り値を保存しなくなる（`result.store: false`）: これから完了するジョブの結果は"
            "jobdef result・Queue.status・受付のどれからも読めない。"
        )
    return (
        "Return values no longer stored (`result.store: false`): callers reading a result "
        "(jobdef result, Queue.status, receipts) get none for jobs done from now on."
    )


def _result_retention_cut(f: Mapping[str, Any], lang: str) -> str:
    before = _d(f["before"], lang, "as long as the job", "ジョブと同じ期間")
    after = _d(f["after"], lang)
    if lang == "ja":
        return (
            f"結果の保存期間を短縮（{before} → {after}）: 完了から{after}より経った結果は"
            "次の削除で消える。"
        )
    return (
        f"Stored results kept shorter, {before} → {after}: results of jobs done more than "
        f"{after} ago are deleted at the next retention run."
    )


def _result_bytes_lowered(f: Mapping[str, Any], lang: str) -> str:
    before, after = describe.size(f["before"]), describe.size(f["after"])
    if lang == "ja":
        return (
            f"`result.max_bytes` を {before} から {after} に下げる: {after}を超える戻り値は"
            "保存されず、その回の失敗になる（errors の分類に従う）。"
        )
    return (
        f"`result.max_bytes` lowered from {before} to {after}: a return value over {after} "
        "now fails its attempt (classified by errors) instead of being stored."
    )


def _result_schema(f: Mapping[str, Any], lang: str) -> str:
    if lang == "ja":
        what = "戻り値にスキーマを設ける" if f["new"] else "戻り値のスキーマを変える"
        return f"{what}: 合わない戻り値はその回の失敗になる。ハンドラが返す値を確かめること。"
    what = "Return values get a schema" if f["new"] else "The schema of return values changes"
    return f"{what}: a value that breaks it fails its attempt; check what the handler returns."


def _result_public_widened(f: Mapping[str, Any], lang: str) -> str:
    fields = f["fields"]
    if lang == "ja":
        what = "値全体" if fields is None else "、".join(f"`{n}`" for n in fields)
        return f"受付で見せる結果が増える（{what}）: 受付番号を持つ人なら誰でも読める。"
    what = "the whole value" if fields is None else ", ".join(f"`{n}`" for n in fields)
    return f"Receipts show more of the result ({what}): anyone holding a receipt can read it."


def _job_added(f: Mapping[str, Any], lang: str) -> str:
    if not f:
        return "新しいジョブ。" if lang == "ja" else "New job."
    worst = _d(f["worst_case"], lang)
    key, channel = f["idempotency_key"], f["channel"]
    if lang == "ja":
        keyed = f"冪等キー `{key}`" if key else "冪等キーなし（登録のたびに新しいジョブ）"
        told = f"退避は `{channel}` に通知" if channel else "退避しても通知なし"
        return (
            f"新しいジョブ: キュー `{f['queue']}`、{f['attempts']}回まで、最悪の場合"
            f"{worst}{_fit(f, lang)}。{keyed}。{told}。"
        )
    keyed = f"idempotency key `{key}`" if key else "no idempotency key (every enqueue adds a job)"
    told = f"`{channel}` is told about dead jobs" if channel else "nobody is told about dead jobs"
    return (
        f"New job: queue `{f['queue']}`, {f['attempts']} attempts, worst case {worst} "
        f"from enqueue to the end of the last attempt{_fit(f, lang)}; {keyed}; {told}."
    )


def _job_removed(f: Mapping[str, Any], lang: str) -> str:
    if lang == "ja":
        return (
            "ジョブを削除: この名前で登録済みのジョブにはシートがなくなり、終わった行も"
            "保存期間で消されなくなる。先に処理し終えるか取り消すこと。"
        )
    return (
        "Job removed: jobs already queued under this name have no sheet any more, and its "
        "finished rows are no longer pruned; let them drain or cancel them first."
    )


def _job_renamed(f: Mapping[str, Any], lang: str) -> str:
    before = f["before"]
    if lang == "ja":
        return (
            f"`{before}` から名前を変更: `{before}` として登録済みのジョブにはシートがなくなる。"
            "先に処理し終えること。"
        )
    return (
        f"Renamed from `{before}`: jobs already queued as `{before}` have no sheet any more; "
        "let them drain first."
    )


_SENTENCES: dict[str, Callable[[Mapping[str, Any], str], str]] = {
    "retry_window": _retry_window,
    "deadline_missed": _deadline_missed,
    "deadline_met": _deadline_met,
    "attempts_lowered": _attempts_lowered,
    "attempts_raised": _attempts_raised,
    "error_class": _error_class,
    "error_default": _error_default,
    "idempotency_recipe": _idempotency_recipe,
    "retention_cut": _retention_cut,
    "notify_channel_removed": _channel_removed,
    "notify_channel_changed": _channel_changed,
    "notify_events_removed": _events_removed,
    "queue_changed": _queue_changed,
    "on_reclaim": _on_reclaim,
    "args_required": _args_required,
    "result_not_stored": _result_not_stored,
    "result_retention_cut": _result_retention_cut,
    "result_bytes_lowered": _result_bytes_lowered,
    "result_schema": _result_schema,
    "result_public_widened": _result_public_widened,
    "job_added": _job_added,
    "job_removed": _job_removed,
    "job_renamed": _job_renamed,
}

KINDS = frozenset(_SENTENCES)


def _active(count: int, lang: str) -> str:
    if lang == "ja":
        return f"（現在 {count} 件が待機中・実行中）"
    return f" ({count} queued or running now)" if count != 1 else " (1 queued or running now)"


def sentence(consequence: Consequence, lang: str = "en") -> str:
    """``consequence`` in words; code spans in backticks.

    When the job store was asked, the count of jobs queued or running now follows.
    """
    text = _SENTENCES[consequence.kind](consequence.facts, lang)
    if "active" in consequence.facts:
        body, stop = (text[:-1], text[-1]) if text.endswith((".", "。")) else (text, "")
        text = body + _active(consequence.facts["active"], lang) + stop
    return text
