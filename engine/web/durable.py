"""The studio's durable-run endpoints: answer a waiting run (or resume an interrupted one), replay a past run from
a block, and talk to a diagram with `memory` turn by turn (a session), reading the memory after each turn.

Each is a run, started as the page's runs are (offline unless the server allows online, allowed under
--read-only as every run is) through RunRoutes.launch, so the page follows it the same way. Each is one turn
(engine.runs.turn), prepared here so that what the page asks is refused before it answers: an answer its Wait's
form refuses (422 with the problems; the run stays waiting), a run another resume took or that cannot go on
(409), a chat turn while the session's last turn is unfinished (409, naming the run). A chat turn holds its
session from the request on, so turns of one session never overlap, whoever starts them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from engine.compile.inputs import check_inputs
from engine.compile.loader import load_diagram
from engine.errors import TurnRefused
from engine.format.redact import redact_value
from engine.runs.checkpoints import CheckpointStore
from engine.runs.sessions import read_session
from engine.runs.turn import Turn, hold_session, new_turn, resume_turn, run_turn
from engine.runtime.context import Services
from engine.runtime.execute import RunResult
from engine.web.files import FolderError
from engine.web.http import JSON, answer, dumped, json_body
from engine.web.models import AnswerRefused, ChatSession, RunStarted
from engine.web.runs import RunRoutes

__all__ = ["DurableRoutes"]

_SESSION = re.compile(r"^[0-9A-Za-z_.:-]{1,128}$")
_TURN_WAIT_S = 120.0
"""How long a turn waits for its session while another run holds it (a turn from the command line)."""


def _off_loop(store: CheckpointStore) -> Callable[[Callable[[CheckpointStore], Any]], Awaitable[Any]]:
    """The turn's session statements on the run's own store connection, off the event loop, one at a time."""

    async def access(work: Callable[[CheckpointStore], Any]) -> Any:
        return await asyncio.to_thread(work, store)

    return access


class DurableRoutes:
    def __init__(self, runs: RunRoutes) -> None:
        self.runs = runs

    def _store(self) -> CheckpointStore:
        return self.runs.checkpoint_store()

    async def resume(self, request: Request) -> Response:
        """`POST /api/runs/{run_id}/resume` {answer?, offline}: a waiting run goes on with the answer (checked
        against its form), an interrupted one from its last checkpoint; the page follows it under its own id."""
        run_id = request.path_params["run_id"]
        self.runs.trace_of(run_id)  # only runs of this folder's diagrams
        payload = await json_body(request)
        offline = self.runs.check_offline(payload.get("offline", True))
        if run_id in self.runs.active:
            raise FolderError(409, f"run '{run_id}' is running already")
        try:
            turn, store = await self._prepare(run_id, payload.get("answer"), None)
        except TurnRefused as refused:
            if refused.reason != "answer":
                raise
            return JSON(dumped(AnswerRefused(error=refused.message, problems=refused.problems)), status_code=422)
        self._launch(turn, store, offline)
        return answer(RunStarted(run_id=run_id), 202)

    async def replay(self, request: Request) -> Response:
        """`POST /api/runs/{run_id}/replay` {block, offline}: a new run, linked to this one, from `block` with the
        scope this run had when it first reached it, in the diagram as it is on disk now."""
        run_id = request.path_params["run_id"]
        self.runs.trace_of(run_id)
        payload = await json_body(request)
        block = payload.get("block")
        if not isinstance(block, str) or not block:
            raise FolderError(422, "send {\"block\": the id of a block the run reached, \"offline\": true|false}")
        offline = self.runs.check_offline(payload.get("offline", True))
        turn, store = await self._prepare(run_id, None, block)
        self._launch(turn, store, offline)
        return answer(RunStarted(run_id=turn.run_id), 202)

    async def _prepare(self, run_id: str, given: Any, block: str | None) -> tuple[Turn, CheckpointStore]:
        """The run's turn, taken over (a replay: a new run), with the store connection it will run on; FolderError 409
        for a refusal other than the answer's (TurnRefused `answer`, for the caller to answer). The run is one of
        this folder's (its trace was found): one the store does not know kept no checkpoints."""
        store = self._store()
        root = self.runs.folder.root

        def prepare() -> Turn:
            return resume_turn(store, run_id, registry=self.runs.registry, answer=given, from_block=block,
                               ours=lambda diagram: diagram.resolve().is_relative_to(root))

        try:
            return await asyncio.to_thread(prepare), store
        except TurnRefused as refused:
            store.close()
            if refused.reason == "answer":
                raise
            raise FolderError(409, refused.message) from None
        except BaseException:
            store.close()
            raise

    def _launch(self, turn: Turn, store: CheckpointStore, offline: bool, *, continued: bool = True) -> None:
        async def work(services: Services) -> RunResult:
            try:
                return await run_turn(turn, services=services, runs_dir=self.runs.runs_dir, access=_off_loop(store),
                                      session_wait_s=_TURN_WAIT_S)
            finally:
                store.close()

        self.runs.launch(turn.run_id, turn.diagram.path, turn.inputs, offline, work, continued=continued)

    async def chat(self, request: Request) -> Response:
        """`POST /api/diagrams/{path}/chat` {session, inputs, offline}: one turn of a conversation: the run starts
        with the session's memory (Start's defaults the first time) and stores it when it succeeds; 409 while the
        session's last turn is unfinished (waiting, interrupted)."""
        path = self.runs.folder.diagram(request.path_params["path"])
        payload = await json_body(request)
        session, inputs = payload.get("session"), payload.get("inputs") or {}
        if not isinstance(session, str) or not _SESSION.match(session) or not isinstance(inputs, dict):
            raise FolderError(422, "send {\"session\": an id of letters, digits, _ . : - (at most 128), "
                                   "\"inputs\": {name: value}, \"offline\": true|false}")
        offline = self.runs.check_offline(payload.get("offline", True))
        loaded = await asyncio.to_thread(load_diagram, path, self.runs.registry, data_roots=self.runs.folder.data_roots,
                                         start_servers=True)
        if not loaded.settings.memory:
            raise FolderError(422, f"{path.name} keeps no memory: name the variables a conversation keeps in its "
                                   "Start's `memory`")
        values = check_inputs(loaded, inputs)
        store = self._store()  # refused now (503), not in the task, when the store cannot be opened
        try:
            turn = new_turn(loaded, values, store=store, session=session)
            # Held from here when it is free, so that turns go in the order the page sent them; one that another
            # turn still runs waits for it in the task.
            await hold_session(turn, _off_loop(store), wait_s=0)
        except TurnRefused as refused:
            store.close()
            raise FolderError(409 if refused.reason == "session_busy" else 422, refused.message) from None
        except BaseException:
            store.close()
            raise
        self._launch(turn, store, offline, continued=False)
        return answer(RunStarted(run_id=turn.run_id), 202)

    async def session(self, request: Request) -> Response:
        """`GET /api/sessions/{session}`: a conversation of one of this folder's diagrams: its memory and turns."""
        session = request.path_params["session"]
        if not _SESSION.match(session):
            raise FolderError(404, "not found")

        def read() -> tuple[dict[str, Any] | None, Path | None]:
            store = self._store()
            try:
                found = read_session(store, session)
            finally:
                store.close()
            return found, Path(str(found["diagram"])).resolve() if found and found.get("diagram") else None

        found, diagram = await asyncio.to_thread(read)
        if found is None or diagram is None or not diagram.is_relative_to(self.runs.folder.root):
            raise FolderError(404, f"no session '{session}' of this folder's diagrams")
        secrets = (self.runs.services or Services()).secrets()
        return answer(ChatSession(session=session, diagram=self.runs.folder.relative(diagram), turns=found["turns"],
                                  memory=redact_value(dict(found["memory"]), secrets), updated=found.get("updated"),
                                  held_by=found.get("held_by")))
