"""yaml-language-server (from npm) on a sheet scaffolded by `jobdef init` + `jobdef new`:
the schema line `jobdef new` writes points at the project's copy of the schema, which
the server loads offline, reports a misspelt field against and completes keys from.

A small LSP client over stdio drives the server. The server is found at
JOBDEF_YAML_LANGUAGE_SERVER, in the cache folder .ci/run installs it into, or on
PATH; without node or the server the test skips, except under CI=true.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.cli import main

# Where .ci/run installs it (outside the checkout: no node_modules in the repository).
CACHED = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "jobdef-tests/yaml-language-server-2.0.0/node_modules/yaml-language-server/bin"
    / "yaml-language-server"
)
pytestmark = pytest.mark.slow
WAIT = 60.0


def _server() -> list[str]:
    node = shutil.which("node")
    script = os.environ.get("JOBDEF_YAML_LANGUAGE_SERVER") or str(CACHED)
    if node is not None and Path(script).is_file():
        return [node, script, "--stdio"]
    found = shutil.which("yaml-language-server")
    if node is not None and found:
        return [found, "--stdio"]
    reason = (
        "node or yaml-language-server not found (npm install --prefix .ci yaml-language-server)"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true requires yaml-language-server: {reason}")
    pytest.skip(reason)


class Client:
    """JSON-RPC over the server's stdin and stdout, with Content-Length framing."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = 0
            while (line := stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if not line:
                return
            self.messages.put(json.loads(stream.read(length)))

    def send(self, payload: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **payload}).encode("utf-8")
        assert self.process.stdin is not None
        self.process.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        ident = self.next_id
        self.send({"id": ident, "method": method, "params": params})
        for message in self.incoming():
            if message.get("id") == ident and "method" not in message:
                assert "error" not in message, message
                return message.get("result")
        raise AssertionError("unreachable")

    def incoming(self) -> Iterator[dict[str, Any]]:
        """Messages as they come; the server's own requests are answered on the way."""
        while True:
            try:
                message = self.messages.get(timeout=WAIT)
            except queue.Empty:
                raise AssertionError(f"no message from the server in {WAIT}s") from None
            if "method" in message and "id" in message:  # a request of the server
                items = message.get("params", {}).get("items", [])
                answer = (
                    [SETTINGS["yaml"] for _ in items]
                    if message["method"] == ("workspace/configuration")
                    else None
                )
                self.send({"id": message["id"], "result": answer})
                continue
            yield message

    def diagnostics(self, uri: str) -> list[dict[str, Any]]:
        for message in self.incoming():
            if message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                if params["uri"] == uri and params["diagnostics"]:
                    return list(params["diagnostics"])
        raise AssertionError("unreachable")

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.reader.join(timeout=10)  # it ends at the end of the server's output
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    stream.close()


SETTINGS = {
    "yaml": {"validate": True, "completion": True, "hover": True, "schemaStore": {"enable": False}}
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("JOBDEF_SHEETS", "JOBDEF_LANG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    assert main(["new", "send_invoice"]) == 0
    return tmp_path


@pytest.fixture
def client(project: Path) -> Iterator[Client]:
    server = Client(_server(), project)
    try:
        server.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": project.as_uri(),
                "capabilities": {
                    "workspace": {"configuration": True},
                    "textDocument": {"completion": {"completionItem": {"snippetSupport": False}}},
                },
            },
        )
        server.notify("initialized", {})
        server.notify("workspace/didChangeConfiguration", {"settings": SETTINGS})
        yield server
    finally:
        server.close()


def _open(client: Client, path: Path, text: str) -> str:
    uri = path.as_uri()
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}},
    )
    return uri


def test_a_misspelt_field_is_reported_and_top_level_keys_complete(
    project: Path, client: Client
) -> None:
    sheet = project / "jobdefs" / "send_invoice.yaml"
    text = sheet.read_text("utf-8")
    assert text.startswith("# yaml-language-server: $schema=../.jobdef/jobdef-v1.schema.json\n")
    lines = text.splitlines()
    typo = next(i for i, line in enumerate(lines) if line.startswith("handler:"))
    lines[typo] = lines[typo].replace("handler", "handlr")
    uri = _open(client, sheet, "\n".join(lines) + "\n")
    found = client.diagnostics(uri)
    messages = [d["message"] for d in found]
    at_typo = [d for d in found if d["range"]["start"]["line"] == typo]
    assert at_typo, messages
    assert any("handlr" in d["message"] for d in at_typo), messages
    assert not any("Unable to load schema" in m for m in messages), messages

    fresh = project / "jobdefs" / "fresh.yaml"
    head = "# yaml-language-server: $schema=../.jobdef/jobdef-v1.schema.json\n"
    body = "apiVersion: jobdef/v1\nkind: Job\n\n"
    fresh_uri = _open(client, fresh, head + body)
    result = client.request(
        "textDocument/completion",
        {"textDocument": {"uri": fresh_uri}, "position": {"line": 3, "character": 0}},
    )
    items = result["items"] if isinstance(result, dict) else result
    labels = {item["label"] for item in items}
    for key in (
        "name",
        "handler",
        "max_attempts",
        "backoff",
        "timeout",
        "idempotency",
        "errors",
        "notify",
        "retention",
        "queue",
        "priority",
        "dead_letter",
    ):
        assert key in labels, sorted(labels)
    assert len(labels) >= 20, sorted(labels)
