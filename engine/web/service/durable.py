"""Durable runs in the robots API: its checkpoint store (beside the run store: its SQLite file, the runs folder's by
default, or the same database at another SQLAlchemy URL),
a run's live status and the question of one that waits, a resume checked before it goes (404, 409, or 400 with the
problems, the run still waiting), and sessions: read, forgotten, and held around each run of theirs.

The executor writes checkpoints through `store` on the event loop's thread (a statement each, microseconds); what
this module does off the loop (a resume's checks load the diagram; a session's claim may wait) goes through a
connection of its own (`reopen`), one thread at a time: a SQLite connection is not for two threads at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from engine.compile.block import BlockRegistry
from engine.compile.diagram import Diagram
from engine.errors import UsageError
from engine.format.jsonout import plain
from engine.runs.api_durable import take_over
from engine.runs.checkpoints import CheckpointStore, open_checkpoints
from engine.runs.resume import Resumption, answer_problems, prepare_resume
from engine.runs.sessions import claim_session, forget_session, read_session, release_session
from engine.runs.traces import INTERRUPTED
from engine.web.service.models import RunAnswer, SessionAnswer, WaitingFor

__all__ = ["Durable", "Refused", "live_answer"]

_CLAIM_POLL_S = 0.02
_CLAIM_WAIT_S = 600.0
"""How long a run waits for its session's previous turn to end (as `diagrama run --session` waits)."""
_T = TypeVar("_T")


class Refused(Exception):
    """A request durable runs cannot take: its HTTP status, what is wrong, and each problem."""

    def __init__(self, status: int, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.problems = problems or []


class Durable:
    """The API's checkpoint store, for the robots of one folder."""

    def __init__(self, store: CheckpointStore, folder: Path) -> None:
        self.store = store
        self.folder = folder.resolve()
        self._side = store.reopen()
        self._lock = threading.Lock()

    @classmethod
    def open(cls, store_url: str | None, runs_dir: Path, folder: Path) -> Durable:
        """The checkpoint store beside the run store at `store_url` (OSError when it cannot be opened)."""
        return cls(open_checkpoints(store_url, runs_dir), folder)

    async def _off_loop(self, work: Callable[[CheckpointStore], _T]) -> _T:
        def locked() -> _T:
            with self._lock:
                return work(self._side)

        return await asyncio.to_thread(locked)

    def _ours(self, diagram: object) -> bool:
        return Path(str(diagram)).parent == self.folder

    async def row(self, run_id: str) -> dict[str, Any] | None:
        """The run's durable record (live status, what it waits for), if it is a run of this folder's robots."""
        found = await self._off_loop(lambda store: store.run(run_id))
        return found if found is not None and self._ours(found["diagram"]) else None

    async def check_resume(self, run_id: str, answer: Mapping[str, Any] | None, registry: BlockRegistry, *,
                           take: bool) -> Resumption:
        """The run's resume worked out, or Refused: 404 not a durable run of ours, 409 not waiting or interrupted,
        400 a missing answer or one the Wait's form refuses (every problem; the run stays waiting). `take`: mark it
        running in this process too (the local backend), so that a second resume finds it taken (409)."""

        def check(store: CheckpointStore) -> Resumption:
            row = store.run(run_id)
            if row is None or not self._ours(row["diagram"]):
                raise Refused(404, f"no durable run '{run_id}'")
            status = row["status"]
            waiting = row.get("waiting") or {}
            if status == "waiting":
                if answer is None:
                    raise Refused(400, f"run '{run_id}' waits at '{waiting.get('block')}' for an answer: "
                                       f"{waiting.get('prompt')}", ["answer: required (the Wait's form)"])
                problems = answer_problems(waiting.get("form"), dict(answer))
                if problems:
                    raise Refused(400, f"the answer does not fit the form of '{waiting.get('block')}'; the run is "
                                       "still waiting", problems)
            elif status == INTERRUPTED:
                if answer is not None:
                    raise Refused(400, f"run '{run_id}' was interrupted, not stopped at a Wait: resume it without "
                                       "an answer", ["answer: not taken by an interrupted run"])
            else:
                raise Refused(409, f"run '{run_id}' is {status}: only a waiting or an interrupted run resumes")
            try:
                resumption = prepare_resume(store, run_id, registry=registry,
                                            answer=dict(answer) if answer is not None else None)
            except UsageError as exc:
                raise Refused(409, str(exc)) from None
            if take and not take_over(store, run_id):
                raise Refused(409, f"run '{run_id}' is already being resumed")
            return resumption

        return await self._off_loop(check)

    async def check_session(self, session: str, diagram: Diagram, robot: str) -> None:
        """Refused (409) when the session is another robot's: its memory is of that robot's variables."""
        found = await self._off_loop(lambda store: read_session(store, session))
        if found is not None and found.get("diagram") and Path(str(found["diagram"])) != diagram.path.resolve():
            raise Refused(409, f"session '{session}' is a conversation with robot '{Path(str(found['diagram'])).stem}'"
                               f", not '{robot}'")

    async def claim(self, session: str, diagram: Diagram, run_id: str) -> dict[str, Any] | None:
        """Hold `session` for this run: the memory values to start with (None for a new session). Waits, off the
        loop's threads, while another run of the session has its turn."""
        waited = 0.0
        while True:
            try:
                stored = await self._off_loop(
                    lambda store: claim_session(store, session, str(diagram.path.resolve()), run_id, wait_s=0))
            except UsageError:  # held by a run still going
                if waited >= _CLAIM_WAIT_S:
                    raise
                await asyncio.sleep(_CLAIM_POLL_S)
                waited += _CLAIM_POLL_S
                continue
            memory = diagram.settings.memory
            return {name: stored[name] for name in memory if name in stored} if stored is not None else None

    async def release(self, session: str, run_id: str, values: Mapping[str, Any] | None) -> None:
        await self._off_loop(lambda store: release_session(store, session, run_id, values))

    async def session(self, session: str) -> SessionAnswer | None:
        found = await self._off_loop(lambda store: read_session(store, session))
        if found is None or not self._ours(found.get("diagram")):
            return None
        return SessionAnswer(session_id=session, robot=Path(str(found["diagram"])).stem, turns=found["turns"],
                             memory=plain(found["memory"]), updated=found["updated"], running=found["held_by"])

    async def forget(self, session: str) -> bool:
        if await self.session(session) is None:
            return False
        return await self._off_loop(lambda store: forget_session(store, session))

    def close(self) -> None:
        with self._lock:
            self._side.close()
        self.store.close()


def live_answer(found: RunAnswer | None, row: Mapping[str, Any] | None) -> RunAnswer | None:
    """A run as the API answers it, its status from its durable record where it has one: `running`, `waiting`
    (with its question) and `interrupted` are what the run is now; a finished one's result is the run store's."""
    if row is None or row["status"] not in ("running", "waiting", INTERRUPTED):
        return found
    status = row["status"]
    answer = found or RunAnswer(run_id=str(row["run_id"]), robot=Path(str(row["diagram"])).stem, status=status)
    waiting = row.get("waiting") if status == "waiting" else None
    return answer.model_copy(update={"status": status,
                                     "waiting": WaitingFor.model_validate(plain(waiting)) if waiting else None})
