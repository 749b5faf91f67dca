"""Batch runs: one diagram over many inputs, N at a time, recorded in the run store.

Rows come from CSV, JSON Lines or a YAML/JSON list, typed by the Start inputs'
defaults. A stop request (Ctrl-C) starts nothing new, lets running runs finish within
a grace period (a second Ctrl-C ends it at once), then cancels them; rows that did not finish stay unrecorded, so
`--resume` runs exactly those (and any that failed), never one that succeeded. A durable
diagram's row left in flight continues from its last checkpoint, as the same run (its trace
goes on); any other retry is an attempt of its own (its own run id, trace and attempt number),
so it never appends to the trace of the attempt that was killed or failed (engine.runs.batch_rows).
"""

from __future__ import annotations

import asyncio
import csv
import io
import signal
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from engine.compile.diagram import Diagram
from engine.compile.inputs import check_inputs, typed_input
from engine.errors import DiagramInvalid, UsageError
from engine.format.jsonout import dumps_plain
from engine.format.tables import csv_dialect
from engine.format.values import json_default
from engine.format.yamlfile import read_yaml_value
from engine.runs.batch_ids import batch_run_id, claim_attempt
from engine.runs.batch_rows import SESSION_COLUMN, has_session_column, run_row
from engine.runs.checkpoints import CheckpointStore
from engine.runs.store import RunStore
from engine.runtime.budgets import Spent
from engine.runtime.context import Services
from engine.runtime.execute import RunResult
from engine.runtime.trace import new_run_id

__all__ = ["BatchOutcome", "StopSignals", "batch_run_id", "claim_attempt", "read_rows", "run_batch", "start_batch",
           "stop_on_signals", "write_results"]


def read_rows(path: Path, diagram: Diagram) -> list[dict[str, Any]]:
    """Each row is one run's inputs; CSV cells are typed by the inputs' defaults. A `session` column (where the
    diagram has no input of that name) names the row's conversation (engine.runs.batch_rows).

    Every bad row is found before anything runs: the one UsageError names the file and,
    for each problem, the row (and a CSV or JSON Lines file's line).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    suffix = path.suffix.lower()
    problems: list[str] = []
    rows: list[Any]
    if suffix == ".csv":
        rows = _csv_rows(text, diagram, problems)
    elif suffix == ".jsonl":
        rows = []
        for line_number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                problems.append(f"row {len(rows) + 1} (line {line_number}): not valid JSON: {exc}")
                rows.append({})
    elif suffix in (".json", ".yaml", ".yml"):
        try:
            rows = (orjson.loads(text) if suffix == ".json" else read_yaml_value(text, str(path))) or []
        except orjson.JSONDecodeError as exc:
            raise UsageError(f"{path} is not valid JSON: {exc}") from None
        except DiagramInvalid as exc:
            raise UsageError(f"{path} is not valid YAML: {exc.problems[0]}") from None
        if not isinstance(rows, list):
            raise UsageError(f"{path} must hold a list of mappings (one per run)")
    else:
        raise UsageError(f"{path}: inputs are read from .csv, .jsonl, .json or .yaml files")
    if suffix != ".csv":
        for number, row in enumerate(rows, start=1):
            if not isinstance(row, dict):
                problems.append(f"row {number}: a {type(row).__name__}, not a mapping of input names to values")
                continue
            for name in row:
                if name == SESSION_COLUMN and has_session_column(diagram):
                    if not isinstance(row[name], (str, int)) and row[name] is not None:
                        problems.append(f"row {number}: the session is a {type(row[name]).__name__}, not a text")
                    continue
                try:
                    check_inputs(diagram, {name: row[name]})
                except UsageError as exc:
                    problems.append(f"row {number}: {exc}")
    if problems:
        count = len(problems)
        raise UsageError(f"{path}: {count} problem{'s' if count != 1 else ''} in the inputs; nothing ran:\n"
                         + "\n".join(f"  {problem}" for problem in problems))
    return [dict(row) for row in rows]


def _csv_rows(text: str, diagram: Diagram, problems: list[str]) -> list[dict[str, Any]]:
    """The CSV's rows typed by the inputs' defaults; each bad cell is a problem naming its row and line."""
    rows: list[dict[str, Any]] = []
    reader = csv.DictReader(io.StringIO(text), dialect=csv_dialect(text))
    unknown: set[str] = set()
    for number, record in enumerate(reader, start=1):
        line = reader.line_num
        row: dict[str, Any] = {}
        for name, cell in record.items():
            if name is None:
                problems.append(f"row {number} (line {line}): more cells than columns")
                continue
            name = name.strip()
            if name in unknown:
                continue
            if name == SESSION_COLUMN and has_session_column(diagram):
                if cell:
                    row[name] = cell.strip()  # the row's conversation (engine.runs.batch_rows), not an input
                continue
            try:
                check_inputs(diagram, {name: cell})
            except UsageError as exc:
                unknown.add(name)  # a bad column is reported once, at the header
                problems.append(f"column '{name}' (line 1): {exc}")
                continue
            default = diagram.settings.inputs[name]
            if cell is None or (cell == "" and not isinstance(default, str)):
                continue  # an empty (or missing) cell keeps the default
            try:
                row[name] = typed_input(name, cell, default)
            except UsageError as exc:
                problems.append(f"row {number} (line {line}): {exc}")
        rows.append(row)
    return rows


def start_batch(store: RunStore, diagram: Diagram, rows: list[dict[str, Any]], inputs_file: Path, collect: list[str], *,
                resume: str | None = None, force: bool = False) -> tuple[str, list[str]]:
    """Begin a new batch, or check that batch `resume` may go on; its id and the variables to collect.

    A resumed batch must be of the same diagram (content hash) and the same number of rows,
    unless `force`; it collects what it collected before unless `collect` names something.
    """
    if not resume:
        batch_id = "b" + new_run_id()
        store.begin_batch(batch_id, diagram, str(inputs_file), len(rows), collect)
        return batch_id, collect
    known = store.batch(resume)
    if known is None:
        raise UsageError(f"no batch '{resume}' in the run store {store.url}")
    if known["content_hash"] != diagram.content_hash and not force:
        raise UsageError(f"the diagram changed since batch '{resume}' began (its content hash differs); "
                         "resuming would mix two versions — pass --force to resume anyway")
    if known["rows"] != len(rows) and not force:
        raise UsageError(f"batch '{resume}' had {known['rows']} rows and {inputs_file} has {len(rows)}; "
                         "pass --force to resume anyway")
    return resume, collect or list(known.get("collect") or [])


@dataclass
class BatchOutcome:
    batch_id: str
    total: int
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    not_run: int = 0
    waiting: int = 0
    """Rows whose run waits at a Wait for a person's answer (`diagrama resume RUN_ID --input ...`)."""
    resumed: int = 0
    """Rows that continued from the checkpoint of an attempt left in flight, rather than from Start."""
    durations: list[float] = field(default_factory=list)
    tokens: int = 0
    interrupted: bool = False
    usd: float = 0.0
    """What the rows' runs that had a known cost cost."""
    unknown_cost: int = 0
    """Rows whose run's cost is unknown (a request whose model has no price; a record from before costs)."""
    budget_spent: bool = False
    """Whether the batch stopped starting rows because its total budget (`--budget-total`) was spent."""

    def count(self, duration: float, tokens: int, status: str, usd: float | None = None) -> None:
        """Add one finished run (or one that stopped at a Wait), with its cost (None: unknown)."""
        self.durations.append(duration)
        self.tokens += tokens
        if usd is None:
            self.unknown_cost += 1
        else:
            self.usd += usd
        if status == "succeeded":
            self.succeeded += 1
        elif status == "waiting":
            self.waiting += 1
        else:
            self.failed += 1

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.durations)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] if ordered else None
        return {"batch_id": self.batch_id, "rows": self.total, "succeeded": self.succeeded, "failed": self.failed,
                "skipped_already_done": self.skipped, "not_run": self.not_run, "waiting": self.waiting,
                "resumed_from_checkpoint": self.resumed, "tokens": self.tokens,
                "cost_usd": None if self.unknown_cost else round(self.usd, 9), "cost_unknown_rows": self.unknown_cost,
                "p50_ms": round(statistics.median(ordered) * 1000, 1) if ordered else None,
                "p95_ms": round(p95 * 1000, 1) if p95 is not None else None, "interrupted": self.interrupted,
                **({"budget_spent": True} if self.budget_spent else {})}


Progress = Callable[[str, RunResult | None], None]
"""progress(kind, result): kind is 'started', 'finished' or 'skipped'."""


# The rows, the limits, the store and the stop signal share one loop's state: kept together on purpose.
async def run_batch(
    diagram: Diagram,
    rows: list[dict[str, Any]],
    *,
    batch_id: str,
    store: RunStore,
    services: Services,
    runs_dir: Path | None,
    concurrency: int = 8,
    stop: asyncio.Event | None = None,
    now: asyncio.Event | None = None,
    grace: float = 10.0,
    progress: Progress | None = None,
    waiting: Callable[[list[int], float], None] | None = None,
    checkpoints: CheckpointStore | None = None,
) -> BatchOutcome:
    """Run the rows not yet succeeded in this batch; record each finished run.

    With `checkpoints` (the store beside the run store) a durable diagram's rows are checkpointed, a row left in flight continues
    from its checkpoint, and `session` columns are honoured (engine.runs.batch_rows).

    `stop` (the first Ctrl-C) starts no new row and gives the running ones `grace` seconds;
    `waiting(rows, grace)` hears which rows it waits for. `now` (a second Ctrl-C) cancels them
    at once. A cancelled row is recorded nowhere, so `--resume` runs it again.
    """
    stop = stop or asyncio.Event()
    now = now or asyncio.Event()
    if checkpoints is None and has_session_column(diagram) and any(row.get(SESSION_COLUMN) for row in rows):
        raise UsageError("the rows name sessions, which are kept in the checkpoint store; this batch has none")
    if checkpoints is not None:
        services.checkpoints = checkpoints
    turns: dict[str, asyncio.Lock] = {}
    done = store.succeeded_rows(batch_id)
    recorded_runs = store.batch_runs(batch_id)
    attempts = {number: run.get("attempt") or 1 for number, run in recorded_runs.items()}
    shared = services.shared_budget
    if shared is not None:  # a resumed batch's total counts what its recorded rows spent already
        shared.spent = recorded_spend(recorded_runs.values())
    outcome = BatchOutcome(batch_id, len(rows), skipped=len(done))
    for _ in done:
        if progress:
            progress("skipped", None)
    pending = [(number, row) for number, row in enumerate(rows, start=1) if number not in done]
    queue: asyncio.Queue[tuple[int, dict[str, Any]]] = asyncio.Queue()
    for item in pending:
        queue.put_nowait(item)
    running: set[int] = set()

    async def worker() -> None:
        while not stop.is_set():
            if shared is not None and shared.spent_out():  # each row left would fail at its first request
                outcome.budget_spent = True
                return
            try:
                number, row = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            if progress:
                progress("started", None)
            running.add(number)
            try:
                ran = await run_row(diagram, row, number, batch_id=batch_id, previous=attempts.get(number, 0),
                                    services=services, runs_dir=runs_dir, checkpoints=checkpoints, turns=turns)
                if ran is not None:
                    store.record(ran.result, diagram, row, batch_id=batch_id, row=number, attempt=ran.attempt)
            finally:
                running.discard(number)
            if ran is None:  # still waiting for its answer: left to its person
                outcome.waiting += 1
                if progress:
                    progress("skipped", None)
                continue
            result = ran.result
            outcome.resumed += ran.resumed
            outcome.count(result.duration, result.tokens, result.status, result.cost.get("usd"))
            if progress:
                progress("finished", result)

    workers = [asyncio.create_task(worker()) for _ in range(max(1, concurrency))]
    everything: asyncio.Future[Any] = asyncio.gather(*workers)
    stopper: asyncio.Future[Any] = asyncio.create_task(stop.wait())
    await asyncio.wait([everything, stopper], return_when=asyncio.FIRST_COMPLETED)
    if stop.is_set() and not everything.done():
        outcome.interrupted = True
        if waiting and running:
            waiting(sorted(running), grace)
        unfinished = await _finish_within(workers, grace, now)
        for task in unfinished:
            task.cancel()
        await asyncio.gather(*unfinished, return_exceptions=True)
    stopper.cancel()
    await asyncio.gather(everything, return_exceptions=True)
    outcome.interrupted = outcome.interrupted or stop.is_set()
    recorded = store.succeeded_rows(batch_id)
    outcome.not_run = len(rows) - len(recorded) - outcome.failed - outcome.waiting
    return outcome


def recorded_spend(recorded: Iterable[dict[str, Any]]) -> Spent:
    """What a batch's recorded rows spent, as its total budget counts it: their requests, tokens and known cost."""
    spent = Spent()
    for run in recorded:
        kept = run.get("cost")
        cost: dict[str, Any] = kept if isinstance(kept, dict) else {}
        usd = cost.get("usd") if cost.get("usd") is not None else cost.get("known_usd")
        spent.requests += int(cost.get("requests") or 0)
        spent.tokens += int(run.get("tokens") or 0)
        spent.usd += float(usd or 0.0)
    return spent


async def _finish_within(workers: list[asyncio.Task[None]], grace: float, now: asyncio.Event) -> set[asyncio.Task[None]]:
    """Wait for the workers up to `grace` seconds, or until `now` is set; those still running."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    unfinished = {task for task in workers if not task.done()}
    hurry: asyncio.Task[bool] = asyncio.create_task(now.wait())
    try:
        while unfinished and not now.is_set():
            left = deadline - loop.time()
            if left <= 0:
                break
            await asyncio.wait({*unfinished, hurry}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            unfinished = {task for task in unfinished if not task.done()}
    finally:
        hurry.cancel()
    return unfinished


@dataclass
class StopSignals:
    """What Ctrl-C (SIGINT) or SIGTERM sets: `stop` the first time, `now` the second."""

    stop: asyncio.Event
    now: asyncio.Event


def stop_on_signals(notify: Callable[[str], None] | None = None) -> StopSignals:
    """Events for `run_batch`'s `stop` and `now`; call it inside the running loop.

    The first signal stops new rows; a second one stops the running rows at once. `notify`
    hears a line for a person on each.
    """
    signals = StopSignals(asyncio.Event(), asyncio.Event())

    def received() -> None:
        if not signals.stop.is_set():
            signals.stop.set()
            return
        if not signals.now.is_set():
            signals.now.set()
            if notify:
                notify("stopping the running rows now; they are recorded as not run, and --resume runs them again")

    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, received)
        loop.add_signal_handler(signal.SIGTERM, received)
    except (NotImplementedError, RuntimeError):
        pass  # no signal handlers off the main thread or on Windows: Ctrl-C ends the process as usual
    return signals


def write_results(path: Path, store: RunStore, batch_id: str, total: int, collect: list[str]) -> None:
    """One line per input row, in input order: row, run_id, status, cost_usd (null: unknown), collected variables,
    error."""
    recorded = store.batch_runs(batch_id)
    lines: list[dict[str, Any]] = []
    for number in range(1, total + 1):
        run = recorded.get(number)
        if run is None:
            lines.append({"row": number, "run_id": None, "status": "not_run", "cost_usd": None,
                          **{name: None for name in collect}, "error": None})
            continue
        variables = run["variables"] or {}
        errors = [e for e in run["errors"] or [] if not e.get("ignored") and not e.get("handled_by")]
        error = f"{errors[-1]['block']}: {errors[-1]['type']}: {errors[-1]['message']}" if errors else None
        lines.append({"row": number, "run_id": run["run_id"], "status": run["status"], "cost_usd": run.get("cost_usd"),
                      **{name: variables.get(name) for name in collect}, "error": error})
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=["row", "run_id", "status", "cost_usd", *collect, "error"])
            writer.writeheader()
            for line in lines:
                writer.writerow({k: v if isinstance(v, (str, int, float)) or v is None
                                 else dumps_plain(v) for k, v in line.items()})
    else:
        path.write_bytes(b"".join(orjson.dumps(line, default=json_default) + b"\n" for line in lines))

