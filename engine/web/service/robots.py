"""The served folder's robots: each top-level diagram file, named by its stem, loaded once per version of the file;
the JSON Schema of its inputs; a request's inputs typed and checked as `--input` types them.

Only files directly in the folder are robots (its subfolders hold data, registries and other files the diagrams
read); a name is letters, digits, `_` and `-`, so a request's name never reaches a path unchecked. A robot that has
published versions is served as its live one (engine.runs.published), its files then read inside the version's folder;
one never published, or every robot with `drafts` (`diagrama api --drafts`), is served as its file is.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.compile.block import BlockRegistry
from engine.compile.diagram import Diagram
from engine.compile.inputs import fitted_inputs
from engine.compile.loader import load_diagram
from engine.errors import DiagramInvalid
from engine.format.jsonout import plain
from engine.runs.published import VERSIONS, Version, code_changes, live_version
from engine.runs.service_logs import log

__all__ = ["InputProblems", "Robots", "can_wait", "input_schema", "memory", "typed_inputs"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
_WAIT_BLOCK = "Wait"
"""The block type that stops a run for a person's answer (durable runs): a robot with one `can_wait`."""


class InputProblems(Exception):
    """A request's inputs do not fit the robot's Start inputs: every problem, for one 400 answer."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class _Loaded:
    stamp: tuple[int, int]
    diagram: Diagram


_DRAFT = 0
"""The stamp's first part for a file served as it is; a live version's is minus its number."""


class Robots:
    """The folder's diagrams as robots; a changed file is loaded again on its next use."""

    def __init__(self, folder: Path, registry: BlockRegistry, data_roots: tuple[Path, ...] = (), *,
                 drafts: bool = False) -> None:
        self.folder = folder.resolve()
        self.registry = registry
        self.data_roots = data_roots
        self.drafts = drafts
        """Serve every robot's file as it is, published or not (development)."""
        self._loaded: dict[str, _Loaded] = {}
        self._live: dict[str, tuple[int, Version | None]] = {}
        """Robot → its versions folder's mtime and its live version then (a publish renames a folder into it)."""
        self._loading: dict[str, asyncio.Lock] = {}

    def names(self) -> list[str]:
        return sorted(path.stem for path in self.folder.glob("*.yaml")
                      if _NAME.match(path.stem) and not path.name.endswith(".scenario.yaml") and path.is_file())

    def path(self, name: str) -> Path | None:
        if not _NAME.match(name):
            return None
        path = self.folder / f"{name}.yaml"
        # A symlink leading out of the folder is no robot of it.
        return path if path.is_file() and path.resolve().is_relative_to(self.folder) else None

    async def diagram(self, name: str) -> Diagram | None:
        """The robot's compiled diagram (None: no such robot); DiagramInvalid when its file has problems.

        Loaded off the event loop (a thousand-block file takes milliseconds), once per version of the file: a run
        costs a stat here, not a load.
        """
        path = self.path(name)
        if path is None:
            return None
        live = self.live(name)
        if live is not None:
            stamp, path = (-live.number, _DRAFT), live.diagram
        else:
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
        kept = self._loaded.get(name)
        if kept is not None and kept.stamp == stamp:
            return kept.diagram
        lock = self._loading.setdefault(name, asyncio.Lock())
        async with lock:  # 200 first requests for one robot load it once
            kept = self._loaded.get(name)
            if kept is not None and kept.stamp == stamp:
                return kept.diagram
            diagram = await asyncio.to_thread(load_diagram, path, self.registry, data_roots=self.data_roots)
            if live is not None:
                diagram.published = live.number
                changed = await asyncio.to_thread(code_changes, live)
                if changed:  # served all the same: code is deployed with the server, on purpose
                    log("diagrama.api").warning("code changed since publishing", robot=name, version=live.number,
                                                files=changed)
            self._loaded[name] = _Loaded(stamp, diagram)
            return diagram

    def live(self, name: str) -> Version | None:
        """The robot's version to serve: its live one (None: never published, or serving drafts)."""
        if self.drafts:
            return None
        try:
            changed = (self.folder / VERSIONS / name).stat().st_mtime_ns
        except OSError:
            return None
        kept = self._live.get(name)
        if kept is None or kept[0] != changed:
            kept = (changed, live_version(self.folder / f"{name}.yaml"))
            self._live[name] = kept
        return kept[1]

    async def valid(self) -> list[tuple[str, Diagram]]:
        """Every robot whose diagram loads; a file with problems is left out (`diagrama validate` names them)."""
        found = []
        for name in self.names():
            try:
                diagram = await self.diagram(name)
            except DiagramInvalid:
                continue
            if diagram is not None:
                found.append((name, diagram))
        return found


def can_wait(diagram: Diagram) -> bool:
    """Whether a run may stop at a Wait for a person's answer: it has one, and is durable (Start `durable`)."""
    return diagram.settings.durable and any(block.type_name == _WAIT_BLOCK for block in diagram.blocks.values())


def memory(diagram: Diagram) -> list[str]:
    """Start's `memory`: the variables a session keeps from one run to the next."""
    return list(diagram.settings.memory)


def _value_schema(default: Any) -> dict[str, Any]:
    if isinstance(default, bool):
        return {"type": "boolean", "default": default}
    if isinstance(default, int):
        return {"type": "integer", "default": default}
    if isinstance(default, float):
        return {"type": "number", "default": default}
    if isinstance(default, str):
        return {"type": "string", "default": default}
    if isinstance(default, dict) and set(default) == {"csv"}:  # a data table read from a CSV file: rows, or the file
        return {"type": ["array", "object"], "items": {"type": "object"}, "description": "a table: a list of rows"}
    if isinstance(default, list):
        return {"type": "array", "default": plain(default)}
    if isinstance(default, dict):
        return {"type": "object", "default": plain(default)}
    return {}  # no default (null): any JSON value


def input_schema(diagram: Diagram) -> dict[str, Any]:
    """The run's inputs as JSON Schema: each Start input typed by its default (as `--input` types it), none required."""
    return {"type": "object", "additionalProperties": False,
            "properties": {name: _value_schema(default) for name, default in diagram.settings.inputs.items()}}


def typed_inputs(diagram: Diagram, values: Mapping[str, Any]) -> dict[str, Any]:
    """The request's inputs, typed; InputProblems listing every name the robot lacks and every value that does not fit."""
    typed, problems = fitted_inputs(diagram.settings.inputs, values)
    if problems:
        raise InputProblems([problem for _, problem in problems])
    return typed
