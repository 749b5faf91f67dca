"""The run store: every run, batch or single, in a SQL database (SQLite by default).

One row per run (id, diagram and its content hash, inputs, status, times, steps,
errors, final variables, tokens, batch id and row). Writes are transactions; SQLite
runs in WAL mode, so a crash leaves the store consistent. A (batch, row) is recorded
once: a row that already succeeded is never overwritten.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
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
    select,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, ProgrammingError

from engine.compile.diagram import Diagram
from engine.runtime.execute import RunResult
from engine.format.values import json_default

__all__ = ["RunStore", "default_store_url"]

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


def _plain(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value, default=json_default, option=orjson.OPT_NON_STR_KEYS))


class RunStore:
    """Runs and batches in one database; safe for several processes (workers) at once."""

    def __init__(self, url: str) -> None:
        self.url = url
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        self.engine: Engine = create_engine(url, future=True)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        try:
            metadata.create_all(self.engine)
        except (OperationalError, ProgrammingError):
            # Another process (a worker, the batch) created the tables between check and create.
            metadata.create_all(self.engine)

    def record(self, result: RunResult, diagram: Diagram, inputs: dict[str, Any], *, batch_id: str | None = None,
               row: int | None = None) -> bool:
        """Store a run; False when its (batch, row) already succeeded (nothing is stored twice)."""
        values = {
            "run_id": result.run_id, "diagram": str(diagram.path), "content_hash": diagram.content_hash,
            "inputs": _plain(inputs), "status": result.status, "started": time.time() - result.duration,
            "finished": time.time(), "duration_ms": round(result.duration * 1000, 3), "steps": result.steps,
            "errors": _plain(result.errors), "variables": _plain(result.variables), "tokens": result.tokens,
            "batch_id": batch_id, "row": row, "trace": str(result.trace) if result.trace else None,
        }
        with self.engine.begin() as connection:
            if batch_id is not None:
                existing = connection.execute(
                    select(runs.c.status).where(runs.c.batch_id == batch_id, runs.c.row == row)).first()
                if existing is not None and existing.status == "succeeded":
                    return False
                connection.execute(delete(runs).where(runs.c.batch_id == batch_id, runs.c.row == row))
            connection.execute(delete(runs).where(runs.c.run_id == result.run_id))
            connection.execute(insert(runs).values(**values))
        return True

    def begin_batch(self, batch_id: str, diagram: Diagram, inputs_file: str, rows: int, collect: list[str]) -> None:
        with self.engine.begin() as connection:
            if connection.execute(select(batches.c.batch_id).where(batches.c.batch_id == batch_id)).first() is None:
                connection.execute(insert(batches).values(
                    batch_id=batch_id, diagram=str(diagram.path), content_hash=diagram.content_hash,
                    inputs_file=inputs_file, rows=rows, collect=collect, created=time.time()))

    def batch(self, batch_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            found = connection.execute(select(batches).where(batches.c.batch_id == batch_id)).mappings().first()
        return dict(found) if found else None

    def succeeded_rows(self, batch_id: str) -> set[int]:
        with self.engine.connect() as connection:
            found = connection.execute(select(runs.c.row).where(runs.c.batch_id == batch_id, runs.c.status == "succeeded"))
            return {int(r.row) for r in found}

    def batch_runs(self, batch_id: str) -> dict[int, dict[str, Any]]:
        with self.engine.connect() as connection:
            found = connection.execute(select(runs).where(runs.c.batch_id == batch_id)).mappings().all()
        return {int(r["row"]): dict(r) for r in found}

    def recent(self, limit: int = 20) -> list[dict[str, Any]]:
        with self.engine.connect() as connection:
            found = connection.execute(select(runs).order_by(runs.c.started.desc()).limit(limit)).mappings().all()
        return [dict(r) for r in found]

    def close(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()
