"""The checkpoint store's three writes of every durable run, on PostgreSQL, straight through the driver.

A durable run writes its record (`begin`), a checkpoint after each block with effects (`save`) and its end (`end`).
Through SQLAlchemy Core each cost about 230–640 µs of CPU on this project's machines, against 40 µs as the same SQL
on psycopg's cursor: a server running a hundred runs at once on PostgreSQL had half SQLite's throughput, the
difference spent building, compiling and executing statements in Python. So these three go to the driver as fixed
SQL on a pooled connection (the engine's pool: one pool per process, its connections shared with everything else
the store does), and every other statement keeps SQLAlchemy's portability. The statements are the same upserts and
update as engine.runs.checkpoints_sql's: a second try of one that committed changes nothing.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["WRITER_THREADS", "AsyncPgWrites", "OffLoopWrites", "PgWrites", "StoreWrites"]

_BEGIN = (
    "INSERT INTO run_states (run_id, diagram, content_hash, pid, host, trace, parent, session, replay_of, inputs, "
    "status, started, updated, waiting) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'running', %s, %s, NULL) "
    "ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, pid = excluded.pid, host = excluded.host, "
    "content_hash = excluded.content_hash, updated = excluded.updated, waiting = NULL")
_SAVE = ("INSERT INTO checkpoints (run_id, seq, state) VALUES (%s, %s, %s) "
         "ON CONFLICT (run_id, seq) DO UPDATE SET state = excluded.state")
_END = "UPDATE run_states SET status = %s, waiting = %s, updated = %s WHERE run_id = %s"


class PgWrites:
    """`begin`, `save` and `end` as SQL on the driver's cursor, tried again while the database does not answer."""

    def __init__(self, engine: Engine, outage_s: float = 60.0,
                 failed: Callable[[BaseException], OSError] = lambda exc: OSError(str(exc))) -> None:
        self._engine = engine
        self._outage_s = outage_s
        self._failed = failed
        dbapi = engine.dialect.dbapi
        self._operational: type[BaseException] = dbapi.OperationalError if dbapi is not None else OSError

    def begin(self, run_id: str, values: Sequence[Any], now: float) -> None:
        self._execute(_BEGIN, (run_id, *values, now, now))

    def save(self, run_id: str, seq: int, state: bytes) -> None:
        self._execute(_SAVE, (run_id, seq, state))

    def end(self, run_id: str, status: str, waiting: str | None) -> None:
        self._execute(_END, (status, waiting, time.time(), run_id))

    def execute(self, sql: str, params: tuple[Any, ...]) -> None:
        """Another statement of a run's own, the same way (the run's owner, engine.runs.owners)."""
        self._execute(sql, params)

    def _execute(self, sql: str, params: tuple[Any, ...]) -> None:
        from sqlalchemy.exc import DBAPIError

        gives_up = time.monotonic() + self._outage_s
        pause = 0.0
        while True:
            connection = None
            try:
                connection = self._engine.raw_connection()  # a database that does not answer fails here
                # One statement, its own transaction: in autocommit it is one round trip, not BEGIN, it, COMMIT. The
                # connection goes back to the pool as SQLAlchemy lent it (not in autocommit).
                driver: Any = connection.driver_connection
                driver.autocommit = True
                try:
                    driver.execute(sql, params)
                finally:
                    driver.autocommit = False
                return
            except (self._operational, DBAPIError) as exc:
                if isinstance(exc, DBAPIError) and not isinstance(exc.orig, self._operational):
                    raise self._failed(exc) from None  # refused by the database, not unreachable: no retry helps
                # A connection the database closed (a restart) is dropped from the pool; a database that does not
                # answer is tried again until `outage_s` has passed, as engine.runs.checkpoints_sql's statements are.
                if connection is not None:
                    connection.invalidate(exc)
                if time.monotonic() + pause >= gives_up:
                    raise self._failed(exc) from None
                time.sleep(pause)
                pause = min(max(pause * 2, 0.1), 2.0)
            finally:
                if connection is not None:
                    connection.close()  # back to the pool (a no-op for one invalidated)


class AsyncPgWrites:
    """The same three writes on the event loop, through psycopg's AsyncConnection: no thread's turn for each (a
    thread hop and the interpreter's hand-over cost more CPU than the statement itself), for a server whose runs all
    share one long-lived loop (`diagrama api`). A few connections in autocommit, each lent to one statement at a time;
    one the database closed is replaced, and a database that does not answer is waited for, as PgWrites does."""

    def __init__(self, conninfo: str, size: int = 4, outage_s: float = 60.0,
                 failed: Callable[[BaseException], OSError] = lambda exc: OSError(str(exc))) -> None:
        import asyncio

        self._conninfo = conninfo
        self._outage_s = outage_s
        self._failed = failed
        self._size = size
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle: asyncio.Queue[Any] = asyncio.Queue()
        self._slots = asyncio.Semaphore(size)
        self._open: list[Any] = []

    def _on_this_loop(self) -> None:
        """Connections belong to the loop that made them: another loop (a test's next `asyncio.run`) starts anew."""
        import asyncio

        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._idle, self._slots, self._open = loop, asyncio.Queue(), asyncio.Semaphore(self._size), []

    async def begin(self, run_id: str, values: Sequence[Any], now: float) -> None:
        await self._execute(_BEGIN, (run_id, *values, now, now))

    async def save(self, run_id: str, seq: int, state: bytes) -> None:
        await self._execute(_SAVE, (run_id, seq, state))

    async def end(self, run_id: str, status: str, waiting: str | None) -> None:
        await self._execute(_END, (status, waiting, time.time(), run_id))

    async def execute(self, sql: str, params: tuple[Any, ...]) -> None:
        """Another statement of a run's own, the same way (the run's owner, engine.runs.owners)."""
        await self._execute(sql, params)

    async def _execute(self, sql: str, params: tuple[Any, ...]) -> None:
        import asyncio

        import psycopg

        self._on_this_loop()
        gives_up = time.monotonic() + self._outage_s
        pause = 0.0
        async with self._slots:
            while True:
                connection = self._idle.get_nowait() if not self._idle.empty() else None
                try:
                    if connection is None:
                        connection = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
                        self._open.append(connection)
                    await connection.execute(sql, params)
                except psycopg.OperationalError as exc:
                    await self._drop(connection)
                    if time.monotonic() + pause >= gives_up:
                        raise self._failed(exc) from None
                    await asyncio.sleep(pause)
                    pause = min(max(pause * 2, 0.1), 2.0)
                    continue
                except BaseException:  # cancelled mid-statement, or a statement refused: the connection's state is unknown
                    await self._drop(connection)
                    raise
                self._idle.put_nowait(connection)
                return

    async def _drop(self, connection: Any) -> None:
        if connection is not None:
            self._open.remove(connection)
            with contextlib.suppress(Exception):
                await connection.close()

    async def close(self) -> None:
        for connection in self._open:
            await connection.close()
        self._open.clear()


_WRITERS: concurrent.futures.ThreadPoolExecutor | None = None
WRITER_THREADS = 2
"""Threads per process that write checkpoints to a store across a network, where they are not written on the loop:
a few, not the default executor's many, so that threads waiting on the database do not take the interpreter from
the event loop in turns."""


def _writers() -> concurrent.futures.ThreadPoolExecutor:
    global _WRITERS
    if _WRITERS is None:
        _WRITERS = concurrent.futures.ThreadPoolExecutor(WRITER_THREADS, thread_name_prefix="checkpoints")
    return _WRITERS


class StoreWrites(Protocol):
    """What OffLoopWrites needs of its store (engine.runs.checkpoints_sql.SqlCheckpoints)."""

    def begin(self, run_id: str, fields: Mapping[str, Any]) -> None: ...
    def save(self, run_id: str, seq: int, state: bytes) -> None: ...
    def end(self, run_id: str, status: str, waiting: Mapping[str, Any] | None) -> None: ...
    def begun(self, run_id: str, fields: Mapping[str, Any]) -> list[Any] | None: ...
    def compacted(self, run_id: str, state: bytes) -> bytes: ...
    def ended(self, run_id: str, waiting: Mapping[str, Any] | None) -> str | None: ...


class OffLoopWrites:
    """A network store's run writes as coroutines (engine.runtime.checkpointing awaits them): on the event loop through
    AsyncPgWrites where the host said its loop lives as long as the process (`on_loop`, PostgreSQL: `diagrama api`),
    else the store's own statements on a writer thread. The store prepares what is written (`begun`: the record's
    values, None for a session's turn, whose memory is read first; `compacted`; `ended`) as its sync writes do."""

    def __init__(self, store: StoreWrites, conninfo: str | None, failed: Callable[[BaseException], OSError]) -> None:
        self.store = store
        self.on_loop = False
        """Set by a host whose runs all share one long-lived event loop (`diagrama api`)."""
        self._conninfo = conninfo
        self._failed = failed
        self._by_loop: dict[int, AsyncPgWrites] = {}

    def _loop_writes(self) -> AsyncPgWrites | None:
        if not self.on_loop or self._conninfo is None:
            return None
        import asyncio

        loop = id(asyncio.get_running_loop())
        writes = self._by_loop.get(loop)
        if writes is None:
            writes = self._by_loop[loop] = AsyncPgWrites(self._conninfo, failed=self._failed)
        return writes

    async def begin(self, run_id: str, fields: Mapping[str, Any]) -> None:
        writes = self._loop_writes()
        values = self.store.begun(run_id, fields) if writes is not None else None
        if writes is not None and values is not None:
            await writes.begin(run_id, values, time.time())
        else:
            await _off(self.store.begin, run_id, fields)

    async def save(self, run_id: str, seq: int, state: bytes) -> None:
        writes = self._loop_writes()
        if writes is not None:
            await writes.save(run_id, seq, self.store.compacted(run_id, state))
        else:
            await _off(self.store.save, run_id, seq, state)

    async def finish(self, run_id: str, last: tuple[int, bytes] | None, status: str,
                     waiting: Mapping[str, Any] | None) -> None:
        """The last checkpoint (if any) and the run's end, each let go when it cannot be written, as
        `Checkpointer.last` and `end` do."""
        writes = self._loop_writes()
        if writes is not None:
            if last is not None:
                with contextlib.suppress(OSError):
                    await writes.save(run_id, last[0], self.store.compacted(run_id, last[1]))
            stored = self.store.ended(run_id, waiting)
            with contextlib.suppress(OSError):
                await writes.end(run_id, status, stored)
            return
        store = self.store

        def write() -> None:
            if last is not None:
                with contextlib.suppress(OSError):
                    store.save(run_id, *last)
            with contextlib.suppress(OSError):
                store.end(run_id, status, waiting)

        await _off(write)

    async def close(self) -> None:
        for writes in self._by_loop.values():
            await writes.close()
        self._by_loop.clear()


async def _off(work: Callable[..., Any], *args: Any) -> Any:
    import asyncio

    return await asyncio.get_running_loop().run_in_executor(_writers(), work, *args)
