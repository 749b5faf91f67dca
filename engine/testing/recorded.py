"""A run written down as a scenario file (`diagrama run --record`, the studio's "save as scenario"): its replies as
the scenario's, its path, outputs and errors as its expectations, scrubbed of keys; in YAML that diagrama's dialect
reads back as written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from engine.format.dialect import reads_as_text
from engine.format.jsonout import plain
from engine.runtime.result import RunResult

__all__ = ["PlainDumper", "record_scenario"]


def record_scenario(path: Path, diagram_path: Path, inputs: Mapping[str, Any], result: RunResult,
                    recorded: list[dict[str, Any]]) -> None:
    """Write what a run did as a scenario: its replies, and its path and outputs as expectations.

    Everything written is scrubbed of keys as the run's result is (a reply may echo a key).
    """
    replies: dict[str, list[dict[str, Any]]] = {}
    calls = []
    for entry in recorded:
        reply: dict[str, Any] = {}
        if "status" in entry or "error" in entry:  # an HttpRequest's answer, as its scenario reply
            replies.setdefault(entry["block"], []).append({k: v for k, v in entry.items() if k != "block"})
            continue
        if entry.get("text"):
            reply["text"] = entry["text"]
        if entry.get("calls"):
            reply["tool_calls"] = [{"name": c["name"], "arguments": c["arguments"]} for c in entry["calls"]]
            calls += [{"block": entry["block"], "name": c["name"], "arguments": c["arguments"]} for c in entry["calls"]]
        replies.setdefault(entry["block"], []).append(reply or {"text": ""})
    variables = {k: v for k, v in result.variables.items() if isinstance(v, (str, int, float, bool)) and k not in inputs}
    # The README's shape: `setup` names the diagram, `scenarios` lists the cases (here one).
    recorded_file = {
        "setup": {"diagram": os.path.relpath(diagram_path.resolve(), path.resolve().parent)},
        "scenarios": [{
            "scenario": f"recorded run {result.run_id} of {result.diagram}",
            "inputs": plain(dict(inputs), sort_keys=True),
            "replies": replies,
            "expect": {"status": result.status, "path": result.path, "variables": plain(variables, sort_keys=True),
                       "called_tools": calls,
                       "errors": [{k: v for k, v in e.items() if k in ("block", "type")} for e in result.errors]},
        }],
    }
    recorded_file = plain(result.redact(recorded_file))  # fresh containers throughout: nothing shared, no anchors
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "# Recorded by `diagrama run --record`: review the replies and expectations before committing.\n"
    text = yaml.dump(recorded_file, Dumper=PlainDumper, sort_keys=False, allow_unicode=True)
    path.write_text(header + text, encoding="utf-8")


class PlainDumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML ships no type hints
    """Safe YAML that writes a value seen twice in full each time, never as an `&anchor` and `*alias`, and quotes
    text that diagrama's dialect (YAML 1.2) would read otherwise (PyYAML writes `0o17` and `1e3` plain)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def represent_str(self, data: str) -> Any:
        if data and "\n" not in data and not reads_as_text(data) and data == data.strip():
            return self.represent_scalar("tag:yaml.org,2002:str", data, style='"')
        return super().represent_str(data)


PlainDumper.add_representer(str, PlainDumper.represent_str)
