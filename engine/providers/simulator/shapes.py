"""A made-up value that matches a JSON Schema: the simulator's answer to a request with a response schema.

Deterministic for one random generator (the simulator seeds it per request). Types, `enum`,
`const`, local `$ref`s, `anyOf` / `oneOf` / `allOf`, ranges and `multipleOf`, lengths, item and
property counts, `uniqueItems`, the common string formats and `pattern` (a string generated from
the regular expression) are followed; each value made is validated against the schema, and a
few more are tried when one misses. A schema no value could match (or one this cannot satisfy:
`not`, `if`/`then`) gives its last try, which the request block then reports as `invalid_output`.
"""

from __future__ import annotations

import importlib
import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema_rs
import orjson

__all__ = ["conforming"]

_TRIES = 8
_DEPTH = 12
_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima")
_sre: Any = importlib.import_module("re._parser")  # the stdlib's regex parser: what a pattern matches, as a tree


class _Unmakeable(Exception):
    """No value can be made for this (sub)schema: `false`, or a `$ref` that goes too deep."""


def _refuse_fetch(uri: str) -> Any:
    raise ValueError(f"{uri} is outside the schema")


def conforming(schema: Mapping[str, Any], rng: random.Random) -> Any:
    """A value matching `schema`, made with `rng`; after a few misses, the last value made."""
    checked = {key: value for key, value in schema.items() if key != "$schema"}
    try:
        validator = jsonschema_rs.validator_for(checked, validate_formats=True, retriever=_refuse_fetch)
    except (jsonschema_rs.ValidationError, ValueError):
        validator = None
    made: Any = None
    for _ in range(_TRIES):
        try:
            made = _Maker(checked, rng).make(checked, 0)
        except _Unmakeable:
            continue
        if validator is None or validator.is_valid(made):
            return made
    return made


class _Maker:
    def __init__(self, root: Mapping[str, Any], rng: random.Random) -> None:
        self.root = root
        self.rng = rng

    def make(self, schema: Any, depth: int) -> Any:
        if schema is True or schema == {}:
            return self._text({})
        if not isinstance(schema, Mapping) or depth > _DEPTH:
            raise _Unmakeable
        ref = schema.get("$ref")
        if isinstance(ref, str):
            rest = {key: value for key, value in schema.items() if key != "$ref"}
            return self.make({**self._resolve(ref), **rest}, depth + 1)
        if "const" in schema:
            return orjson.loads(orjson.dumps(schema["const"]))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return orjson.loads(orjson.dumps(self.rng.choice(schema["enum"])))
        if isinstance(schema.get("allOf"), list):
            return self.make(self._merged(schema), depth + 1)
        members = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(members, list) and members:
            rest = {key: value for key, value in schema.items() if key not in ("anyOf", "oneOf")}
            order = list(members)
            self.rng.shuffle(order)
            for member in order:
                try:
                    return self.make({**rest, **member} if isinstance(member, Mapping) else member, depth + 1)
                except _Unmakeable:
                    continue
            raise _Unmakeable
        kind = self._type(schema)
        if kind == "null":
            return None
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind in ("integer", "number"):
            return self._number(schema, kind)
        if kind == "array":
            return self._array(schema, depth)
        if kind == "object":
            return self._object(schema, depth)
        return self._text(schema)

    def _resolve(self, ref: str) -> Mapping[str, Any]:
        target: Any = self.root
        for step in ref.removeprefix("#").strip("/").split("/") if ref not in ("#", "#/") else []:
            step = step.replace("~1", "/").replace("~0", "~")
            target = target.get(step) if isinstance(target, Mapping) else None
        if not isinstance(target, Mapping):
            raise _Unmakeable
        return target

    def _merged(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        merged = {key: value for key, value in schema.items() if key != "allOf"}
        for member in schema["allOf"]:
            if not isinstance(member, Mapping):
                continue
            member = self._resolve(member["$ref"]) if isinstance(member.get("$ref"), str) else member
            for key, value in member.items():
                if key == "properties" and isinstance(value, Mapping):
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required" and isinstance(value, list):
                    merged["required"] = [*merged.get("required", []), *value]
                else:
                    merged.setdefault(key, value)
        return merged

    def _type(self, schema: Mapping[str, Any]) -> str:
        kind = schema.get("type")
        if isinstance(kind, list):
            real = [k for k in kind if k != "null"]
            return self.rng.choice(real) if real else "null"
        if isinstance(kind, str):
            return kind
        if any(key in schema for key in ("properties", "required", "additionalProperties", "minProperties")):
            return "object"
        if any(key in schema for key in ("items", "prefixItems", "minItems", "maxItems")):
            return "array"
        if any(key in schema for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
            return "number"
        return "string"

    def _number(self, schema: Mapping[str, Any], kind: str) -> int | float:
        low, high = schema.get("minimum"), schema.get("maximum")
        step = 1 if kind == "integer" else 0.01
        if schema.get("exclusiveMinimum") is not None:
            low = schema["exclusiveMinimum"] + step
        if schema.get("exclusiveMaximum") is not None:
            high = schema["exclusiveMaximum"] - step
        low = low if low is not None else (0 if high is None or high >= 0 else high - 100)
        high = high if high is not None else low + 100
        multiple = schema.get("multipleOf")
        if isinstance(multiple, (int, float)) and multiple > 0:
            first, last = -(-low // multiple), high // multiple
            value = multiple * self.rng.randint(int(first), int(max(first, last)))
            return int(value) if kind == "integer" else value
        if kind == "integer":
            return self.rng.randint(int(-(-low // 1)), int(max(-(-low // 1), high // 1)))
        return round(self.rng.uniform(low, high), 2)

    def _array(self, schema: Mapping[str, Any], depth: int) -> list[Any]:
        prefix = [self.make(item, depth + 1) for item in schema.get("prefixItems") or []]
        items = schema.get("items", {})
        least = max(int(schema.get("minItems", 0)), len(prefix))
        most = int(schema.get("maxItems", max(least, 3))) if depth <= _DEPTH // 2 else least  # deep: no more than asked
        wanted = self.rng.randint(least, max(least, min(most, max(least, 1) + 2)))
        made = list(prefix)
        tries = 0
        while len(made) < wanted and items is not False and tries < wanted * 10:
            tries += 1
            try:
                item = self.make(items, depth + 1)
            except _Unmakeable:
                if len(made) >= least:
                    break
                raise
            if schema.get("uniqueItems") and item in made:
                continue
            made.append(item)
        return made

    def _object(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        made: dict[str, Any] = {}
        for name, member in properties.items():
            try:
                made[name] = self.make(member, depth + 1)
            except _Unmakeable:
                if name in required:
                    raise
        for name in sorted(required - set(made)):  # required but not described: anything will do
            made[name] = self._text({})
        extra = schema.get("additionalProperties", True)
        number = 1
        while len(made) < int(schema.get("minProperties", 0)) and extra is not False:
            made[f"extra_{number}"] = self.make(extra, depth + 1)
            number += 1
        return made

    def _text(self, schema: Mapping[str, Any]) -> str:
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                return _Regex(self.rng).text(_sre.parse(pattern))
            except Exception:  # a pattern the stdlib parser reads otherwise (ECMA-262 syntax): plain text instead
                pass
        text = _FORMATS.get(str(schema.get("format")), _words)(self.rng)
        least, most = int(schema.get("minLength", 0)), schema.get("maxLength")
        while len(text) < least:
            text += " " + self.rng.choice(_WORDS)
        return text[: int(most)] if most is not None else text


def _words(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))


def _date(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _time(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"


_FORMATS: dict[str, Callable[[random.Random], str]] = {
    "date-time": lambda rng: f"{_date(rng)}T{_time(rng)}",
    "date": _date,
    "time": _time,
    "duration": lambda rng: f"P{rng.randint(1, 30)}D",
    "email": lambda rng: f"{rng.choice(_WORDS)}@example.com",
    "idn-email": lambda rng: f"{rng.choice(_WORDS)}@example.com",
    "hostname": lambda rng: f"{rng.choice(_WORDS)}.example.com",
    "idn-hostname": lambda rng: f"{rng.choice(_WORDS)}.example.com",
    "uri": lambda rng: f"https://example.com/{rng.choice(_WORDS)}",
    "iri": lambda rng: f"https://example.com/{rng.choice(_WORDS)}",
    "uri-reference": lambda rng: f"/{rng.choice(_WORDS)}",
    "uuid": lambda rng: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
    "ipv4": lambda rng: f"192.0.2.{rng.randint(1, 254)}",
    "ipv6": lambda rng: f"2001:db8::{rng.randint(1, 65534):x}",
    "json-pointer": lambda rng: f"/{rng.choice(_WORDS)}",
    "regex": lambda rng: "^[a-z]+$",
}


class _Regex:
    """A string the parsed pattern matches: each repeat a few times, each class one of its members."""

    _SOME = 3  # how many times an open-ended repeat (`+`, `*`, `{2,}`) goes

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def text(self, tree: Any) -> str:
        return "".join(self._node(op, arg) for op, arg in tree)

    def _node(self, op: Any, arg: Any) -> str:
        name = str(op)
        if name == "LITERAL":
            return chr(arg)
        if name == "NOT_LITERAL":
            return "a" if chr(arg) != "a" else "b"
        if name == "ANY":
            return self.rng.choice("abcxyz")
        if name == "IN":
            return self._member(arg)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, tree = arg
            count = self.rng.randint(low, max(low, min(high, low + self._SOME)))
            return "".join(self.text(tree) for _ in range(count))
        if name == "SUBPATTERN":
            return self.text(arg[-1])
        if name == "ATOMIC_GROUP":
            return self.text(arg)
        if name == "BRANCH":
            return self.text(self.rng.choice(arg[1]))
        if name in ("AT", "ASSERT", "ASSERT_NOT"):
            return ""
        if name == "CATEGORY":
            return self._category(str(arg))
        raise ValueError(f"cannot make text for {name}")

    def _category(self, category: str) -> str:
        if category == "CATEGORY_DIGIT":
            return self.rng.choice("0123456789")
        if category == "CATEGORY_SPACE":
            return " "
        if category == "CATEGORY_WORD":
            return self.rng.choice("abcdefghijklmnopqrstuvwxyz")
        return "-"  # a negated category (\D, \S, \W): a character in none of them

    def _member(self, items: list[tuple[Any, Any]]) -> str:
        if items and str(items[0][0]) == "NEGATE":  # any character none of the others is
            return next(c for c in "xyzqXYZQ019-_ " if not any(self._holds(item, c) for item in items[1:]))
        op, arg = self.rng.choice(items)
        name = str(op)
        if name == "RANGE":
            return chr(self.rng.randint(arg[0], arg[1]))
        if name == "LITERAL":
            return chr(arg)
        if name == "CATEGORY":
            return self._category(str(arg))
        raise ValueError(f"cannot make text for {name}")

    @staticmethod
    def _holds(item: tuple[Any, Any], char: str) -> bool:
        op, arg = item
        name = str(op)
        if name == "LITERAL":
            return chr(arg) == char
        if name == "RANGE":
            return bool(arg[0] <= ord(char) <= arg[1])
        if name == "CATEGORY":
            return {"CATEGORY_DIGIT": char.isdigit(), "CATEGORY_SPACE": char.isspace(),
                    "CATEGORY_WORD": char.isalnum() or char == "_"}.get(str(arg), False)
        return False
