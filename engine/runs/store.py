"""The run store: every run, batch or single, in a SQL database (SQLite by default).

One row per run (id, diagram (its resolved path) and its content hash, inputs, status, times, steps,
errors, final variables, tokens, batch id, row and attempt, the path of blocks taken). Writes are transactions; SQLite
runs in WAL mode, so a crash leaves the store consistent. A (batch, row) is recorded
once: a row that already succeeded is never overwritten. Inputs are stored scrubbed of
keys, as the result's variables and errors already are. A session turn's record loses its
memory variables once its checkpoints are pruned (engine.runs.prune): its session holds them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, ProgrammingError

from engine.compile.diagram import Diagram
from engine.format.jsonout import plain
from engine.runtime.execute import RunResult

__all__ = ["STORE_VARIABLE", "RunStore", "default_store_url", "open_recorded_store", "open_store"]

STORE_VARIABLE = "DIAGRAMA_STORE"
"""The environment variable that names the run store's SQLAlchemy URL."""

metadata = MetaData()
runs = Table(
    "runs", metadata,
    Column("run_id", String(80), primary_key=True),
    Column("diagram", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("inputs", JSON),
    Column("status", String(16), nullable=False),
    Column("started", Float),
    Column("finished", Float),
    Column("duration_ms", Float),
    Column("steps", Integer),
    Column("errors", JSON),
    Column("variables", JSON),
    Column("tokens", Integer),
    Column("batch_id", String(80)),
    Column("row", Integer),
    Column("trace", Text),
    Column("attempt", Integer),
    Column("path", JSON),  # the blocks in the order they ran: `diagrama api` answers a recorded run with them
)
Index("runs_batch_row", runs.c.batch_id, runs.c.row, unique=True)
batches = Table(
    "batches", metadata,
    Column("batch_id", String(80), primary_key=True),
    Column("diagram", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("inputs_file", Text),
    Column("rows", Integer),
    Column("collect", JSON),
    Column("created", Float),
)


def default_store_url(runs_dir: Path) -> str:
    return f"sqlite:///{(runs_dir / 'diagrama.db').resolve()}"


def _configured_url() -> str | None:
    # The one place $DIAGRAMA_STORE is read.
    return os.environ.get(STORE_VARIABLE) or None


def open_store(url: str | None, runs_dir: Path) -> RunStore:
    """The run store at `url`, else at $DIAGRAMA_STORE, else `runs_dir/diagrama.db` (made if need be)."""
    return RunStore(url or _configured_url() or default_store_url(runs_dir))


def open_recorded_store(runs_dir: Path) -> RunStore | None:
    """The run store to read runs from: $DIAGRAMA_STORE, else `runs_dir/diagrama.db` if it exists; None if neither."""
    url = _configured_url()
    if url is None and not (runs_dir / "diagrama.db").is_file():
        return None
    return RunStore(url or default_store_url(runs_dir))


class RunStore:
    """Runs and batches in one database; safe for several processes (workers) at once."""

    def __init__(self, url: str) -> None:
        self.url = url
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        self.engine: Engine = create_engine(url, future=True)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        for attempt in range(5):
            try:
                metadata.create_all(self.engine)
                break
            except (OperationalError, ProgrammingError):
                # Another process (a worker, the batch) created a table between check and create;
                # the next check sees it once that process's transaction is visible.
                if attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))
        _add_new_columns(self.engine)

    def record(self, result: RunResult, diagram: Diagram, inputs: dict[str, Any], *, batch_id: str | None = None,
               row: int | None = None, attempt: int = 1) -> bool:
        """Store a run; False when its (batch, row) already succeeded (nothing is stored twice)."""
        values = _row(result, diagram, inputs, batch_id=batch_id, row=row, attempt=attempt)
        with self.engine.begin() as connection:
            if batch_id is None:
                # A batch row's run continued on its own (`diagrama resume` answering its Wait) stays the row's.
                known = connection.execute(select(runs.c.batch_id, runs.c.row, runs.c.attempt)
                                           .where(runs.c.run_id == result.run_id)).first()
                if known is not None and known.batch_id is not None:
                    values.update(batch_id=known.batch_id, row=known.row, attempt=known.attempt)
                    batch_id, row = known.batch_id, known.row
            if batch_id is not None:
                existing = connection.execute(
                    select(runs.c.status).where(runs.c.batch_id == batch_id, runs.c.row == row)).first()
                if existing is not None and existing.status == "succeeded":
                    return False
                connection.execute(delete(runs).where(runs.c.batch_id == batch_id, runs.c.row == row))
            connection.execute(delete(runs).where(runs.c.run_id == result.run_id))
            connection.execute(insert(runs).values(**values))
        return True

    def record_runs(self, recorded: Sequence[tuple[RunResult, Diagram, dict[str, Any]]]) -> None:
        """Store runs outside any batch in one transaction (`diagrama api`'s, a few at a time: one commit for all)."""
        if not recorded:
            return
        rows = [_row(result, diagram, inputs) for result, diagram, inputs in recorded]
        with self.engine.begin() as connection:
            connection.execute(delete(runs).where(runs.c.run_id.in_([row["run_id"] for row in rows])))
            connection.execute(insert(runs), rows)

    def begin_batch(self, batch_id: str, diagram: Diagram, inputs_file: str, rows: int, collect: list[str]) -> None:
        with self.engine.begin() as connection:
            if connection.execute(select(batches.c.batch_id).where(batches.c.batch_id == batch_id)).first() is None:
                connection.execute(insert(batches).values(
                    batch_id=batch_id, diagram=str(diagram.path.resolve()), content_hash=diagram.content_hash,
                    inputs_file=inputs_file, rows=rows, collect=collect, created=time.time()))

    def batch(self, batch_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            found = connection.execute(select(batches).where(batches.c.batch_id == batch_id)).mappings().first()
        return dict(found) if found else None

    def succeeded_rows(self, batch_id: str) -> set[int]:
        with self.engine.connect() as connection:
            found = connection.execute(select(runs.c.row).where(runs.c.batch_id == batch_id, runs.c.status == "succeeded"))
            return {int(r.row) for r in found}

    def last_attempt(self, batch_id: str, row: int) -> int:
        """The attempt number recorded for a (batch, row): 0 when none is (a run from before attempts counts 1)."""
        with self.engine.connect() as connection:
            found = connection.execute(
                select(runs.c.attempt).where(runs.c.batch_id == batch_id, runs.c.row == row)).first()
        return 0 if found is None else int(found.attempt or 1)

    def batch_runs(self, batch_id: str) -> dict[int, dict[str, Any]]:
        with self.engine.connect() as connection:
            found = connection.execute(select(runs).where(runs.c.batch_id == batch_id)).mappings().all()
        return {int(r["row"]): dict(r) for r in found}

    def runs_of(self, diagram: Path, limit: int = 200) -> list[dict[str, Any]]:
        """The newest runs of one diagram (by its resolved path), wherever they were run from."""
        with self.engine.connect() as connection:
            found = connection.execute(select(runs).where(runs.c.diagram == str(diagram.resolve()))
                                       .order_by(runs.c.started.desc()).limit(limit)).mappings().all()
        return [dict(r) for r in found]

    def run(self, run_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            found = connection.execute(select(runs).where(runs.c.run_id == run_id)).mappings().first()
        return dict(found) if found else None

    def recent(self, limit: int = 20) -> list[dict[str, Any]]:
        with self.engine.connect() as connection:
            found = connection.execute(select(runs).order_by(runs.c.started.desc()).limit(limit)).mappings().all()
        return [dict(r) for r in found]

    def drop_variables(self, names: Mapping[str, Collection[str]]) -> int:
        """Take `names[run_id]` out of each run's recorded variables (a pruned session turn's memory, which its
        session holds: engine.runs.prune); how many records changed."""
        changed = 0
        with self.engine.begin() as connection:
            for run_id, dropped in names.items():
                found = connection.execute(select(runs.c.variables).where(runs.c.run_id == run_id)).first()
                variables = found.variables if found is not None else None
                if not isinstance(variables, dict) or not set(dropped) & variables.keys():
                    continue
                connection.execute(update(runs).where(runs.c.run_id == run_id).values(
                    variables={name: value for name, value in variables.items() if name not in dropped}))
                changed += 1
        return changed

    def close(self) -> None:
        self.engine.dispose()


def _row(result: RunResult, diagram: Diagram, inputs: dict[str, Any], *, batch_id: str | None = None,
         row: int | None = None, attempt: int = 1) -> dict[str, Any]:
    return {
        "run_id": result.run_id, "diagram": str(diagram.path.resolve()), "content_hash": diagram.content_hash,
        "inputs": plain(result.redact(inputs)), "status": result.status, "started": time.time() - result.duration,
        "finished": time.time(), "duration_ms": round(result.duration * 1000, 3), "steps": result.steps,
        "errors": plain(result.errors), "variables": plain(result.variables), "tokens": result.tokens,
        "batch_id": batch_id, "row": row, "trace": str(result.trace.resolve()) if result.trace else None,
        "attempt": attempt, "path": list(result.path),
    }


def _add_new_columns(engine: Engine) -> None:
    """Columns added since a store was made (`attempt`) are added to it; existing rows read them as NULL."""
    present = {column["name"] for column in inspect(engine).get_columns("runs")}
    for column in runs.columns:
        if column.name in present:
            continue
        kind = column.type.compile(dialect=engine.dialect)
        try:
            with engine.begin() as connection:
                connection.execute(text(f"ALTER TABLE runs ADD COLUMN {column.name} {kind}"))
        except (OperationalError, ProgrammingError):
            # Another process added it first.
            if column.name not in {c["name"] for c in inspect(engine).get_columns("runs")}:
                raise


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()
