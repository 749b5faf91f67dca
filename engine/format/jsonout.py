"""Run values as JSON text, and as plain JSON data: what the CLI prints, the run store keeps and scenarios compare.

One orjson call with `json_default` (tables become row lists, models dicts, sets lists); keys
that are not strings are written as strings. Reading JSON back is not done here.
"""

from __future__ import annotations

from typing import Any

import orjson

from engine.format.values import json_default

__all__ = ["dumps_plain", "plain"]


def dumps_plain(value: Any, *, indent: bool = False, sort_keys: bool = False) -> str:
    """`value` as JSON text: one line, or indented by two spaces; keys in their order, or sorted."""
    option = orjson.OPT_NON_STR_KEYS
    if indent:
        option |= orjson.OPT_INDENT_2
    if sort_keys:
        option |= orjson.OPT_SORT_KEYS
    return orjson.dumps(value, default=json_default, option=option).decode()


def plain(value: Any, *, sort_keys: bool = False) -> Any:
    """`value` as the dicts, lists, strings, numbers, booleans and None its JSON text reads back as."""
    return orjson.loads(dumps_plain(value, sort_keys=sort_keys))
