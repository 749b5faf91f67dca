"""The checkpoint store on any SQLAlchemy URL other than SQLite's file (PostgreSQL, MySQL, …).

The same three tables as engine.runs.checkpoints' SQLite store (`run_states`, `checkpoints`,
`sessions`), declared with SQLAlchemy Core, in the run store's database. Every write is its own
transaction, committed before the method returns (a checkpoint is durable before the next block
with effects starts). Upserts use the dialect's `ON CONFLICT DO UPDATE` where it has one
(PostgreSQL, SQLite), else an UPDATE then an INSERT in one transaction. The two decisions that
must have one winner are conditional UPDATEs, which the database serialises on the row: a resume's
take-over (status and pid unchanged) and a session's claim (holder, hold time and turn unchanged
since they were read), so two runs never hold one session at once, on any dialect.

One engine (a connection pool, safe for threads) per URL per process, made on first use with its
tables; a process forked after that (a Celery worker's child) starts its own pool.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from sqlalchemy import (
    Column,
    Float,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    and_,
    delete,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError, OperationalError, ProgrammingError

from engine.runs.checkpoints import (
    RUN_FIELDS,
    CheckpointStore,
    SessionClaim,
    run_row,
    session_holder,
    stored_json,
)
from engine.runs.traces import INTERRUPTED

__all__ = ["SqlCheckpoints", "shown_url"]

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
    Column("session", Text, primary_key=True),
    Column("diagram", Text),
    Column("state", LargeBinary),
    Column("turn", Integer, nullable=False, server_default="0"),
    Column("holder", Text),
    Column("holder_pid", Integer),
    Column("holder_host", Text),
    Column("held_since", Float),
    Column("updated", Float),
)

_DRIVERS = {"psycopg": "psycopg[binary]", "psycopg2": "psycopg2-binary", "asyncpg": "asyncpg", "pg8000": "pg8000",
            "pymysql": "pymysql", "mysqldb": "mysqlclient", "pyodbc": "pyodbc", "oracledb": "oracledb"}
"""What to install for each SQLAlchemy driver (a URL without one, `postgresql://`, means psycopg2)."""
_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def shown_url(url: str) -> str:
    """The URL as a message may show it: without its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url.split(":", 1)[0] + ":…"


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
        engine = create_engine(url, pool_size=5, max_overflow=10)
    except (ImportError, NoSuchModuleError) as exc:
        fix = f"pip install {_DRIVERS[driver]}" if driver in _DRIVERS else "install its SQLAlchemy driver"
        if scheme == "postgresql" and driver != "psycopg":
            fix += ', or name psycopg 3: postgresql+psycopg://…, pip install "diagrama[postgres]"'
        raise OSError(f"the checkpoint store {shown} needs the {scheme} driver {driver}, which is not installed "
                      f"({fix}): {_scrubbed(exc, url)}") from None
    for attempt in range(5):
        try:
            metadata.create_all(engine)
            break
        except (IntegrityError, ProgrammingError) as exc:
            # Another process made a table between check and create; the next check sees it.
            if attempt == 4:
                raise OSError(f"the checkpoint store {shown} cannot make its tables: {_scrubbed(exc, url)}") from None
            time.sleep(0.05 * (attempt + 1))
        except OperationalError as exc:
            engine.dispose()
            raise OSError(f"the checkpoint store {shown} cannot be reached: {_scrubbed(exc, url)}") from None
    return engine


def _scrubbed(exc: BaseException, url: str) -> str:
    """An error's first line, the URL's password taken out wherever the driver quoted it."""
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    try:
        password = make_url(url).password
    except ArgumentError:
        password = None
    return text.replace(str(password), "***") if password else text


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
        self._save = self._save_statement()

    @property
    def where(self) -> str:
        return shown_url(self.url)

    def _write(self, work: Any) -> Any:
        """`work(connection)` in one transaction, committed when this returns; OSError when the database fails."""
        return self._with(work, self._engine.begin)

    def _read(self, work: Any) -> Any:
        return self._with(work, self._engine.connect)

    def _with(self, work: Any, opened: Any) -> Any:
        for attempt in (1, 2):
            try:
                with opened() as connection:
                    return work(connection)
            except DBAPIError as exc:
                # A pooled connection the database closed (a restart, an idle timeout) is found out here, not by a
                # ping before each use (a round trip per checkpoint): once more, on a new connection. Every write is
                # an upsert or a conditional update, so a second try of a write that did commit changes nothing.
                if attempt == 1 and exc.connection_invalidated:
                    continue
                if isinstance(exc, OperationalError):
                    raise OSError(f"the checkpoint store {self.where}: {_scrubbed(exc, self.url)}") from None
                raise
        raise AssertionError("unreachable")

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
        self._write(lambda connection: self._upsert(
            connection, run_states, {"run_id": run_id},
            {**values, "status": "running", "started": now, "updated": now, "waiting": None},
            ("status", "pid", "host", "content_hash", "updated", "waiting")))

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
        if self._save is not None:
            values = {"run_id": run_id, "seq": seq, "state": state}
            self._write(lambda connection: connection.execute(self._save, values))
            return
        self._write(lambda connection: self._upsert(connection, checkpoints, {"run_id": run_id, "seq": seq},
                                                    {"state": state}, ("state",)))

    def end(self, run_id: str, status: str, waiting: Mapping[str, Any] | None) -> None:
        self._run(update(run_states).where(run_states.c.run_id == run_id).values(
            status=status, waiting=stored_json(waiting, "waiting") if waiting else None, updated=time.time()))

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
        return list(self._read(lambda connection: [(int(seq), bytes(state))
                                                   for seq, state in connection.execute(query)]))

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
        values: dict[str, Any] = {"holder": None, "holder_pid": None}
        if state is not None:
            values.update(state=state, turn=sessions.c.turn + 1, updated=time.time())
        self._run(update(sessions).where(sessions.c.session == session, sessions.c.holder == run_id).values(**values))

    def session(self, session: str) -> dict[str, Any] | None:
        query = select(sessions).where(sessions.c.session == session)
        found = self._read(lambda connection: connection.execute(query).mappings().first())
        return dict(found) if found is not None else None

    def session_names(self, limit: int) -> list[str]:
        query = select(sessions.c.session).order_by(sessions.c.updated.desc()).limit(limit)
        return list(self._read(lambda connection: [str(name) for (name,) in connection.execute(query)]))

    def forget_session(self, session: str) -> bool:
        return self._run(delete(sessions).where(sessions.c.session == session)) > 0

    def reopen(self) -> CheckpointStore:
        return SqlCheckpoints(self.url)  # the same pool: its connections are for any thread

    def close(self) -> None:
        """Nothing to close: the process's pool for this URL serves its other stores (it ends with the process)."""
