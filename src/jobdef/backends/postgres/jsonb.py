"""The engine's reading of ``jsonb`` columns: a claim decodes the args of every job it
leases, so the decoding of a short JSON text is a good part of a claim's cost.

The server writes jsonb's text form without leading whitespace, byte-order mark or
anything after the value, in the UTF-8 its sessions use. So the value is decoded
straight from that text: ``json.loads`` on the bytes psycopg hands over would first
look for the encoding and then check for trailing text, which here is work for
nothing (it about doubles the cost of a job's args). Any other text is left to
``json.loads``, so what it reads and the errors it raises are the same."""

from __future__ import annotations

import json
from typing import Any

from psycopg.abc import Buffer
from psycopg.types.json import JsonbLoader

_decode = json.JSONDecoder().raw_decode


class QuickJsonbLoader(JsonbLoader):
    """psycopg's jsonb loader, for the text form the server writes (see the module)."""

    def load(self, data: Buffer) -> Any:
        text = str(data, "utf-8")
        try:
            value, end = _decode(text)
            if end == len(text):
                return value
        except json.JSONDecodeError:
            pass
        return json.loads(text)  # not the server's text: read as it is, or told why not
