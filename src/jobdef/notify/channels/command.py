"""The ``command`` channel: run a program with the message as JSON on stdin.

For paging tools and scripts. The program runs without a shell, with the
worker's environment plus ``JOBDEF_MESSAGE_ID``, ``JOBDEF_CHANNEL`` and
``JOBDEF_EVENT``; a non-zero exit or running past the channel's ``timeout`` is
a failed delivery. On timeout the program's whole process group is killed, so
a child it started cannot hold the sender up either.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

from jobdef.errors import DeliveryError
from jobdef.notify.message import Message
from jobdef.policy.channels import CommandSettings

_STDERR_EXCERPT = 300


class CommandSender:
    """Runs ``argv`` once per message, the message's JSON document on stdin."""

    def __init__(
        self, argv: Sequence[str], timeout: float = 10.0, environ: Mapping[str, str] | None = None
    ) -> None:
        self.argv = list(argv)
        self.timeout = timeout
        self.environ = dict(os.environ if environ is None else environ)

    def send(self, message: Message) -> None:
        document = message.as_json()
        env = {
            **self.environ,
            "JOBDEF_MESSAGE_ID": message.message_id,
            "JOBDEF_CHANNEL": message.channel,
            "JOBDEF_EVENT": str(document.get("event", "")),
        }
        data = json.dumps(document, ensure_ascii=False, default=str).encode()
        try:
            process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise DeliveryError(f"cannot run {self.argv[0]!r}: {exc.strerror or exc}") from None
        try:
            _, stderr = process.communicate(data, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._kill(process)
            raise DeliveryError(
                f"command {self.argv[0]!r} ran past the channel timeout of {self.timeout:g}s "
                "and was killed"
            ) from None
        if process.returncode != 0:
            excerpt = stderr.decode("utf-8", "replace").strip()[-_STDERR_EXCERPT:]
            raise DeliveryError(
                f"command {self.argv[0]!r} exited with status {process.returncode}"
                + (f": {excerpt}" if excerpt else "")
            )

    @staticmethod
    def _kill(process: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        # Not communicate(): a child that left the process group could hold the pipe open.
        for stream in (process.stdin, process.stderr):
            if stream is not None:
                stream.close()


def build(settings: CommandSettings) -> CommandSender:
    return CommandSender(settings.argv, timeout=settings.timeout)
