"""The `diagrama` command: argv, exit codes, console output; the parts are wired here.

Exit status: 0 success, 1 a run failed, 2 a bad diagram or bad usage. Only
DiagramaErrors become one-line messages; anything else is our bug and shows as such.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.markup import escape

from engine.compile.block import BlockRegistry
from engine.compile.diagram import Diagram
from engine.compile.graph import to_dot, to_mermaid
from engine.compile.inputs import inputs_from_file, parse_input_pairs
from engine.compile.loader import load_diagram
from engine.compile.schema import diagram_schema
from engine.errors import DiagramaError, DiagramInvalid, RunError, UsageError
from engine.format.spec import MESSAGE_LEVELS
from engine.format.values import json_default
from engine.runtime.api import run_async
from engine.runtime.context import Services
from engine.runtime.trace import Event

app = typer.Typer(
    name="diagrama",
    help="Run, check and inspect diagrama diagrams (YAML workflows of LLM blocks).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


class Level(StrEnum):
    Release = "Release"
    Debug = "Debug"
    Detailed = "Detailed"


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


class GraphFormat(StrEnum):
    mermaid = "mermaid"
    dot = "dot"


def blocks_registry() -> BlockRegistry:
    from blocks.registry import registry

    return registry()


def _fail(error: DiagramaError) -> typer.Exit:
    if isinstance(error, DiagramInvalid):
        for problem in error.problems:
            err.print(escape(str(problem)))
        count = len(error.problems)
        err.print(f"{count} problem{'s' if count != 1 else ''} found; nothing ran.")
        return typer.Exit(2)
    err.print(f"error: {escape(str(error))}")
    return typer.Exit(1 if isinstance(error, RunError) else 2)


def _load(path: Path) -> Diagram:
    try:
        return load_diagram(path, blocks_registry())
    except DiagramaError as exc:
        raise _fail(exc) from None


def _runs_dir(option: Path | None) -> Path:
    if option is not None:
        return option
    return Path(os.environ.get("DIAGRAMA_RUNS_DIR", "runs"))


def _dumps(value: Any, *, indent: bool = False) -> str:
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(value, default=json_default, option=option | orjson.OPT_NON_STR_KEYS).decode()


def console_printer(console: Console) -> Callable[[Mapping[str, Any], Callable[[str], str]], None]:
    """Shows run events on stderr as short lines; every line is scrubbed of secrets first."""

    def show(event: Mapping[str, Any], redact: Callable[[str], str]) -> None:
        name = event.get("event")
        if name == Event.BLOCK_FINISHED:
            arrow = f" → {event['next']}" if event.get("next") else ""
            mark = {"succeeded": "✓", "ignored": "~", "failed": "✗"}.get(event.get("status", ""), "·")
            line = f"  {mark} {event['block']} ({event['block_type']}) {event['duration_ms']:.1f} ms{arrow}"
        elif name == Event.BLOCK_FAILED:
            line = f"  ! {event.get('block')}: {event.get('error_type')}: {event.get('message')}"
        elif name == Event.RUN_STARTED:
            line = f"run {event['run_id']} of {event.get('diagram')}"
        elif name == Event.RUN_FINISHED:
            line = f"run {event['status']} in {event['duration_ms']:.1f} ms, {event['steps']} steps"
        elif name == Event.PROVIDER_CALLED:
            usage = event.get("usage") or {}
            line = (f"    {event.get('model')}: {usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)}"
                    f" out, {event.get('stop_reason')}")
        else:
            return
        console.print(escape(redact(line)))

    return show


@app.command()
def run(
    diagram: Annotated[Path, typer.Argument(help="the diagram file")],
    input: Annotated[list[str] | None, typer.Option("--input", "-i", help="an input as name=value")] = None,
    inputs: Annotated[Path | None, typer.Option("--inputs", help="a YAML or JSON file of inputs")] = None,
    offline: Annotated[bool, typer.Option("--offline", help="answer request blocks with the built-in simulator")] = False,
    message_level: Annotated[Level | None, typer.Option("--message-level", help="overrides the Start block's level")] = None,
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir", help="where run traces go (default ./runs)")] = None,
    output: Annotated[OutputFormat, typer.Option("--output", help="text, or one JSON object on stdout")] = OutputFormat.text,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no per-block lines on stderr")] = False,
    record: Annotated[Path | None, typer.Option("--record", help="write the run as a scenario file")] = None,
) -> None:
    """Run a diagram once."""
    loaded = _load(diagram)
    try:
        values = inputs_from_file(loaded, inputs) if inputs else {}
        values.update(parse_input_pairs(loaded, input or []))
    except UsageError as exc:
        raise _fail(exc) from None
    level = MESSAGE_LEVELS[message_level.value] if message_level else None
    console = None if quiet else console_printer(err)
    services = Services(offline=offline)
    recorded: list[dict[str, Any]] = []
    if record is not None:
        services.extras["recorder"] = recorded
    try:
        result = asyncio.run(
            run_async(loaded, values, runs_dir=_runs_dir(runs_dir), message_level=level, services=services,
                      console=console)
        )
    except DiagramaError as exc:
        raise _fail(exc) from None
    _store_run(loaded, values, result, _runs_dir(runs_dir))
    if record is not None:
        from engine.testing.scenarios import record_scenario

        record_scenario(record, diagram, values, result, recorded)
        err.print(f"recorded scenario {escape(str(record))}; review it before committing")
    if output is OutputFormat.json:
        sys.stdout.write(_dumps(result.as_json()) + "\n")
    else:
        style = "green" if result.succeeded else "red"
        out.print(f"[{style}]{result.status}[/{style}] · {len(result.path)} steps · "
                  f"{result.duration * 1000:.1f} ms · trace {escape(str(result.trace))}")
        out.print(f"path: {escape(' → '.join(result.path))}")
        for name, value in result.variables.items():
            text = value if isinstance(value, str) else _dumps(value)
            if len(text) > 300:
                text = text[:299] + "…"
            out.print(f"  {escape(name)} = {escape(text)}")
        for error in result.errors:
            note = " (ignored)" if error.get("ignored") else (f" (handled by {error['handled_by']})"
                                                            if error.get("handled_by") else "")
            out.print(f"[red]error[/red] in {escape(str(error['block']))}: {escape(error['type'])}: "
                      f"{escape(error['message'])}{note}")
    raise typer.Exit(0 if result.succeeded else 1)


def _store_run(diagram: Diagram, inputs: dict[str, Any], result: Any, runs_dir: Path) -> None:
    from sqlalchemy.exc import SQLAlchemyError

    from engine.runs.store import RunStore, default_store_url

    try:
        store = RunStore(os.environ.get("DIAGRAMA_STORE") or default_store_url(runs_dir))
        store.record(result, diagram, inputs)
        store.close()
    except (SQLAlchemyError, OSError) as exc:
        err.print(f"warning: the run was not recorded in the run store ({escape(type(exc).__name__)})")


@app.command()
def batch(
    diagram: Annotated[Path, typer.Argument(help="the diagram file")],
    inputs: Annotated[Path, typer.Option("--inputs", help="CSV, JSON Lines, or a YAML/JSON list: one run per row")],
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="runs at once")] = 8,
    output: Annotated[Path | None, typer.Option("--output", help="results file, .jsonl or .csv")] = None,
    collect: Annotated[str, typer.Option("--collect", help="variables to put in the results, a,b")] = "",
    resume: Annotated[str | None, typer.Option("--resume", help="a batch id: run only its unfinished rows")] = None,
    force: Annotated[bool, typer.Option("--force", help="resume even if the diagram changed")] = False,
    store_url: Annotated[str | None, typer.Option("--store", help="SQLAlchemy URL of the run store")] = None,
    backend: Annotated[str, typer.Option("--backend", help="local, or celery")] = "local",
    broker: Annotated[str | None, typer.Option("--broker", help="Celery broker URL (default redis://127.0.0.1:6379/0)")] = None,
    offline: Annotated[bool, typer.Option("--offline", help="answer request blocks with the simulator")] = False,
    rpm: Annotated[list[str] | None, typer.Option("--rpm", help="requests per minute per vendor, claude=50")] = None,
    max_concurrent: Annotated[list[str] | None, typer.Option("--max-concurrent", help="calls in flight, groq=4")] = None,
    grace: Annotated[float, typer.Option("--grace", help="seconds running runs get after Ctrl-C")] = 10.0,
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
) -> None:
    """Run a diagram over many inputs, N at a time, recorded in the run store; resumable."""
    import signal

    from engine.runs.batch import read_rows, run_batch, write_results
    from engine.runs.limits import TokenBucket, VendorLimits, parse_limits
    from engine.runs.store import RunStore, default_store_url
    from engine.runtime.trace import new_run_id

    loaded = _load(diagram)
    folder = _runs_dir(runs_dir)
    try:
        rows = read_rows(inputs, loaded)
        rpm_limits = parse_limits(rpm or [], "--rpm")
        concurrent_limits = parse_limits(max_concurrent or [], "--max-concurrent")
    except (DiagramaError, ValueError) as exc:
        raise _fail(exc if isinstance(exc, DiagramaError) else UsageError(str(exc))) from None
    names = [name.strip() for name in collect.split(",") if name.strip()]
    store = RunStore(store_url or os.environ.get("DIAGRAMA_STORE") or default_store_url(folder))
    if resume:
        known = store.batch(resume)
        if known is None:
            raise _fail(UsageError(f"no batch '{resume}' in the run store {store.url}"))
        if known["content_hash"] != loaded.content_hash and not force:
            raise _fail(UsageError(f"the diagram changed since batch '{resume}' began (its content hash differs); "
                                   "resuming would mix two versions — pass --force to resume anyway"))
        if known["rows"] != len(rows) and not force:
            raise _fail(UsageError(f"batch '{resume}' had {known['rows']} rows and {inputs} has {len(rows)}; "
                                   "pass --force to resume anyway"))
        batch_id = resume
        names = names or list(known.get("collect") or [])
    else:
        batch_id = "b" + new_run_id()
        store.begin_batch(batch_id, loaded, str(inputs), len(rows), names)
    if backend == "celery":
        from engine.runs.celery_backend import run_batch_on_celery

        if concurrent_limits:
            err.print("note: --max-concurrent is per worker process with Celery; set each worker's --concurrency")
        outcome = run_batch_on_celery(loaded, rows, batch_id=batch_id, store=store, broker=broker, runs_dir=folder,
                                      offline=offline, console=err, rpm=rpm_limits)
    elif backend != "local":
        raise _fail(UsageError(f"--backend is local or celery, not {backend!r}"))
    else:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        services = Services(offline=offline)
        services.extras["limits"] = VendorLimits(
            rpm={vendor: TokenBucket(value) for vendor, value in rpm_limits.items()},
            concurrent={vendor: asyncio.Semaphore(int(value)) for vendor, value in concurrent_limits.items()})
        counts = {"failed": 0, "running": 0}
        bar = Progress(TextColumn("[bold]batch"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("failed {task.fields[failed]} · running {task.fields[running]} · "
                                  "{task.fields[rate]}/s"), TimeRemainingColumn(), console=err, transient=False)
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
            bar.update(task, advance=advance, failed=counts["failed"], running=counts["running"],
                       rate=f"{done / elapsed:.1f}")

        async def go() -> Any:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            try:
                loop.add_signal_handler(signal.SIGINT, stop.set)
                loop.add_signal_handler(signal.SIGTERM, stop.set)
            except (NotImplementedError, RuntimeError):
                pass
            return await run_batch(loaded, rows, batch_id=batch_id, store=store, services=services, runs_dir=folder,
                                   concurrency=concurrency, stop=stop, grace=grace, progress=progress)

        with bar:
            outcome = asyncio.run(go())
    if output is not None:
        write_results(output, store, batch_id, len(rows), names)
    summary = outcome.summary()
    out.print(" · ".join(f"{k} {v}" for k, v in summary.items() if v is not None), markup=False)
    if outcome.interrupted or outcome.not_run:
        command = f"diagrama batch {diagram} --inputs {inputs} --resume {batch_id}"
        if output is not None:
            command += f" --output {output}"
        err.print(f"stopped; nothing done is lost. Resume with:\n  {escape(command)}")
    store.close()
    raise typer.Exit(0 if outcome.failed == 0 and outcome.not_run == 0 else 1)


@app.command()
def validate(diagrams: Annotated[list[Path], typer.Argument(help="diagram files")]) -> None:
    """Check diagrams without running them; every problem of each file is listed."""
    registry = blocks_registry()
    bad = 0
    for path in diagrams:
        try:
            loaded = load_diagram(path, registry)
        except DiagramInvalid as exc:
            bad += 1
            for problem in exc.problems:
                err.print(escape(str(problem)))
            continue
        out.print(f"ok  {escape(str(path))} ({len(loaded.blocks)} blocks)")
    if bad:
        err.print(f"{bad} of {len(diagrams)} diagram{'s' if len(diagrams) != 1 else ''} invalid")
        raise typer.Exit(2)


class SchemaKind(StrEnum):
    diagram = "diagram"
    scenario = "scenario"


@app.command()
def schema(
    kind: Annotated[SchemaKind, typer.Option("--kind", help="diagram files, or scenario files")] = SchemaKind.diagram,
) -> None:
    """Print the JSON Schema of diagram files (for editors: diagrama schema > diagram.schema.json)."""
    if kind is SchemaKind.scenario:
        from engine.testing.scenarios import scenario_schema

        sys.stdout.write(_dumps(scenario_schema(), indent=True) + "\n")
        return
    sys.stdout.write(_dumps(diagram_schema(blocks_registry()), indent=True) + "\n")


def scenario_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(path.rglob("*.scenario.yaml"))
        else:
            found.append(path)
    return found


@app.command("test")
def test_scenarios(
    paths: Annotated[list[Path] | None, typer.Argument(help="scenario files or folders (default tests/scenarios)")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="only scenarios with this tag")] = None,
    keyword: Annotated[str | None, typer.Option("-k", help="only scenarios whose name contains this text")] = None,
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
) -> None:
    """Run robot scenario files (*.scenario.yaml) against the offline simulator."""
    from engine.testing.scenarios import load_scenarios, run_scenario

    registry = blocks_registry()
    passed = failed = 0
    for file in scenario_files(paths or [Path("tests/scenarios")]):
        try:
            scenarios = load_scenarios(file)
        except DiagramaError as exc:
            failed += 1
            err.print(escape(str(exc)))
            continue
        for scenario in scenarios:
            if tag and not set(tag) & set(scenario.spec.tags):
                continue
            if keyword and keyword.lower() not in scenario.name.lower():
                continue
            verdict = run_scenario(scenario, registry, _runs_dir(runs_dir))
            if verdict.passed:
                passed += 1
                out.print(f"PASS  {escape(scenario.name)}  [dim]{escape(str(file))}[/dim]")
            else:
                failed += 1
                out.print(f"[red]FAIL[/red]  {escape(verdict.report())}")
    sys.stdout.write(f"{passed} passed, {failed} failed\n")
    raise typer.Exit(1 if failed else 0)


@app.command()
def graph(
    diagram: Annotated[Path, typer.Argument(help="the diagram file")],
    format: Annotated[GraphFormat, typer.Option("--format", help="mermaid or dot")] = GraphFormat.mermaid,
    run: Annotated[str | None, typer.Option("--run", help="a run id, run folder or trace file to highlight")] = None,
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
) -> None:
    """Draw a diagram as Mermaid or Graphviz DOT text, optionally with a run's path."""
    loaded = _load(diagram)
    path = None
    if run is not None:
        from engine.runs.traces import find_trace, run_path

        try:
            path = run_path(find_trace(run, _runs_dir(runs_dir)))
        except DiagramaError as exc:
            raise _fail(exc) from None
    drawn = to_dot(loaded.graph, path) if format is GraphFormat.dot else to_mermaid(loaded.graph, path)
    sys.stdout.write(drawn)


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else _dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _step_line(step: Any) -> str:
    link = f"→ {step.next}" if step.next else ""
    if step.via and step.via not in ("next", None):
        link += f" ({step.via})"
    detail = []
    if step.model:
        tokens = f" {step.tokens[0]}/{step.tokens[1]} tok" if step.tokens else ""
        detail.append(f"{step.model}{tokens}")
    if step.called_tools:
        detail.append("called " + ", ".join(step.called_tools))
    if step.error:
        detail.append(step.error)
    if step.inputs:
        detail.append("in " + _short(step.inputs))
    if step.set:
        detail.append("set " + _short(step.set))
    elif step.outputs:
        detail.append("out " + _short(step.outputs))
    offset = f"{step.offset_ms:9.2f}" if step.offset_ms is not None else " " * 9
    duration = f"{step.duration_ms:9.3f}" if step.duration_ms is not None else " " * 9
    return (f"{step.number:>5} {step.block[:18]:<18} {step.block_type[:16]:<16} {offset} {duration} "
            f"{step.status:<9} {link[:22]:<22} {' · '.join(detail)}")


@app.command()
def trace(
    run: Annotated[str, typer.Argument(help="run id, run folder, trace file, or 'last'")] = "last",
    block: Annotated[str | None, typer.Option("--block", help="only this block's steps")] = None,
    level: Annotated[Level | None, typer.Option("--level", help="only events kept at this message level")] = None,
    errors: Annotated[bool, typer.Option("--errors", help="only failed or ignored steps")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="the raw events, one JSON object per line")] = False,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep reading until the run finishes")] = False,
    show_payloads: Annotated[bool, typer.Option("--show-payloads", help="print the (redacted) HTTP bodies")] = False,
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
) -> None:
    """Show a run's steps: block, type, start offset, duration, status, link taken, short inputs/outputs."""
    import time as clock

    from engine.runs.traces import event_level, find_trace, steps
    from engine.runtime.trace import read_events

    try:
        path = find_trace(run, _runs_dir(runs_dir))
    except DiagramaError as exc:
        raise _fail(exc) from None
    limit = MESSAGE_LEVELS[level.value] if level else None

    def wanted(event: dict[str, Any]) -> bool:
        if block and event.get("block") not in (block, None):
            return False
        if block and event.get("block") is None and event.get("event") not in ("run_started", "run_finished"):
            return False
        if limit is not None and event_level(event) > limit:
            return False
        if not errors or not as_json:
            return True  # the table filters whole steps, below
        return event.get("event") in ("block_failed", "run_finished", "run_started") or \
            event.get("status") in ("failed", "ignored")

    seen = 0
    header_done = False
    while True:
        events = read_events(path)
        fresh, seen = events[seen:], len(events)
        chosen = [e for e in fresh if wanted(e)]
        if as_json:
            for event in chosen:
                sys.stdout.write(_dumps(event) + "\n")
        else:
            if not header_done:
                out.print(f"{'step':>5} {'block':<18} {'type':<16} {'start ms':>9} {'took ms':>9} {'status':<9} "
                          f"{'link':<22} details", markup=False)
                header_done = True
            lines = []
            for event in chosen:
                name = event.get("event")
                if name == "run_started":
                    lines.append(f"run {event.get('run_id')} of {event.get('diagram')} ({event.get('message_level')})")
                elif name == "run_finished":
                    lines.append(f"run {event.get('status')} after {event.get('steps')} steps in "
                                 f"{event.get('duration_ms')} ms")
                    for error in event.get("errors") or []:
                        lines.append(f"  error in {error.get('block')}: {error.get('type')}: {error.get('message')}")
            for step in steps(chosen):
                if errors and step.status not in ("failed", "ignored"):
                    continue
                lines.append(_step_line(step))
                if show_payloads:
                    lines += ["      " + _dumps({k: p.get(k) for k in ("event", "status", "url", "body") if k in p})
                              for p in step.payloads]
            if lines:
                sys.stdout.write("\n".join(lines) + "\n")
                sys.stdout.flush()
        if not follow or (events and events[-1].get("event") == "run_finished"):
            break
        clock.sleep(0.2)


@app.command()
def runs(
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
    limit: Annotated[int, typer.Option("--limit", help="how many, newest first")] = 20,
) -> None:
    """List recent runs: id, diagram, status, start, duration, steps."""
    import datetime

    from engine.runs.traces import list_runs

    store_file = _runs_dir(runs_dir) / "diagrama.db"
    if store_file.is_file() or os.environ.get("DIAGRAMA_STORE"):
        from engine.runs.store import RunStore, default_store_url

        store = RunStore(os.environ.get("DIAGRAMA_STORE") or default_store_url(_runs_dir(runs_dir)))
        recorded = store.recent(limit)
        store.close()
        out.print(f"{'run':<30} {'diagram':<28} {'status':<10} {'started':<19} {'ms':>10} {'steps':>6} {'batch':<24}",
                  markup=False)
        for entry in recorded:
            started = datetime.datetime.fromtimestamp(entry["started"] or 0).strftime("%Y-%m-%d %H:%M:%S")
            batch_note = f"{entry['batch_id']}#{entry['row']}" if entry["batch_id"] else ""
            out.print(f"{entry['run_id']:<30} {Path(entry['diagram']).name[:28]:<28} {entry['status']:<10} {started:<19} "
                      f"{entry['duration_ms'] or 0:>10.1f} {entry['steps'] or 0:>6} {batch_note:<24}", markup=False)
        return
    found = list_runs(_runs_dir(runs_dir), limit)
    if not found:
        err.print(f"no runs in {escape(str(_runs_dir(runs_dir)))}")
        return
    out.print(f"{'run':<24} {'diagram':<24} {'status':<10} {'started':<19} {'ms':>10} {'steps':>6}", markup=False)
    for summary in found:
        started = datetime.datetime.fromtimestamp(summary.started).strftime("%Y-%m-%d %H:%M:%S")
        duration = f"{summary.duration_ms:.1f}" if summary.duration_ms is not None else "-"
        out.print(f"{summary.run_id:<24} {summary.diagram[:24]:<24} {summary.status:<10} {started:<19} {duration:>10} "
                  f"{summary.steps if summary.steps is not None else '-':>6}", markup=False)


@app.command()
def serve(
    folder: Annotated[Path, typer.Argument(help="folder of diagrams")] = Path("diagrams"),
    port: Annotated[int, typer.Option("--port", help="port on the host")] = 8765,
    host: Annotated[str, typer.Option("--host", help="127.0.0.1 keeps it local; 0.0.0.0 shares it")] = "127.0.0.1",
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
) -> None:
    """A local web view of a folder of diagrams and their runs (read-only over the YAML)."""
    import uvicorn

    from engine.web.app import create_app

    if not folder.is_dir():
        raise _fail(UsageError(f"{folder} is not a folder of diagrams"))
    web = create_app(folder, _runs_dir(runs_dir), blocks_registry())
    err.print(f"diagrama: serving {escape(str(folder))} on http://{host}:{port}/ (Ctrl-C stops)")
    uvicorn.run(web, host=host, port=port, log_level="warning")


@app.command()
def worker(
    broker: Annotated[str | None, typer.Option("--broker", help="Celery broker URL (default redis://127.0.0.1:6379/0)")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="runs at once in this worker")] = 2,
) -> None:
    """A Celery worker that runs batch rows (`diagrama batch --backend celery`)."""
    from engine.runs.celery_backend import start_worker

    start_worker(broker, concurrency)


def main() -> None:
    app()


__all__ = ["app", "main"]



if __name__ == "__main__":
    main()
