"""The checkpoint store: durable runs' states, checkpoints and sessions, beside the run store.

Four tables: `run_states` (one row per durable run: status, diagram, pid and host, parent run,
session, the run it replays, what a waiting run asks), `checkpoints` (a run's states in order,
engine.runtime.durable's bytes), `sessions` (each session's memory values and who holds it) and
`session_memory` (each stored turn's memory as its change against the turn before). A session
turn's checkpoints keep its memory as changes against the memory it began with, so the store keeps
a session's memory once, not once a checkpoint (engine.runs.session_memory); `prune` deletes
finished runs' checkpoints after a retention, leaving a tombstone that a replay names.

The default store is the run store's SQLite file, written with the standard library's `sqlite3`
(one connection per process, WAL, `synchronous=NORMAL`, statements prepared once): a checkpoint
is one INSERT committed before the next block with effects starts, about ten microseconds. Any
other SQLAlchemy URL ($DIAGRAMA_STORE) gets the same tables through SQLAlchemy (engine.runs.
checkpoints_sql), slower by a round trip per checkpoint.

Callers see the `CheckpointStore` protocol only: the executor's three writes, what resume and
`diagrama runs` read, `take_over` (the compare-and-set of two resumes) and the session statements
(engine.runs.sessions keeps the encoding and the waiting). A run is `interrupted` when its row says
`running` and its process is gone (same host, pid dead): engine.runs.traces tells, as for traces.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from engine.format.snapshot import SnapshotDamaged, decode, encode_value
from engine.format.sqlite_files import BUSY_TIMEOUT_S, sqlite_pragmas
from engine.runs.session_memory import MemoryBase, compact, expand_all, log_rows, memory_at, rewritten, tombstone
from engine.runs.traces import INTERRUPTED, process_gone

__all__ = ["FINISHED", "RUN_FIELDS", "CheckpointStore", "Pruned", "SessionClaim", "SqliteCheckpoints", "in_parts",
           "live_status", "open_checkpoints", "run_row", "session_holder", "stored_json"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_states (
    run_id TEXT PRIMARY KEY, diagram TEXT NOT NULL, content_hash TEXT, status TEXT NOT NULL, pid INTEGER,
    host TEXT, trace TEXT, parent TEXT, session TEXT, replay_of TEXT, inputs TEXT, started REAL, updated REAL,
    waiting TEXT);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, state BLOB NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY, diagram TEXT, state BLOB, turn INTEGER NOT NULL DEFAULT 0, holder TEXT,
    holder_pid INTEGER, holder_host TEXT, held_since REAL, updated REAL);
CREATE TABLE IF NOT EXISTS session_memory (
    session TEXT NOT NULL, turn INTEGER NOT NULL, change BLOB NOT NULL, PRIMARY KEY (session, turn)) WITHOUT ROWID;
"""
RUN_FIELDS = ("diagram", "content_hash", "pid", "host", "trace", "parent", "session", "replay_of", "inputs")
FINISHED = ("succeeded", "failed", "cancelled")
"""The statuses of a run that never goes on: its checkpoints serve replays only, and `prune` may delete them."""


def live_status(row: Mapping[str, Any]) -> str:
    """A run's status from its row: `running` becomes `interrupted` once its process is known to be gone."""
    status = str(row["status"])
    if status == "running" and process_gone(row.get("pid"), row.get("host"), float(row.get("started") or 0)):
        return INTERRUPTED
    return status


def session_holder(row: Mapping[str, Any] | None, run_id: str, holder_run: Mapping[str, Any] | None) -> str | None:
    """Who keeps run `run_id` from a session whose row is `row`: None when the run may take it (nobody holds it, the
    run held it before: a resumed turn), else the holding turn's status. A turn holds its session until it ends and
    lets go: one `running` (wait for it), or one that stopped unfinished, `waiting` at a Wait or `interrupted` (the new
    turn is refused until it is answered, resumed or cancelled). A turn that ended lets go as soon as its memory is
    stored, in the same process: its session is waited for while that process lives, free once it is gone."""
    if row is None or row["holder"] is None or row["holder"] == run_id:
        return None
    if holder_run is not None:
        status = live_status(holder_run)
        if status in ("running", "waiting", INTERRUPTED):
            return status
    if process_gone(row["holder_pid"], row["holder_host"], float(row["held_since"] or 0)):
        return None
    return "running"


@dataclass(frozen=True)
class SessionClaim:
    """One attempt at a session: `held` with its stored memory (`state`), or not, naming the turn that holds it and
    that turn's status (`running`: wait for it; `waiting` or `interrupted`: an unfinished turn)."""

    held: bool
    state: bytes | None = None
    holder: str | None = None
    holder_status: str | None = None


@dataclass(frozen=True)
class Pruned:
    """What `prune` deleted: the finished runs whose checkpoints went (`runs`, the top runs; `children`, their
    subdiagrams' runs), how many checkpoints and their bytes, and each pruned run's session (None: none). `records`:
    the run store's records of pruned session turns that lost their memory variables (engine.runs.prune)."""

    runs: list[str]
    sessions: dict[str, str | None]
    children: int = 0
    checkpoints: int = 0
    bytes: int = 0
    records: int = 0


class CheckpointStore(Protocol):
    """What callers use of a checkpoint store: SqliteCheckpoints (the default, stdlib sqlite3) and
    engine.runs.checkpoints_sql.SqlCheckpoints (any other SQLAlchemy URL) both offer it."""

    url: str
    """The store's SQLAlchemy URL (`sqlite:///…` for the file)."""

    @property
    def where(self) -> str:
        """The store as a message names it: the file, or the URL without its password."""

    def begin(self, run_id: str, fields: Mapping[str, Any]) -> None: ...
    def save(self, run_id: str, seq: int, state: bytes) -> None: ...
    def end(self, run_id: str, status: str, waiting: Mapping[str, Any] | None) -> None: ...
    def run(self, run_id: str) -> dict[str, Any] | None: ...
    def runs(self, limit: int = 20, *, statuses: tuple[str, ...] = ()) -> list[dict[str, Any]]: ...
    def attempts(self, run_id: str) -> list[dict[str, Any]]: ...
    def states(self, run_id: str) -> list[tuple[int, bytes]]:
        """Every checkpoint of a run, oldest first, as the run wrote it: (seq, state). A run whose checkpoints were
        pruned has only its tombstone (seq 0: engine.runs.session_memory.tombstone_of)."""

    def forget_run(self, run_id: str) -> None: ...

    def prune(self, older_than_s: float) -> Pruned:
        """Delete the checkpoints of finished runs (FINISHED) whose record has not changed for `older_than_s`
        seconds, with their subdiagrams' runs', leaving each a tombstone; never a running, waiting or interrupted
        run's, nor a session's memory. Their records stay (`diagrama runs`, a replay's refusal reads them)."""

    def take_over(self, run_id: str, status: str, pid: Any) -> bool:
        """Mark the run `running` in this process if its row still has `status` and `pid` (a compare-and-set)."""

    def try_claim_session(self, session: str, diagram: str, run_id: str) -> SessionClaim:
        """One attempt at holding `session` for `run_id`: its stored state once held, else the turn that holds it
        and that turn's status (`session_holder`). Two runs never both hold it while neither let go."""

    def release_session(self, session: str, run_id: str, state: bytes | None) -> None:
        """Let go of `session` if `run_id` holds it; with `state`, store it and count a turn."""

    def session(self, session: str) -> dict[str, Any] | None:
        """A session's row: session, diagram, turn, state, updated, holder."""

    def session_names(self, limit: int) -> list[str]:
        """The newest sessions' names (by last change)."""

    def forget_session(self, session: str) -> bool:
        """Delete a session, its memory and its log; its finished turns' checkpoints go too (a tombstone says so),
        an unfinished turn's are written whole first (it resumes as it stopped). Whether there was one."""

    def reopen(self) -> CheckpointStore:
        """The same store through a connection of its own (for another thread); close it when done."""

    def close(self) -> None: ...


class SqliteCheckpoints:
    """The checkpoint store in a SQLite file; safe for several processes at once (WAL, a busy timeout)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.url = f"sqlite:///{path}"
        try:
            # Autocommit: each statement is its own transaction, committed when it returns.
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
            sqlite_pragmas(self._db)
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise OSError(f"the checkpoint store {path} cannot be opened: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        self._bases: dict[str, MemoryBase] = {}
        """The memory each session turn running here began with, by run id: its checkpoints are written against it."""

    # -- what the executor writes (engine.runtime.durable.Checkpoints) ---------------------------------
    def begin(self, run_id: str, fields: Mapping[str, Any]) -> None:
        now = time.time()
        values = [stored_json(fields[k], k) if k == "inputs" and fields.get(k) is not None else fields.get(k)
                  for k in RUN_FIELDS]
        try:
            self._db.execute(
                f"INSERT INTO run_states (run_id, {', '.join(RUN_FIELDS)}, status, started, updated) "
                f"VALUES (?, {', '.join('?' for _ in RUN_FIELDS)}, 'running', ?, ?) "
                "ON CONFLICT (run_id) DO UPDATE SET status = 'running', pid = excluded.pid, host = excluded.host, "
                "content_hash = excluded.content_hash, updated = excluded.updated, waiting = NULL",
                (run_id, *values, now, now))
            self._bases.pop(run_id, None)
            if fields.get("session") and not fields.get("parent"):  # a session's turn (or a replay of one)
                base = self._memory(str(fields["session"]))
                if base is not None and base.values:
                    self._bases[run_id] = base
        except sqlite3.Error as exc:
            raise OSError(str(exc)) from exc

    def save(self, run_id: str, seq: int, state: bytes) -> None:
        base = self._bases.get(run_id)
        if base is not None:
            state = compact(state, base)
        try:
            self._db.execute("INSERT OR REPLACE INTO checkpoints (run_id, seq, state) VALUES (?, ?, ?)",
                             (run_id, seq, state))
        except sqlite3.Error as exc:
            raise OSError(str(exc)) from exc

    def end(self, run_id: str, status: str, waiting: Mapping[str, Any] | None) -> None:
        self._bases.pop(run_id, None)
        try:
            self._db.execute("UPDATE run_states SET status = ?, waiting = ?, updated = ? WHERE run_id = ?",
                             (status, stored_json(waiting, "waiting") if waiting else None, time.time(), run_id))
        except sqlite3.Error as exc:
            raise OSError(str(exc)) from exc

    # -- what resume, replay and `diagrama runs` read -------------------------------------------------
    def run(self, run_id: str) -> dict[str, Any] | None:
        found = self._db.execute("SELECT * FROM run_states WHERE run_id = ?", (run_id,)).fetchone()
        return run_row(found) if found else None

    def runs(self, limit: int = 20, *, statuses: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """The newest durable runs (by last change), with their live status; only `statuses` when given. A
        subdiagram's run (one with a parent) is its parent's step, not listed."""
        query = "SELECT * FROM run_states WHERE parent IS NULL"
        if statuses:
            wanted = {*statuses, "running"} if INTERRUPTED in statuses else set(statuses)
            query += f" AND status IN ({', '.join('?' for _ in wanted)})"
            found = self._db.execute(query + " ORDER BY updated DESC LIMIT ?", (*wanted, limit * 4)).fetchall()
        else:
            found = self._db.execute(query + " ORDER BY updated DESC LIMIT ?", (limit,)).fetchall()
        rows = [run_row(row) for row in found]
        if statuses:
            rows = [row for row in rows if row["status"] in statuses]
        return rows[:limit]

    def attempts(self, run_id: str) -> list[dict[str, Any]]:
        """The durable runs of a batch row: `run_id` (its first attempt) and its later attempts (`run_id-aN`)."""
        found = self._db.execute("SELECT * FROM run_states WHERE parent IS NULL AND (run_id = ? OR run_id LIKE ? "
                                 "ESCAPE '\\')",
                                 (run_id, run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                                  + "-a%")).fetchall()
        return [run_row(row) for row in found]

    def states(self, run_id: str) -> list[tuple[int, bytes]]:
        return expand_all([(int(seq), bytes(state)) for seq, state in self._db.execute(
            "SELECT seq, state FROM checkpoints WHERE run_id = ? ORDER BY seq", (run_id,))], self._memory)

    def _memory(self, session: str, turn: int | None = None) -> MemoryBase | None:
        """The session's memory after `turn` (None: its last), from its row or its log."""
        row = self._db.execute("SELECT state, turn FROM sessions WHERE session = ?", (session,)).fetchone()
        if row is None:
            return None
        current = (int(row["turn"]), bytes(row["state"]) if row["state"] else None)
        wanted = current[0] if turn is None else turn
        return memory_at(session, wanted, current, lambda: [(int(n), bytes(change)) for n, change in self._db.execute(
            "SELECT turn, change FROM session_memory WHERE session = ? AND turn <= ? ORDER BY turn",
            (session, wanted))])

    def forget_run(self, run_id: str) -> None:
        self._db.execute("DELETE FROM checkpoints WHERE run_id = ?", (run_id,))
        self._db.execute("DELETE FROM run_states WHERE run_id = ?", (run_id,))

    def take_over(self, run_id: str, status: str, pid: Any) -> bool:
        found = self._db.execute(
            "UPDATE run_states SET status = 'running', pid = ?, host = ?, updated = ? "
            "WHERE run_id = ? AND status = ? AND pid IS ?",
            (os.getpid(), socket.gethostname(), time.time(), run_id, status, pid))
        return found.rowcount == 1

    # -- sessions (engine.runs.sessions) -----------------------------------------------------------------
    def try_claim_session(self, session: str, diagram: str, run_id: str) -> SessionClaim:
        db = self._db
        db.execute("BEGIN IMMEDIATE")  # one writer decides: no two runs take the session at once
        try:
            row = db.execute("SELECT state, holder, holder_pid, holder_host, held_since FROM sessions "
                             "WHERE session = ?", (session,)).fetchone()
            holder_run = None
            if row is not None and row["holder"] is not None and row["holder"] != run_id:
                found = db.execute("SELECT status, pid, host, started FROM run_states WHERE run_id = ?",
                                   (row["holder"],)).fetchone()
                holder_run = dict(found) if found is not None else None
            kept_by = session_holder(row, run_id, holder_run)
            if kept_by is None:
                now = time.time()
                db.execute("INSERT INTO sessions (session, diagram, holder, holder_pid, holder_host, held_since, "
                           "updated) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session) DO UPDATE SET "
                           "holder = excluded.holder, holder_pid = excluded.holder_pid, "
                           "holder_host = excluded.holder_host, held_since = excluded.held_since",
                           (session, diagram, run_id, os.getpid(), socket.gethostname(), now, now))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if kept_by is not None:
            return SessionClaim(False, holder=row["holder"], holder_status=kept_by)
        return SessionClaim(True, bytes(row["state"]) if row is not None and row["state"] else None, run_id)

    def release_session(self, session: str, run_id: str, state: bytes | None) -> None:
        if state is None:
            self._db.execute("UPDATE sessions SET holder = NULL, holder_pid = NULL WHERE session = ? AND holder = ?",
                             (session, run_id))
            return
        db = self._db
        db.execute("BEGIN IMMEDIATE")  # the memory and its log row together
        try:
            row = db.execute("SELECT state, turn FROM sessions WHERE session = ? AND holder = ?",
                             (session, run_id)).fetchone()
            if row is not None:
                turn = int(row["turn"])
                logged = db.execute("SELECT 1 FROM session_memory WHERE session = ? AND turn = ?",
                                    (session, turn)).fetchone() is not None
                db.executemany("INSERT OR REPLACE INTO session_memory (session, turn, change) VALUES (?, ?, ?)",
                               [(session, n, change) for n, change in log_rows(turn, row["state"], state, logged)])
                db.execute("UPDATE sessions SET state = ?, turn = turn + 1, holder = NULL, holder_pid = NULL, "
                           "updated = ? WHERE session = ? AND holder = ?", (state, time.time(), session, run_id))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def session(self, session: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM sessions WHERE session = ?", (session,)).fetchone()
        return dict(row) if row is not None else None

    def session_names(self, limit: int) -> list[str]:
        return [str(row[0]) for row in
                self._db.execute("SELECT session FROM sessions ORDER BY updated DESC LIMIT ?", (limit,))]

    def forget_session(self, session: str) -> bool:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for run in db.execute("SELECT run_id, status FROM run_states WHERE session = ?", (session,)).fetchall():
                if run["status"] in FINISHED:
                    self._tombstone([run["run_id"]], tombstone(at=time.time(), forgotten=session))
                    continue
                found = [(int(seq), bytes(state)) for seq, state in
                         db.execute("SELECT seq, state FROM checkpoints WHERE run_id = ?", (run["run_id"],))]
                db.executemany("UPDATE checkpoints SET state = ? WHERE run_id = ? AND seq = ?",
                               [(whole, run["run_id"], seq) for seq, whole in rewritten(found, self._memory)])
            db.execute("DELETE FROM session_memory WHERE session = ?", (session,))
            forgot = db.execute("DELETE FROM sessions WHERE session = ?", (session,)).rowcount > 0
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return forgot

    def prune(self, older_than_s: float) -> Pruned:
        db = self._db
        db.execute("BEGIN IMMEDIATE")  # what is chosen is what is deleted: no run finishes or resumes in between
        try:
            top = db.execute(
                f"SELECT run_id, session FROM run_states r WHERE parent IS NULL AND status IN "
                f"({', '.join('?' for _ in FINISHED)}) AND updated < ? AND EXISTS (SELECT 1 FROM checkpoints c "
                "WHERE c.run_id = r.run_id AND c.seq > 0) ORDER BY updated", (*FINISHED, time.time() - older_than_s)
            ).fetchall()
            runs = [str(row["run_id"]) for row in top]
            children: list[str] = []
            parents = runs
            while parents:  # a subdiagram's run is its parent's step: it goes with it
                parents = [str(found) for part in in_parts(parents) for (found,) in db.execute(
                    f"SELECT run_id FROM run_states WHERE parent IN ({', '.join('?' for _ in part)})", part)]
                children += parents
            count = size = 0
            for part in in_parts([*runs, *children]):
                marks = ", ".join("?" for _ in part)
                found, held = db.execute(f"SELECT COUNT(*), COALESCE(SUM(LENGTH(state)), 0) FROM checkpoints "
                                         f"WHERE run_id IN ({marks}) AND seq > 0", part).fetchone()
                count, size = count + int(found), size + int(held)
            self._tombstone([*runs, *children], tombstone(at=time.time(), after=older_than_s))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return Pruned(runs, {str(row["run_id"]): row["session"] for row in top}, len(children), count, size)

    def _tombstone(self, run_ids: list[str], mark: bytes) -> None:
        """Each run's checkpoints replaced by `mark` (seq 0), inside the caller's transaction."""
        for part in in_parts(run_ids):
            self._db.execute(f"DELETE FROM checkpoints WHERE run_id IN ({', '.join('?' for _ in part)})", part)
            self._db.executemany("INSERT OR REPLACE INTO checkpoints (run_id, seq, state) VALUES (?, 0, ?)",
                                 [(run_id, mark) for run_id in part])

    @property
    def where(self) -> str:
        return str(self.path)

    def reopen(self) -> SqliteCheckpoints:
        return SqliteCheckpoints(self.path)  # a sqlite3 connection is for one thread at a time

    def close(self) -> None:
        self._db.close()


def in_parts(items: list[str], size: int = 500) -> list[list[str]]:
    """`items` in parts of `size`: a statement's parameters stay within what every database takes."""
    return [items[start:start + size] for start in range(0, len(items), size)]


def stored_json(value: Any, where: str) -> str:
    """A record's JSON field (a run's inputs, what its Wait asks) as the checkpoints write values, exactly: integers
    past 64 bits, NaN and the infinities come back as they were (SnapshotError for a value no checkpoint holds)."""
    return orjson.dumps(encode_value(value, where)).decode()


def run_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A `run_states` row as callers read it: its JSON fields decoded, its live status. A field that does not decode
    (a row cut short or edited by hand) reads as None, and `damaged` says which and how: a listing still shows the
    run, and resume refuses to go on from it (engine.runs.turn)."""
    found = dict(row)
    for name in ("inputs", "waiting"):
        if found.get(name):
            try:
                found[name] = decode(found[name])
                if not isinstance(found[name], dict):
                    raise SnapshotDamaged(f"a {type(found[name]).__name__}, not a mapping")
            except SnapshotDamaged as exc:
                found[name] = None
                found["damaged"] = f"its stored {name} is damaged: {exc}"
    found["stored_status"] = found["status"]  # what a take-over compares against (live_status reads it differently)
    found["status"] = live_status(found)
    return found


def open_checkpoints(url: str | None, runs_dir: Path) -> CheckpointStore:
    """The checkpoint store at `url`, else at $DIAGRAMA_STORE, else `runs_dir/diagrama.db` (beside the run store).

    A `sqlite:///` URL is the fast SQLite store; any other SQLAlchemy URL is engine.runs.checkpoints_sql's (OSError,
    naming the URL without its password and the fix, when it cannot connect or its driver is missing).
    """
    url = url or os.environ.get("DIAGRAMA_STORE") or None
    if url is None:
        return SqliteCheckpoints(runs_dir / "diagrama.db")
    if url.startswith("sqlite:///"):
        return SqliteCheckpoints(Path(url.removeprefix("sqlite:///")))
    from engine.runs.checkpoints_sql import SqlCheckpoints

    return SqlCheckpoints(url)
