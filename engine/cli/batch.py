"""`diagrama batch` and `diagrama worker`: a diagram over many inputs, here or on Celery workers.

The batch policy (new or resumed, rows, recording) is engine.runs.batch's; this module reads
the options, shows progress and the summary, and says how to resume.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.cli import PATH, blocks_registry, console, fail, require_extra, runs_folder
from engine.cli.api import log_options, start_logs
from engine.cli.run import CACHE_HELP, OTEL_HELP, open_cache_option, otel_export

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram
    from engine.format.spec import Budget
    from engine.runs.batch import BatchOutcome
    from engine.runs.checkpoints import CheckpointStore
    from engine.runs.otel import OtelExport
    from engine.runs.store import RunStore


@click.command()
@click.argument("diagram", type=PATH)
@click.option("--inputs", type=PATH, required=True, help="CSV, JSON Lines, or a YAML/JSON list: one run per row")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="runs at once")
@click.option("--output", type=PATH, help="results file, .jsonl or .csv")
@click.option("--collect", default="", help="variables to put in the results, a,b")
@click.option("--resume", help="a batch id: run only its unfinished rows")
@click.option("--force", is_flag=True, help="resume even if the diagram changed")
@click.option("--store", "store_url", help="SQLAlchemy URL of the run store")
@click.option("--backend", default="local", show_default=True, help="local, or celery")
@click.option("--broker", help="Celery broker URL (default redis://127.0.0.1:6379/0)")
@click.option("--offline", is_flag=True, help="answer request blocks with the simulator")
@click.option("--rpm", multiple=True, help="requests per minute per vendor, claude=50")
@click.option("--max-concurrent", multiple=True, help="calls in flight, groq=4")
@click.option("--grace", type=float, default=10.0, show_default=True, help="seconds running runs get after Ctrl-C")
@click.option("--runs-dir", type=PATH)
@click.option("--data-root", type=PATH, multiple=True,
              help="a folder besides the diagram's own that it may read files from (repeatable)")
@click.option("--otel", is_flag=True, help=OTEL_HELP + "; with Celery, start the workers with --otel")
@click.option("--cache", type=PATH, help=CACHE_HELP + " (local batches)")
@click.option("--budget-total", "budget_total", multiple=True, metavar="usd=X,tokens=N,requests=N",
              help="what all the rows may spend together (on Celery, counted in Redis): a request past it is not "
                   "sent, and no new row starts once it is spent")
# Long: one command from its options to its exit code, each step a call; split, a dozen options pass on.
def batch(diagram: Path, inputs: Path, concurrency: int, output: Path | None, collect: str, resume: str | None,
          force: bool, store_url: str | None, backend: str, broker: str | None, offline: bool, rpm: tuple[str, ...],
          max_concurrent: tuple[str, ...], grace: float, runs_dir: Path | None, data_root: tuple[Path, ...],
          otel: bool, cache: Path | None, budget_total: tuple[str, ...]) -> None:
    """Run a diagram over many inputs, N at a time, recorded in the run store; resumable."""
    require_extra("sqlalchemy", "batch", "batch")
    if backend == "celery":
        require_extra("celery", "celery", "batch --backend celery")
    export = otel_export(otel, "batch") if backend != "celery" else None
    from engine.compile.loader import load_diagram
    from engine.errors import DiagramaError, UsageError
    from engine.runs.batch import read_rows, start_batch, write_results
    from engine.runs.limits import parse_limits
    from engine.runs.store import open_store
    from engine.runtime.budgets import budget_from_text

    try:
        # Run here, the batch runs with this environment: a secret('NAME') written out must be set in it. Celery's
        # workers have their own environment: there a run finds an unset secret when it reads it.
        loaded = load_diagram(diagram, blocks_registry(), data_roots=data_root or (), start_servers=True,
                              environ=os.environ if backend != "celery" else None)
    except DiagramaError as exc:
        raise fail(exc) from None
    folder = runs_folder(runs_dir)
    try:
        rows = read_rows(inputs, loaded)
        total = budget_from_text(budget_total, "--budget-total") if budget_total else None
        rpm_limits = parse_limits(list(rpm), "--rpm")
        concurrent_limits = parse_limits(list(max_concurrent), "--max-concurrent")
    except (DiagramaError, ValueError) as exc:
        raise fail(exc if isinstance(exc, DiagramaError) else UsageError(str(exc))) from None
    names = [name.strip() for name in collect.split(",") if name.strip()]
    store = open_store(store_url, folder)
    try:
        batch_id, names = start_batch(store, loaded, rows, inputs, names, resume=resume, force=force)
    except UsageError as exc:
        raise fail(exc) from None
    if backend == "celery":
        from engine.runs.celery_backend import run_batch_on_celery

        if cache is not None:
            raise fail(UsageError("--cache works with local batches; Celery's workers make their own services"))

        if otel:
            console(stderr=True).print("note: with Celery the workers export the spans; start them with --otel")
        if concurrent_limits:
            console(stderr=True).print(
                "note: --max-concurrent is per worker process with Celery; set each worker's --concurrency")
        outcome = run_batch_on_celery(loaded, rows, batch_id=batch_id, store=store, broker=broker, runs_dir=folder,
                                      offline=offline, console=console(stderr=True), rpm=rpm_limits, total=total)
    elif backend != "local":
        raise fail(UsageError(f"--backend is local or celery, not {backend!r}"))
    else:
        try:
            outcome = _run_local(loaded, rows, batch_id, store, folder, offline=offline, concurrency=concurrency,
                                 grace=grace, rpm_limits=rpm_limits, concurrent_limits=concurrent_limits, export=export,
                                 cache=cache, total=total)
        except DiagramaError as exc:  # rows naming sessions where the store cannot keep them
            raise fail(exc) from None
        finally:
            if export is not None:
                dropped = export.shutdown()  # sends the last runs' spans, waiting a moment at most
                if dropped:
                    sys.stderr.write(dropped + "\n")
    if output is not None:
        write_results(output, store, batch_id, len(rows), names)
    store.close()
    # Every option that shaped the batch, so the command runs as printed (an offline batch stays offline).
    options: list[tuple[str, Any]] = [
        ("--resume", batch_id), ("--output", output), ("--backend", backend if backend != "local" else None),
        ("--broker", broker), ("--store", store_url), ("--runs-dir", runs_dir), ("--concurrency", concurrency),
        *(("--rpm", pair) for pair in rpm or []), *(("--max-concurrent", pair) for pair in max_concurrent or []),
        ("--grace", grace if grace != 10.0 else None), *(("--data-root", root) for root in data_root or []),
        ("--offline", offline), ("--force", force), ("--otel", otel), ("--cache", cache),
        *(("--budget-total", limit) for limit in budget_total or [])]
    _report(outcome, resume_command(diagram, inputs, options))
    raise click.exceptions.Exit(0 if outcome.failed == 0 and outcome.not_run == 0 else 1)


def resume_command(diagram: Path, inputs: Path, options: list[tuple[str, Any]]) -> str:
    """`diagrama batch DIAGRAM --inputs FILE` and each option given (None and False left out, True a bare flag), quoted
    for a POSIX shell."""
    import shlex

    words = ["diagrama", "batch", str(diagram), "--inputs", str(inputs)]
    for option, value in options:
        if value is None or value is False:
            continue
        words += [option] if value is True else [option, str(value)]
    return shlex.join(words)


def _report(outcome: BatchOutcome, resume_command: str) -> None:
    """The summary line on stdout; how to resume on stderr when rows were left."""
    from rich.markup import escape

    summary = outcome.summary()
    console().print(" · ".join(f"{k} {v}" for k, v in summary.items() if v is not None), markup=False)
    if outcome.budget_spent:
        console(stderr=True).print("the batch's total budget (--budget-total) is spent: no new row was started")
    if outcome.interrupted or outcome.not_run:
        console(stderr=True).print(f"stopped; nothing done is lost. Resume with:\n  {escape(resume_command)}")


# The batch's progress, signals and limits share the loop's state: kept together on purpose.
def _run_local(loaded: Diagram, rows: list[dict[str, Any]], batch_id: str, store: RunStore, folder: Path, *,
               offline: bool, concurrency: int, grace: float, rpm_limits: dict[str, float],
               concurrent_limits: dict[str, float], export: OtelExport | None = None,
               cache: Path | None = None, total: Budget | None = None) -> BatchOutcome:
    """The batch in this process, with a progress bar on stderr; Ctrl-C stops it (see stop_on_signals).

    Its runs share one MCP session per server (the process's), closed when the batch ends.
    """
    import asyncio
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from engine.runs.batch import run_batch, stop_on_signals
    from engine.runs.limits import TokenBucket, VendorLimits
    from engine.runtime.context import Services

    services = Services(offline=offline, response_cache=open_cache_option(cache))
    if total is not None:
        from engine.runtime.budgets import SharedBudget

        services.shared_budget = SharedBudget(total)
    checkpoints = _checkpoint_store(store, folder)
    services.limits = VendorLimits(
        rpm={vendor: TokenBucket(value) for vendor, value in rpm_limits.items()},
        concurrent={vendor: asyncio.Semaphore(int(value)) for vendor, value in concurrent_limits.items()})
    if export is not None:
        services.run_observers.append(export)
    if loaded.tools is not None and loaded.tools.mcp_servers:
        from engine.tools.mcp import McpSessions

        services.mcp_sessions = McpSessions()
    counts = {"failed": 0, "running": 0}
    bar = Progress(TextColumn("[bold]batch"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("failed {task.fields[failed]} · running {task.fields[running]} · "
                              "{task.fields[rate]}/s"), TimeRemainingColumn(), console=console(stderr=True),
                   transient=False)
    task = bar.add_task("batch", total=len(rows), failed=0, running=0, rate="0.0")
    began = time.monotonic()

    def progress(kind: str, result: Any) -> None:
        if kind == "started":
            counts["running"] += 1
        elif kind == "finished":
            counts["running"] -= 1
            counts["failed"] += 0 if result.succeeded else 1
        advance = 0 if kind == "started" else 1
        elapsed = max(time.monotonic() - began, 1e-6)
        done = bar.tasks[0].completed + advance
        bar.update(task, advance=advance, failed=counts["failed"], running=counts["running"], rate=f"{done / elapsed:.1f}")

    def say(line: str) -> None:
        bar.console.print(line, markup=False)

    def waiting(running: list[int], seconds: float) -> None:
        shown = ", ".join(map(str, running[:10])) + (f" and {len(running) - 10} more" if len(running) > 10 else "")
        say(f"stopping: no new rows; waiting up to {seconds:g} s for {len(running)} running "
            f"row{'s' if len(running) != 1 else ''} to finish ({shown}). Press Ctrl-C again to stop them now.")

    async def go() -> BatchOutcome:
        signals = stop_on_signals(say)
        try:
            return await run_batch(loaded, rows, batch_id=batch_id, store=store, services=services, runs_dir=folder,
                                   concurrency=concurrency, stop=signals.stop, now=signals.now, grace=grace,
                                   progress=progress, waiting=waiting, checkpoints=checkpoints)
        finally:
            if services.mcp_sessions is not None:
                await services.mcp_sessions.aclose()

    try:
        with bar:
            return asyncio.run(go())
    finally:
        checkpoints.close()


def _checkpoint_store(store: RunStore, folder: Path) -> CheckpointStore:
    """The checkpoint store beside the run store (durable rows, sessions, `--resume` from checkpoints): its SQLite
    file, or the same database at another URL."""
    from engine.errors import UsageError
    from engine.runs.checkpoints import open_checkpoints

    try:
        return open_checkpoints(store.url, folder)
    except OSError as exc:
        raise fail(UsageError(str(exc))) from None


@click.command()
@click.option("--broker", help="Celery broker URL (default redis://127.0.0.1:6379/0)")
@click.option("--concurrency", type=click.IntRange(min=1), default=2, show_default=True,
              help="runs at once in this worker")
@click.option("--otel", is_flag=True, help=OTEL_HELP)
@log_options("info")
def worker(broker: str | None, concurrency: int, otel: bool, log_format: str | None, log_level: str) -> None:
    """A Celery worker that runs batch rows (`diagrama batch --backend celery`) and `diagrama api`'s runs."""
    require_extra("celery", "celery", "worker")
    require_extra("sqlalchemy", "celery", "worker")
    from engine.runs.service_logs import run_log_observer
    from engine.runtime.context import PROCESS_RUN_OBSERVERS

    start_logs(log_format, log_level)
    PROCESS_RUN_OBSERVERS.append(run_log_observer)  # a `run` line as each task's run ends
    export = otel_export(otel, "worker")
    if export is not None:
        PROCESS_RUN_OBSERVERS.append(export)  # the tasks make their own Services; each starts with these
    from engine.runs.celery_backend import start_worker

    start_worker(broker, concurrency)
