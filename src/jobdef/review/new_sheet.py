"""A new job definition sheet with every field and a comment on each, in English or Japanese.

The fields and their order are :data:`jobdef.policy.fields.JOB_FIELDS`'s. The
English comments are the descriptions of the shipped JSON Schema (the text an
editor shows on hover), so the two never drift apart; the Japanese ones and the
starter values are written here, one entry per field. A field that a
``Defaults`` document already sets is written as a comment holding the Defaults
value: the job keeps inheriting it (a later change to Defaults still reaches the
job) and uncommenting the line overrides it for this job alone.
``copy_defaults=True`` writes those values as real lines instead. Fields that
only some jobs need (``schedule`` of a batch job, ``deadline``, ``decision``)
are written commented out with an example value.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from jobdef.errors import UsageError
from jobdef.policy.fields import JOB_FIELDS
from jobdef.render.escape import clip
from jobdef.review.task_signature import Found
from jobdef.sheets.document import Document
from jobdef.sheets.field_paths import field_paths

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
# The longest job name the sheet schema allows (its `maxLength`).
MAX_NAME_LENGTH = 100
SCHEMA_LINE = re.compile(r"^#\s*yaml-language-server:\s*\$schema=\S+")
_WIDTH = 92


@dataclass(frozen=True)
class Field:
    """One line of the sheet: its key, a starter value and whether it starts commented out.

    ``value`` is the starter value when no Defaults document sets the field;
    ``optional`` fields are written commented out (they change what the job
    does only when someone means it).
    """

    key: str
    value: Any = None
    ja: str = ""
    optional: bool = False
    children: tuple[Field, ...] = ()
    # The English comment, where the schema's description is not the one to show.
    en: str = ""


def _args(name: str, lang: str, found: Found | None, ja: str) -> Field:
    """``args``: the found function's parameters, else one example to replace."""
    if found is None:
        what = "ID of the record to process" if lang == "en" else "処理するレコードのID"
        example = {"type": "integer", "minimum": 1, "description": what}
        note = "例: 自分の引数に置き換える。"
        return Field("args", None, ja, children=(Field("record_id", example, note),))
    if not found.params:
        return Field("args", {}, ja)
    where = found.handler
    children = tuple(
        Field(
            param.name,
            param.schema if param.required else {**param.schema, "required": False},
            f"{where} の引数（型は注釈から）。最小値や説明を書き足す。",
            en=f"A parameter of {where} (its type from the annotation); add what it "
            "accepts (minimum, enum) and a description.",
        )
        for param in found.params
    )
    return Field("args", None, ja, children=children)


@dataclass(frozen=True)
class Starter:
    """What a new sheet writes for one field or group: its starter value, its Japanese
    comment, and whether it starts commented out."""

    value: Any = None
    ja: str = ""
    optional: bool = False


# For each field of JOB_FIELDS and each group above fields, by dotted path. The English
# comments are the schema's; tests/policy/test_policy_fields.py holds this to the fields.
_STARTERS: Mapping[str, Starter] = {
    "apiVersion": Starter("jobdef/v1", "常に jobdef/v1。"),
    "kind": Starter("Job", "Job: ジョブ定義シート1枚。"),
    "name": Starter(None, "ジョブ名: コード上の名前。全シートで一意、英小文字・数字・_。"),
    "title": Starter(None, "ジョブ名: 人が読む名前（例: 予約確定メール送信）。"),
    "description": Starter(None, "何をするジョブか、1〜2文で。"),
    "owner": Starter(None, "ジョブを持ち、通知に対応するチーム。"),
    "trigger": Starter(None, "起点: どの操作・どのデータの発生でジョブが登録されるか。"),
    "mode": Starter(
        "async", "async（アプリが登録する）または batch（schedule に従いワーカーが登録する）。"
    ),
    "schedule": Starter("0 3 * * *", "batch のときだけ: cron 形式（5項目）の実行時刻。", True),
    "timezone": Starter("UTC", "schedule のタイムゾーン（IANA 名、例: Asia/Tokyo）。", True),
    "catch_up": Starter(
        "latest",
        "ワーカー停止中に逃した回: none（実行しない）、latest（最新の1回）、"
        "all（すべて、上限あり）。",
        True,
    ),
    "handler": Starter(
        None, "ジョブを実行する関数 `module:function`。自分のコードの場所に書き換える。"
    ),
    "queue": Starter("default", "登録先のキュー名。ワーカーは処理するキューを選ぶ。"),
    "priority": Starter(0, "同じキューの中で大きいほど先に実行する（-1000〜1000）。"),
    "args": Starter(
        None, "引数: 引数ごとに JSON Schema を1つ。`required: false` と書かない限り必須。"
    ),
    "max_attempts": Starter(5, "最大試行回数: 初回を含めて何回まで実行するか。"),
    "backoff": Starter(None, "待ち時間: 再試行までの間隔。上限とジッターつき。"),
    "backoff.strategy": Starter(
        "exponential",
        "fixed（常に initial）、linear（initial × n）、exponential"
        "（initial × multiplier^(n-1)）、list（delays の n 番目、最後を繰り返す）。",
    ),
    "backoff.delays": Starter(
        ["1m", "5m", "15m"], "list のときだけ: 待ち時間を順に。最後の値を繰り返す。", True
    ),
    "backoff.initial": Starter("10s", "最初の待ち時間（decorrelated ジッターの下限）。"),
    "backoff.multiplier": Starter(2, "exponential の倍率（1より大きい）。"),
    "backoff.max": Starter("10m", "1回の待ち時間の上限。"),
    "backoff.jitter": Starter(
        "full",
        "待ち時間に加える揺らぎ: none、full、equal、decorrelated。"
        "再試行が一斉に押し寄せるのを防ぐ。",
    ),
    "timeout": Starter("30s", "タイムアウト: 1回の実行に許す時間。過ぎるとワーカーが止める。"),
    "deadline": Starter(
        "2h", "任意: 依頼者が待てる時間の合計（登録から最後の試行の終了まで）。", True
    ),
    "idempotency": Starter(None, "冪等キー: 同じ処理の二重登録を見分ける方法。"),
    "idempotency.key": Starter(None, "引数から作るキーのレシピ。`{名前}` は引数名。"),
    "idempotency.dedupe_window": Starter(
        "1d",
        "任意: 完了後もこの期間は同じキーの登録を重複とみなす。"
        "書かなければ待機中・実行中のあいだだけ。",
        True,
    ),
    "errors": Starter(
        None, "再試行するエラー / 再試行しないエラー。継承関係では最も近いクラスが優先。"
    ),
    "errors.retry": Starter(
        ["ConnectionError", "TimeoutError"],
        "再試行するエラー: 一時的とみなす例外クラス（組み込み名またはドット区切りのパス）。",
    ),
    "errors.fatal": Starter([], "再試行しないエラー: 直らない例外クラス。すぐ退避する。"),
    "errors.default": Starter("retry", "一覧にない例外の扱い: retry または fatal。"),
    "on_reclaim": Starter(
        "retry",
        "実行中にワーカーが止まった（リース切れ）とき: retry はタイムアウトの失敗として再試行、"
        "fail はすぐ退避。",
    ),
    "dead_letter": Starter(None, "エラー時の退避先: 成功できないジョブを残す場所。"),
    "dead_letter.target": Starter("table", "table: jobs テーブルに状態 dead で残す。"),
    "notify": Starter(None, "通知先: 誰に、どの Channel で、どのイベントを知らせるか。"),
    "notify.channel": Starter(None, "Channel ドキュメントの名前。"),
    "notify.events": Starter(
        ["dead"], "知らせるイベント: dead（退避）、retry、timeout、reclaimed、done。"
    ),
    "notify.key_args": Starter(
        None, "任意: 通知に載せる引数。書かなければ冪等キーに使う引数。", True
    ),
    "rerun": Starter(None, "再実行の手順: 原因を直したあと、退避したジョブを戻す方法。"),
    "retention": Starter(None, "保存期間: 終わった行をいつまで残すか。"),
    "retention.done": Starter("30d", "完了（と取消・解決済み）のジョブを残す期間。"),
    "retention.dead": Starter(
        "until_resolved", "退避したジョブを残す期間: until_resolved（解決されるまで）または期間。"
    ),
    "limits": Starter(None, "任意: 1 件のジョブが運べる量の上限。", True),
    "limits.args_bytes": Starter(
        262144,
        "引数の JSON の最大バイト数（既定 256 KiB）。大きなデータは別に置き、その ID を渡す。",
    ),
    "result": Starter(
        None,
        "任意: ハンドラの戻り値の扱い。残すか、大きさと期間、値の形、誰に見せるか。",
        True,
    ),
    "result.store": Starter(True, "戻り値を完了したジョブと一緒に残すか。false なら捨てる。"),
    "result.max_bytes": Starter(
        "64KiB",
        "残す値の上限（UTF-8 の JSON のバイト数、B・KiB・MiB）。超えた回は失敗になる。"
        "既定 64KiB、最大 1MiB。",
    ),
    "result.retention": Starter(
        "7d", "完了後に値を残す期間。書かなければ retention.done と同じ（それより長くはできない）。"
    ),
    "result.schema": Starter(
        {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]},
        "値の JSON Schema（draft-07）。引数と同じく検査し、合わない値はその回の失敗になる。",
    ),
    "result.public": Starter(
        ["total"],
        "受付（アプリが利用者に見せる状態確認）に出す範囲: false（出さない）、true（値全体）、"
        "または値の先頭の項目名。",
    ),
    "result.notify": Starter(["total"], "完了（done）の通知に添える、値の先頭の項目名。"),
    "runtime": Starter(
        None,
        "任意: Celery や RQ で動かすとき、その基盤が正確には守れない項目のうち"
        "受け入れるもの（jobdef check --runtime が一覧にする）。",
        True,
    ),
    "runtime.celery": Starter(None, "Celery で。"),
    "runtime.celery.accept": Starter(["priority"]),
    "runtime.rq": Starter(None, "RQ で。"),
    "runtime.rq.accept": Starter(["on_reclaim"]),
    "decision": Starter(
        None,
        "任意: 同期 / 非同期 / バッチを決める問いへの答え。jobdef validate が勧める mode を導く。",
        True,
    ),
    "decision.time_triggered": Starter(False, "時刻が処理を始めるか（利用者ではなく）。"),
    "decision.result_needed_at_once": Starter(False, "呼び出し側が応答の中で結果を必要とするか。"),
    "decision.done_within_seconds": Starter(False, "数秒以内に終わるか。"),
    "decision.calls_external_systems": Starter(True, "外部システムを呼ぶか。"),
    "decision.must_accept_when_external_down": Starter(
        True, "外部システムが止まっていても依頼を受け付ける必要があるか。"
    ),
}
# The document's envelope, written above the fields.
_ENVELOPE = ("apiVersion", "kind")


def _starters(name: str, lang: str, found: Found | None) -> dict[str, Starter]:
    """:data:`_STARTERS` with the values that depend on the job's name and function."""
    todo = "TODO: "
    first = found.params[0].name if found is not None and found.params else None
    key_arg = "record_id" if found is None else first
    values = {
        "name": name,
        "title": name.replace("_", " ").capitalize(),
        "description": todo + ("what the job does" if lang == "en" else "このジョブが何をするか"),
        "owner": todo + ("the owning team" if lang == "en" else "担当チーム"),
        "trigger": todo
        + ("what enqueues this job" if lang == "en" else "どの操作・データで登録されるか"),
        "handler": found.handler if found is not None else f"app.jobs:{name}",
        "idempotency.key": f"{{{key_arg or 'record_id'}}}:{name}",
        "notify.key_args": [key_arg or "record_id"],
        "rerun": f"jobdef requeue --job {name} --state dead",
    }
    starters = {
        path: replace(starter, value=values[path]) if path in values else starter
        for path, starter in _STARTERS.items()
    }
    # Without an arg to make a key of, the idempotency block is an example to fill in.
    starters["idempotency"] = replace(starters["idempotency"], optional=key_arg is None)
    return starters


def _tree(
    paths: Sequence[str], starters: Mapping[str, Starter], make_args: Callable[[], Field], at: str
) -> tuple[Field, ...]:
    """The fields at ``paths`` (dotted, below group ``at``), nested as a sheet writes them."""
    heads: dict[str, list[str]] = {}
    for path in paths:
        head, _, rest = path.partition(".")
        heads.setdefault(head, []).append(rest)
    fields: list[Field] = []
    for head, rests in heads.items():
        path = at + head
        if path == "args":
            fields.append(make_args())
            continue
        starter = starters[path]
        below = [rest for rest in rests if rest]
        children = _tree(below, starters, make_args, path + ".") if below else ()
        fields.append(Field(head, starter.value, starter.ja, starter.optional, children))
    return tuple(fields)


def _fields(name: str, lang: str, found: Found | None = None) -> tuple[Field, ...]:
    """Every line of a new sheet: the envelope, then each field of JOB_FIELDS in its order."""
    starters = _starters(name, lang, found)
    paths = [*_ENVELOPE, *(field.path for field in JOB_FIELDS)]
    return _tree(paths, starters, lambda: _args(name, lang, found, starters["args"].ja), "")


def _schema() -> Mapping[str, Any]:
    from jobdef.sheets.schema_check import schema

    return schema()


def _english(path: tuple[str, ...]) -> str:
    """The schema's description of the Job field at ``path``."""
    node: Mapping[str, Any] = _schema()["definitions"]["Job"]
    for key in path:
        node = node.get("properties", {}).get(key, {})
    return str(node.get("description", ""))


def _yaml(value: Any) -> str:
    """``value`` as one line of YAML (flow style), quoted where YAML 1.1 or 1.2 would misread it."""
    text = yaml.safe_dump(
        value, default_flow_style=True, allow_unicode=True, sort_keys=False, width=1 << 16
    )
    return text.removesuffix("\n").removesuffix("\n...").strip()


# Japanese has no spaces to wrap at: break after punctuation, about this many characters a line.
_JA_WIDTH = 46
_JA_BREAK = re.compile(r"(?<=[。、）])|(?=（)")


def _comment(text: str, indent: str) -> list[str]:
    """``text`` as comment lines at ``indent``, wrapped; continuation lines indented once more."""
    first, rest = f"{indent}# ", f"{indent}#   "
    if not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]{8}", text):
        return textwrap.wrap(
            text,
            width=_WIDTH,
            initial_indent=first,
            subsequent_indent=rest,
            break_long_words=False,
            break_on_hyphens=False,
        )
    lines: list[str] = []
    line = ""
    for piece in _JA_BREAK.split(text):
        if line and len(line) + len(piece) > _JA_WIDTH:
            lines.append(line)
            line = ""
        line += piece
    lines.append(line)
    chunks = [chunk.strip() for chunk in lines if chunk.strip()]
    return [(first if i == 0 else rest) + chunk for i, chunk in enumerate(chunks)]


@dataclass(frozen=True)
class Inherited:
    """A value a ``Defaults`` document sets, and where."""

    value: Any
    file: str


def defaults_values(documents: Sequence[Document]) -> dict[tuple[str, ...], Inherited]:
    """The fields the ``Defaults`` documents set, merged as the registry merges them."""
    values: dict[tuple[str, ...], Inherited] = {}
    for doc in documents:
        if doc.kind != "Defaults":
            continue
        for path, value in field_paths(doc.data).items():
            if path[0] not in ("apiVersion", "kind", "name"):
                values[tuple(str(p) for p in path)] = Inherited(value, doc.file)
    return values


def schema_line(documents: Sequence[Document], fallback: str, folder: Path | None = None) -> str:
    """The schema line that existing sheets in ``folder`` use, else one pointing at ``fallback``.

    Only sheets in the same folder count: their line may be a relative path.
    """
    where = None if folder is None else folder.resolve()
    files = {d.file for d in documents if where is None or Path(d.file).resolve().parent == where}
    for file in sorted(files):
        try:
            first = Path(file).read_text("utf-8").splitlines()[:1]
        except (OSError, UnicodeDecodeError):
            continue
        if first and SCHEMA_LINE.match(first[0]) and _serves(first[0], Path(file).parent):
            return first[0]
    return f"# yaml-language-server: $schema={fallback}"


def _serves(line: str, folder: Path) -> bool:
    """Whether a schema line can give editors the schema: a local path that exists, or a
    URL that is not jobdef.dev (which never served it)."""
    target = line.split("$schema=", 1)[1].strip()
    if "://" in target:
        return "jobdef.dev/" not in target
    return (folder / target).is_file()


def _shown(file: str, root: Path | None) -> str:
    """``file`` relative to the project root when it is inside it: generated files never
    carry an absolute path of the machine they were made on."""
    if root is None:
        return file
    try:
        return Path(file).absolute().relative_to(root.absolute()).as_posix()
    except ValueError:
        return Path(file).name


def _inherit_note(file: str, lang: str) -> str:
    if lang == "ja":
        return f"（{file} の Defaults から継承。このジョブだけ変えるならコメントを外す）"
    return f"(Inherited from Defaults in {file}; uncomment to override.)"


def _sep(lang: str) -> str:
    """What joins two sentences: a space in English, nothing in Japanese."""
    return "" if lang == "ja" else " "


def _optional_note(lang: str) -> str:
    return "使うときはコメントを外す。" if lang == "ja" else "Uncomment to use."


def _render_field(
    fld: Field,
    path: tuple[str, ...],
    *,
    indent: str,
    inherited: Mapping[tuple[str, ...], Inherited],
    lang: str,
    copy_defaults: bool,
    root: Path | None = None,
    parent_commented: bool = False,
) -> list[str]:
    text = fld.ja if lang == "ja" else _english(path)
    lines = [""] if not indent else []
    if fld.children and path[0] != "args":
        child_lines: list[list[str]] = []
        all_commented = True
        for child in fld.children:
            rendered = _render_field(
                child,
                (*path, child.key),
                indent=indent + "  ",
                inherited=inherited,
                lang=lang,
                copy_defaults=copy_defaults,
                root=root,
                parent_commented=parent_commented or fld.optional,
            )
            child_lines.append(rendered)
            all_commented &= all(line.lstrip().startswith("#") for line in rendered)
        note = (
            f"{_sep(lang)}{_optional_note(lang)}" if fld.optional and not parent_commented else ""
        )
        lines += _comment(text + note, indent)
        lines.append(f"{indent}{'# ' if all_commented else ''}{fld.key}:")
        for rendered in child_lines:
            lines += rendered
        return lines
    if fld.children:  # args: a mapping of example entries
        lines += _comment(text, indent)
        lines.append(f"{indent}{fld.key}:")
        for child in fld.children:
            lines += _comment(child.ja if lang == "ja" else child.en or _args_note(), indent + "  ")
            lines.append(f"{indent}  {child.key}: {_yaml(child.value)}")
        return lines
    found = inherited.get(path)
    if found is not None:
        lines += _comment(
            f"{text}{_sep(lang)}{_inherit_note(_shown(found.file, root), lang)}", indent
        )
        prefix = "" if copy_defaults and not parent_commented else "# "
        lines.append(f"{indent}{prefix}{fld.key}: {_yaml(found.value)}")
        return lines
    commented = fld.optional or parent_commented or fld.value is None
    note = f"{_sep(lang)}{_optional_note(lang)}" if commented and not parent_commented else ""
    lines += _comment(f"{text}{note}", indent)
    value = fld.value if fld.value is not None else ""
    lines.append(f"{indent}{'# ' if commented else ''}{fld.key}: {_yaml(value)}".rstrip())
    return lines


def _args_note() -> str:
    return "An example arg: replace it with the job's own args."


def check_name(name: str) -> None:
    """Raise :class:`UsageError` unless ``name`` is a job name the schema accepts."""
    if not NAME_PATTERN.match(name) or len(name) > MAX_NAME_LENGTH:
        raise UsageError(
            f"{clip(name, 60)!r} is not a job name; write up to {MAX_NAME_LENGTH} lower-case "
            "letters, digits and _ starting with a letter, such as send_invoice_mail"
        )


def render_sheet(
    name: str,
    *,
    lang: str = "en",
    documents: Sequence[Document] = (),
    channels: Sequence[str] = (),
    schema: str | None = None,
    folder: Path | None = None,
    root: Path | None = None,
    copy_defaults: bool = False,
    found: Found | None = None,
) -> str:
    """The text of a new sheet for job ``name``.

    ``documents`` are the existing sheets (their Defaults give the values);
    ``channels`` the Channel names, the first of which is proposed for
    ``notify.channel`` when Defaults names none; ``schema`` the URL for the
    ``yaml-language-server`` line when no existing sheet has one (default: the
    schema's ``$id``); ``folder`` where the sheet goes; ``root`` the project root, which
    the paths in comments are relative to; ``found`` the function the job runs, whose
    path is the ``handler`` and whose parameters are the ``args``.
    """
    check_name(name)
    inherited = defaults_values(documents)
    fields = list(_fields(name, lang, found))
    if ("notify", "channel") not in inherited:
        fields = [_with_channel(f, channels[0] if channels else None) for f in fields]
    head = (
        f"ジョブ定義シート: {name}。全項目を載せ、各項目に説明をつけている。"
        "書き終えたら `jobdef validate` と `jobdef explain " + name + "` で確かめる。"
        if lang == "ja"
        else f"Job definition sheet for {name}: every field, each with what it means. "
        f"Check it with `jobdef validate` and `jobdef explain {name}`."
    )
    lines = [schema_line(documents, schema or _schema()["$id"], folder), *_comment(head, "")]
    for fld in fields:
        lines += _render_field(
            fld,
            (fld.key,),
            indent="",
            inherited=inherited,
            lang=lang,
            copy_defaults=copy_defaults,
            root=root,
        )
    return "\n".join(lines) + "\n"


def _with_channel(fld: Field, channel: str | None) -> Field:
    """``notify`` naming ``channel``; commented out as a whole when there is no channel to name."""
    if fld.key != "notify":
        return fld
    children = tuple(
        Field(c.key, channel, c.ja, c.optional) if c.key == "channel" else c for c in fld.children
    )
    return Field(fld.key, fld.value, fld.ja, channel is None, children)
