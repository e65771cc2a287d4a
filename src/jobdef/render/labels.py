"""The words of the generated pages themselves (headings, column names), in English and Japanese.

Templates call ``t("Retry timeline")``: the English text is the key, and the
Japanese table must hold every key a built-in template uses (a test renders
every template in both languages, so a missing entry fails there).
"""

from __future__ import annotations

from jobdef.errors import JobdefError

JA: dict[str, str] = {
    # page structure
    "Job definitions": "ジョブ定義一覧",
    "Definition": "定義",
    "Item": "項目",
    "What to write": "記入内容",
    "Value": "内容",
    "Retry timeline": "再試行のタイムライン",
    "Attempt": "回",
    "Wait before": "直前の待ち時間",
    "Earliest start": "最早開始",
    "Latest start": "最遅開始",
    "Latest end": "最遅終了",
    "Within deadline": "期限内",
    "Latest start if lost": "喪失時の最遅開始",
    "State diagram": "状態遷移",
    "Where each value comes from": "各値の出どころ",
    "Field": "フィールド",
    "Origin": "出どころ",
    "Errors": "エラーの扱い",
    "Effective policy": "実効ポリシー",
    "Error": "エラー",
    "Treatment": "扱い",
    "When the worker dies": "ワーカーが停止したとき",
    "Dead jobs": "退避したジョブ",
    "Who is told": "通知",
    "How to re-run": "再実行の手順",
    "How long rows are kept": "保存期間",
    "What the handler returns": "戻り値の扱い",
    "Decision": "方式の判断",
    "Question": "質問",
    "Answer": "回答",
    "Recommended mode": "推奨される方式",
    "Next runs": "次回以降の実行予定",
    (
        "Daylight saving: this line follows the real clock (its minute or hour field "
        "starts with *): in an hour the clock shows twice it runs in both passes; "
        "times the clock skips do not run."
    ): (
        "夏時間: この行は実際の時刻に従います (分か時の欄が * で始まる)。"
        "同じ時刻が二度ある時間帯では両方で実行し、飛ばされた時刻には実行しません。"
    ),
    (
        "Daylight saving: this line is a fixed time: in an hour the clock shows twice it "
        "runs once, the first time; a time the clock skips runs right after the change."
    ): (
        "夏時間: この行は固定の時刻です。同じ時刻が二度ある時間帯では最初の一度だけ実行し、"
        "飛ばされた時刻は切り替えの直後に実行します。"
    ),
    "The next five runs after %s (%s), by the rule the scheduler follows:": (
        "%s（%s）より後の実行予定 5 回（スケジューラと同じ規則で計算）:"
    ),
    "Local time": "現地時刻",
    "Queue": "キュー",
    "Owner": "担当",
    "Handler": "ハンドラ",
    "Trigger": "起点",
    "Mode": "方式",
    "Priority": "優先度",
    "Sheet": "シート",
    "Name": "名前",
    "Title": "日本語名",
    "Attempts": "試行回数",
    "Timeout": "タイムアウト",
    "Worst-case retry window": "再試行の最悪所要時間",
    "Notify": "通知先",
    "Concurrency": "同時実行数",
    "Rate": "開始レート",
    "unlimited": "無制限",
    # sentences
    "Times are counted from the enqueue. Earliest: every earlier attempt failed at once "
    "with the shortest wait. Latest: every earlier attempt ran to its timeout with the "
    "longest wait.": "時刻は登録からの経過時間。"
    "最早: それまでの試行がすぐ失敗し待ち時間が最短の場合。"
    "最遅: それまでの試行がタイムアウトまで走り待ち時間が最長の場合。",
    "Worst case": "最悪の場合",
    "Matching is by exception class and its bases; when both lists match, the most "
    "specific listed class wins.": "例外クラスとその基底クラスで照合し、両方の一覧に当たるときは"
    "より具体的な（継承関係で近い）クラスが優先される。",
    "A dead job is kept in": "退避したジョブの保存先",
    "channel": "チャンネル",
    "events": "イベント",
    "nobody is told": "通知しない",
    # workflows
    "Workflows": "ワークフロー一覧",
    "Workflow": "ワークフロー",
    "Steps": "ステップ",
    "Step": "ステップ",
    "Job": "ジョブ",
    "Args": "引数",
    "Flow args": "フローの引数",
    "Description": "説明",
    "Waits for": "待つもの",
    "If it fails": "失敗したとき",
    "Step worst case": "ステップの最悪所要時間",
    "Critical path": "クリティカルパス",
    "Graph": "グラフ",
    "Worst-case timeline": "最悪ケースのタイムライン",
    "Deadline": "期限",
    "Idempotency key": "冪等キー",
    "Worst case of the flow": "フローの最悪所要時間",
    "Times are counted from the flow's start; a step starts when the last parent it waits "
    "for ended.": "時刻はフロー開始からの経過時間。"
    "各ステップは待つ親のうち最後のものが終わった時点で始まる。",
}


def translate(text: str, lang: str = "en") -> str:
    """``text`` in ``lang``; English is the key itself."""
    if lang != "ja":
        return text
    try:
        return JA[text]
    except KeyError:
        raise JobdefError(
            f"no Japanese text for {text!r} in jobdef.render.labels.JA; "
            "add it there, or use --lang en"
        ) from None
