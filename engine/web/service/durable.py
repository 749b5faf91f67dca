"""Durable runs in the robots API: its checkpoint store (beside the run store: its SQLite file, the runs folder's by
default, or the same database at another SQLAlchemy URL), a run's live status and the question of one that waits,
a resume's turn prepared before it is answered (404, 409, or 400 with the problems, the run still waiting), a new
run's session held from its request on, and sessions read and forgotten. Turns are engine.runs.turn's.

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
from engine.errors import TurnRefused
from engine.format.jsonout import plain
from engine.runs.checkpoints import CheckpointStore, open_checkpoints
from engine.runs.published import robot_folder
from engine.runs.sessions import forget_session, read_session
from engine.runs.traces import INTERRUPTED
from engine.runs.turn import Turn, hold_session, resume_turn
from engine.web.service.models import RunAnswer, SessionAnswer, WaitingFor

__all__ = ["Durable", "Refused", "live_answer", "refusal"]

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
        return robot_folder(Path(str(diagram)).resolve()) == self.folder

    async def row(self, run_id: str) -> dict[str, Any] | None:
        """The run's durable record (live status, what it waits for), if it is a run of this folder's robots."""
        found = await self._off_loop(lambda store: store.run(run_id))
        return found if found is not None and self._ours(found["diagram"]) else None

    async def access(self, work: Callable[[CheckpointStore], _T]) -> _T:
        """A turn's own statements (its session's) off the loop: engine.runs.turn's StoreAccess."""
        return await self._off_loop(work)

    async def resume(self, run_id: str, answer: Mapping[str, Any] | None, registry: BlockRegistry, *,
                     take: bool) -> Turn:
        """The run's turn (engine.runs.turn.resume_turn), or Refused: 404 not a durable run of ours, 409 not waiting
        or interrupted (or taken), 400 a missing answer or one the Wait's form refuses (every problem; the run stays
        waiting). `take`: mark it running in this process too (the local backend), so that a second resume finds
        it taken (409); a Celery worker takes it when it starts."""

        def prepare(store: CheckpointStore) -> Turn:
            return resume_turn(store, run_id, registry=registry, answer=dict(answer) if answer is not None else None,
                               take=take, ours=self._ours)

        try:
            turn = await self._off_loop(prepare)
        except TurnRefused as refused:
            raise refusal(refused) from None
        turn.store = self.store  # its checkpoints on the loop's connection, as every run's here
        return turn

    async def interrupted(self) -> list[str]:
        """The ids of this folder's interrupted top runs (a drained or killed server's), oldest change first."""
        rows = await self._off_loop(lambda store: store.runs(_RESUMED_AT_START, statuses=(INTERRUPTED,)))
        return [str(row["run_id"]) for row in reversed(rows) if self._ours(row["diagram"])]

    async def let_go(self, turn: Turn) -> None:
        """The session a turn held from its request, let go without its memory: the run was never started."""
        if turn.session is not None and turn.held:
            session, run_id = turn.session, turn.run_id
            await self._off_loop(lambda store: store.release_session(session, run_id, None))
            turn.held = False

    async def hold(self, turn: Turn) -> None:
        """A new run's session, held from the request on when it is free (turns go in the order they came; one that
        another turn still runs waits for it when the run starts); Refused 409 while the session's last turn is
        unfinished or the session is another robot's."""
        try:
            await hold_session(turn, self.access, wait_s=0)
        except TurnRefused as refused:
            raise refusal(refused) from None

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


_RESUMED_AT_START = 10_000
"""The most interrupted runs `--resume-interrupted` takes up at a start."""

_STATUS = {"not_found": 404, "answer": 400, "input": 400}
"""A TurnRefused's HTTP status by its reason; any other reason is a conflict with the run's or session's state (409)."""


def refusal(refused: TurnRefused) -> Refused:
    """A turn's refusal as the API answers it."""
    return Refused(_STATUS.get(refused.reason, 409), refused.message, refused.problems)


def live_answer(found: RunAnswer | None, row: Mapping[str, Any] | None) -> RunAnswer | None:
    """A run as the API answers it, its status from its durable record where it has one: `running`, `waiting`
    (with its question), `interrupted` and `cancelled` are what the run is now; a finished one's result is the run
    store's."""
    if row is None or row["status"] not in ("running", "waiting", INTERRUPTED, "cancelled"):
        return found
    status = row["status"]
    answer = found or RunAnswer(run_id=str(row["run_id"]), robot=Path(str(row["diagram"])).stem, status=status)
    waiting = row.get("waiting") if status == "waiting" else None
    return answer.model_copy(update={"status": status,
                                     "waiting": WaitingFor.model_validate(plain(waiting)) if waiting else None})
