"""What a key that is not an admin's is shown of the server itself: no absolute path of its folders (the robots', the
runs', the store's, the data roots'), no process id or host name. Events sent to such a key (`run_started` carries
the diagram's name and its file relative to the robots' folder, not its absolute path, pid or host) and JSON answers
(a run's errors, a refusal's message) are rewritten on their way out; the trace file on disk keeps everything, and
an admin key (or `--no-auth`) gets events as the trace has them.

The folders are replaced where they are written whole (as JSON encodes them), longest first: `/srv/robots/faq.yaml`
reads `faq.yaml`, `/srv/runs/RUN/trace.jsonl` reads `runs/RUN/trace.jsonl`. Only an event that names a file or a
process is parsed; the others are one `bytes.replace` per folder.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import orjson
from starlette.responses import Response

from engine.runtime.trace import Event

__all__ = ["Shown"]

RunEvent = tuple[int, str, bytes]

_PROCESS_FIELDS = ("pid", "host")
_FILE_FIELDS = {Event.RUN_STARTED: "path", Event.SUBDIAGRAM_STARTED: "file"}
"""The field of an event that holds a diagram's file."""


def _encoded(text: str) -> bytes:
    return orjson.dumps(text)[1:-1]  # as it appears inside a JSON string


class Shown:
    """The server's folders, and how each reads to a key that is not an admin's."""

    def __init__(self, folders: Iterable[tuple[Path | str, str]]) -> None:
        pairs: dict[str, str] = {}
        for folder, shown in folders:
            absolute = str(folder)
            if len(Path(absolute).parts) < 2:
                continue  # `/` itself (or nothing): replacing it would rewrite every path-looking text
            pairs[absolute.rstrip("/") + "/"] = f"{shown}/" if shown else ""
            pairs[absolute.rstrip("/")] = shown or "."
        self._text = sorted(pairs.items(), key=lambda pair: -len(pair[0]))
        self._json = [(_encoded(folder), _encoded(shown)) for folder, shown in self._text]

    @classmethod
    def of(cls, folder: Path, runs_dir: Path, store: str | None, data_roots: Iterable[Path] = ()) -> Shown:
        """The robots' folder (its files by their names), the runs folder (`runs/…`), the store's file when it is one
        (`store`: the checkpoint store's `where`) and each data root (by its name)."""
        folders: list[tuple[Path | str, str]] = [(folder.resolve(), ""), (runs_dir.resolve(), "runs")]
        if store is not None and "://" not in store:  # a file (SQLite's): by its name, unless a folder above shows it
            kept = Path(store).resolve()
            if not kept.is_relative_to(runs_dir.resolve()) and not kept.is_relative_to(folder.resolve()):
                folders.append((kept, kept.name))
        folders += [(root.resolve(), root.resolve().name) for root in data_roots]
        return cls(folders)

    def text(self, text: str) -> str:
        for folder, shown in self._text:
            text = text.replace(folder, shown)
        return text

    def json(self, data: bytes) -> bytes:
        """A JSON document with the folders replaced in its strings."""
        for folder, shown in self._json:
            if folder in data:
                data = data.replace(folder, shown)
        return data

    def event(self, name: str, data: bytes) -> bytes:
        """An event's JSON as a key that is not an admin's sees it."""
        file_field = _FILE_FIELDS.get(name)
        if file_field is not None or any(f'"{field}"'.encode() in data for field in _PROCESS_FIELDS):
            fields: dict[str, Any] = json.loads(data)  # not orjson: it reads an integer past 64 bits as a float
            for field in _PROCESS_FIELDS:
                fields.pop(field, None)
            if file_field is not None and isinstance(fields.get(file_field), str):
                fields[file_field] = self._file(fields[file_field])
            data = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()
        return self.json(data)

    def _file(self, path: str) -> str:
        shown = self.text(path)
        return Path(shown).name if Path(shown).is_absolute() else shown  # a file outside the folders: its name

    async def events(self, stream: AsyncIterator[RunEvent]) -> AsyncIterator[RunEvent]:
        """`stream`'s events as `event` shows them; closing this closes `stream`."""
        async with contextlib.aclosing(stream):  # type: ignore[type-var]  # an async generator: it has aclose
            async for number, name, data in stream:
                yield number, name, self.event(name, data)

    def answer(self, response: Response) -> Response:
        """A JSON answer with the folders replaced in its body. A body that comes later is shown by whoever makes it
        (`wait: true`'s result: engine.web.service.app's `shown_for`; an event stream's: `events`)."""
        body = getattr(response, "body", None)
        if not isinstance(body, bytes) or not body:
            return response
        shown = self.json(body)
        if shown is not body:
            response.body = shown
            response.headers["content-length"] = str(len(shown))
        return response
