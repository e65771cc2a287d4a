"""The engine's reading of ``jsonb`` columns: a claim decodes the args of every job it
leases, so the decoding of a short JSON text is a good part of a claim's cost.

The rows of ``claim_jobs`` and ``complete_and_claim`` come in binary: numbers and
floats are then read from their bytes on both sides (the server writes a float8's text
with the shortest round-trip digits, the client parses it back), which about halves the
client's CPU per claimed row (28 columns: 4.3-4.9 -> 2.3 us, measured). jsonb's binary
form is a version byte (1) and the same text.

The server writes jsonb's text form without leading whitespace, byte-order mark or
anything after the value, in the UTF-8 its sessions use. So the value is decoded
straight from that text: ``json.loads`` on the bytes psycopg hands over would first
look for the encoding and then check for trailing text, which here is work for
nothing (it about doubles the cost of a job's args). Any other text is left to
``json.loads``, so what it reads and the errors it raises are the same."""

from __future__ import annotations

from typing import Any

from psycopg import DataError
from psycopg.abc import Buffer
from psycopg.types.json import JsonbBinaryLoader, JsonbLoader

from jobdef.backends.rows import json_value


class QuickJsonbLoader(JsonbLoader):
    """psycopg's jsonb loader, for the text form the server writes (see the module)."""

    def load(self, data: Buffer) -> Any:
        return json_value(str(data, "utf-8"))


class QuickJsonbBinaryLoader(JsonbBinaryLoader):
    """:class:`QuickJsonbLoader` for jsonb's binary form: the version byte, then the text."""

    def load(self, data: Buffer) -> Any:
        if data[:1] != b"\x01":
            raise DataError("unknown jsonb binary format: a version byte of 1 was expected")
        return json_value(str(data[1:], "utf-8"))
