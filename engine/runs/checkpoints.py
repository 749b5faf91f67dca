"""The checkpoint store: durable runs' states, checkpoints and sessions, beside the run store.

Three tables: `run_states` (one row per durable run: status, diagram, pid and host, parent run,
session, the run it replays, what a waiting run asks), `checkpoints` (a run's states in order,
engine.runtime.durable's bytes) and `sessions` (each session's memory values and who holds it).

The default store is the run store's SQLite file, written with the standard library's `sqlite3`
(one connection per process, WAL, `synchronous=NORMAL`, statements prepared once): a checkpoint
is one INSERT committed before the next block with effects starts, about ten microseconds. Any
other SQLAlchemy URL ($DIAGRAMA_STORE) gets the same tables through SQLAlchemy (engine.runs.
checkpoints_sql), slower by a round trip per checkpoint.

A run is `interrupted` when its row says `running` and its process is gone (same host, pid dead):
engine.runs.traces tells, as for traces.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from engine.runs.traces import INTERRUPTED, process_gone

__all__ = ["CheckpointStore", "SqliteCheckpoints", "live_status", "open_checkpoints"]

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
"""
_FIELDS = ("diagram", "content_hash", "pid", "host", "trace", "parent", "session", "replay_of", "inputs")


def live_status(row: Mapping[str, Any]) -> str:
    """A run's status from its row: `running` becomes `interrupted` once its process is known to be gone."""
    status = str(row["status"])
    if status == "running" and process_gone(row.get("pid"), row.get("host"), float(row.get("started") or 0)):
        return INTERRUPTED
    return status


class SqliteCheckpoints:
    """The checkpoint store in a SQLite file; safe for several processes at once (WAL, a busy timeout)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            # Autocommit: each statement is its own transaction, committed when it returns.
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise OSError(f"the checkpoint store {path} cannot be opened: {exc}") from exc
        self._db.row_factory = sqlite3.Row

    # -- what the executor writes (engine.runtime.durable.Checkpoints) ---------------------------------
    def begin(self, run_id: str, fields: Mapping[str, Any]) -> None:
        now = time.time()
        values = [orjson.dumps(fields[k]).decode() if k == "inputs" and fields.get(k) is not None else fields.get(k)
                  for k in _FIELDS]
        try:
            self._db.execute(
                f"INSERT INTO run_states (run_id, {', '.join(_FIELDS)}, status, started, updated) "
                f"VALUES (?, {', '.join('?' for _ in _FIELDS)}, 'running', ?, ?) "
                "ON CONFLICT (run_id) DO UPDATE SET status = 'running', pid = excluded.pid, host = excluded.host, "
                "content_hash = excluded.content_hash, updated = excluded.updated, waiting = NULL",
                (run_id, *values, now, now))
        except sqlite3.Error as exc:
            raise OSError(str(exc)) from exc

    def save(self, run_id: str, seq: int, state: bytes) -> None:
        try:
            self._db.execute("INSERT OR REPLACE INTO checkpoints (run_id, seq, state) VALUES (?, ?, ?)",
                             (run_id, seq, state))
        except sqlite3.Error as exc:
            raise OSError(str(exc)) from exc

    def end(self, run_id: str, status: str, waiting: Mapping[str, Any] | None) -> None:
        try:
            self._db.execute("UPDATE run_states SET status = ?, waiting = ?, updated = ? WHERE run_id = ?",
                             (status, orjson.dumps(waiting).decode() if waiting else None, time.time(), run_id))
        except sqlite3.Error as exc:
            raise OSError(str(exc)) from exc

    # -- what resume, replay and `diagrama runs` read -------------------------------------------------
    def run(self, run_id: str) -> dict[str, Any] | None:
        found = self._db.execute("SELECT * FROM run_states WHERE run_id = ?", (run_id,)).fetchone()
        return _row(found) if found else None

    def runs(self, limit: int = 20, *, statuses: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """The newest durable runs (by last change), with their live status; only `statuses` when given."""
        query = "SELECT * FROM run_states"
        if statuses:
            wanted = {*statuses, "running"} if INTERRUPTED in statuses else set(statuses)
            query += f" WHERE status IN ({', '.join('?' for _ in wanted)})"
            found = self._db.execute(query + " ORDER BY updated DESC LIMIT ?", (*wanted, limit * 4)).fetchall()
        else:
            found = self._db.execute(query + " ORDER BY updated DESC LIMIT ?", (limit,)).fetchall()
        rows = [_row(row) for row in found]
        if statuses:
            rows = [row for row in rows if row["status"] in statuses]
        return rows[:limit]

    def attempts(self, run_id: str) -> list[dict[str, Any]]:
        """The durable runs of a batch row: `run_id` (its first attempt) and its later attempts (`run_id-aN`)."""
        found = self._db.execute("SELECT * FROM run_states WHERE run_id = ? OR run_id LIKE ? ESCAPE '\\'",
                                 (run_id, run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                                  + "-a%")).fetchall()
        return [_row(row) for row in found]

    def states(self, run_id: str) -> list[tuple[int, bytes]]:
        """Every checkpoint of a run, oldest first: (seq, state)."""
        return [(int(seq), bytes(state)) for seq, state in
                self._db.execute("SELECT seq, state FROM checkpoints WHERE run_id = ? ORDER BY seq", (run_id,))]

    def forget_run(self, run_id: str) -> None:
        self._db.execute("DELETE FROM checkpoints WHERE run_id = ?", (run_id,))
        self._db.execute("DELETE FROM run_states WHERE run_id = ?", (run_id,))

    # -- sessions (engine.runs.sessions) -----------------------------------------------------------------
    @property
    def db(self) -> sqlite3.Connection:
        return self._db

    def close(self) -> None:
        self._db.close()


def _row(row: sqlite3.Row) -> dict[str, Any]:
    found = dict(row)
    for name in ("inputs", "waiting"):
        if found.get(name):
            found[name] = orjson.loads(found[name])
    found["status"] = live_status(found)
    return found


CheckpointStore = SqliteCheckpoints
"""The store's interface (the SQLAlchemy one offers the same methods)."""


def open_checkpoints(url: str | None, runs_dir: Path) -> SqliteCheckpoints:
    """The checkpoint store at a `sqlite:///` URL, else $DIAGRAMA_STORE, else `runs_dir/diagrama.db`.

    OSError for another database's URL, for now: durable runs use the SQLite store.
    """
    import os

    url = url or os.environ.get("DIAGRAMA_STORE") or None
    if url is None:
        return SqliteCheckpoints(runs_dir / "diagrama.db")
    if url.startswith("sqlite:///"):
        return SqliteCheckpoints(Path(url.removeprefix("sqlite:///")))
    raise OSError(f"durable runs keep their checkpoints in a SQLite store; {url.split(':', 1)[0]} is not one yet "
                  "(set `durable: false` on Start to run without checkpoints)")
