"""The run store: every run, batch or single, in a SQL database (SQLite by default).

One row per run (id, diagram (its resolved path) and its content hash, inputs, status, times, steps,
errors, final variables, tokens, cost, batch id, row and attempt, the path of blocks taken). Writes are transactions; SQLite
runs in WAL mode, so a crash leaves the store consistent. A (batch, row) is recorded
once: a row that already succeeded is never overwritten. Inputs are stored scrubbed of
keys, as the result's variables and errors already are. A session turn's record loses its
memory variables once its checkpoints are pruned (engine.runs.prune): its session holds them. Eval runs
(`diagrama eval`) are kept beside the runs: a row each, with its report.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
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
    and_,
    create_engine,
    delete,
    event,
    insert,
    inspect,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from engine.compile.diagram import Diagram
from engine.format.jsonout import plain
from engine.format.sqlite_files import sqlite_pragmas
from engine.runtime.execute import RunResult

__all__ = ["STORE_VARIABLE", "RequestKey", "RunStore", "default_store_url", "open_recorded_store", "open_store"]

_EVAL_COLUMNS = ("eval_id", "eval_file", "diagram", "content_hash", "revision", "created", "score", "cases", "passed",
                "failed")
"""An eval run's listing columns (`RunStore.evals`): all but its report."""

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
    Column("session", String(100)),  # the conversation a run was a turn of: `GET /v1/runs?session=` lists them
    Column("cost_usd", Float),  # what its requests cost; NULL when a price was unknown (or recorded before costs)
    Column("cost", JSON),  # the result's whole cost: {usd, requests, unknown_steps (, known_usd)}
    Column("usage", JSON),  # its requests' tokens per kind: the API answers a recorded run as it answered it live
    Column("trigger", String(40)),  # what started it besides a request: `schedule:0`, `webhook` (diagrama api)
    Column("version", Integer),  # the published version it ran (engine.runs.published); NULL: the file as it was
)
Index("runs_batch_row", runs.c.batch_id, runs.c.row, unique=True)
_RUNS_STARTED = Index("runs_started", runs.c.started, runs.c.run_id)
"""Pages of runs newest first (`page`): keyset pagination on (started, run_id) reads the index, not the table."""
request_keys = Table(
    "request_keys", metadata,
    Column("key_id", String(80), primary_key=True),
    Column("request_key", String(255), primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("run_id", String(80)),
    Column("created", Float, nullable=False, index=True),
)
"""`diagrama api`'s Idempotency-Key values, per API key: the run the first request with one started. The primary key
decides which of two racing requests (two API processes) starts the run."""
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
evals = Table(
    "evals", metadata,
    Column("eval_id", String(80), primary_key=True),
    Column("eval_file", Text, nullable=False),
    Column("diagram", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("revision", String(200)),
    Column("created", Float, nullable=False),
    Column("score", Float),
    Column("cases", Integer),
    Column("passed", Integer),
    Column("failed", Integer),
    Column("report", JSON),
)
"""`diagrama eval`'s runs: one row per eval, its summary in columns (listed by `diagrama evals` and the studio's
Evaluations tab) and its whole `--output json` report (each case's scores and run id) beside them."""
_EVALS_CREATED = Index("evals_diagram_created", evals.c.diagram, evals.c.created)


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


@dataclass(frozen=True)
class RequestKey:
    """An Idempotency-Key's claim: the request it came with (its fingerprint), its run, when it was made."""

    fingerprint: str
    run_id: str | None
    created: float


class RunStore:
    """Runs and batches in one database; safe for several processes (workers) at once."""

    def __init__(self, url: str) -> None:
        self.url = url
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        # Pre-ping: a connection the pool kept across a database restart is dropped, not handed out (every request 500)
        self.engine: Engine = create_engine(url, future=True, pool_pre_ping=True, pool_recycle=1800)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", sqlite_pragmas)
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
               row: int | None = None, attempt: int = 1, session: str | None = None,
               trigger: str | None = None) -> bool:
        """Store a run (a turn of `session`, if given; started by `trigger`, if any); False when its (batch, row)
        already succeeded (nothing is stored twice)."""
        values = {**_row(result, diagram, inputs, batch_id=batch_id, row=row, attempt=attempt, session=session),
                  "trigger": trigger}
        with self.engine.begin() as connection:
            if batch_id is None:
                # A batch row's run continued on its own (`diagrama resume` answering its Wait) stays the row's, and a
                # triggered run answered later stays its trigger's (its resume knows no trigger).
                known = connection.execute(select(runs.c.batch_id, runs.c.row, runs.c.attempt, runs.c.trigger)
                                           .where(runs.c.run_id == result.run_id)).first()
                if known is not None and trigger is None:
                    values["trigger"] = known.trigger
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

    def record_runs(self, recorded: Sequence[tuple[RunResult, Diagram, dict[str, Any]]],
                    known: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """Store runs outside any batch in one transaction (`diagrama api`'s, a few at a time: one commit for all);
        `known`: run id → what its result does not say (`session`: the session it was a turn of; `started`: when it
        started, where it is recorded a while after it ended)."""
        if not recorded:
            return
        # A run that waited and was answered within one batch's wait (an MCP client's elicitation) is in it twice:
        # its last part is its row.
        rows = list({result.run_id: {**_row(result, diagram, inputs), **(known or {}).get(result.run_id, {})}
                     for result, diagram, inputs in recorded}.values())
        ids = [row["run_id"] for row in rows]
        with self.engine.begin() as connection:
            # A triggered run that waited is recorded again when its resume ends, by a door that knows no trigger.
            triggers = {found.run_id: found.trigger for found in connection.execute(select(runs.c.run_id, runs.c.trigger)
                        .where(runs.c.run_id.in_(ids), runs.c.trigger.is_not(None)))}
            for row in rows:
                if row.get("trigger") is None and row["run_id"] in triggers:
                    row["trigger"] = triggers[row["run_id"]]
            connection.execute(delete(runs).where(runs.c.run_id.in_(ids)))
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

    def page(self, *, folder: Path, diagram: Path | None = None, statuses: Collection[str] | None = None,
             other_than: Collection[str] = (), session: str | None = None, since: float | None = None,
             before: tuple[float, str] | None = None, run_ids: Collection[str] | None = None,
             limit: int = 50) -> list[dict[str, Any]]:
        """Up to `limit` runs of diagrams under `folder` (or of `diagram` alone), newest first by (started, run_id):
        those with a status in `statuses` (None: any) and none of `other_than`, of `session`, started at or after
        `since`, before the (started, run_id) of `before` (the last of the page before: keyset pagination), among
        `run_ids` if given. No variables, inputs or errors: a listing's columns."""
        wanted = runs.c.diagram == str(diagram.resolve()) if diagram is not None \
            else runs.c.diagram.startswith(f"{folder.resolve()}/", autoescape=True)
        query = select(runs.c.run_id, runs.c.diagram, runs.c.status, runs.c.started, runs.c.finished,
                       runs.c.duration_ms, runs.c.steps, runs.c.tokens, runs.c.session, runs.c.trigger) \
            .where(wanted, runs.c.started.is_not(None))
        if statuses is not None:
            query = query.where(runs.c.status.in_(list(statuses)))
        if other_than:
            query = query.where(runs.c.status.not_in(list(other_than)))
        if session is not None:
            query = query.where(runs.c.session == session)
        if run_ids is not None:
            query = query.where(runs.c.run_id.in_(list(run_ids)))
        if since is not None:
            query = query.where(runs.c.started >= since)
        if before is not None:
            started, run_id = before
            query = query.where(or_(runs.c.started < started, and_(runs.c.started == started, runs.c.run_id < run_id)))
        query = query.order_by(runs.c.started.desc(), runs.c.run_id.desc()).limit(limit)
        with self.engine.connect() as connection:
            return [dict(r) for r in connection.execute(query).mappings().all()]

    def claim_request_key(self, key_id: str, key: str, fingerprint: str, *, kept_s: float,
                          starting_s: float) -> RequestKey | None:
        """Claim an Idempotency-Key for a request about to start a run: None when this request has it (start the run,
        then `bind_request_key`), else the claim that holds it (its run, None while that request starts it). A claim
        older than `kept_s` is gone; one whose run never came within `starting_s` (its process died) is taken over."""
        for _ in range(3):  # the row found taken may be deleted (expired, released) before it is read: try again
            now = time.time()
            with self.engine.begin() as connection:
                mine = and_(request_keys.c.key_id == key_id, request_keys.c.request_key == key)
                connection.execute(delete(request_keys).where(mine, or_(
                    request_keys.c.created < now - kept_s,
                    and_(request_keys.c.run_id.is_(None), request_keys.c.created < now - starting_s))))
            try:
                with self.engine.begin() as connection:
                    connection.execute(insert(request_keys).values(key_id=key_id, request_key=key,
                                                                   fingerprint=fingerprint, created=now))
                return None
            except IntegrityError:  # another request has it: the unique key decided
                with self.engine.connect() as connection:
                    found = connection.execute(select(request_keys).where(mine)).mappings().first()
                if found is not None:
                    return RequestKey(found["fingerprint"], found["run_id"], float(found["created"]))
        raise RuntimeError(f"the claim of Idempotency-Key {key!r} kept changing under this request")

    def bind_request_key(self, key_id: str, key: str, run_id: str | None) -> None:
        """The run a claimed key started; None lets the claim go (the request started no run: it may be sent again)."""
        mine = and_(request_keys.c.key_id == key_id, request_keys.c.request_key == key, request_keys.c.run_id.is_(None))
        with self.engine.begin() as connection:
            if run_id is None:
                connection.execute(delete(request_keys).where(mine))
            else:
                connection.execute(update(request_keys).where(mine).values(run_id=run_id))

    def forget_request_keys(self, older_than_s: float) -> int:
        """Delete the Idempotency-Key claims older than `older_than_s`; how many."""
        with self.engine.begin() as connection:
            return connection.execute(delete(request_keys).where(
                request_keys.c.created < time.time() - older_than_s)).rowcount

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

    def record_eval(self, *, eval_id: str, eval_file: str | Path, diagram: str | Path, content_hash: str,
                    revision: str | None, report: Mapping[str, Any], created: float | None = None) -> None:
        """Store an eval run (`diagrama eval`): its report (the `--output json` object) and, from the report's
        `summary`, its score and case counts; the eval file and the diagram as resolved paths (a diagram's runs are
        kept so); `created`: when it ran (now, unless given). Recording the same `eval_id` again replaces it."""
        summary = report.get("summary")
        summary = summary if isinstance(summary, Mapping) else {}
        values = {
            "eval_id": eval_id, "eval_file": str(Path(eval_file).resolve()), "diagram": str(Path(diagram).resolve()),
            "content_hash": content_hash,
            "revision": revision, "created": time.time() if created is None else created, "score": _number(summary.get("score")),
            "cases": _count(summary.get("cases")), "passed": _count(summary.get("passed")),
            "failed": _count(summary.get("failed")), "report": plain(dict(report)),
        }
        with self.engine.begin() as connection:
            connection.execute(delete(evals).where(evals.c.eval_id == eval_id))
            connection.execute(insert(evals).values(**values))

    def evals(self, diagram: str | Path | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The newest eval runs (of `diagram` alone, wherever it was evaluated from), newest first; no reports."""
        query = select(*(evals.c[name] for name in _EVAL_COLUMNS))
        if diagram is not None:
            query = query.where(evals.c.diagram == str(Path(diagram).resolve()))
        query = query.order_by(evals.c.created.desc(), evals.c.eval_id.desc()).limit(limit)
        with self.engine.connect() as connection:
            return [dict(r) for r in connection.execute(query).mappings().all()]

    def eval(self, eval_id: str) -> dict[str, Any] | None:
        """One eval run with its report; None when none has this id."""
        with self.engine.connect() as connection:
            found = connection.execute(select(evals).where(evals.c.eval_id == eval_id)).mappings().first()
        return dict(found) if found else None

    def close(self) -> None:
        self.engine.dispose()


def _row(result: RunResult, diagram: Diagram, inputs: dict[str, Any], *, batch_id: str | None = None,
         row: int | None = None, attempt: int = 1, session: str | None = None) -> dict[str, Any]:
    return {
        "run_id": result.run_id, "diagram": str(diagram.path.resolve()), "content_hash": diagram.content_hash,
        "inputs": plain(result.redact(inputs)), "status": result.status, "started": time.time() - result.duration,
        "finished": time.time(), "duration_ms": round(result.duration * 1000, 3), "steps": result.steps,
        "errors": plain(result.errors), "variables": plain(result.variables), "tokens": result.tokens,
        "batch_id": batch_id, "row": row, "trace": str(result.trace.resolve()) if result.trace else None,
        "attempt": attempt, "path": list(result.path), "session": session,
        "cost_usd": result.cost.get("usd"), "cost": result.cost, "usage": dict(result.usage), "trigger": None,
        "version": diagram.published,
    }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _add_new_columns(engine: Engine) -> None:
    """Columns added since a store was made (`attempt`, `session`, `cost_usd`, `cost`, `usage`) are added to it; existing rows
    read them as NULL. So is the index on `started` (create_all makes the indexes of the tables it makes, not of those
    it finds). Tables added since (`evals`) are made by create_all, which makes the tables it does not find."""
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
    try:
        _RUNS_STARTED.create(engine, checkfirst=True)
    except (OperationalError, ProgrammingError):
        # Another process made it first.
        if _RUNS_STARTED.name not in {index["name"] for index in inspect(engine).get_indexes("runs")}:
            raise
