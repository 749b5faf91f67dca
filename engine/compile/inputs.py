"""Run inputs from the command line or a file, typed by the Start block's defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from engine.compile.diagram import Diagram
from engine.errors import DiagramInvalid, UsageError
from engine.format.jsonout import plain
from engine.format.names import suggest
from engine.format.yamlfile import read_yaml_value

__all__ = ["fitted_inputs", "inputs_from_file", "parse_input_pairs", "typed_input"]

_TRUE = {"true", "yes", "on", "1", "sim", "si", "sì"}
_FALSE = {"false", "no", "off", "0", "não", "nao"}


def typed_input(name: str, text: str, default: Any) -> Any:
    """Convert `--input name=text` to the type of the input's default."""
    if isinstance(default, bool):
        lowered = text.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise UsageError(f"input '{name}' is true or false (its default is {default}), got {text!r}")
    if isinstance(default, int):
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"input '{name}' is a whole number (default {default}), got {text!r}") from None
    if isinstance(default, float):
        try:
            return float(text)
        except ValueError:
            raise UsageError(f"input '{name}' is a number (default {default}), got {text!r}") from None
    if isinstance(default, (list, dict)):
        try:
            value = read_yaml_value(text, f"--input {name}")
        except DiagramInvalid:
            value = None
        if not isinstance(value, type(default)):
            kind = "a list" if isinstance(default, list) else "a mapping"
            raise UsageError(f"input '{name}' is {kind}, written as JSON or YAML; got {text!r}")
        return value
    if default is None:
        try:
            return read_yaml_value(text, f"--input {name}")
        except DiagramInvalid:
            return text
    return text


def _known(diagram: Diagram, name: str) -> None:
    if name not in diagram.settings.inputs:
        known = list(diagram.settings.inputs)
        hint = suggest(name, known)
        raise UsageError(
            f"the diagram has no input '{name}'"
            + (f"; {hint}" if hint else f" (inputs: {', '.join(known) or 'none'})")
        )


def parse_input_pairs(diagram: Diagram, pairs: Iterable[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--input takes name=value, got {pair!r}")
        _known(diagram, name)
        values[name] = typed_input(name, text, diagram.settings.inputs[name])
    return values


def check_inputs(diagram: Diagram, values: Mapping[str, Any]) -> dict[str, Any]:
    for name in values:
        _known(diagram, name)
    return dict(values)


def inputs_from_file(diagram: Diagram, path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read inputs file {path}: {exc.strerror}") from None
    try:
        data = orjson.loads(text) if path.suffix == ".json" else read_yaml_value(text, str(path))
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"inputs file {path} is not valid JSON: {exc}") from None
    except DiagramInvalid as exc:
        raise UsageError(f"inputs file {path} is not valid YAML: {exc.problems[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"inputs file {path} must hold a mapping of input names to values")
    return check_inputs(diagram, data)


def fitted_inputs(known: Mapping[str, Any], values: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Values given as JSON (an API request's, a schedule's) typed by Start's defaults (`known`): text converted as
    `--input` converts it, any other value kept if it is of the default's JSON type. The typed values, and a
    (name, problem) for every name Start lacks and every value that does not fit."""
    problems: list[tuple[str, str]] = []
    typed: dict[str, Any] = {}
    for name, value in values.items():
        if name not in known:
            hint = suggest(name, list(known))
            problems.append((name, f"the robot has no input '{name}'"
                             + (f"; {hint}" if hint else f" (inputs: {', '.join(known) or 'none'})")))
            continue
        try:
            typed[name] = _fitted(name, value, known[name])
        except UsageError as exc:
            problems.append((name, str(exc)))
    return typed, problems


def _fitted(name: str, value: Any, default: Any) -> Any:
    """`value` if it is of the default's JSON type; text converted as `--input name=text` converts it; else
    UsageError saying what the input takes."""
    if isinstance(value, str) and not isinstance(default, str):
        return typed_input(name, value, default)
    if default is None:
        return value
    if isinstance(default, bool):
        fits = isinstance(value, bool)
    elif isinstance(default, int):
        fits = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        fits = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif isinstance(default, dict) and set(default) == {"csv"}:
        fits = isinstance(value, (list, dict))
    elif isinstance(default, (list, dict, str)):
        fits = isinstance(value, type(default))
    else:
        fits = True
    if not fits:
        raise UsageError(f"input '{name}' is {_kind(default)} (its default is {plain(default)!r}), got {plain(value)!r}")
    return value


def _kind(default: Any) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "a whole number"
    if isinstance(default, float):
        return "a number"
    if isinstance(default, str):
        return "text"
    if isinstance(default, dict) and set(default) == {"csv"}:
        return "a table (a list of rows)"
    return "a list" if isinstance(default, list) else "a mapping"
