"""The studio's durable-run endpoints: answer a waiting run (or resume an interrupted one), replay a past run from
a block, and talk to a diagram with `memory` turn by turn (a session), reading the memory after each turn.

Each is a run, started as the page's runs are (offline unless the server allows online, allowed under
--read-only as every run is) through RunRoutes.launch, so the page follows it the same way. The work
itself is engine.runs.resume's and engine.runs.sessions': an answer is checked against the Wait's form
first (422 with the problems; the run stays waiting); a session is held for its whole turn, so turns of
one session never overlap, whoever starts them. The inputs a run's store row keeps are scrubbed of keys, as its
checkpoints are.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from engine.compile.inputs import check_inputs
from engine.compile.loader import load_diagram
from engine.errors import UsageError
from engine.format.redact import redact_value
from engine.runs.checkpoints import CheckpointStore
from engine.runs.resume import Resumption, answer_problems, prepare_resume, run_resumption
from engine.runs.sessions import claim_session, read_session, release_session
from engine.runtime.context import Services
from engine.runtime.execute import RunResult, execute
from engine.runtime.trace import new_run_id
from engine.web.files import FolderError
from engine.web.http import JSON, answer, dumped, json_body
from engine.web.models import AnswerRefused, ChatSession, RunStarted
from engine.web.runs import RunRoutes

__all__ = ["DurableRoutes"]

_SESSION = re.compile(r"^[0-9A-Za-z_.:-]{1,128}$")
_TURN_WAIT_S = 120.0
"""How long a turn waits for its session while another run holds it (a turn from the command line)."""


class DurableRoutes:
    def __init__(self, runs: RunRoutes) -> None:
        self.runs = runs
        self.resuming: set[str] = set()
        """Runs being resumed from this page: a second answer to the same Wait is refused, not run twice."""

    def _store(self) -> CheckpointStore:
        return self.runs.checkpoint_store()

    async def resume(self, request: Request) -> Response:
        """`POST /api/runs/{run_id}/resume` {answer?, offline}: a waiting run goes on with the answer (checked
        against its form), an interrupted one from its last checkpoint; the page follows it under its own id."""
        run_id = request.path_params["run_id"]
        self.runs.trace_of(run_id)  # only runs of this folder's diagrams
        payload = await json_body(request)
        offline = self.runs.check_offline(payload.get("offline", True))
        given = "answer" in payload
        if run_id in self.resuming or run_id in self.runs.active:
            raise FolderError(409, f"run '{run_id}' is running already")
        self.resuming.add(run_id)
        try:
            store = self._store()
            try:
                row = store.run(run_id)
                waiting = (row or {}).get("waiting") if (row or {}).get("status") == "waiting" else None
                if waiting is not None and given:
                    problems = answer_problems(waiting.get("form"), payload["answer"])
                    if problems:
                        return JSON(dumped(AnswerRefused(
                            error=f"the answer does not fit the form of '{waiting.get('block')}'; the run is still "
                                  "waiting", problems=problems)), status_code=422)
                resumption = await asyncio.to_thread(self._prepare, store, run_id, payload.get("answer"), None)
            finally:
                store.close()
            self._launch(resumption, offline)
        finally:
            self.resuming.discard(run_id)
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
        store = self._store()
        try:
            resumption = await asyncio.to_thread(self._prepare, store, run_id, None, block)
        finally:
            store.close()
        self._launch(resumption, offline)
        return answer(RunStarted(run_id=resumption.run_id), 202)

    def _prepare(self, store: CheckpointStore, run_id: str, given: Any, block: str | None) -> Resumption:
        try:
            resumption = prepare_resume(store, run_id, registry=self.runs.registry, answer=given, from_block=block)
        except UsageError as exc:
            raise FolderError(409, str(exc)) from None
        if not resumption.diagram.path.resolve().is_relative_to(self.runs.folder.root):
            raise FolderError(404, "not found")  # the run's diagram has left the folder
        return resumption

    def _launch(self, resumption: Resumption, offline: bool) -> None:
        session = resumption.record.get("session") if "replay_of" not in resumption.record else None
        memory = resumption.diagram.settings.memory
        run_id = resumption.run_id

        async def work(services: Services) -> RunResult:
            store = self._store()
            try:
                if session:  # a turn of a conversation that stopped at a Wait: it stores its memory when it ends
                    await asyncio.to_thread(claim_session, store, session, str(resumption.diagram.path.resolve()),
                                            run_id, wait_s=_TURN_WAIT_S)
                result: RunResult | None = None
                try:
                    result = await run_resumption(store, resumption, services=services, runs_dir=self.runs.runs_dir)
                finally:
                    if session:
                        release_session(store, session, run_id, _memory(result, memory))
                return result
            finally:
                store.close()

        self.runs.launch(run_id, resumption.diagram.path, resumption.inputs, offline, work, continued=True)

    async def chat(self, request: Request) -> Response:
        """`POST /api/diagrams/{path}/chat` {session, inputs, offline}: one turn of a conversation: the run starts
        with the session's memory (Start's defaults the first time) and stores it when it succeeds."""
        path = self.runs.folder.diagram(request.path_params["path"])
        payload = await json_body(request)
        session, inputs = payload.get("session"), payload.get("inputs") or {}
        if not isinstance(session, str) or not _SESSION.match(session) or not isinstance(inputs, dict):
            raise FolderError(422, "send {\"session\": an id of letters, digits, _ . : - (at most 128), "
                                   "\"inputs\": {name: value}, \"offline\": true|false}")
        offline = self.runs.check_offline(payload.get("offline", True))
        loaded = await asyncio.to_thread(load_diagram, path, self.runs.registry, data_roots=self.runs.folder.data_roots,
                                         start_servers=True)
        memory = tuple(loaded.settings.memory)
        if not memory:
            raise FolderError(422, f"{path.name} keeps no memory: name the variables a conversation keeps in its "
                                   "Start's `memory`")
        values = check_inputs(loaded, inputs)
        self._store().close()  # refused now, not in the task, when the store cannot be opened
        run_id = new_run_id()

        async def work(services: Services) -> RunResult:
            store = self._store()
            try:
                stored = await asyncio.to_thread(claim_session, store, session, str(path.resolve()), run_id,
                                                 wait_s=_TURN_WAIT_S)
                remembered = {name: stored[name] for name in memory if name in stored} if stored else None
                if loaded.settings.durable:
                    services.checkpoints = store
                result: RunResult | None = None
                try:
                    result = await execute(loaded, values, runs_dir=self.runs.runs_dir, services=services,
                                           run_id=run_id, remembered=remembered,
                                           record={"inputs": redact_value(values, services.secrets()),
                                                   "session": session})
                finally:
                    release_session(store, session, run_id, _memory(result, memory))
                return result
            finally:
                store.close()

        self.runs.launch(run_id, path, inputs, offline, work)
        return answer(RunStarted(run_id=run_id), 202)

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


def _memory(result: RunResult | None, names: tuple[str, ...] | list[str]) -> dict[str, Any] | None:
    """The memory a turn stores: its `memory` variables when it succeeded; None (store nothing) otherwise."""
    if result is None or not result.succeeded:
        return None
    return {name: result.variables.get(name) for name in names}
