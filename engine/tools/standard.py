"""Tools shipped with diagrama (`standard: true`): a clock, safe arithmetic, allow-listed GET.

A registry includes them by name under `standard_tools:`; their handlers live here,
which is why these handlers (and nothing else of this module) are always allowed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["STANDARD_TOOLS", "calculator", "current_datetime", "http_get"]


def current_datetime(timezone: str = "UTC") -> dict[str, str]:
    """The current date and time in a time zone."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {timezone!r} (use e.g. Europe/Lisbon, Europe/Rome, UTC)") from exc
    now = datetime.now(zone)
    return {"datetime": now.isoformat(timespec="seconds"), "weekday": now.strftime("%A"), "timezone": timezone}


_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.USub: operator.neg, ast.UAdd: operator.pos,
}


# Every intermediate integer stays below Python's 4,300-digit limit on writing an int as
# text, so any result fits a tool row; an attack such as (((9**99)**99)**99)**99 is refused
# before it is computed (it would hold the GIL, and so the whole run, for minutes).
_MAX_DIGITS = 4000
_MAX_BITS = math.ceil(_MAX_DIGITS / math.log10(2))


def _too_large() -> ValueError:
    return ValueError(f"result too large (more than {_MAX_DIGITS:,} digits)")


def _check_size(op: ast.operator, left: float | int, right: float | int) -> None:
    """Refuse, before computing, an integer power or product past `_MAX_DIGITS` digits."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return  # float arithmetic is fast; it overflows to an error or to inf
    if isinstance(op, ast.Pow) and right > 0 and abs(left) > 1 and right * math.log2(abs(left)) > _MAX_BITS:
        raise _too_large()
    if isinstance(op, ast.Mult) and left.bit_length() + right.bit_length() > _MAX_BITS + 1:
        raise _too_large()


def _evaluate(node: ast.AST) -> float | int:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 100:
            raise ValueError("exponent too large")
        _check_size(node.op, left, right)
        return _bounded(_OPERATORS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))  # type: ignore[no-any-return]
    raise ValueError("only numbers, + - * / // % ** and parentheses are allowed")


def _bounded(value: float | int) -> float | int:
    """`value`, refused when an integer grew past the limit some other way (a long chain of sums)."""
    if isinstance(value, int) and value.bit_length() > _MAX_BITS:
        raise _too_large()
    return value


def calculator(expression: str) -> dict[str, Any]:
    """Evaluates arithmetic safely (parsed, never eval'd)."""
    if len(expression) > 500:
        raise ValueError("expression too long")
    try:
        tree = ast.parse(expression.replace(",", ".") if expression.count(",") == 1 and "." not in expression
                         else expression, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from exc
    try:
        return {"expression": expression, "result": _evaluate(tree)}
    except ZeroDivisionError as exc:
        raise ValueError("division by zero") from exc


def http_get(url: str, *, allowed_hosts: tuple[str, ...] = ()) -> dict[str, Any]:
    """GET a URL whose host the registry allows (`allowed_hosts`)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("only http(s) URLs are allowed")
    if parts.hostname not in allowed_hosts:
        raise ValueError(f"host {parts.hostname!r} is not in the registry's allowed_hosts")
    import httpx  # loaded when the tool runs: checking a diagram that lists it needs no HTTP client

    response = httpx.get(url, timeout=10, follow_redirects=False)
    return {"status": response.status_code, "body": response.text[:10_000]}


STANDARD_TOOLS: dict[str, dict[str, Any]] = {
    "current_datetime": {
        "function": "current_datetime", "handler": f"{__name__}:current_datetime", "standard": True,
        "group": "standard", "short_description": "Current date and time",
        "description": "Returns the current date, time and weekday in a time zone.",
        "examples": ["Que horas são?", "Che giorno è oggi?", "What time is it in Lisbon?"],
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA zone"}}},
    },
    "calculator": {
        "function": "calculator", "handler": f"{__name__}:calculator", "standard": True, "group": "standard",
        "short_description": "Arithmetic",
        "description": "Evaluates an arithmetic expression such as (12.5 * 3) / 4.",
        "examples": ["Quanto é 15% de 80?", "Quanto fa 12 per 7?", "What is 19.99 * 3?"],
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
        "strict": True,
    },
    "http_get": {
        "function": "http_get", "handler": f"{__name__}:http_get", "standard": True, "group": "standard",
        "short_description": "Fetch a web page",
        "description": "Fetches a URL from an allowed host and returns its status and text.",
        "examples": ["Abre a página de estado do serviço", "Scarica la pagina", "Fetch the status page"],
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
        "strict": True,
    },
}
