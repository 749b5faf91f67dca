"""The checkpoint store on any SQLAlchemy URL other than SQLite's file (PostgreSQL, MySQL, …).

The same four tables as engine.runs.checkpoints' SQLite store (`run_states`, `checkpoints`, `sessions`,
`session_memory`), declared with SQLAlchemy Core, in the run store's database. Every write is its own transaction,
committed before the method returns (a checkpoint is durable before the next block with effects starts). Upserts use
the dialect's `ON CONFLICT DO UPDATE` where it has one (PostgreSQL, SQLite), else an UPDATE then an INSERT in one
transaction; on PostgreSQL a run's own three writes go straight to the driver (engine.runs.checkpoints_pg). The two
decisions that must have one winner are conditional UPDATEs, which the database serialises on the row: a resume's
take-over (status and pid unchanged) and a session's claim (holder, hold time and turn unchanged since they were
read), so two runs never hold one session at once, on any dialect. A session turn's checkpoints hold its memory as
changes, as the SQLite store's do (engine.runs.session_memory). One engine (a connection pool, safe for threads) per
URL per process, made on first use with its tables; a process forked after that (a Celery worker's child) starts its
own pool.
"""
from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Column, Float, Integer, LargeBinary, MetaData, Table, Text, and_, delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError, OperationalError, ProgrammingError

from engine.runs.checkpoints import (
    FINISHED,
    RUN_FIELDS,
    CheckpointStore,
    Pruned,
    SessionClaim,
    in_parts,
    run_row,
    session_holder,
    stored_json,
)
from engine.runs.checkpoints_pg import OffLoopWrites, PgWrites
from engine.runs.session_memory import MemoryBase, compact, expand_all, log_rows, memory_at, rewritten, tombstone
from engine.runs.sql_urls import DRIVERS, conninfo, scrubbed, shown_url
from engine.runs.traces import INTERRUPTED

__all__ = ["OUTAGE_S", "SqlCheckpoints", "shown_url"]

OUTAGE_S = 60.0
"""How long a statement is tried again while the database does not answer (a restart, a failover)."""

metadata = MetaData()
run_states = Table(
    "run_states", metadata,
    Column("run_id", Text, primary_key=True),
    Column("diagram", Text, nullable=False),
    *(Column(name, Integer if name == "pid" else Text) for name in RUN_FIELDS if name != "diagram"),
    Column("status", Text, nullable=False),
    Column("started", Float),
    Column("updated", Float),
    Column("waiting", Text),
)
checkpoints = Table(
    "checkpoints", metadata,
    Column("run_id", Text, primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("state", LargeBinary, nullable=False),
)
sessions = Table(
    "sessions", metadata,
    Column("session", Text, primary_key=True), Column("diagram", Text), Column("state", LargeBinary),
    Column("turn", Integer, nullable=False, server_default="0"), Column("holder", Text),
    Column("holder_pid", Integer), Column("holder_host", Text), Column("held_since", Float), Column("updated", Float),
)
session_memory = Table(
    "session_memory", metadata, Column("session", Text, primary_key=True),
    Column("turn", Integer, primary_key=True, autoincrement=False), Column("change", LargeBinary, nullable=False),
)

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def _engine(url: str) -> Engine:
    """The process's engine for `url`, its tables made; OSError saying what is wrong and the fix."""
    with _engines_lock:
        found = _engines.get(url)
        if found is None:
            found = _engines[url] = _connect(url)
        return found


def _connect(url: str) -> Engine:
    from sqlalchemy import create_engine

    shown = shown_url(url)
    try:
        scheme, driver = make_url(url).get_backend_name(), make_url(url).get_driver_name()
    except ArgumentError:
        raise OSError(f"the checkpoint store's URL {shown!r} is not a SQLAlchemy URL "
                      "(e.g. postgresql+psycopg://user@host/db)") from None
    try:
        engine = create_engine(url, pool_size=5, max_overflow=10, pool_recycle=1800)
    except (ImportError, NoSuchModuleError) as exc:
        fix = f"pip install {DRIVERS[driver]}" if driver in DRIVERS else "install its SQLAlchemy driver"
        if scheme == "postgresql" and driver != "psycopg":
            fix += ', or name psycopg 3: postgresql+psycopg://…, pip install "diagrama[postgres]"'
        raise OSError(f"the checkpoint store {shown} needs the {scheme} driver {driver}, which is not installed "
                      f"({fix}): {scrubbed(exc, url)}") from None
    for attempt in range(5):
        try:
            metadata.create_all(engine)
            break
        except (IntegrityError, ProgrammingError) as exc:
            # Another process made a table between check and create; the next check sees it.
            if attempt == 4:
                raise OSError(f"the checkpoint store {shown} cannot make its tables: {scrubbed(exc, url)}") from None
            time.sleep(0.05 * (attempt + 1))
        except OperationalError as exc:
            engine.dispose()
            raise OSError(f"the checkpoint store {shown} cannot be reached: {scrubbed(exc, url)}") from None
    return engine


def _forget_engines_after_fork() -> None:
    # A child must not share its parent's sockets: it opens its own connections (SQLAlchemy's advice for pools).
    for engine in _engines.values():
        engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_engines_after_fork)


class SqlCheckpoints:
    """The checkpoint store in the database at a SQLAlchemy URL; safe for threads and processes at once."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._engine = _engine(url)
        self._dialect = self._engine.dialect.name
        self.remote = self._dialect != "sqlite"
        """Across a network: a step loop writes its checkpoints off the event loop (engine.runtime.advance)."""
        failed = lambda exc: OSError(f"the checkpoint store {self.where}: {scrubbed(exc, self.url)}")  # noqa: E731
        self._pg = PgWrites(self._engine, OUTAGE_S, failed) if self._dialect == "postgresql" else None
        self.off_loop = OffLoopWrites(self, conninfo(url) if self._pg is not None else None, failed) \
            if self.remote else None
        """Its run writes as coroutines (engine.runtime.checkpointing), on the loop where the host allows."""
        self._save = self._save_statement()
        self._bases: dict[str, MemoryBase] = {}
        """The memory each session turn running here began with, by run id: its checkpoints are written against it."""

    @property
    def where(self) -> str:
        return shown_url(self.url)

    def _write(self, work: Any) -> Any:
        """`work(connection)` in one transaction, committed when this returns; OSError when the database fails."""
        return self._with(work, self._engine.begin)

    def _read(self, work: Any) -> Any:
        return self._with(work, self._engine.connect)

    def _with(self, work: Any, opened: Any) -> Any:
        gives_up = time.monotonic() + OUTAGE_S
        pause = 0.1
        while True:
            try:
                with opened() as connection:
                    return work(connection)
            except DBAPIError as exc:
                # A pooled connection the database closed (a restart, an idle timeout) is found out here, not by a
                # ping before each use (a round trip per checkpoint): again, on a new connection. A database that
                # does not answer (restarting) is tried again for OUTAGE_S, so a restart does not fail the runs in
                # flight. Every write is an upsert or a conditional update: a second try of one that did commit
                # changes nothing.
                if exc.connection_invalidated and pause == 0.1:
                    pause = 0.11  # the first retry is at once
                    continue
                if isinstance(exc, OperationalError):
                    if time.monotonic() + pause < gives_up:
                        time.sleep(pause)
                        pause = min(pause * 2, 2.0)
                        continue
                    raise OSError(f"the checkpoint store {self.where}: {scrubbed(exc, self.url)}") from None
                raise

    def _run(self, statement: Any) -> int:
        """One statement in its own transaction: the rows it changed."""
        return int(self._write(lambda connection: connection.execute(statement).rowcount))

    def _upsert(self, connection: Connection, table: Table, keys: dict[str, Any], values: dict[str, Any],
                changed: tuple[str, ...]) -> None:
        """Insert a row, or update `changed` of the row with these keys."""
        if self._dialect in ("postgresql", "sqlite"):
            dialect_insert: Any
            if self._dialect == "postgresql":
                from sqlalchemy.dialects.postgresql import insert as dialect_insert
            else:
                from sqlalchemy.dialects.sqlite import insert as dialect_insert
            statement = dialect_insert(table).values(**keys, **values)
            connection.execute(statement.on_conflict_do_update(
                index_elements=list(keys), set_={name: statement.excluded[name] for name in changed}))
            return
        where = and_(*(table.c[name] == value for name, value in keys.items()))
        if connection.execute(update(table).where(where).values(**{n: values[n] for n in changed})).rowcount == 0:
            connection.execute(insert(table).values(**keys, **values))

    # -- what the executor writes -----------------------------------------------------------------------
    def begin(self, run_id: str, fields: Mapping[str, Any]) -> None:
        now = time.time()
        values = {name: stored_json(fields[name], name) if name == "inputs" and fields.get(name) is not None
                  else fields.get(name) for name in RUN_FIELDS}
        if self._pg is not None:
            self._pg.begin(run_id, [values[name] for name in RUN_FIELDS], now)
        else:
            self._write(lambda connection: self._upsert(connection, run_states, {"run_id": run_id}, {
                **values, "status": "running", "started": now, "updated": now, "waiting": None},
                ("status", "pid", "host", "content_hash", "updated", "waiting")))
        self._bases.pop(run_id, None)
        if fields.get("session") and not fields.get("parent"):  # a session's turn (or a replay of one)
            base = self._read(lambda connection: self._memory(connection, str(fields["session"]), None))
            if base is not None and base.values:
                self._bases[run_id] = base

    # What OffLoopWrites writes on the event loop, prepared as the writes above prepare it.
    def begun(self, run_id: str, fields: Mapping[str, Any]) -> list[Any] | None:
        if fields.get("session"):
            return None  # its memory is read as it begins: on a thread
        self._bases.pop(run_id, None)
        return [stored_json(fields[name], name) if name == "inputs" and fields.get(name) is not None
                else fields.get(name) for name in RUN_FIELDS]

    def compacted(self, run_id: str, state: bytes) -> bytes:
        base = self._bases.get(run_id)
        return compact(state, base) if base is not None else state

    def ended(self, run_id: str, waiting: Mapping[str, Any] | None) -> str | None:
        self._bases.pop(run_id, None)
        return stored_json(waiting, "waiting") if waiting else None

    def _save_statement(self) -> Any:
        """A checkpoint's upsert, built once: each save only binds its values (SQLAlchemy caches the compiled form)."""
        if self._dialect not in ("postgresql", "sqlite"):
            return None
        dialect_insert: Any
        if self._dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        else:
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        statement = dialect_insert(checkpoints)
        return statement.on_conflict_do_update(index_elements=["run_id", "seq"],
                                               set_={"state": statement.excluded.state})

    def save(self, run_id: str, seq: int, state: bytes) -> None:
        base = self._bases.get(run_id)
        if base is not None:
            state = compact(state, base)
        if self._pg is not None:
            self._pg.save(run_id, seq, state)
            return
        if self._save is not None:
            values = {"run_id": run_id, "seq": seq, "state": state}
            self._write(lambda connection: connection.execute(self._save, values))
            return
        self._write(lambda connection: self._upsert(connection, checkpoints, {"run_id": run_id, "seq": seq},
                                                    {"state": state}, ("state",)))

    def end(self, run_id: str, status: str, waiting: Mapping[str, Any] | None) -> None:
        self._bases.pop(run_id, None)
        stored = stored_json(waiting, "waiting") if waiting else None
        if self._pg is not None:
            self._pg.end(run_id, status, stored)
            return
        self._run(update(run_states).where(run_states.c.run_id == run_id).values(
            status=status, waiting=stored, updated=time.time()))

    # -- what resume, replay and `diagrama runs` read -------------------------------------------------
    def _rows(self, query: Any) -> list[dict[str, Any]]:
        return list(self._read(lambda connection: [run_row(dict(row)) for row in connection.execute(query).mappings()]))

    def run(self, run_id: str) -> dict[str, Any] | None:
        found = self._rows(select(run_states).where(run_states.c.run_id == run_id))
        return found[0] if found else None

    def runs(self, limit: int = 20, *, statuses: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        # A subdiagram's run (one with a parent) is its parent's step, not listed.
        query = select(run_states).where(run_states.c.parent.is_(None)).order_by(run_states.c.updated.desc())
        if not statuses:
            return self._rows(query.limit(limit))
        wanted = {*statuses, "running"} if INTERRUPTED in statuses else set(statuses)
        rows = self._rows(query.where(run_states.c.status.in_(sorted(wanted))).limit(limit * 4))
        return [row for row in rows if row["status"] in statuses][:limit]

    def attempts(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows(select(run_states).where(run_states.c.parent.is_(None), or_(
            run_states.c.run_id == run_id, run_states.c.run_id.startswith(run_id + "-a", autoescape=True))))

    def states(self, run_id: str) -> list[tuple[int, bytes]]:
        query = select(checkpoints.c.seq, checkpoints.c.state).where(checkpoints.c.run_id == run_id) \
            .order_by(checkpoints.c.seq)
        return list(self._read(lambda connection: expand_all(
            [(int(seq), bytes(state)) for seq, state in connection.execute(query)],
            lambda name, number: self._memory(connection, name, number))))

    @staticmethod
    def _memory(connection: Connection, session: str, turn: int | None) -> MemoryBase | None:
        """The session's memory after `turn` (None: its last), from its row or its log."""
        row = connection.execute(select(sessions.c.state, sessions.c.turn)
                                 .where(sessions.c.session == session)).first()
        if row is None:
            return None
        current = (int(row.turn), bytes(row.state) if row.state else None)
        wanted = current[0] if turn is None else turn
        log = select(session_memory.c.turn, session_memory.c.change).where(
            session_memory.c.session == session, session_memory.c.turn <= wanted).order_by(session_memory.c.turn)
        return memory_at(session, wanted, current,
                         lambda: [(int(n), bytes(change)) for n, change in connection.execute(log)])

    def forget_run(self, run_id: str) -> None:
        def forget(connection: Connection) -> None:
            connection.execute(delete(checkpoints).where(checkpoints.c.run_id == run_id))
            connection.execute(delete(run_states).where(run_states.c.run_id == run_id))

        self._write(forget)

    def take_over(self, run_id: str, status: str, pid: Any) -> bool:
        # The database re-reads the row under its lock before it updates: of two, one finds it changed.
        statement = update(run_states).where(
            run_states.c.run_id == run_id, run_states.c.status == status,
            run_states.c.pid.is_not_distinct_from(pid),
        ).values(status="running", pid=os.getpid(), host=socket.gethostname(), updated=time.time())
        return self._run(statement) == 1

    # -- sessions (engine.runs.sessions) -----------------------------------------------------------------
    def try_claim_session(self, session: str, diagram: str, run_id: str) -> SessionClaim:
        for _ in range(8):  # another run changed the row between our read and our write: read it again
            row = self.session(session)
            holder_run = self.run(row["holder"]) if row and row["holder"] not in (None, run_id) else None
            kept_by = session_holder(row, run_id, holder_run)
            if kept_by is not None:
                return SessionClaim(False, holder=row["holder"] if row else None, holder_status=kept_by)
            holder = {"holder": run_id, "holder_pid": os.getpid(), "holder_host": socket.gethostname(),
                      "held_since": time.time()}
            if row is None:
                try:
                    self._run(insert(sessions).values(session=session, diagram=diagram, turn=0,
                                                      updated=holder["held_since"], **holder))
                except IntegrityError:
                    continue  # made by another run's claim just now
                return SessionClaim(True, None, run_id)
            # The turn counts stored turns, so an unchanged (holder, held_since, turn) means an unchanged state.
            unchanged = update(sessions).where(
                sessions.c.session == session, sessions.c.holder.is_not_distinct_from(row["holder"]),
                sessions.c.held_since.is_not_distinct_from(row["held_since"]), sessions.c.turn == row["turn"],
            ).values(**holder)
            if self._run(unchanged) == 1:
                return SessionClaim(True, bytes(row["state"]) if row["state"] else None, run_id)
        row = self.session(session)
        return SessionClaim(False, holder=row["holder"] if row else None, holder_status="running")

    def release_session(self, session: str, run_id: str, state: bytes | None) -> None:
        held = and_(sessions.c.session == session, sessions.c.holder == run_id)
        if state is None:
            self._run(update(sessions).where(held).values(holder=None, holder_pid=None))
            return

        def store(connection: Connection) -> None:  # the memory and its log row together
            row = connection.execute(select(sessions.c.state, sessions.c.turn).where(held)).first()
            if row is None:
                return
            turn = int(row.turn)
            logged = connection.execute(select(session_memory.c.turn).where(
                session_memory.c.session == session, session_memory.c.turn == turn)).first() is not None
            for number, change in log_rows(turn, bytes(row.state) if row.state else None, state, logged):
                self._upsert(connection, session_memory, {"session": session, "turn": number}, {"change": change},
                             ("change",))
            connection.execute(update(sessions).where(held, sessions.c.turn == turn).values(
                state=state, turn=turn + 1, holder=None, holder_pid=None, updated=time.time()))

        self._write(store)

    def session(self, session: str) -> dict[str, Any] | None:
        query = select(sessions).where(sessions.c.session == session)
        found = self._read(lambda connection: connection.execute(query).mappings().first())
        return dict(found) if found is not None else None

    def session_names(self, limit: int) -> list[str]:
        query = select(sessions.c.session).order_by(sessions.c.updated.desc()).limit(limit)
        return list(self._read(lambda connection: [str(name) for (name,) in connection.execute(query)]))

    def forget_session(self, session: str) -> bool:
        def forget(connection: Connection) -> bool:
            runs = connection.execute(select(run_states.c.run_id, run_states.c.status)
                                      .where(run_states.c.session == session)).all()
            for run_id, status in runs:
                if status in FINISHED:
                    self._tombstone(connection, [run_id], tombstone(at=time.time(), forgotten=session))
                    continue
                found = [(int(seq), bytes(state)) for seq, state in connection.execute(
                    select(checkpoints.c.seq, checkpoints.c.state).where(checkpoints.c.run_id == run_id))]
                for seq, whole in rewritten(found, lambda name, number: self._memory(connection, name, number)):
                    connection.execute(update(checkpoints).where(
                        checkpoints.c.run_id == run_id, checkpoints.c.seq == seq).values(state=whole))
            connection.execute(delete(session_memory).where(session_memory.c.session == session))
            return bool(connection.execute(delete(sessions).where(sessions.c.session == session)).rowcount > 0)

        return bool(self._write(forget))

    def prune(self, older_than_s: float) -> Pruned:
        kept = select(checkpoints.c.run_id).where(checkpoints.c.run_id == run_states.c.run_id, checkpoints.c.seq > 0)
        chosen = select(run_states.c.run_id, run_states.c.session).where(  # the top runs: their children go with them
            run_states.c.parent.is_(None), run_states.c.status.in_(FINISHED),
            run_states.c.updated < time.time() - older_than_s, kept.exists()).order_by(run_states.c.updated)

        def prune(connection: Connection) -> Pruned:
            top = connection.execute(chosen.with_for_update() if self._dialect == "postgresql" else chosen).all()
            runs = [str(run_id) for run_id, _ in top]
            children: list[str] = []
            parents = runs
            while parents:
                parents = [str(found) for part in in_parts(parents) for (found,) in connection.execute(
                    select(run_states.c.run_id).where(run_states.c.parent.in_(part)))]
                children += parents
            count = size = 0
            for part in in_parts([*runs, *children]):
                found, held = connection.execute(select(func.count(), func.coalesce(func.sum(func.length(
                    checkpoints.c.state)), 0)).where(checkpoints.c.run_id.in_(part), checkpoints.c.seq > 0)).one()
                count, size = count + int(found), size + int(held)
            self._tombstone(connection, [*runs, *children], tombstone(at=time.time(), after=older_than_s))
            return Pruned(runs, {str(run_id): session for run_id, session in top}, len(children), count, size)

        result: Pruned = self._write(prune)
        return result

    def _tombstone(self, connection: Connection, run_ids: list[str], mark: bytes) -> None:
        """Each run's checkpoints replaced by `mark` (seq 0), inside the caller's transaction; an upsert, as two servers
        pruning at once may both reach a run."""
        for part in in_parts(run_ids):
            connection.execute(delete(checkpoints).where(checkpoints.c.run_id.in_(part)))
            for run_id in part:
                self._upsert(connection, checkpoints, {"run_id": run_id, "seq": 0}, {"state": mark}, ("state",))

    def reopen(self) -> CheckpointStore:
        return SqlCheckpoints(self.url)  # the same pool: its connections are for any thread

    def close(self) -> None:
        """Nothing to close: the process's pool for this URL serves its other stores (it ends with the process)."""
