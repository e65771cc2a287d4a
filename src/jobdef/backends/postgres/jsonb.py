"""The engine's reading of ``jsonb`` columns: a claim decodes the args of every job it
leases, so the decoding of a short JSON text is a good part of a claim's cost.

The server writes jsonb's text form without leading whitespace, byte-order mark or
anything after the value, in the UTF-8 its sessions use. So the value is decoded
straight from that text: ``json.loads`` on the bytes psycopg hands over would first
look for the encoding and then check for trailing text, which here is work for
nothing (it about doubles the cost of a job's args). Any other text is left to
``json.loads``, so what it reads and the errors it raises are the same."""

from __future__ import annotations

from typing import Any

from psycopg.abc import Buffer
from psycopg.types.json import JsonbLoader

from jobdef.backends.rows import json_value


class QuickJsonbLoader(JsonbLoader):
    """psycopg's jsonb loader, for the text form the server writes (see the module)."""

    def load(self, data: Buffer) -> Any:
        return json_value(str(data, "utf-8"))
