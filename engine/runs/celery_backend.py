"""Batches on Celery workers: each row is a task; workers share the run store and runs dir.

Tasks ack late and are rejected when their worker is lost, so a killed worker's row is
run by another; a row already recorded as succeeded is skipped, so none is recorded
twice. A durable diagram's rows are checkpointed beside the run store (its SQLite file or the
same database at another URL), and the worker that takes a lost worker's row continues it from its last checkpoint (engine.runs.
batch_rows): only the block that was in flight runs again. Requests-per-minute limits are a
token bucket kept in Redis, shared by workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from celery import Celery

from engine.compile.diagram import Diagram
from engine.format.spec import Budget
from engine.runs.api_durable import HELD, RESUME_TASK
from engine.runs.batch import BatchOutcome, recorded_spend
from engine.runs.batch_budget import RedisBudget, skipped_key
from engine.runs.batch_rows import run_row as run_batch_row
from engine.runs.checkpoints import CheckpointStore, open_checkpoints
from engine.runs.leases import Lease
from engine.runs.store import RunStore
from engine.runtime.context import Services

__all__ = ["API_TASK", "DEFAULT_BROKER", "make_app", "run_batch_on_celery", "start_worker"]

DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
TASK = "diagrama.run_row"
API_TASK = "diagrama.run_api"
"""One `diagrama api` run: its events go to a Redis stream (engine.runs.event_relay), its result to the run store."""
# Redis token bucket: KEYS[1] bucket; ARGV rate/s, capacity, now. Returns seconds to wait (0 = taken).
_BUCKET = """
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local rate, capacity, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + (now - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now)
redis.call('EXPIRE', KEYS[1], 3600)
return tostring(wait)
"""


class RedisBuckets:
    """The VendorLimits interface, with each vendor's bucket in Redis."""

    def __init__(self, url: str, rpm: dict[str, float]) -> None:
        import redis

        self._redis = redis.Redis.from_url(url)
        self._rpm = rpm
        self._script = self._redis.register_script(_BUCKET)

    def slot(self, vendor: str) -> Any:
        buckets = self

        class _Slot:
            async def __aenter__(self) -> None:
                per_minute = buckets._rpm.get(vendor)
                while per_minute:
                    wait = float(buckets._script(keys=[f"diagrama:rpm:{vendor}"],
                                                 args=[per_minute / 60, 1.0, time.time()]))  # one interval, as TokenBucket
                    if wait <= 0:
                        return
                    await asyncio.sleep(wait)

            async def __aexit__(self, *_: Any) -> None:
                return None

        return _Slot()


VISIBILITY_S = 20.0
"""Seconds before a lost worker's task is handed out again (DIAGRAMA_VISIBILITY_TIMEOUT)."""
RESTORE_S = 5.0
"""Seconds between the broker's sweeps for such tasks (DIAGRAMA_RESTORE_INTERVAL)."""


def _seconds(variable: str, default: float) -> float:
    try:
        found = float(os.environ.get(variable) or default)
    except ValueError:
        return default
    return found if 0 < found < 86_400 else default


@contextlib.contextmanager
def _requeued_on_outage() -> Iterator[None]:
    """A task whose broker or store stayed away past a worker's patience (engine.runs.api_durable.patiently) goes back
    to the queue, never acknowledged as done: a later delivery carries its run on (its lease lapses meanwhile). With
    the broker itself away, the message stays unacknowledged and the broker hands it out again once it is back."""
    from celery.exceptions import Reject

    from engine.runs.outages import outage

    try:
        yield
    except Exception as exc:
        if outage(exc):
            raise Reject(exc, requeue=True) from exc
        raise


def _look_again(task: Any) -> NoReturn:
    """The task sent again for later: another worker's lease on its run is alive (it runs, or was just lost)."""
    from engine.runs.leases import LEASE_S

    raise task.retry(countdown=LEASE_S, max_retries=None)


# Long: the app and its three tasks, each a few lines, registered together as Celery wants them.
def make_app(broker: str | None = None) -> Celery:
    broker = broker or os.environ.get("DIAGRAMA_BROKER") or DEFAULT_BROKER
    app = Celery("diagrama", broker=broker)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        # A lost worker's task comes back after the visibility timeout; Redis's sweep for such tasks runs every
        # restore interval × throttle (kombu's default: 10 × 10 s, which made recovery take 100 s whatever the
        # timeout). A task that outlives the timeout is handed out again while it runs: the run's lease
        # (engine.runs.leases) makes that delivery look again later rather than run it twice.
        broker_transport_options={"visibility_timeout": _seconds("DIAGRAMA_VISIBILITY_TIMEOUT", VISIBILITY_S),
                                  "unacked_restore_interval": _seconds("DIAGRAMA_RESTORE_INTERVAL", RESTORE_S),
                                  "unacked_restore_throttle": 1},
        broker_connection_max_retries=None,  # a worker waits for its broker to come back, rather than exit
        worker_hijack_root_logger=False,
    )

    @app.task(name=TASK, bind=True, acks_late=True, reject_on_worker_lost=True)  # type: ignore[untyped-decorator]
    def run_row(task: Any, batch_id: str, row: int, diagram_path: str, inputs: dict[str, Any], store_url: str,
                runs_dir: str, offline: bool, rpm: dict[str, float] | None = None,
                budget_total: dict[str, Any] | None = None) -> str:
        from blocks.registry import registry  # wiring, as the CLI does
        from engine.compile.loader import load_diagram

        store = _cached_store(store_url)
        if row in store.succeeded_rows(batch_id):
            return "already_succeeded"
        diagram = _cached_diagram(diagram_path, Path(diagram_path).stat().st_mtime_ns, load_diagram, registry)
        services = Services(offline=offline)
        if rpm:
            services.limits = RedisBuckets(broker, rpm)
        if budget_total:  # the batch's total, counted in Redis by every worker
            services.shared_budget = RedisBudget(_cached_redis(broker), batch_id, Budget.model_validate(budget_total))
            if services.shared_budget.spent_out():
                _cached_redis(broker).sadd(skipped_key(batch_id), row)
                return "budget_spent"
        checkpoints = _cached_checkpoints(store_url, runs_dir)
        services.checkpoints = checkpoints
        # The row's lease (engine.runs.leases): a delivery while another worker runs the row looks again later; one
        # that takes a lapsed lease finds the worker that had the row lost, and its attempt is taken over from its
        # checkpoint.
        lease = Lease(_cached_redis(broker), f"{batch_id}-row-{row}", services.stops)
        if not lease.take():
            _look_again(task)
        with _requeued_on_outage(), lease:
            ran = asyncio.run(run_batch_row(diagram, inputs, row, batch_id=batch_id, services=services,
                                            previous=store.last_attempt(batch_id, row), runs_dir=Path(runs_dir),
                                            checkpoints=checkpoints, taken_over=True))
        if ran is None:
            return "waiting"
        store.record(ran.result, diagram, inputs, batch_id=batch_id, row=row, attempt=ran.attempt)
        return ran.result.status

    @app.task(name=API_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)  # type: ignore[untyped-decorator]
    def run_api(task: Any, run_id: str, diagram_path: str, inputs: dict[str, Any], store_url: str, runs_dir: str, offline: bool,
                message_level: str | None = None, key_id: str | None = None, session: str | None = None,
                budget: dict[str, Any] | None = None, stream: bool = False, trigger: str | None = None) -> str:
        import structlog

        from blocks.registry import registry
        from engine.compile.loader import load_diagram
        from engine.runs.api_durable import run_on_worker

        store = _cached_store(store_url)
        diagram = _cached_diagram(diagram_path, Path(diagram_path).stat().st_mtime_ns, load_diagram, registry)
        with _requeued_on_outage(), structlog.contextvars.bound_contextvars(key_id=key_id):  # key id, never the key
            done = run_on_worker(run_id=run_id, diagram=diagram, inputs=inputs, store=store,
                                 redis=_cached_redis(broker), runs_dir=Path(runs_dir), offline=offline,
                                 message_level=message_level, session=session, budget=budget, stream=stream,
                                 trigger=trigger)
        if done == HELD:
            _look_again(task)
        return done

    @app.task(name=RESUME_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)  # type: ignore[untyped-decorator]
    def resume_api(task: Any, run_id: str, answer: dict[str, Any] | None, store_url: str, runs_dir: str, offline: bool,
                   key_id: str | None = None) -> str:
        import structlog

        from blocks.registry import registry
        from engine.runs.api_durable import resume_on_worker

        with _requeued_on_outage(), structlog.contextvars.bound_contextvars(key_id=key_id):
            done = resume_on_worker(run_id=run_id, answer=answer, store=_cached_store(store_url),
                                    redis=_cached_redis(broker), runs_dir=Path(runs_dir), offline=offline,
                                    registry=registry())
        if done == HELD:
            _look_again(task)
        return done

    return app


@functools.lru_cache(maxsize=4)
def _cached_redis(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url)


@functools.lru_cache(maxsize=8)
def _cached_store(url: str) -> RunStore:
    # One connection pool per store per worker process.
    return RunStore(url)


@functools.lru_cache(maxsize=8)
def _cached_checkpoints(url: str, runs_dir: str) -> CheckpointStore:
    # One connection (SQLite) or pool (another database) per store per worker process, beside the run store.
    return open_checkpoints(url, Path(runs_dir))


@functools.lru_cache(maxsize=32)
def _cached_diagram(path: str, _mtime_ns: int, load: Any, registry: Any) -> Diagram:
    # One load per diagram version per worker process, not one per row; its MCP servers start: it is to run.
    diagram: Diagram = load(Path(path), registry(), start_servers=True)
    return diagram


def start_worker(broker: str | None, concurrency: int) -> None:
    make_app(broker).worker_main(["worker", "--loglevel=WARNING", f"--concurrency={concurrency}", "--pool=prefork",
                                  "--without-gossip", "--without-mingle", "--without-heartbeat"])


def run_batch_on_celery(diagram: Diagram, rows: list[dict[str, Any]], *, batch_id: str, store: RunStore,
                        broker: str | None, runs_dir: Path, offline: bool, console: Any,
                        rpm: dict[str, float] | None = None, poll: float = 0.2,
                        timeout: float | None = None, total: Budget | None = None) -> BatchOutcome:
    """Send the unfinished rows as tasks, then follow the run store until each row is recorded (or skipped, its
    batch's total budget spent)."""
    app = make_app(broker)
    redis = _cached_redis(broker or os.environ.get("DIAGRAMA_BROKER") or DEFAULT_BROKER) if total is not None else None
    skipped: set[int] = set()
    done = store.succeeded_rows(batch_id)
    outcome = BatchOutcome(batch_id, len(rows), skipped=len(done))
    already = store.batch_runs(batch_id)
    # A row waiting at a Wait is its person's to answer (`diagrama resume`), not a task's.
    asking = {n for n, run in already.items() if run["status"] == "waiting"}
    outcome.waiting = len(asking)
    pending = [n for n in range(1, len(rows) + 1) if n not in done and n not in asking]
    if redis is not None and total is not None:
        RedisBudget(redis, batch_id, total).start(recorded_spend(already.values()))
        redis.delete(skipped_key(batch_id))
    for number in pending:
        app.send_task(TASK, args=[batch_id, number, str(diagram.path.resolve()), rows[number - 1], store.url,
                                  str(runs_dir.resolve()), offline, rpm or {}],
                      kwargs={"budget_total": total.model_dump(exclude_none=True)} if total is not None else {})
    began = time.monotonic()
    waiting = set(pending)
    try:
        while waiting:
            recorded = store.batch_runs(batch_id)
            if redis is not None:
                skipped |= {int(row) for row in redis.smembers(skipped_key(batch_id))} & waiting
                outcome.budget_spent = bool(skipped)
                waiting -= skipped
            for number in list(waiting):
                run = recorded.get(number)
                if run is not None and (number not in already or run["run_id"] != already[number]["run_id"]
                                        or run["finished"] != already[number]["finished"]):
                    waiting.discard(number)
                    outcome.count((run["duration_ms"] or 0) / 1000, run["tokens"] or 0, str(run["status"]),
                                  run.get("cost_usd"))
            if waiting:
                if timeout is not None and time.monotonic() - began > timeout:
                    break
                time.sleep(poll)
    except KeyboardInterrupt:
        outcome.interrupted = True  # queued tasks stay queued; the workers finish them and resume skips them
    outcome.not_run = len(waiting) + len(skipped)
    if console is not None:
        console.print(f"celery: {outcome.succeeded} succeeded, {outcome.failed} failed, {outcome.not_run} pending")
    return outcome
