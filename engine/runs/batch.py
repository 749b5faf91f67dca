"""Batch runs: one diagram over many inputs, N at a time, recorded in the run store.

Rows come from CSV, JSON Lines or a YAML/JSON list, typed by the Start inputs'
defaults. A stop request (Ctrl-C) starts nothing new, lets running runs finish within
a grace period (a second Ctrl-C ends it at once), then cancels them; rows that did not finish stay unrecorded, so
`--resume` runs exactly those (and any that failed), never one that succeeded. Each
attempt at a row is a run of its own (its own run id, trace and attempt number), so a
retried row never appends to the trace of the attempt that was killed or failed.
"""

from __future__ import annotations

import asyncio
import csv
import io
import signal
import statistics
from collections.abc import Callable
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
from engine.runs.store import RunStore
from engine.runs.traces import trace_status
from engine.runtime.context import Services
from engine.runtime.execute import RunResult, execute
from engine.runtime.trace import new_run_id

__all__ = ["BatchOutcome", "StopSignals", "batch_run_id", "claim_attempt", "read_rows", "run_batch", "start_batch",
           "stop_on_signals", "write_results"]


def batch_run_id(batch_id: str, row: int, attempt: int = 1) -> str:
    """Deterministic per (batch, row, attempt): every backend writes the same results file.

    The first attempt is `<batch>-r000007`; a later one adds its number, `<batch>-r000007-a2`.
    """
    base = f"{batch_id}-r{row:06d}"
    return base if attempt <= 1 else f"{base}-a{attempt}"


def claim_attempt(runs_dir: Path | None, batch_id: str, row: int, previous: int = 0) -> tuple[str, int]:
    """The run id and number of this row's next attempt, after `previous` (the store's last one).

    The attempt's run folder is made here, exclusively. An attempt whose folder is taken
    was killed or stopped before the store heard of it (or another worker has just claimed
    it): it counts, and the next number is taken, so a retry never appends to the trace of
    the attempt before it. Only a run that succeeded and that this store never recorded
    (another store kept over the same runs folder) keeps its folder, as before.
    """
    attempt = max(previous, 0) + 1
    while True:
        run_id = batch_run_id(batch_id, row, attempt)
        if runs_dir is None:
            return run_id, attempt
        try:
            (runs_dir / run_id).mkdir(parents=True)
        except FileExistsError:
            if trace_status(runs_dir / run_id / "trace.jsonl") != "succeeded":
                attempt += 1
                continue
        return run_id, attempt


def read_rows(path: Path, diagram: Diagram) -> list[dict[str, Any]]:
    """Each row is one run's inputs; CSV cells are typed by the inputs' defaults.

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
    durations: list[float] = field(default_factory=list)
    tokens: int = 0
    interrupted: bool = False

    def count(self, duration: float, tokens: int, succeeded: bool) -> None:
        """Add one finished run."""
        self.durations.append(duration)
        self.tokens += tokens
        if succeeded:
            self.succeeded += 1
        else:
            self.failed += 1

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.durations)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] if ordered else None
        return {"batch_id": self.batch_id, "rows": self.total, "succeeded": self.succeeded, "failed": self.failed,
                "skipped_already_done": self.skipped, "not_run": self.not_run, "tokens": self.tokens,
                "p50_ms": round(statistics.median(ordered) * 1000, 1) if ordered else None,
                "p95_ms": round(p95 * 1000, 1) if p95 is not None else None, "interrupted": self.interrupted}


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
) -> BatchOutcome:
    """Run the rows not yet succeeded in this batch; record each finished run.

    `stop` (the first Ctrl-C) starts no new row and gives the running ones `grace` seconds;
    `waiting(rows, grace)` hears which rows it waits for. `now` (a second Ctrl-C) cancels them
    at once. A cancelled row is recorded nowhere, so `--resume` runs it again.
    """
    stop = stop or asyncio.Event()
    now = now or asyncio.Event()
    done = store.succeeded_rows(batch_id)
    attempts = {number: run.get("attempt") or 1 for number, run in store.batch_runs(batch_id).items()}
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
            try:
                number, row = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            if progress:
                progress("started", None)
            running.add(number)
            try:
                run_id, attempt = claim_attempt(runs_dir, batch_id, number, attempts.get(number, 0))
                result = await execute(diagram, row, runs_dir=runs_dir, services=services, run_id=run_id)
                store.record(result, diagram, row, batch_id=batch_id, row=number, attempt=attempt)
            finally:
                running.discard(number)
            outcome.count(result.duration, result.tokens, result.succeeded)
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
    outcome.not_run = len(rows) - len(recorded) - outcome.failed
    return outcome


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
    """One line per input row, in input order: row, run_id, status, collected variables, error."""
    recorded = store.batch_runs(batch_id)
    lines: list[dict[str, Any]] = []
    for number in range(1, total + 1):
        run = recorded.get(number)
        if run is None:
            lines.append({"row": number, "run_id": None, "status": "not_run",
                          **{name: None for name in collect}, "error": None})
            continue
        variables = run["variables"] or {}
        errors = [e for e in run["errors"] or [] if not e.get("ignored") and not e.get("handled_by")]
        error = f"{errors[-1]['block']}: {errors[-1]['type']}: {errors[-1]['message']}" if errors else None
        lines.append({"row": number, "run_id": run["run_id"], "status": run["status"],
                      **{name: variables.get(name) for name in collect}, "error": error})
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=["row", "run_id", "status", *collect, "error"])
            writer.writeheader()
            for line in lines:
                writer.writerow({k: v if isinstance(v, (str, int, float)) or v is None
                                 else dumps_plain(v) for k, v in line.items()})
    else:
        path.write_bytes(b"".join(orjson.dumps(line, default=json_default) + b"\n" for line in lines))

