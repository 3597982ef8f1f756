"""JSON from a user's file: what the json module makes of it, where a nesting too deep for it is a ValueError."""
from __future__ import annotations

import json


class JSONTooDeep(ValueError):
    """JSON nested deeper than Python's parser recurses."""


def json_value(text: str | bytes):
    """The value the JSON text holds; JSONDecodeError (a ValueError) for malformed text, JSONTooDeep for nesting
    the parser cannot follow (json raises RecursionError there)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise JSONTooDeep("JSON nested too deeply to read") from None
