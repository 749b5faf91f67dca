"""The YAML dialect of every file diagrama reads: YAML 1.2's core schema, plus `<<` merge keys.

A plain (unquoted) scalar is null, a bool, an int, a float or text exactly as the YAML 1.2 spec's
core schema says (§10.3.2): `yes`, `on` and `y` are text, `0o17` is 15, `012` is 12, `1:30` is text.
JSON Schema editors, the npm `yaml` package and ruamel read files this way. YAML 1.1 (PyYAML's
default) reads some of those scalars otherwise; `ambiguity` says which and how, so that `validate`
can warn before a file written for YAML 1.1 runs differently. Keys are not resolved at all: a key is
the text written (`on:`, `1:`). Timestamps have no type in the core schema: dates stay text.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

import yaml

__all__ = [
    "AMBIGUOUS",
    "BOOL_TAG",
    "FLOAT_TAG",
    "IMPLICIT_STARTS",
    "INT_TAG",
    "MERGE_TAG",
    "NULL_TAG",
    "STR_TAG",
    "Ambiguity",
    "ambiguity",
    "core_value",
    "number_text",
    "plain_tag",
    "plain_value",
    "reads_as_text",
]

_CORE = "tag:yaml.org,2002:"
STR_TAG = _CORE + "str"
INT_TAG = _CORE + "int"
FLOAT_TAG = _CORE + "float"
BOOL_TAG = _CORE + "bool"
NULL_TAG = _CORE + "null"
MERGE_TAG = _CORE + "merge"
AMBIGUOUS = "tag:diagrama,2026:ambiguous:"
"""Prefix of the tag `plain_tag` gives a plain scalar that YAML 1.1 reads otherwise, followed by its core tag: the
reader warns about it, then builds the core value."""

# The core schema, in the spec's order (§10.3.2); the first that matches the whole scalar wins.
_CORE_FORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (NULL_TAG, re.compile(r"null|Null|NULL|~|")),
    (BOOL_TAG, re.compile(r"true|True|TRUE|false|False|FALSE")),
    (INT_TAG, re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")),
    (FLOAT_TAG, re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                           r"|[-+]?(?:\.inf|\.Inf|\.INF)|\.nan|\.NaN|\.NAN")),
)
IMPLICIT_STARTS = frozenset("0123456789+-.~nNtTfFyYoO<=")
"""Every first character of a plain scalar that the core schema or YAML 1.1 may read as other than text (or as a
merge key); a scalar beginning with any other character is text in both, which is most of a diagram."""

# YAML 1.1 as its spec defines it: PyYAML's resolvers, plus the one-letter booleans PyYAML leaves out.
_YAML11 = yaml.resolver.Resolver()
_YAML11_CONSTRUCT = yaml.constructor.SafeConstructor()
_ONE_LETTER_BOOLS = {"y": True, "Y": True, "n": False, "N": False}


def _core_tag(value: str) -> str:
    for tag, form in _CORE_FORMS:
        if form.fullmatch(value):
            return tag
    return MERGE_TAG if value == "<<" else STR_TAG


def core_value(tag: str, value: str) -> Any:
    """The value of a scalar resolved (or explicitly tagged) as `tag` under the core schema; ValueError when `value`
    is not of that type's core form (`!!bool yes`), or is an integer past Python's digit limit."""
    if tag in (STR_TAG, MERGE_TAG):  # `<<` is text where it is not a key
        return value
    if _core_tag(value) != tag and not (tag == FLOAT_TAG and _core_tag(value) == INT_TAG):
        raise ValueError(f"'{value}' is not a YAML 1.2 {tag.rsplit(':', 1)[-1]}")
    if tag == NULL_TAG:
        return None
    if tag == BOOL_TAG:
        return value[0] in "tT"
    if tag == INT_TAG:
        if value.startswith("0o"):
            return int(value[2:], 8)
        if value.startswith("0x"):
            return int(value[2:], 16)
        return int(value, 10)  # "012" is 12, "+7" is 7
    lowered = value.lower()
    if lowered.endswith(".inf"):
        return -math.inf if value.startswith("-") else math.inf
    if lowered == ".nan":
        return math.nan
    return float(value)


@lru_cache(maxsize=8192)
def plain_tag(value: str) -> str:
    """A plain scalar's tag under the core schema, behind the AMBIGUOUS prefix where YAML 1.1 reads it otherwise."""
    tag = _core_tag(value)
    theirs = _yaml11_reading(value)
    if tag == MERGE_TAG or (tag == STR_TAG and theirs is None):
        return tag  # text in both (or the merge key both take)
    try:
        ours = core_value(tag, value)
    except ValueError:
        return tag  # the reader reports the number it cannot build
    return tag if _same_reading(ours, theirs) else AMBIGUOUS + tag


def plain_value(value: str) -> Any:
    """What a plain scalar reads as (ValueError for an integer past Python's digit limit)."""
    tag = plain_tag(value)
    return core_value(tag[len(AMBIGUOUS):] if tag.startswith(AMBIGUOUS) else tag, value)


def reads_as_text(value: str) -> bool:
    """Whether `value` written plain reads back as that text, under the core schema and YAML 1.1 alike (a date
    too: YAML 1.1 reads one as a timestamp, which diagrama never did, but other tools would)."""
    return plain_tag(value) == STR_TAG and _YAML11.resolve(yaml.ScalarNode, value, (True, False)) == STR_TAG


class _Unset:
    """YAML 1.1's reading where it has no JSON value: its `=` (the 'value' key type)."""


_VALUE_KEY = _Unset()


@lru_cache(maxsize=8192)
def _yaml11_reading(value: str) -> tuple[Any] | None:
    """What YAML 1.1 reads a plain scalar as (in a 1-tuple), or None where it reads text, or a date (which
    diagrama always kept as its text)."""
    if value in _ONE_LETTER_BOOLS:
        return (_ONE_LETTER_BOOLS[value],)
    tag = _YAML11.resolve(yaml.ScalarNode, value, (True, False))
    if tag in (STR_TAG, _CORE + "timestamp", MERGE_TAG):
        return None
    if tag == _CORE + "value":
        return (_VALUE_KEY,)
    try:
        return (_YAML11_CONSTRUCT.yaml_constructors[tag](_YAML11_CONSTRUCT, yaml.ScalarNode(tag, value)),)
    except (ValueError, KeyError):
        return None


def _same_reading(ours: Any, theirs: tuple[Any] | None) -> bool:
    if isinstance(ours, str) or theirs is None:
        return isinstance(ours, str) and theirs is None
    other = theirs[0]
    if type(ours) is not type(other):
        return False
    if isinstance(ours, float) and math.isnan(ours):
        return math.isnan(other)
    return bool(ours == other)


def value_of(reading: tuple[Any] | None) -> Any:
    return reading[0] if reading is not None else _TEXT


_TEXT = object()


class Ambiguity:
    """How the core schema and YAML 1.1 read one plain scalar, in words: the warning and its fix."""

    __slots__ = ("hint", "message")

    def __init__(self, message: str, hint: str) -> None:
        self.message = message
        self.hint = hint


def _described(value: Any, text: str) -> str:
    if value is _TEXT:
        return f"the text '{text}'"
    if value is _VALUE_KEY:
        return "its special 'value' key"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return f"the number {number_text(value)}"


def number_text(value: int | float) -> str:
    """A number written so that the core schema and YAML 1.1 both read it back as itself (1.1 wants a dot and a
    signed exponent in a float: `1.0e+20`, not `1e20`)."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        if exponent[0] not in "+-":
            exponent = "+" + exponent
        return f"{mantissa}e{exponent}"
    return text if "." in text else text + ".0"


def ambiguity(text: str) -> Ambiguity | None:
    """Why a plain scalar `text` means something else to YAML 1.1, with the fix; None where both read it alike."""
    tag = plain_tag(text)
    if not tag.startswith(AMBIGUOUS):
        return None
    ours = core_value(tag[len(AMBIGUOUS):], text)
    ours_shown = _TEXT if isinstance(ours, str) else ours
    theirs = value_of(_yaml11_reading(text))
    message = f"`{text}` is {_described(ours_shown, text)} here; YAML 1.1 reads it as {_described(theirs, text)}"
    if isinstance(ours, str) and isinstance(theirs, bool):
        hint = f'write `{"true" if theirs else "false"}`, or quote it: "{text}"'
    elif isinstance(ours, str):
        hint = f'quote it: "{text}"' + (f", or write {number_text(theirs)}" if isinstance(theirs, int | float) else "")
    else:
        hint = f'write {number_text(ours)}, or quote it: "{text}"'
    return Ambiguity(message, hint)
