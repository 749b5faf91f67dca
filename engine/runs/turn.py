"""A run's turn: the one way every door starts a run or carries one on, with its session.

A turn is: prepare the run (a new one from its inputs; an existing one from its row: interrupted,
waiting with an answer, left in flight by a lost worker; or a replay of one from a block), take it over
(a compare-and-set on its row, so that of two resumes one goes on), hold its session, execute, store the
session's memory, let go. The CLI (`run`, `resume`), the studio (a run, an answer, a chat turn, a
replay), `diagrama api` in its own process and on Celery workers, and batch rows all call `new_turn` /
`resume_turn` / `carry_on`, then `run_turn`; nothing else takes a run over or holds a session.

Sessions never lose a turn. A turn holds its session from before its first block until it ends; one that
stops unfinished — waiting at a Wait, or interrupted — keeps holding it. A new turn of the session waits
while another runs, and is refused (TurnRefused, `session_busy`, naming that run) while one is unfinished,
until it is answered or resumed and ends, or is cancelled (`cancel_turn`). So each turn that succeeded
stored its memory over the one before, and none is overwritten by an older turn that finished later.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from engine.errors import TurnRefused, UsageError
from engine.format.snapshot import SnapshotDamaged, SnapshotError, decode, encode_value
from engine.runs.checkpoints import CheckpointStore, SessionClaim
from engine.runs.resume import answer_problems, replay_point
from engine.runs.traces import INTERRUPTED
from engine.runtime.durable import Answer, Resumed, host_name, resumed_from
from engine.runtime.execute import execute
from engine.runtime.trace import new_run_id

if TYPE_CHECKING:
    from engine.compile.block import BlockRegistry
    from engine.compile.diagram import Diagram
    from engine.format.levels import MessageLevel
    from engine.format.spec import Budget
    from engine.runtime.context import Services
    from engine.runtime.result import RunResult
    from engine.runtime.trace import Console

__all__ = ["StoreAccess", "Turn", "cancel_turn", "carry_on", "hold_session", "inline", "new_turn", "resume_run",
           "resume_turn", "run_turn"]

_T = TypeVar("_T")
StoreAccess = Callable[[Callable[[CheckpointStore], _T]], Awaitable[_T]]
"""How a turn reaches its store for its own statements (taking a session, letting it go): `inline(store)` on the
run's own thread, or a host's way off its event loop (`diagrama api`: a connection of its own, one thread at a time)."""

_POLL_S = 0.02
SESSION_WAIT_S = 600.0
"""How long a turn waits for its session while another turn of it runs."""


def inline(store: CheckpointStore) -> StoreAccess[Any]:
    """Statements on the store as they come, on the caller's thread (SQLite: microseconds)."""

    async def access(work: Callable[[CheckpointStore], Any]) -> Any:
        return work(store)

    return access


@dataclass
class Turn:
    """A run ready to go: its diagram and id, where it starts (Start, or `resumed`), its session and its record."""

    diagram: Diagram
    run_id: str
    store: CheckpointStore | None
    """The checkpoint store: the run's checkpoints when its diagram is durable, the session's memory."""
    inputs: dict[str, Any] = field(default_factory=dict)
    session: str | None = None
    """The conversation this turn belongs to, held for the turn's whole run (None: none, or a replay's)."""
    resumed: Resumed | None = None
    """The checkpoint the run continues from; None: a new run from Start."""
    record: dict[str, Any] = field(default_factory=dict)
    """Fields of the run's record in the checkpoint store (its inputs, session, the run it replays)."""
    held: bool = False
    """Whether the turn holds its session (`hold_session`)."""
    stored: dict[str, Any] | None = None
    """The session's memory as its last good turn stored it, once held (None: a new session)."""
    budget: Budget | None = None
    """What whoever starts it lowers Start's budget to (`--budget`, the API's `budget`); a resumed run keeps the
    one it started with, lowered again by this."""

    @property
    def memory(self) -> tuple[str, ...]:
        return tuple(self.diagram.settings.memory)


# -- preparing a turn ------------------------------------------------------------------------------------------------


def new_turn(diagram: Diagram, inputs: Mapping[str, Any], *, store: CheckpointStore | None, session: str | None = None,
             run_id: str | None = None) -> Turn:
    """A new run of `diagram` from Start with `inputs` (checked against its Start already), in `session` if given.

    TurnRefused (`input`) for an input a durable run cannot checkpoint, naming it; UsageError for a session without
    a store."""
    if session is not None and store is None:
        raise UsageError(f"session '{session}' is kept in the checkpoint store, which this run has not")
    durable = store is not None and diagram.settings.durable
    if durable or session is not None:
        _check_kept(inputs)
    record: dict[str, Any] = {"inputs": dict(inputs)}
    if diagram.published is not None:
        record["version"] = diagram.published
    if session is not None:
        record["session"] = session
    return Turn(diagram, run_id or new_run_id(), store if durable or session is not None else None, dict(inputs),
                session, None, record)


def _check_kept(inputs: Mapping[str, Any]) -> None:
    """Every input as a checkpoint writes it (integers past 64 bits, NaN and the rest exactly), or refused here."""
    for name, value in inputs.items():
        try:
            encode_value(value, name)
        except SnapshotError as exc:
            raise TurnRefused(f"input '{name}' cannot be kept by a durable run: {exc}", reason="input",
                              problems=[f"{name}: {exc}"]) from None


def resume_turn(store: CheckpointStore, run_id: str, *, registry: BlockRegistry, answer: Any = None,
                read_answer: Callable[[Mapping[str, Any] | None], Any] | None = None, from_block: str | None = None,
                take: bool = True, ours: Callable[[Path], bool] | None = None) -> Turn:
    """Run `run_id` goes on: interrupted, from its last checkpoint (the block in flight runs again); waiting, with
    `answer` (or what `read_answer` makes of the Wait's form) checked against the Wait's form first; or, with
    `from_block`, a new run replaying it from that block. Its row is read once, here, and whether it may go on is
    decided here alone. `take`: mark it running in this process (a compare-and-set), so that a second resume is
    refused; a host that hands the run to a worker leaves that to the worker's own `resume_turn`. `ours`: whether
    the host may run this diagram (a folder's), else it is not found.

    TurnRefused: `not_found`, `not_resumable` (finished, running, a subdiagram's, nothing to resume from, a diagram
    changed or gone), `answer` (missing, or one the form refuses: the run stays waiting), `taken`."""
    row = store.run(run_id)
    if row is None or (ours is not None and not ours(Path(str(row["diagram"])))):
        raise TurnRefused(f"no durable run '{run_id}' in the store {store.where} (`diagrama runs` lists them)",
                          reason="not_found")
    if row.get("parent") and from_block is None:
        raise TurnRefused(f"run '{run_id}' is a subdiagram's run, a step of run '{row['parent']}': resume that run "
                          "(its child continues from its own last checkpoint)", reason="not_resumable")
    status = row["status"]
    if row.get("damaged"):
        raise TurnRefused(f"run '{run_id}' cannot go on: {row['damaged']}; {_damaged_hint(run_id, store)}",
                          reason="damaged")
    waiting = row.get("waiting") or {}
    if from_block is None:
        if read_answer is not None:
            answer = read_answer(waiting.get("form") if status == "waiting" else None)
        _check_may_go_on(run_id, status, waiting, answer)
    states = store.states(run_id)
    if not states:
        # Its record is written just before checkpoint 0 (the scope Start made): killed in between, before any block ran.
        raise TurnRefused(f"run '{run_id}' has no checkpoint to resume from: it was stopped before its first, before "
                          f"any block ran; run the diagram again (diagrama run {row['diagram']})",
                          reason="not_resumable")
    diagram = _load(row, registry)
    inputs = dict(row.get("inputs") or {})
    try:
        if from_block is not None:
            resumed = replay_point(run_id, [state for _, state in states], from_block)
            _check_block(diagram, resumed.next, run_id)
            return Turn(diagram, new_run_id(), store, inputs, None, resumed,
                        {"replay_of": run_id, "session": row.get("session"), "inputs": inputs})
        resumed = resumed_from([state for _, state in states], seq=states[-1][0])
    except SnapshotDamaged as exc:
        raise TurnRefused(f"run '{run_id}' cannot go on from its checkpoints: {exc}; {_damaged_hint(run_id, store)}",
                          reason="damaged") from None
    if status == "waiting":
        resumed.answer = Answer(str(waiting.get("block")), answer, float(waiting.get("asked_at") or 0))
    _check_block(diagram, resumed.next, run_id)
    if take and not store.take_over(run_id, row.get("stored_status", status), row.get("pid")):
        raise TurnRefused(f"run '{run_id}' is already being resumed elsewhere", reason="taken")
    session = row.get("session")
    return Turn(diagram, run_id, store, inputs, str(session) if session else None, resumed,
                {"session": session} if session else {})


def _damaged_hint(run_id: str, store: CheckpointStore) -> str:
    return (f"it was cut short or changed outside diagrama in the store {store.where}, and a run never goes on from "
            f"a state it did not write: cancel it (diagrama resume {run_id} --cancel) and run the diagram again")


def _check_may_go_on(run_id: str, status: str, waiting: Mapping[str, Any], answer: Any) -> None:
    if status == "waiting":
        if answer is None:
            raise TurnRefused(f"run '{run_id}' is waiting at '{waiting.get('block')}': {waiting.get('prompt')}; "
                              "answer with --input name=value or --inputs answer.json", reason="answer",
                              problems=["answer: required (the Wait's form)"])
        problems = answer_problems(waiting.get("form"), answer)
        if problems:
            raise TurnRefused(f"the answer does not fit the form of '{waiting.get('block')}' (the run is still "
                              "waiting): " + "; ".join(problems), reason="answer", problems=problems)
    elif status == INTERRUPTED:
        if answer is not None:
            raise TurnRefused(f"run '{run_id}' was interrupted, not stopped at a Wait: it is not waiting for an "
                              "answer; resume it without one", reason="answer",
                              problems=["answer: not taken by an interrupted run"])
    else:
        hint = " (its process is still alive)" if status == "running" else ""
        raise TurnRefused(f"run '{run_id}' is {status}{hint}: only an interrupted or waiting run resumes "
                          "(replay a finished one with --from BLOCK)", reason="not_resumable")


def carry_on(store: CheckpointStore, diagram: Diagram, run: Mapping[str, Any], *, lost: bool) -> Turn | None:
    """A run handed out before (a batch row's attempt, an API run's task delivered again) that was left in flight:
    the turn that continues it from its last checkpoint under its own id, taken over; None when it cannot go on so
    (not left in flight, a diagram changed since, nothing to resume from) — the caller starts afresh or leaves it.

    Left in flight: its process is gone (`interrupted`), or (`lost`: the broker delivered its task again, so the
    worker that had it was lost) it still says `running` on another host, where no one can look."""
    status = run["status"]
    if not (status == INTERRUPTED or (lost and status == "running" and run.get("host") != host_name())):
        return None
    if not diagram.settings.durable or run.get("content_hash") != diagram.content_hash:
        return None
    states = store.states(str(run["run_id"]))
    if not states:
        return None
    try:
        resumed = resumed_from([state for _, state in states], seq=states[-1][0])
    except (SnapshotError, ValueError, KeyError):
        return None  # written by a version that encoded differently: it starts again
    if resumed.next is not None and resumed.next not in diagram.blocks:
        return None
    if not store.take_over(str(run["run_id"]), run.get("stored_status", "running"), run.get("pid")):
        return None  # another worker took it first
    session = run.get("session")
    return Turn(diagram, str(run["run_id"]), store, dict(run.get("inputs") or {}), str(session) if session else None,
                resumed, {"session": session} if session else {})


def cancel_turn(store: CheckpointStore, run_id: str) -> None:
    """Give up a waiting or interrupted run: `cancelled`, never to go on; its session is let go without its memory
    (the session stays as its last turn that succeeded left it). TurnRefused as `resume_turn`'s."""
    row = store.run(run_id)
    if row is None:
        raise TurnRefused(f"no durable run '{run_id}' in the store {store.where}", reason="not_found")
    status = row["status"]
    if status not in ("waiting", INTERRUPTED):
        raise TurnRefused(f"run '{run_id}' is {status}: only a waiting or interrupted run is cancelled",
                          reason="not_resumable")
    if not store.take_over(run_id, row.get("stored_status", status), row.get("pid")):
        raise TurnRefused(f"run '{run_id}' is already being resumed elsewhere", reason="taken")
    store.end(run_id, "cancelled", None)
    if row.get("session"):
        store.release_session(str(row["session"]), run_id, None)


def _load(row: Mapping[str, Any], registry: BlockRegistry) -> Diagram:
    from engine.compile.loader import load_diagram

    path = Path(str(row["diagram"]))
    if not path.is_file():
        raise TurnRefused(f"run '{row['run_id']}' ran {path}, which is no longer there", reason="not_resumable")
    return load_diagram(path, registry)


def _check_block(diagram: Diagram, block: str | None, run_id: str) -> None:
    if block is not None and block not in diagram.blocks:
        raise TurnRefused(f"run '{run_id}' continues at block '{block}', which {diagram.path.name} no longer has",
                          reason="not_resumable")


# -- running a turn --------------------------------------------------------------------------------------------------


async def run_turn(turn: Turn, *, services: Services, runs_dir: Path | None = Path("runs"),
                   console: Console | None = None, message_level: MessageLevel | None = None,
                   secrets: Iterable[str] = (), access: StoreAccess[Any] | None = None,
                   session_wait_s: float = SESSION_WAIT_S) -> RunResult:
    """Run the turn: hold its session unless it does already (its memory to start with), execute, then store the
    memory if it succeeded and let the session go — unless it stopped unfinished (waiting, interrupted), which keeps
    it (module docstring). `access` reaches the store for the session's statements (default: inline)."""
    store = turn.store
    if store is not None and turn.diagram.settings.durable:
        services.checkpoints = store
    reach = access if access is not None else (inline(store) if store is not None else None)
    remembered: dict[str, Any] | None = None
    if turn.session is not None:
        assert reach is not None, "a session is kept in a store"
        if not turn.held and not await hold_session(turn, reach, wait_s=session_wait_s):
            raise TurnRefused(f"session '{turn.session}' is held by another run, still running after "
                              f"{session_wait_s:g} s", reason="session_busy")
        if turn.stored is not None and turn.resumed is None:  # a resumed run's scope holds its memory already
            remembered = {name: turn.stored[name] for name in turn.memory if name in turn.stored}
    try:
        result = await execute(turn.diagram, turn.inputs if turn.resumed is None else None, runs_dir=runs_dir,
                               services=services, run_id=turn.run_id, console=console, message_level=message_level,
                               secrets=secrets, resume=turn.resumed, remembered=remembered, record=turn.record,
                               budget=turn.budget)
    except Exception:
        if turn.session is not None and reach is not None:  # it never got going (its store could not be written)
            await reach(_releaser(turn, None))
        raise
    # Interrupted (Ctrl-C, a cancellation: no result) or waiting, the turn keeps its session until it goes on.
    if turn.session is not None and reach is not None and result.status not in ("waiting", INTERRUPTED):
        await reach(_releaser(turn, result))  # succeeded: its memory stored; failed: the session as it was
    return result


async def hold_session(turn: Turn, access: StoreAccess[Any], *, wait_s: float = SESSION_WAIT_S) -> bool:
    """Hold the turn's session, its stored memory kept on the turn (`stored`): True once held; False when another
    turn of it still runs after `wait_s` (0: one attempt, as a door does before it answers). TurnRefused
    (`session_busy`, naming the run) at once while an unfinished turn holds it, or when the session is another
    diagram's conversation."""
    session, run_id = turn.session, turn.run_id
    assert session is not None
    diagram = str(turn.diagram.path.resolve())
    found = await access(lambda store: store.session(session))
    if found is not None and found.get("diagram") and str(found["diagram"]) != diagram:
        # Its memory is another diagram's variables.
        other = Path(str(found["diagram"]))
        raise TurnRefused(f"session '{session}' is a conversation with robot '{other.stem}' ({other.name}), not "
                          f"'{turn.diagram.path.stem}'", reason="session_busy")
    deadline = time.monotonic() + wait_s
    while True:
        claim: SessionClaim = await access(lambda store: store.try_claim_session(session, diagram, run_id))
        if claim.held:
            turn.held = True
            try:
                stored = decode(claim.state) if claim.state else None
                if stored is not None and not isinstance(stored, dict):
                    raise SnapshotDamaged(f"a {type(stored).__name__}, not the memory's mapping")
            except SnapshotDamaged as exc:
                await access(lambda store: store.release_session(session, run_id, None))
                turn.held = False
                raise TurnRefused(f"session '{session}' cannot go on: its stored memory is damaged ({exc}); "
                                  f"forget it to start the conversation afresh (diagrama sessions --forget {session})",
                                  reason="damaged") from None
            turn.stored = stored
            return True
        if claim.holder_status in ("waiting", INTERRUPTED):
            raise TurnRefused(_unfinished(session, str(claim.holder), str(claim.holder_status)), reason="session_busy")
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL_S)


def _releaser(turn: Turn, result: RunResult | None) -> Callable[[CheckpointStore], None]:
    from engine.format.snapshot import encode

    session, run_id = turn.session, turn.run_id
    assert session is not None
    state = encode({name: result.variables.get(name) for name in turn.memory}) \
        if result is not None and result.succeeded else None

    def release(store: CheckpointStore) -> None:
        store.release_session(session, run_id, state)

    return release


def _unfinished(session: str, holder: str, status: str) -> str:
    if status == "waiting":
        what, how = "waits for an answer", f"answer it (diagrama resume {holder} --input name=value)"
    else:
        what, how = "was interrupted", f"resume it (diagrama resume {holder})"
    return (f"session '{session}' has an unfinished turn: run {holder} {what}; {how}, or cancel it "
            f"(diagrama resume {holder} --cancel), before the next turn")


async def resume_run(store: CheckpointStore, run_id: str, *, registry: BlockRegistry, answer: Any = None,
                     from_block: str | None = None, services: Services | None = None,
                     runs_dir: Path | None = Path("runs"), console: Console | None = None) -> RunResult:
    """Resume (or replay) run `run_id` from Python: `resume_turn`, then `run_turn`."""
    from engine.runtime.context import Services

    turn = resume_turn(store, run_id, registry=registry, answer=answer, from_block=from_block)
    return await run_turn(turn, services=services or Services(), runs_dir=runs_dir, console=console)
