"""How large what a template builds is, measured before the work where it can be and after it always.

The limits (MAX_TEXT, MAX_ITEMS, MAX_INT_BITS), the measure of a value (`weight`), the checks
the sandbox makes on operators and method calls, and each filter wrapped with its own check
(`bounded_filter`). Exceeding a limit is a TemplateError of type `template_too_large`.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jinja2.runtime import Undefined

from engine.errors import TemplateError
from engine.format.tables import DataTable

__all__ = ["MAX_INT_BITS", "MAX_ITEMS", "MAX_TEXT", "bounded_filter", "bounded_items", "check_product", "check_sum",
           "checked", "format_size", "method_size", "percent_size", "too_large", "weight"]

MAX_TEXT = 10_000_000
"""Characters in any text a template builds, and about how long any value it builds is as text."""
MAX_ITEMS = 1_000_000
"""Items in any list a template builds (each item costs memory of its own, beyond its text)."""
MAX_INT_BITS = 65_536
"""Bits of any integer a template computes (about 19,700 digits; Python prints at most 4,300)."""
_MAX_JSON_TEXT = 1_000_000
"""Characters `from_json` reads: parsed JSON takes many times its text in memory."""


def too_large(what: str, size: int, limit: int = MAX_TEXT, unit: str = "characters", by: str = "") -> TemplateError:
    source = f" ({by})" if by else ""
    return TemplateError(f"the template would build {what} of about {size:,} {unit}{source}; the limit is {limit:,}",
                         type="template_too_large")


def weight(value: Any, budget: int = MAX_TEXT) -> int:
    """About how many characters `value` takes as text (JSON or repr); counting stops once past `budget`.

    Iterative, so deep values cannot exhaust the stack, and cheap: it visits each item once, and the
    text in lists and table rows (most of any value) without a step of its own.
    """
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            total += len(item) + 2
        elif kind is list or kind is tuple or isinstance(item, list | tuple | set | frozenset):
            total += 2 + 2 * len(item)
            total = _texts_of(item, stack, total, budget)
        elif isinstance(item, dict):
            total += 2 + 4 * len(item)
            total = _texts_of(item.keys(), stack, total, budget)
            total = _texts_of(item.values(), stack, total, budget)
        elif isinstance(item, DataTable):
            total += 2 + 4 * len(item.columns) * (len(item.rows) + 1)
            for row in item.rows:
                total = _texts_of(row, stack, total, budget)
                if total > budget:
                    break
        elif isinstance(item, str):
            total += len(item) + 2
        elif item is None or isinstance(item, bool | float):
            total += 8
        elif isinstance(item, int):
            total += item.bit_length() * 3 // 10 + 2  # decimal digits: bits × log10(2)
        elif isinstance(item, bytes | bytearray):
            total += len(item) + 3
        else:  # functions, generators, undefined: their text is short
            total += 16
        if total > budget:
            return total
    return total


def _texts_of(items: Iterable[Any], stack: list[Any], total: int, budget: int) -> int:
    """`total` plus the length of the strings among `items`; the other items go on `stack` to be weighed."""
    if total > budget:
        return total
    for item in items:
        if type(item) is str:
            total += len(item) + 2
        else:
            stack.append(item)
    return total


def checked(value: Any, what: str = "") -> Any:
    """`value`, or template_too_large when it is past the limits."""
    kind = type(value)
    if kind is bool or kind is float or value is None:  # every template's output passes here: the cheap cases first
        return value
    if isinstance(value, str):  # the common case, measured exactly
        if len(value) > MAX_TEXT:
            raise too_large("a text", len(value), by=what)
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise too_large("a number", value.bit_length(), MAX_INT_BITS, "bits", by=what)
        return value
    if isinstance(value, list | tuple | dict | set | frozenset) and len(value) > MAX_ITEMS:
        raise too_large("a list", len(value), MAX_ITEMS, "items", by=what)
    size = weight(value)
    if size > MAX_TEXT:
        raise too_large("a value", size, by=what)
    return value


def bounded_items(value: Any, what: str) -> Any:
    """An iterable a filter will store, read here first and counted as it is read (a lazy `map` may yield a lot).

    What was already built is returned as it is; what was read comes back as a list.
    """
    if isinstance(value, str | bytes):
        if len(value) > MAX_ITEMS:
            raise too_large("a list of characters", len(value), MAX_ITEMS, "items", by=what)
        return value
    if isinstance(value, list | tuple | dict | set | frozenset | DataTable | Undefined) or not isinstance(value, Iterable):
        return value  # already built (and measured); Undefined fails on its own terms
    items: list[Any] = []
    total = 0
    for item in value:
        items.append(item)
        total += weight(item, MAX_TEXT - total) + 2
        if len(items) > MAX_ITEMS:
            raise too_large("a list", len(items), MAX_ITEMS, "items", by=what)
        if total > MAX_TEXT:
            raise too_large("a list", total, by=what)
    return items


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _replace_size(text: str, old: Any, new: Any, count: Any) -> int:
    if not (isinstance(old, str) and isinstance(new, str)) or len(new) <= len(old):
        return len(text)
    found = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    return len(text) + found * (len(new) - len(old))


# printf-style conversions: flags, width, precision (either may be `*`, taken from the arguments).
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[diouxXeEfFgGcrsa%]")
_NUMBER = re.compile(r"\d+")


def _arguments(args: Any) -> list[Any]:
    if isinstance(args, tuple):
        return list(args)
    if isinstance(args, Mapping):
        return list(args.values())
    return [args]


def percent_size(fmt: str, args: Any) -> int:
    """An upper bound for the length of `fmt % args`: the text, each argument as text, each width and precision."""
    values = _arguments(args)
    size = len(fmt) + weight(values)
    for match in _PERCENT.finditer(fmt):
        for part in match.groups():
            if part == "*":
                size += sum(abs(_int(value)) for value in values)
            elif part:
                size += int(part)
    return size


def format_size(fmt: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """An upper bound for the length of `fmt.format(*args, **kwargs)`, the same way."""
    values = [*args, *kwargs.values()]
    size = len(fmt) + weight(values)
    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return size  # format() itself will refuse it
    for _, name, spec, _ in fields:
        if name is None or not spec:
            continue
        if "{" in spec:  # a width taken from the arguments
            size += sum(abs(_int(value)) for value in values)
        size += sum(int(number) for number in _NUMBER.findall(spec))
    return size


def _width_size(text: Any, width: Any) -> int:
    return max(len(text) if isinstance(text, str) else 0, _int(width))


# -- the size each risky str method would build, before it builds it --------------------------

def method_size(text: str | bytes, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[int, int]:
    """(characters, items) the call `text.name(*args)` may build; (0, 0) for methods that cannot grow."""
    if name in ("ljust", "rjust", "center", "zfill") and args:
        return _int(args[0]), 0
    if name == "expandtabs":
        size = _int(args[0] if args else kwargs.get("tabsize", 8))
        tab = "\t" if isinstance(text, str) else b"\t"
        return len(text) + text.count(tab) * size, 0  # type: ignore[arg-type]  # tab matches text's type
    if name == "replace" and isinstance(text, str) and len(args) >= 2:
        return _replace_size(text, args[0], args[1], args[2] if len(args) > 2 else kwargs.get("count", -1)), 0
    if name in ("split", "rsplit", "splitlines"):
        return 0, len(text) // 2 + 1
    if name == "join" and args and isinstance(args[0], str | bytes | list | tuple):
        return len(text) * len(args[0]) + weight(args[0]), 0
    if name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        return len(text) * max(longest, 1), 0
    return 0, 0


# -- filters ---------------------------------------------------------------------------------

def _pre_replace(s: Any, old: Any = None, new: Any = None, count: Any = None) -> None:
    if isinstance(s, str) and (size := _replace_size(s, old, new, count)) > MAX_TEXT:
        raise too_large("a text", size, by="replace")


def _pre_join(value: Any, d: Any = "", attribute: Any = None) -> None:
    size = weight(value) + len(d) * len(value) if isinstance(value, list | tuple) and isinstance(d, str) else 0
    if size > MAX_TEXT:
        raise too_large("a text", size, by="join")


def _pre_escape(s: Any, *_: Any, **__: Any) -> None:
    if isinstance(s, str):
        # '&', '<', '>', '"' and "'" each become an entity of up to five characters.
        grown = sum(s.count(mark) for mark in "&<>\"'") * 4
        if (size := len(s) + grown) > MAX_TEXT:
            raise too_large("a text", size, by="escape")


def _pre_center(value: Any, width: Any = 80) -> None:
    if (size := _width_size(value, width)) > MAX_TEXT:
        raise too_large("a text", size, by="center")


def _pre_indent(s: Any, width: Any = 4, *_: Any, **__: Any) -> None:
    if isinstance(s, str):
        pad = len(width) if isinstance(width, str) else _int(width)
        if (size := len(s) + (s.count("\n") + 1) * pad) > MAX_TEXT:
            raise too_large("a text", size, by="indent")


def _pre_wordwrap(s: Any, width: Any = 79, break_long_words: Any = True, wrapstring: Any = None, *_: Any,
                  **kwargs: Any) -> None:
    wrapstring = kwargs.get("wrapstring", wrapstring)
    if isinstance(s, str):
        if len(s) > MAX_ITEMS:  # textwrap splits the text into a list of its words first
            raise too_large("a list of words", len(s), MAX_ITEMS, "items", by="wordwrap")
        lines = len(s) // max(_int(width), 1) + s.count("\n") + 1
        if (size := len(s) + lines * len(wrapstring if isinstance(wrapstring, str) else "\n")) > MAX_TEXT:
            raise too_large("a text", size, by="wordwrap")


def _pre_format(value: Any, *args: Any, **kwargs: Any) -> None:
    if isinstance(value, str) and (size := percent_size(value, kwargs or args)) > MAX_TEXT:
        raise too_large("a text", size, by="format")


def _pre_batch(value: Any, linecount: Any = 1, fill_with: Any = None) -> None:
    if fill_with is not None and _int(linecount) > MAX_ITEMS:
        raise too_large("a list", _int(linecount), MAX_ITEMS, "items", by="batch")


def _pre_slice(value: Any, slices: Any = 1, fill_with: Any = None) -> None:
    if _int(slices) > MAX_ITEMS:
        raise too_large("a list", _int(slices), MAX_ITEMS, "items", by="slice")


def _pre_serialize(value: Any, *_: Any, **__: Any) -> None:
    if (size := weight(value)) > MAX_TEXT:
        raise too_large("a text", size, by="serializing")


def _pre_words(s: Any, *_: Any, **__: Any) -> None:
    if isinstance(s, str) and len(s) > 2 * MAX_ITEMS:
        raise too_large("a list of words", len(s) // 2, MAX_ITEMS, "items", by="wordcount")


def _pre_json(text: Any, *_: Any, **__: Any) -> None:
    if isinstance(text, str | bytes) and len(text) > _MAX_JSON_TEXT:
        raise too_large("a value", len(text), _MAX_JSON_TEXT, "characters of JSON", by="from_json")


_PRECHECKS: dict[str, Callable[..., None]] = {
    "replace": _pre_replace,
    "join": _pre_join,
    "escape": _pre_escape,
    "e": _pre_escape,
    "forceescape": _pre_escape,
    "center": _pre_center,
    "indent": _pre_indent,
    "wordwrap": _pre_wordwrap,
    "format": _pre_format,
    "batch": _pre_batch,
    "slice": _pre_slice,
    "tojson": _pre_serialize,
    "to_json": _pre_serialize,
    "pprint": _pre_serialize,
    "string": _pre_serialize,
    "urlencode": _pre_serialize,
    "xmlattr": _pre_serialize,
    "wordcount": _pre_words,
    "from_json": _pre_json,
}
# Filters that store everything their first argument yields: it is read through bounded_items first.
_STORING = frozenset({"list", "join", "sort", "unique", "reverse", "sum", "batch", "slice", "groupby"})


def bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` with its size checked: its arguments before (where there is a check), its result after."""
    skip = 1 if getattr(function, "jinja_pass_arg", None) is not None else 0  # context, eval context or environment
    check = _PRECHECKS.get(name)
    storing = name in _STORING

    @functools.wraps(function)  # keeps jinja_pass_arg, so jinja passes the same first argument
    def bounded(*args: Any, **kwargs: Any) -> Any:
        if storing and len(args) > skip:
            items = bounded_items(args[skip], name)
            if name == "reverse" and items is not args[skip]:
                items = iter(items)  # as jinja reverses what it cannot reverse in place: into a new list
            args = (*args[:skip], items, *args[skip + 1:])
        if check is not None:
            check(*args[skip:], **kwargs)
        return checked(function(*args, **kwargs), name)

    return bounded


def check_product(left: Any, right: Any) -> None:
    if isinstance(left, int) and isinstance(right, int):
        if (bits := left.bit_length() + right.bit_length()) > MAX_INT_BITS:
            raise too_large("a number", bits, MAX_INT_BITS, "bits")
        return
    sequence, times = (left, right) if isinstance(right, int) else (right, left)
    if not isinstance(times, int) or times <= 1 or not isinstance(sequence, str | bytes | list | tuple):
        return
    if isinstance(sequence, list | tuple) and len(sequence) * times > MAX_ITEMS:
        raise too_large("a list", len(sequence) * times, MAX_ITEMS, "items")
    one = len(sequence) if isinstance(sequence, str | bytes) else weight(sequence, MAX_TEXT // times + 1)
    if one * times > MAX_TEXT:
        raise too_large("a repeated value", one * times)


def check_sum(left: Any, right: Any) -> None:
    if type(left) is int and type(right) is int:  # a counter's `i + 1`: one bit more at most, checked at output
        return
    if isinstance(left, str) and isinstance(right, str):
        if (size := len(left) + len(right)) > MAX_TEXT:
            raise too_large("a text", size)
        return
    # Joined lists share their items: the new memory is one reference per item. How large the
    # result is as text is measured where it is output (finalize) or turned into text.
    if isinstance(left, list | tuple | DataTable) and isinstance(right, list | tuple | DataTable) \
            and (count := len(left) + len(right)) > MAX_ITEMS:
        raise too_large("a list", count, MAX_ITEMS, "items")
