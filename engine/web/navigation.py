"""The studio's finding-your-way endpoints (issue 43): the runs list's filters, a diagram's chat sessions (listed,
their turns, forgotten) and the gallery of examples ("New from example").

Filters: `GET /api/diagrams/{path}/runs?status=&since=&until=&block=&error=&text=` keeps the runs that match every
filter given; status and dates are read from the listing, the block reached, the error type and the text in the
inputs from each run's trace (its first and last lines, and its blocks), so a long list is filtered here, not in
the page.

Sessions: the checkpoint store's sessions of one diagram (`diagrama sessions`, engine.runs.sessions), each with its
turns: the store's runs of that session, their message (the run's inputs) and the answer its trace recorded.

Gallery: the examples are the repository's diagrams/ folder (the README's examples), each with its `description`.
Choosing one copies it into the served folder under a new name, with what it loads: every path its strings name
that exists beside it (a child diagram, a registry, a CSV file, a knowledge folder), and what those name in turn.
A file already in the served folder at that path is kept, not replaced (the answer says which). Answers' models are
here, beside the routes (engine.web.api_schema joins them into the page's types).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Awaitable, Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engine.errors import DiagramInvalid
from engine.format.redact import redact_value
from engine.format.yamlfile import read_yaml_text
from engine.runs.sessions import forget_session, read_session
from engine.runs.trace_steps import run_path
from engine.runtime.context import Services
from engine.runtime.trace import read_events
from engine.web.files import FolderError
from engine.web.http import answer, handle, json_body
from engine.web.models import Answer, RunListed

if TYPE_CHECKING:
    from engine.web.app import Studio
    from engine.web.runs import RunRoutes

__all__ = ["EXAMPLES", "PACKAGED_EXAMPLES", "ExampleCopied", "ExampleListed", "NavigationRoutes", "RunFilters",
           "SessionListed", "SessionTurn", "example_needs", "examples_folder"]

PACKAGED_EXAMPLES = Path(__file__).resolve().parent / "examples"
"""Where a wheel carries the repository's diagrams/ folder (pyproject.toml, the wheel's force-include)."""


def examples_folder(checkout: Path, packaged: Path = PACKAGED_EXAMPLES) -> Path:
    """The gallery's examples: a checkout's own diagrams/ folder (edited there, seen at once), else the copy an
    installed wheel carries; a folder that is neither shows an empty gallery."""
    return checkout if checkout.is_dir() else packaged


EXAMPLES = examples_folder(Path(__file__).resolve().parents[2] / "diagrams")

_SESSION = re.compile(r"^[0-9A-Za-z_.:-]{1,128}$")
_REPLY_NAMES = ("answer", "reply", "response", "result")
_MAX_NEEDS = 200
Endpoint = Callable[[Request], Awaitable[Response]]


class RunFilters:
    """The runs list's filters from a query string; `keeps` says whether a listed run matches them all."""

    def __init__(self, query: Mapping[str, str]) -> None:
        self.status = {s for s in query.get("status", "").split(",") if s}
        self.since = _moment(query.get("since", ""), "since")
        self.until = _moment(query.get("until", ""), "until", end_of_day=True)
        self.block = query.get("block", "").strip()
        self.error = query.get("error", "").strip().lower()
        self.text = query.get("text", "").strip().lower()

    def __bool__(self) -> bool:
        return bool(self.status or self.since is not None or self.until is not None or self.block or self.error
                    or self.text)

    def keeps(self, entry: RunListed, trace: Path | None) -> bool:
        if self.status and entry.status not in self.status:
            return False
        started = entry.started or 0
        if (self.since is not None and started < self.since) or (self.until is not None and started > self.until):
            return False
        if not (self.block or self.error or self.text):
            return True
        if trace is None or not trace.is_file():
            return False
        events = read_events(trace)
        if self.block and self.block not in run_path(trace).blocks:
            return False
        if self.error and not any(self.error in str(e.get("type", "")).lower() for e in _errors(events)):
            return False
        if self.text:
            inputs = next((e.get("inputs") for e in events if e.get("event") == "run_started"), None)
            return self.text in json.dumps(inputs or {}, ensure_ascii=False).lower()
        return True


def _moment(text: str, name: str, *, end_of_day: bool = False) -> float | None:
    """Seconds since the epoch from `2026-05-01` (a day: its start, or its end for `until`), an ISO time or a number."""
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise FolderError(400, f"{name} is a date (2026-05-01), a time (2026-05-01T09:30) or seconds since the epoch") \
            from None
    day = len(text) <= 10
    return moment.timestamp() + (86_399.999 if day and end_of_day else 0)


def _errors(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    finished = [e for e in events if e.get("event") == "run_finished"]
    errors = finished[-1].get("errors") if finished else None
    return [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else []


class SessionTurn(Answer):
    """A turn of a session: its run, the message it was sent (its inputs), the answer its trace recorded."""

    run_id: str
    status: str
    started: float | None = Field(description="seconds since the epoch")
    message: str | None = Field(description="the run's first text input (Start's `message`, else its first)")
    reply: str | None = Field(description="the last answer, reply, response or result a block set (traced at Info "
                                          "level and above: None when the trace did not keep it)")


class SessionListed(Answer):
    """`GET /api/diagrams/{path}/sessions`: a conversation with this diagram, newest first, with its turns."""

    session: str
    turns: int = Field(description="the turns its memory counts")
    updated: float | None = Field(description="seconds since the epoch")
    held_by: str | None
    memory: dict[str, Any]
    runs: list[SessionTurn] = Field(description="its turns' runs the store still has, oldest first")


class ExampleListed(Answer):
    """`GET /api/examples`: a diagram of the gallery, with what copying it brings along."""

    file: str = Field(description="its file in the examples folder")
    name: str
    description: str
    needs: list[str] = Field(description="the files and folders it loads, relative to it (empty: self-contained)")


class ExampleCopied(Answer):
    """`POST /api/examples` {example, path}: the new diagram, what was copied beside it and what was already there."""

    path: str
    copied: list[str]
    kept: list[str] = Field(description="paths it loads that the served folder already had (left as they were)")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _read(path: Path) -> Any:
    try:
        data, _lines = read_yaml_text(path.read_text(encoding="utf-8"), path.name)
    except (DiagramInvalid, OSError, UnicodeDecodeError):
        return None
    return data


def example_needs(file: Path, root: Path) -> list[str]:
    """The files and folders under `root` that the YAML file `file` names (a literal path, relative to the file), and
    those that a YAML file among them names in turn; relative to `root`, sorted."""
    found: set[str] = set()
    pending = [file]
    while pending and len(found) < _MAX_NEEDS:
        current = pending.pop()
        for written in _strings(_read(current)):
            if "{{" in written or "\n" in written or not written.strip() or len(written) > 300 or written.startswith("/"):
                continue
            target = (current.parent / written.strip()).resolve()
            if not target.is_relative_to(root) or target == root or not target.exists():
                continue
            relative = target.relative_to(root).as_posix()
            if relative in found or target == file.resolve():
                continue
            found.add(relative)
            if target.is_file() and target.suffix in (".yaml", ".yml"):
                pending.append(target)
    return sorted(found)


class NavigationRoutes:
    """Run filters' helper, chat sessions and the gallery, over the studio's folder and run store."""

    def __init__(self, studio: Studio, runs: RunRoutes, rename: Callable[[str, str], str],
                 examples: Path = EXAMPLES) -> None:
        self.studio = studio
        self.runs = runs
        self.rename = rename
        self.examples = examples.resolve()

    def routes(self, writes: Callable[[Endpoint], Endpoint]) -> list[Route]:
        """Its routes; `writes` guards the ones that write (refused under --read-only)."""
        return [
            Route("/api/diagrams/{path:path}/sessions", handle(self.sessions), methods=["GET"]),
            Route("/api/sessions/{session}", writes(self.forget), methods=["DELETE"]),
            Route("/api/examples", handle(self.listing), methods=["GET"]),
            Route("/api/examples", writes(self.copy), methods=["POST"]),
        ]

    # Sessions

    def _sessions_of(self, path: Path) -> list[SessionListed]:
        store = self.runs.checkpoint_store()
        try:
            names = store.session_names(200)
            found = [s for name in names if (s := read_session(store, name)) is not None
                     and s.get("diagram") and Path(str(s["diagram"])).resolve() == path.resolve()]
            rows = store.runs(2000) if found else []
        finally:
            store.close()
        secrets = (self.runs.services or Services()).secrets()
        listed = []
        for session in found:
            turns = [self._turn(row) for row in reversed(rows) if row.get("session") == session["session"]]
            listed.append(SessionListed(session=session["session"], turns=session["turns"], updated=session.get("updated"),
                                        held_by=session.get("held_by"),
                                        memory=redact_value(dict(session["memory"]), secrets), runs=turns))
        listed.sort(key=lambda s: s.updated or 0, reverse=True)
        return listed

    @staticmethod
    def _turn(row: dict[str, Any]) -> SessionTurn:
        inputs = row.get("inputs")
        if isinstance(inputs, str):
            try:
                inputs = json.loads(inputs)
            except ValueError:
                inputs = {}
        inputs = inputs if isinstance(inputs, dict) else {}
        message = inputs.get("message", next(iter(inputs.values()), None))
        reply = None
        trace = Path(str(row["trace"])) if row.get("trace") else None
        if trace is not None and trace.is_file():
            for event in read_events(trace):
                if event.get("event") != "block_finished" or "/" in str(event.get("block", "")):
                    continue
                values = event.get("set")
                name = next((n for n in _REPLY_NAMES if isinstance(values, dict) and values.get(n) is not None), None)
                if name is not None and isinstance(values, dict):
                    value = values[name]
                    reply = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return SessionTurn(run_id=str(row["run_id"]), status=str(row.get("status")), started=row.get("started"),
                           message=None if message is None else message if isinstance(message, str) else json.dumps(message),
                           reply=reply)

    async def sessions(self, request: Request) -> Response:
        path = self.studio.folder.diagram(request.path_params["path"])
        return answer(await asyncio.to_thread(self._sessions_of, path))

    async def forget(self, request: Request) -> Response:
        """`DELETE /api/sessions/{session}`: the session and its memory are deleted (its runs stay)."""
        session = request.path_params["session"]
        if not _SESSION.match(session):
            raise FolderError(404, "not found")

        def work() -> bool:
            store = self.runs.checkpoint_store()
            try:
                found = read_session(store, session)
                diagram = Path(str(found["diagram"])).resolve() if found and found.get("diagram") else None
                if diagram is None or not diagram.is_relative_to(self.studio.folder.root):
                    return False
                return forget_session(store, session)
            finally:
                store.close()

        if not await asyncio.to_thread(work):
            raise FolderError(404, f"no session '{session}' of this folder's diagrams")
        return Response(status_code=204)

    # Gallery

    def _examples(self) -> list[ExampleListed]:
        if not self.examples.is_dir():
            return []
        listed = []
        for file in sorted(self.examples.glob("*.yaml")):
            data = _read(file)
            if not isinstance(data, dict) or not isinstance(data.get("blocks"), list):
                continue
            listed.append(ExampleListed(file=file.name, name=str(data.get("diagram", file.stem)),
                                        description=str(data.get("description", "")),
                                        needs=example_needs(file, self.examples)))
        return listed

    async def listing(self, _: Request) -> Response:
        return answer(await asyncio.to_thread(self._examples))

    async def copy(self, request: Request) -> Response:
        payload = await json_body(request)
        example, name = payload.get("example"), payload.get("path")
        listed = {e.file: e for e in await asyncio.to_thread(self._examples)}
        if not isinstance(example, str) or example not in listed:
            raise FolderError(404, f"no example '{example}': the gallery has {', '.join(listed) or 'none'}")
        folder = self.studio.folder
        target = folder.new_name(name)
        source = self.examples / example
        text = self.rename(folder.read(source), target.stem.replace(" ", "-"))
        copied, kept = [], []
        async with self.studio.locks.hold(target):
            folder.new_name(name)
            for needed in listed[example].needs:
                there = folder.root / needed
                if there.exists() or there.is_symlink():
                    kept.append(needed)
                    continue
                there.parent.mkdir(parents=True, exist_ok=True)
                if (self.examples / needed).is_dir():
                    shutil.copytree(self.examples / needed, there, ignore=shutil.ignore_patterns(".diagrama-index*"))
                else:
                    shutil.copy2(self.examples / needed, there)
                copied.append(needed)
            folder.write(target, text)
            self.studio.versions.saved(target, None, text)
        return answer(ExampleCopied(path=folder.relative(target), copied=copied, kept=kept), 201)
