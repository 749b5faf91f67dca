"""Run values as JSON text, and as plain JSON data: what the CLI prints, the run store keeps and scenarios compare.

One `values.dumps` call (orjson, with a fallback for what it refuses) (tables become row lists, models dicts, sets lists); keys
that are not strings are written as strings. Reading JSON back is not done here.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from engine.format.values import dumps

__all__ = ["dumps_plain", "plain"]


def dumps_plain(value: Any, *, indent: bool = False, sort_keys: bool = False) -> str:
    """`value` as JSON text: one line, or indented by two spaces; keys in their order, or sorted."""
    option = orjson.OPT_NON_STR_KEYS
    if indent:
        option |= orjson.OPT_INDENT_2
    if sort_keys:
        option |= orjson.OPT_SORT_KEYS
    return dumps(value, option=option).decode()


def plain(value: Any, *, sort_keys: bool = False) -> Any:
    """`value` as the dicts, lists, strings, numbers, booleans and None its JSON text reads back as."""
    text = dumps_plain(value, sort_keys=sort_keys)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # integers past 64 bits (`2 ** 70`): the stdlib reads them exactly
        return json.loads(text)
