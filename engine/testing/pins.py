"""Pinned outputs: a request block's answer kept beside its diagram as a scenario file, and used instead of a vendor.

The studio pins a block's output from a past run's step (or one typed by hand). The pins of `order_agent.yaml` are
the `replies` of the one scenario of `order_agent.pins.scenario.yaml` beside it: `diagrama test` runs it as any
scenario (each pinned reply must be used), and a studio run of the diagram asks `PinnedVendors` for a pinned block's
answer, online or offline, instead of its vendor or the made-up simulator.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import yaml

from engine.errors import DiagramaError
from engine.format.jsonout import plain
from engine.format.yamlfile import read_yaml
from engine.providers.simulator import Simulator
from engine.testing.recorded import PlainDumper

__all__ = ["PINS_SUFFIX", "PinnedVendors", "pin_reply", "pins_file", "read_pins", "write_pins"]

PINS_SUFFIX = ".pins.scenario.yaml"
SCENARIO_NAME = "pinned outputs"
_HEADER = ("# The studio's pinned outputs: each block's answer here is used instead of asking its vendor, in the\n"
           "# studio's runs and as this scenario's replies (`diagrama test`). Edit them in the studio or here.\n")


def pins_file(diagram: Path) -> Path:
    """Where a diagram's pins are kept: `order_agent.yaml` → `order_agent.pins.scenario.yaml` beside it."""
    return diagram.with_name(diagram.name.removesuffix(".yaml").removesuffix(".yml") + PINS_SUFFIX)


def pin_reply(output: Any) -> dict[str, Any]:
    """A block's pinned output as its scripted reply: text as `{text}`, a structured answer as `{output}`."""
    return {"text": output} if isinstance(output, str) else {"output": plain(output)}


def read_pins(diagram: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The diagram's pins (block id → its reply) and the inputs the scenario runs with; none when there is no file."""
    path = pins_file(diagram)
    if not path.is_file():
        return {}, {}
    data, _ = read_yaml(path)
    scenarios = data.get("scenarios") if isinstance(data, dict) else None
    first = scenarios[0] if isinstance(scenarios, list) and scenarios and isinstance(scenarios[0], dict) else {}
    replies, inputs = first.get("replies"), first.get("inputs")
    pins = {block: dict(answers[0]) for block, answers in replies.items()
            if isinstance(block, str) and isinstance(answers, list) and answers and isinstance(answers[0], dict)
            } if isinstance(replies, dict) else {}
    return pins, dict(inputs) if isinstance(inputs, dict) else {}


def write_pins(diagram: Path, pins: Mapping[str, dict[str, Any]], inputs: Mapping[str, Any]) -> Path | None:
    """Write the diagram's pins as its pins scenario (the file is removed with the last pin); its path, or None."""
    path = pins_file(diagram)
    if not pins:
        path.unlink(missing_ok=True)
        return None
    scenario = {
        "setup": {"diagram": os.path.relpath(diagram.resolve(), path.resolve().parent)},
        "scenarios": [{
            "scenario": SCENARIO_NAME,
            "inputs": plain(dict(inputs), sort_keys=True),
            "replies": {block: [plain(reply)] for block, reply in sorted(pins.items())},
            "expect": {"status": "succeeded"},
        }],
    }
    try:
        path.write_text(_HEADER + yaml.dump(scenario, Dumper=PlainDumper, sort_keys=False, allow_unicode=True),
                        encoding="utf-8")
    except OSError as exc:
        raise DiagramaError(f"cannot write {path.name}: {exc.strerror}") from None
    return path


class _Always(dict[str, list[dict[str, Any]]]):
    """Scripts that never run out: each look-up gives a fresh copy, so a pinned block answers the same every time."""

    def get(self, key: str, default: Any = None) -> Any:  # the simulator's one read
        found = super().get(key)
        return [dict(reply) for reply in found] if found is not None else default


class PinnedVendors:
    """The offline vendors for a diagram's pinned blocks (Services.pins): each answers with its pinned reply, in its
    vendor's wire format, as a scenario's scripted reply is served. One per diagram, its pins set before each run."""

    def __init__(self) -> None:
        self._scripts = _Always()
        self.simulator = Simulator(self._scripts)

    def set(self, pins: Mapping[str, dict[str, Any]]) -> None:
        self._scripts.clear()
        self._scripts.update({block: [dict(reply)] for block, reply in pins.items()})

    def pinned(self, block: str) -> bool:
        return block in self._scripts

    def transport(self, vendor: str) -> httpx.AsyncBaseTransport:
        return self.simulator.transport(vendor)
