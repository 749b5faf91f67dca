"""The `diagrama` command: argv, exit codes, console output; the parts are wired here.

Exit status: 0 success, 1 a run failed, 2 a bad diagram or bad usage. Only
DiagramaErrors become one-line messages; anything else is our bug and shows as such.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.markup import escape

from engine.api import run_async
from engine.block import BlockRegistry
from engine.context import Services
from engine.diagram import Diagram
from engine.errors import DiagramaError, DiagramInvalid, RunError, UsageError
from engine.graph import to_dot, to_mermaid
from engine.inputs import inputs_from_file, parse_input_pairs
from engine.loader import load_diagram
from engine.schema import diagram_schema
from engine.spec import MESSAGE_LEVELS
from engine.templating import _json_default
from engine.trace import Event

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
    return orjson.dumps(value, default=_json_default, option=option | orjson.OPT_NON_STR_KEYS).decode()


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
    try:
        result = asyncio.run(
            run_async(loaded, values, runs_dir=_runs_dir(runs_dir), message_level=level, services=services,
                      console=console)
        )
    except DiagramaError as exc:
        raise _fail(exc) from None
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


@app.command()
def schema() -> None:
    """Print the JSON Schema of diagram files (for editors: diagrama schema > diagram.schema.json)."""
    sys.stdout.write(_dumps(diagram_schema(blocks_registry()), indent=True) + "\n")


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
        from engine.runs import find_trace, run_path

        try:
            path = run_path(find_trace(run, _runs_dir(runs_dir)))
        except DiagramaError as exc:
            raise _fail(exc) from None
    drawn = to_dot(loaded.graph, path) if format is GraphFormat.dot else to_mermaid(loaded.graph, path)
    sys.stdout.write(drawn)


def main() -> None:
    app()


__all__ = ["app", "main"]

