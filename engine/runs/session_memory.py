"""A session's memory kept once: its turns' checkpoints and its log hold changes, never another copy.

A turn of a session starts from the memory its session's last good turn stored (the session's turn t). Written as
they are, each of its checkpoints would repeat that memory, and so would every later turn's: a store growing with
the square of the conversation. So the checkpoint store writes a session turn's checkpoints with each memory
variable as its change against turn t's memory (`compact`), and reads them back whole (`expand`), exactly as they
were written. Turn t's memory is the session's row while t is its last turn; an older turn's is rebuilt from the
session's log (the `session_memory` table: each stored turn's change against the turn before, `log_rows`), kept
until the session is forgotten (`memory_at`). Each checkpoint names its base by session, turn and a digest of the
memory, so a base that is not the one it was written against (a session forgotten and begun again) is never
used: such a checkpoint keeps no `v` and reads as damaged.

Changes are structural, on the encoded JSON (engine.format.snapshot's form, so a data table is a mapping whose rows
are a list): the base's value unchanged; a list that keeps a run of the base's items and adds some (a conversation
that grows, or one that slides); a mapping whose entries change one by one; or a value written whole.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["MemoryBase", "compact", "expand", "expand_all", "is_compact", "log_rows", "memory_at", "rewritten", "tombstone",
           "tombstone_of"]

_COMPACT = b'{"m":'
"""How a compacted checkpoint's bytes begin (encode_state's begin with `{"h":`)."""
_SAME, _WHOLE, _LIST, _MAP = "=", "!", "+", "{"
_TRIES = 4
"""How many places in the base a sliding list is looked for before the change is taken as a common prefix."""


@dataclass(frozen=True)
class MemoryBase:
    """A session's memory after its turn `turn` (encoded values by name), and its digest."""

    session: str
    turn: int
    values: dict[str, Any]

    @functools.cached_property
    def digest(self) -> str:  # once per base: a turn's every checkpoint names it
        return hashlib.sha256(orjson.dumps(self.values)).hexdigest()[:32]


def is_compact(state: bytes) -> bool:
    return state.startswith(_COMPACT)


def compact(state: bytes, base: MemoryBase) -> bytes:
    """A checkpoint's bytes with each memory variable written as its change against `base`."""
    if not base.values:
        return state
    whole = orjson.loads(state)
    values: dict[str, Any] = whole["v"]
    changes = {name: diff(value, base.values[name]) for name, value in values.items() if name in base.values}
    kept = {name: None if name in changes else value for name, value in values.items()}
    return orjson.dumps({"m": {"s": base.session, "t": base.turn, "d": base.digest, "c": changes},
                         "h": whole["h"], "w": kept, "l": whole["l"]})


def expand(state: bytes, base_of: Callable[[str, int], MemoryBase | None]) -> bytes:
    """A checkpoint's bytes as they were written: a compacted one rebuilt on its base (`base_of(session, turn)`);
    one whose base is gone or is not the one it was written against stays compacted (it reads as damaged)."""
    if not is_compact(state):
        return state
    try:
        whole = orjson.loads(state)
        mark = whole["m"]
        base = base_of(str(mark["s"]), int(mark["t"]))
        if base is None or base.digest != mark["d"]:
            return state
        changes = mark["c"]
        values = {name: patch(base.values[name], changes[name]) if name in changes else value
                  for name, value in whole["w"].items()}
        return orjson.dumps({"h": whole["h"], "v": values, "l": whole["l"]})
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
        return state


def expand_all(found: list[tuple[int, bytes]],
               memory_of: Callable[[str, int], MemoryBase | None]) -> list[tuple[int, bytes]]:
    """A run's checkpoints (seq, state) as they were written, each base read once (`memory_of(session, turn)`)."""
    if not any(is_compact(state) for _, state in found):
        return found
    bases: dict[tuple[str, int], MemoryBase | None] = {}

    def base_of(session: str, turn: int) -> MemoryBase | None:
        if (session, turn) not in bases:
            bases[session, turn] = memory_of(session, turn)
        return bases[session, turn]

    return [(seq, expand(state, base_of)) for seq, state in found]


def rewritten(found: list[tuple[int, bytes]],
              memory_of: Callable[[str, int], MemoryBase | None]) -> list[tuple[int, bytes]]:
    """The compacted ones of a run's checkpoints written whole (where their base is still there): before the session
    they were written against is forgotten, an unfinished turn's, so that it goes on as it stopped."""
    return [(seq, whole) for (seq, state), (_, whole) in zip(found, expand_all(found, memory_of), strict=True)
            if whole is not state]


def log_rows(turn: int, old: bytes | None, new: bytes, logged: bool) -> list[tuple[int, bytes]]:
    """The session log's rows for storing turn `turn + 1` (`new`, a session row's state) over turn `turn`'s memory
    (`old`): its change against it; and, where the log lacks turn `turn` (`logged` false: a session from before the
    log), that turn's memory written whole first, so that the log reaches every turn from then on."""
    before = _loaded(old)
    rows: list[tuple[int, bytes]] = []
    if turn > 0 and not logged and isinstance(before, dict):
        rows.append((turn, orjson.dumps([_WHOLE, before])))
    memory = orjson.loads(new)
    rows.append((turn + 1, orjson.dumps(diff(memory, before) if isinstance(before, dict) else [_WHOLE, memory])))
    return rows


def memory_at(session: str, turn: int, current: tuple[int, bytes | None] | None,
              log: Callable[[], list[tuple[int, bytes]]]) -> MemoryBase | None:
    """The session's memory after `turn`: its row's (`current`: its turn and state) when that is the turn, else
    rebuilt from its log (`log()`: the rows up to `turn`, oldest first) from the last one written whole; None when
    the log does not reach it."""
    if current is not None and current[0] == turn:
        values = _loaded(current[1]) if current[1] else {}
        return MemoryBase(session, turn, values) if isinstance(values, dict) else None
    if turn == 0:
        return MemoryBase(session, 0, {})
    entries = [(number, _loaded(entry)) for number, entry in log()]
    starts = [index for index, (_, entry) in enumerate(entries) if type(entry) is list and entry[:1] == [_WHOLE]]
    if not starts:
        return None
    entries = entries[starts[-1]:]
    if [number for number, _ in entries] != list(range(entries[0][0], turn + 1)):
        return None  # a turn missing between the last whole one and `turn`
    try:
        memory: Any = {}
        for _, entry in entries:
            memory = patch(memory, entry)
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return MemoryBase(session, turn, memory) if isinstance(memory, dict) else None


def tombstone(**why: Any) -> bytes:
    """What stands for a run's checkpoints once they are deleted (seq 0): when, and why (`after`: the retention in
    seconds; `forgotten`: the session forgotten)."""
    return orjson.dumps({"pruned": why})


def tombstone_of(state: bytes) -> dict[str, Any] | None:
    """What a tombstone says (None: `state` is a checkpoint)."""
    if not state.startswith(b'{"pruned":'):
        return None
    try:
        found = orjson.loads(state)["pruned"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    return found if isinstance(found, dict) else None


# -- changes ---------------------------------------------------------------------------------------------------------


def diff(new: Any, old: Any) -> list[Any]:
    """`new` as a change against `old` (`patch(old, diff(new, old))` is `new`, the same types and order)."""
    if _same(new, old):
        return [_SAME]
    if type(new) is list and type(old) is list:
        kept = _kept_run(new, old)
        if kept is not None:
            start, end, added = kept
            return [_LIST, start, end, new[added:]]
    elif type(new) is dict and type(old) is dict and new.keys() & old.keys():
        return [_MAP, {key: diff(value, old[key]) if key in old else [_WHOLE, value] for key, value in new.items()}]
    return [_WHOLE, new]


def patch(old: Any, change: Any) -> Any:
    """`change` applied to `old`; ValueError (or KeyError, TypeError) when it does not fit."""
    op = change[0]
    if op == _SAME:
        return old
    if op == _WHOLE:
        return change[1]
    if op == _LIST:
        start, end, added = change[1], change[2], change[3]
        if type(old) is not list or not 0 <= start <= end <= len(old) or type(added) is not list:
            raise ValueError("a list's change does not fit its base")
        return old[start:end] + added
    if op == _MAP:
        if type(old) is not dict:
            raise ValueError("a mapping's change does not fit its base")
        return {key: item[1] if item[0] == _WHOLE else patch(old[key], item) for key, item in change[1].items()}
    raise ValueError(f"an unknown change {op!r}")


def _kept_run(new: list[Any], old: list[Any]) -> tuple[int, int, int] | None:
    """(start, end, added): `new` is old[start:end] followed by new[added:]. The whole base kept (a list that grew),
    else the base's tail (a list that slides: its oldest items dropped), else the longest common prefix."""
    size = len(old)
    if size and len(new) >= size and _same(new[size - 1], old[-1]) and all(map(_same, new[:size], old)):
        return 0, size, size
    if new and size:
        tries = 0
        for start in range(1, size):
            if not _same(old[start], new[0]):
                continue
            tail = size - start
            if tail <= len(new) and all(map(_same, old[start:], new[:tail])):
                return start, size, tail
            tries += 1
            if tries == _TRIES:
                break
    common = 0
    for ours, theirs in zip(new, old, strict=False):
        if not _same(ours, theirs):
            break
        common += 1
    return (0, common, common) if common else None


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types, in the same order (1 is not 1.0 nor True; -0.0 is not 0.0)."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is list:
        return len(a) == len(b) and all(map(_same, a, b))
    if kind is dict:
        return len(a) == len(b) and list(a) == list(b) and all(_same(a[key], b[key]) for key in a)
    if kind is float:
        return bool(a.hex() == b.hex())
    return bool(a == b)


def _loaded(data: bytes | None) -> Any:
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
