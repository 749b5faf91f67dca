"""Durable runs as the executor sees them: where checkpoints go, what one holds, and a run resumed from one.

A checkpoint is the run's state after a block with effects (`Block.effects`): the block to run
next and the one it came from, the scope's variables, the loops' positions (each Loop's own
state, through `Block.save_state`), the step count, tokens, errors so far and the blocks run
since the last checkpoint. Blocks without effects are recomputed on resume, so they write
nothing. The bytes are the exact encoding of engine.format.snapshot, scrubbed of the run's
secrets (a key held in a variable comes back as `[REDACTED]`). The store is the caller's
(engine.runs.checkpoints): this layer names what it needs of it as a Protocol.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from engine.format.snapshot import SnapshotDamaged, SnapshotError, decode, encode_value
from engine.format.spec import Budget

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram

__all__ = ["Answer", "Checkpoints", "Resumed", "SnapshotDamaged", "SnapshotError", "decode_state", "encode_state",
           "host_name", "resumed_from", "run_record"]


class Checkpoints(Protocol):
    """Where durable runs write: a run's record (status, pid, host), and its checkpoints in order."""

    def begin(self, run_id: str, fields: Mapping[str, Any]) -> None:
        """A run starts (or resumes): status `running`, with its diagram, pid, host, parent, session."""

    def save(self, run_id: str, seq: int, state: bytes) -> None:
        """Checkpoint `seq` of the run, committed when this returns; OSError if the store cannot take it."""

    def end(self, run_id: str, status: str, waiting: Mapping[str, Any] | None) -> None:
        """The run stopped: succeeded, failed, or waiting (with the Wait's prompt, form and when it asked)."""

    def states(self, run_id: str) -> list[tuple[int, bytes]]:
        """Every checkpoint of a run, oldest first: (seq, state). A resumed run reads its children's here."""


@functools.cache
def host_name() -> str:
    return socket.gethostname()


def run_record(diagram: Diagram, trace_path: Path | None, **extra: Any) -> dict[str, Any]:
    """A durable run's record as it begins (`Checkpoints.begin`): its diagram's file and content hash, the process
    that runs it (pid and host: a reader tells a live run from an interrupted one), its trace; and `extra` (the parent
    run, the session, the run it replays, its inputs)."""
    return {"diagram": str(diagram.path.resolve()), "content_hash": diagram.content_hash, "pid": os.getpid(),
            "host": host_name(), "trace": str(trace_path) if trace_path else None, **extra}


@dataclass
class Answer:
    """A person's answer to the Wait a run is waiting at, and when the Wait asked (its timeout counts from then)."""

    block: str
    value: Any
    asked_at: float


@dataclass
class Resumed:
    """A run's state read back from a checkpoint, to continue from (`execute(resume=...)`)."""

    next: str | None
    came_from: str | None
    values: dict[str, Any]
    loops: dict[str, Any]
    steps: int = 0
    tokens: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    path: list[str] = field(default_factory=list)
    seq: int = 0
    answer: Answer | None = None
    calls: dict[str, int] = field(default_factory=dict)
    """The top run's Subdiagram calls so far per block address (a child's run id counts them)."""
    spend: dict[str, Any] | None = None
    """The top run's cost and usage so far (Spend.state); None from a checkpoint written before runs had one."""
    budget: Budget | None = None
    """The top run's budget as it started (Start's, lowered by `--budget`); None: none, or an older checkpoint."""
    clock: datetime.datetime | None = None
    """The run's clock, the instant it started (`now()`); None: a checkpoint written before runs kept one."""
    steps_counted: bool = False
    """A child's: whether the top run's restored step count has its steps already (it stopped waiting in it)."""


def encode_state(header: dict[str, Any], values: Mapping[str, Any], loops: Mapping[str, Any]) -> bytes:
    """One checkpoint's bytes. SnapshotError names the variable (or `loop ID`) holding what cannot be written."""
    import orjson

    return orjson.dumps({
        "h": header,
        "v": {name: encode_value(value, name) for name, value in values.items()},
        "l": {block: encode_value(state, f"loop {block}") for block, state in loops.items()},
    })


def decode_state(data: bytes) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(header, variables, loop states) of a checkpoint's bytes; SnapshotDamaged for bytes no checkpoint wrote."""
    state = decode(data)
    if not isinstance(state, dict) or not {"h", "v", "l"} <= state.keys():
        raise SnapshotDamaged("not a checkpoint (no header, variables and loops)")
    if not all(isinstance(state[part], dict) for part in ("h", "v", "l")):
        raise SnapshotDamaged("not a checkpoint (its header, variables or loops are no mappings)")
    return state["h"], state["v"], state["l"]


def resumed_from(states: list[bytes], *, seq: int) -> Resumed:
    """The run's state at its last checkpoint, given all its checkpoints' bytes in order (their segments make the
    path so far; only the last is decoded whole). SnapshotDamaged naming the checkpoint that does not decode (cut
    short, edited by hand, tampered with): a run is never resumed from a state it did not write."""
    import orjson

    path: list[str] = []
    for number, earlier in enumerate(states[:-1], 1):
        with _reading(number, len(states)):
            segment = orjson.loads(earlier)["h"]["segment"]
            if not isinstance(segment, list) or not all(isinstance(block, str) for block in segment):
                raise SnapshotDamaged("its path is not a list of block ids")
            path.extend(segment)
    with _reading(len(states), len(states)):
        header, values, loops = decode_state(states[-1])
        path.extend(_field(header, "segment", list))
        return Resumed(next=_field(header, "next", str, optional=True),
                       came_from=_field(header, "from", str, optional=True), values=values, loops=loops,
                       steps=_field(header, "steps", int), tokens=_field(header, "tokens", int),
                       errors=_field(header, "errors", list, optional=True) or [], path=path, seq=seq,
                       calls=_field(header, "calls", dict, optional=True) or {},
                       spend=_spend(_field(header, "spend", dict, optional=True)),
                       budget=_budget(_field(header, "budget", dict, optional=True)),
                       clock=_clock(_field(header, "clock", str, optional=True)))


@contextlib.contextmanager
def _reading(number: int, total: int) -> Iterator[None]:
    """Any way checkpoint `number` fails to decode as SnapshotDamaged naming it."""
    import orjson

    try:
        yield
    except SnapshotDamaged as exc:
        raise SnapshotDamaged(f"checkpoint {number} of {total} is damaged: {exc}") from None
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise SnapshotDamaged(f"checkpoint {number} of {total} is damaged: not a checkpoint "
                              f"({type(exc).__name__}: {exc})") from None


def _spend(state: dict[str, Any] | None) -> dict[str, Any] | None:
    """A header's cost so far, checked (Spend.state's shape), else SnapshotDamaged."""
    if state is None:
        return None
    try:
        usage = state["usage"]
        checked = {"usd": float(state["usd"]), "requests": int(state["requests"]), "unknown": int(state["unknown"]),
                   "usage": {str(kind): int(count) for kind, count in usage.items()},
                   "blocks": {str(block): {"requests": int(own["requests"]), "usd": float(own["usd"]),
                                           "unknown": int(own["unknown"]),
                                           "usage": {str(kind): int(count) for kind, count in own["usage"].items()}}
                              for block, own in (state.get("blocks") or {}).items()}}
    except (KeyError, TypeError, ValueError, AttributeError):
        raise SnapshotDamaged("its header's 'spend' is not a cost so far") from None
    return checked


def _clock(text: str | None) -> datetime.datetime | None:
    """A header's clock, checked (an aware ISO instant), else SnapshotDamaged."""
    if text is None:
        return None
    try:
        instant = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise SnapshotDamaged("its header's 'clock' is not an ISO instant") from None
    if instant.tzinfo is None:
        raise SnapshotDamaged("its header's 'clock' has no offset")
    return instant


def _budget(state: dict[str, Any] | None) -> Budget | None:
    """A header's budget, checked, else SnapshotDamaged."""
    if state is None:
        return None
    try:
        return Budget.model_validate(state)
    except ValueError:
        raise SnapshotDamaged("its header's 'budget' is not a budget") from None


def _field(header: Mapping[str, Any], name: str, kind: type, *, optional: bool = False) -> Any:
    """The header's `name`, of type `kind` (or None, where `optional`), else SnapshotDamaged."""
    value = header.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SnapshotDamaged(f"its header's {name!r} is {type(value).__name__}, not {kind.__name__}")
    return value

