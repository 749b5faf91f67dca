"""`diagrama run`, `validate`, `schema` and `graph`: one diagram run, checked, described or drawn.

Console output only; loading, running, the run store and drawing are the engine's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.cli import Level, blocks_registry, console, fail, has_module, load, runs_folder

if TYPE_CHECKING:
    from rich.console import Console

    from engine.compile.diagram import Diagram
    from engine.runtime.execute import RunResult


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


class GraphFormat(StrEnum):
    mermaid = "mermaid"
    dot = "dot"


class SchemaKind(StrEnum):
    diagram = "diagram"
    scenario = "scenario"


def console_printer(console: Console) -> Callable[[Mapping[str, Any], Callable[[str], str]], None]:
    """Shows run events on stderr as short lines; every line is scrubbed of secrets first."""
    from rich.markup import escape

    from engine.runtime.trace import Event

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
    data_root: Annotated[list[Path] | None, typer.Option(
        "--data-root", help="a folder besides the diagram's own that it may read files from (repeatable)")] = None,
) -> None:
    """Run a diagram once."""
    import asyncio

    from rich.markup import escape

    from engine.compile.inputs import inputs_from_file, parse_input_pairs
    from engine.compile.loader import load_diagram
    from engine.errors import DiagramaError, UsageError
    from engine.format.spec import MESSAGE_LEVELS
    from engine.runtime.api import run_async
    from engine.runtime.context import Services

    try:
        loaded = load_diagram(diagram, blocks_registry(), data_roots=data_root or ())
    except DiagramaError as exc:
        raise fail(exc) from None
    try:
        values = inputs_from_file(loaded, inputs) if inputs else {}
        values.update(parse_input_pairs(loaded, input or []))
    except UsageError as exc:
        raise fail(exc) from None
    level = MESSAGE_LEVELS[message_level.value] if message_level else None
    err = console(stderr=True)
    printer = None if quiet else console_printer(err)
    folder = runs_folder(runs_dir)
    services = Services(offline=offline)
    recorded: list[dict[str, Any]] = []
    if record is not None:
        services.reply_observers.append(lambda block, reply: recorded.append({"block": block, **reply}))
    try:
        result = asyncio.run(
            run_async(loaded, values, runs_dir=folder, message_level=level, services=services, console=printer)
        )
    except DiagramaError as exc:
        raise fail(exc) from None
    _store_run(loaded, values, result, folder)
    if record is not None:
        from engine.testing.scenarios import record_scenario

        record_scenario(record, diagram, values, result, recorded)
        err.print(f"recorded scenario {escape(str(record))}; review it before committing")
    if output is OutputFormat.json:
        from engine.format.jsonout import dumps_plain

        sys.stdout.write(dumps_plain(result.as_json()) + "\n")
    else:
        _print_result(result)
    raise typer.Exit(0 if result.succeeded else 1)


def _print_result(result: RunResult) -> None:
    from rich.markup import escape

    from engine.format.jsonout import dumps_plain

    out = console()
    style = "green" if result.succeeded else "red"
    out.print(f"[{style}]{result.status}[/{style}] · {len(result.path)} steps · "
              f"{result.duration * 1000:.1f} ms · trace {escape(str(result.trace))}")
    out.print(f"path: {escape(' → '.join(result.path))}")
    for name, value in result.variables.items():
        text = value if isinstance(value, str) else dumps_plain(value)
        if len(text) > 300:
            text = text[:299] + "…"
        out.print(f"  {escape(name)} = {escape(text)}")
    for error in result.errors:
        note = " (ignored)" if error.get("ignored") else (f" (handled by {error['handled_by']})"
                                                        if error.get("handled_by") else "")
        out.print(f"[red]error[/red] in {escape(str(error['block']))}: {escape(error['type'])}: "
                  f"{escape(error['message'])}{note}")


def _store_run(diagram: Diagram, inputs: dict[str, Any], result: RunResult, folder: Path) -> None:
    """Record the run in the run store, where the batch extra (SQLAlchemy) is installed; a failure only warns."""
    if not has_module("sqlalchemy"):
        return  # without the batch extra there is no run store; the trace is the record
    from rich.markup import escape
    from sqlalchemy.exc import SQLAlchemyError

    from engine.runs.store import open_store

    try:
        store = open_store(None, folder)
        store.record(result, diagram, inputs)
        store.close()
    except (SQLAlchemyError, OSError) as exc:
        console(stderr=True).print(
            f"warning: the run was not recorded in the run store ({escape(type(exc).__name__)})")


def validate(
    diagrams: Annotated[list[Path], typer.Argument(help="diagram files")],
    data_root: Annotated[list[Path] | None, typer.Option(
        "--data-root", help="a folder besides each diagram's own that it may read files from (repeatable)")] = None,
) -> None:
    """Check diagrams without running them; every problem of each file is listed."""
    from rich.markup import escape

    from engine.compile.loader import load_diagram
    from engine.errors import DiagramInvalid

    registry = blocks_registry()
    err, out = console(stderr=True), console()
    bad = 0
    for path in diagrams:
        try:
            loaded = load_diagram(path, registry, data_roots=data_root or ())
        except DiagramInvalid as exc:
            bad += 1
            for problem in exc.problems:
                err.print(escape(str(problem)))
            continue
        out.print(f"ok  {escape(str(path))} ({len(loaded.blocks)} blocks)")
    if bad:
        err.print(f"{bad} of {len(diagrams)} diagram{'s' if len(diagrams) != 1 else ''} invalid")
        raise typer.Exit(2)


def schema(
    kind: Annotated[SchemaKind, typer.Option("--kind", help="diagram files, or scenario files")] = SchemaKind.diagram,
) -> None:
    """Print the JSON Schema of diagram files (for editors: diagrama schema > diagram.schema.json)."""
    from engine.format.jsonout import dumps_plain

    if kind is SchemaKind.scenario:
        from engine.testing.scenarios import scenario_schema

        sys.stdout.write(dumps_plain(scenario_schema(), indent=True) + "\n")
        return
    from engine.compile.schema import diagram_schema

    sys.stdout.write(dumps_plain(diagram_schema(blocks_registry()), indent=True) + "\n")


def graph(
    diagram: Annotated[Path, typer.Argument(help="the diagram file")],
    format: Annotated[GraphFormat, typer.Option("--format", help="mermaid or dot")] = GraphFormat.mermaid,
    run: Annotated[str | None, typer.Option("--run", help="a run id, run folder or trace file to highlight")] = None,
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
) -> None:
    """Draw a diagram as Mermaid or Graphviz DOT text, optionally with a run's path."""
    from engine.compile.graph import to_dot, to_mermaid
    from engine.errors import DiagramaError

    loaded = load(diagram)
    path = None
    if run is not None:
        from engine.runs.traces import find_trace, run_path

        try:
            path = run_path(find_trace(run, runs_folder(runs_dir)))
        except DiagramaError as exc:
            raise fail(exc) from None
    drawn = to_dot(loaded.graph, path) if format is GraphFormat.dot else to_mermaid(loaded.graph, path)
    sys.stdout.write(drawn)
