"""Who started each run of `diagrama api`: the id of the key it came with, kept in the checkpoint store's database
(table `run_owners`) so that every API process sharing the store (two on Celery) and a restarted one agree whose
run it is (engine.web.service.tenants decides what a key may see from it).

A table of its own rather than a column of `run_states` or `runs`: the owner is known, and must be readable, from the
moment the API accepts a run, before any worker has begun it or recorded it, and for a run that keeps no checkpoints
(Start `durable: false`). One row per run, written once; an owner never changes. SQLite through the standard
library (as the checkpoint store's file), any other SQLAlchemy URL through SQLAlchemy, with a pool that pings a
connection before use (a database restarted under a long-running API).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from engine.format.sqlite_files import BUSY_TIMEOUT_S, sqlite_pragmas
from engine.runs.checkpoints import in_parts
from engine.runs.checkpoints_pg import AsyncPgWrites, PgWrites
from engine.runs.sql_urls import conninfo

__all__ = ["RunOwners", "open_owners"]

_TABLE = "run_owners"
_SQLITE_SCHEMA = f"CREATE TABLE IF NOT EXISTS {_TABLE} (run_id TEXT PRIMARY KEY, key_id TEXT NOT NULL, created REAL)"


_PG_RECORD = f"INSERT INTO {_TABLE} (run_id, key_id, created) VALUES (%s, %s, %s) ON CONFLICT (run_id) DO NOTHING"


class RunOwners:
    """`record` a run's key id once, read it back with `owner` (one run) or `owners` (many, for a listing). The
    methods block: call them off the event loop."""

    def record(self, run_id: str, key_id: str) -> None:
        raise NotImplementedError

    def owners(self, run_ids: Iterable[str]) -> dict[str, str]:
        raise NotImplementedError

    def owner(self, run_id: str) -> str | None:
        return self.owners([run_id]).get(run_id)

    async def record_soon(self, run_id: str, key_id: str) -> None:
        """`record`, awaited from the event loop: on a thread (PostgreSQL: on the loop, one statement)."""
        await asyncio.to_thread(self.record, run_id, key_id)

    def close(self) -> None:
        raise NotImplementedError


class _SqliteOwners(RunOwners):
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.where = str(path)
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
            sqlite_pragmas(self._db)
            self._db.execute(_SQLITE_SCHEMA)
        except sqlite3.Error as exc:
            raise OSError(f"the run owners in {path} cannot be opened: {exc}") from exc
        self._lock = threading.Lock()  # one connection, used from the event loop's worker threads in turn

    def record(self, run_id: str, key_id: str) -> None:
        with self._lock:
            self._db.execute(f"INSERT OR IGNORE INTO {_TABLE} (run_id, key_id, created) VALUES (?, ?, ?)",
                             (run_id, key_id, time.time()))

    def owners(self, run_ids: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        with self._lock:
            for part in in_parts(list(run_ids)):
                rows = self._db.execute(f"SELECT run_id, key_id FROM {_TABLE} WHERE run_id IN "
                                        f"({', '.join('?' for _ in part)})", part).fetchall()
                found.update((str(run_id), str(key_id)) for run_id, key_id in rows)
        return found

    def close(self) -> None:
        with self._lock:
            self._db.close()


class _SqlOwners(RunOwners):
    def __init__(self, url: str) -> None:
        from sqlalchemy import Column, Float, MetaData, Table, Text, create_engine
        from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

        from engine.runs.checkpoints_sql import shown_url

        self.where = shown_url(url)
        metadata = MetaData()
        self._table = Table(_TABLE, metadata, Column("run_id", Text, primary_key=True),
                            Column("key_id", Text, nullable=False), Column("created", Float))
        self._engine = create_engine(url, pool_size=8, max_overflow=8, pool_pre_ping=True)  # as many as threads write
        # On PostgreSQL each run's owner is one statement on the driver (engine.runs.checkpoints_pg: a few hundred µs
        # of SQLAlchemy's Python a run less, and one round trip).
        self._pg = PgWrites(self._engine) if self._engine.dialect.name == "postgresql" else None
        self._on_loop = AsyncPgWrites(conninfo(url)) if self._pg is not None else None
        for attempt in range(5):
            try:
                metadata.create_all(self._engine)
                break
            except (IntegrityError, ProgrammingError):
                if attempt == 4:  # another process made it between check and create: the next check sees it
                    raise
                time.sleep(0.05 * (attempt + 1))
            except OperationalError as exc:
                self._engine.dispose()
                raise OSError(f"the run owners' store {self.where} cannot be reached") from exc

    async def record_soon(self, run_id: str, key_id: str) -> None:
        if self._on_loop is None:
            await super().record_soon(run_id, key_id)
            return
        await self._on_loop.execute(_PG_RECORD, (run_id, key_id, time.time()))

    def record(self, run_id: str, key_id: str) -> None:
        from sqlalchemy.exc import IntegrityError

        if self._pg is not None:
            self._pg.execute(_PG_RECORD, (run_id, key_id, time.time()))
            return
        try:
            with self._engine.begin() as connection:
                connection.execute(self._table.insert().values(run_id=run_id, key_id=key_id, created=time.time()))
        except IntegrityError:
            pass  # recorded already: an owner is written once and never changes

    def owners(self, run_ids: Iterable[str]) -> dict[str, str]:
        from sqlalchemy import select

        found: dict[str, str] = {}
        table: Any = self._table
        with self._engine.connect() as connection:
            for part in in_parts(list(run_ids)):
                rows = connection.execute(select(table.c.run_id, table.c.key_id).where(table.c.run_id.in_(part)))
                found.update((str(run_id), str(key_id)) for run_id, key_id in rows)
        return found

    def close(self) -> None:
        self._engine.dispose()


def open_owners(url: str) -> RunOwners:
    """The run owners in the database at `url`, the checkpoint store's (`sqlite:///PATH` or any SQLAlchemy URL);
    OSError when it cannot be opened."""
    if url.startswith("sqlite:///"):
        return _SqliteOwners(Path(url.removeprefix("sqlite:///")))
    return _SqlOwners(url)
