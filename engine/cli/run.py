"""`diagrama run`: one diagram run, its per-block lines on stderr and its result; the run store record.

Console output only; loading, running (through the one turn, engine.runs.turn) and the run store are the engine's.
`validate`, `schema` and `graph` are engine.cli.diagrams'.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from engine.cli import LEVELS, PATH, blocks_registry, console, fail, has_module, redactor, require_extra, runs_folder

if TYPE_CHECKING:
    import datetime

    from rich.console import Console

    from engine.compile.diagram import Diagram
    from engine.providers.response_cache import ResponseCache
    from engine.runs.otel import OtelExport
    from engine.runtime.execute import RunResult

OTEL_HELP = "export each run as OpenTelemetry spans over OTLP (OTEL_EXPORTER_OTLP_* variables; or DIAGRAMA_OTEL=1)"

CACHE_HELP = ("answer a request a request block repeats from this folder, without calling the vendor; keep each new "
              "answer there (README, \"The response cache\")")


def open_cache_option(folder: Path | None) -> ResponseCache | None:
    """The response cache `--cache DIR` names, or None; exit 2 when the folder cannot be made."""
    if folder is None:
        return None
    from engine.errors import UsageError
    from engine.providers.response_cache import open_cache

    try:
        return open_cache(folder)
    except OSError as exc:
        raise fail(UsageError(f"--cache {folder}: {exc.strerror or exc}")) from None


def otel_export(flag: bool, command: str) -> OtelExport | None:
    """The OTLP export `--otel` or DIAGRAMA_OTEL=1 asks for, or None; exit 2 naming the otel extra when it is missing."""
    from engine.runs.otel import otel_wanted

    if not otel_wanted(flag):
        return None
    require_extra("opentelemetry.sdk", "otel", f"{command} --otel")
    require_extra("opentelemetry.exporter.otlp.proto.http", "otel", f"{command} --otel")
    from engine.runs.otel import otlp_export

    return otlp_export()


class ConsoleLines:
    """The per-block lines of a run on stderr: plain text, formatted once per event, written in batches.

    No rich here: a line costs about what its trace event costs. The trace calls the line's
    function straight from its chain (`shows`) and `flush` whenever it writes its own batch (the
    run waits on a request, a slow block ends, an error, the run's end), so the lines appear as the
    trace grows. Each batch is scrubbed of secrets in one pass before it is written. A reader that
    went away (a closed pipe) silences the lines; the run goes on.
    """

    __slots__ = ("_lines", "_redact", "_stream", "before_lines")

    def __init__(self, stream: TextIO) -> None:
        self._stream: TextIO | None = stream
        self._lines: list[str] = []
        self._redact: Callable[[str], str] = str
        self.before_lines: Callable[[], None] | None = None
        """Called before a batch of lines is written (`--stream` ends the answer's open line there)."""

    def shows(self, event: str, redact: Callable[[str], str]) -> Callable[[Mapping[str, Any]], None] | None:
        """The function that adds `event`'s line, or None for an event not shown."""
        from engine.runtime.trace import Event

        self._redact = redact
        add = self._lines.append
        if event == Event.BLOCK_FINISHED:
            # Every Debug step: the line is written out here rather than through a formatting function,
            # and `0.0` without float formatting (most Debug steps take under 0.05 ms).
            def finished(event: Mapping[str, Any]) -> None:
                duration = event["duration_ms"]
                following = event.get("next")
                add(f"  {_MARKS.get(event['status'], '·')} {event['block']} ({event['block_type']}) "
                    f"{'0.0' if duration < 0.05 else f'{duration:.1f}'} ms{' → ' + following if following else ''}")
            return finished
        line = _LINES.get(event)
        if line is None:
            return None
        return lambda event: add(line(event))

    def flush(self) -> None:
        """Write the lines so far, scrubbed, in one write."""
        if not self._lines:
            return
        text = self._redact("\n".join(self._lines) + "\n")
        self._lines.clear()
        stream = self._stream
        if stream is None:
            return
        if self.before_lines is not None:
            self.before_lines()
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError:
            self._stream = None
            _discard_output(stream)


_MARKS = {"succeeded": "✓", "ignored": "~", "failed": "✗"}
"""A block's status as its line shows it."""


def _failed_line(event: Mapping[str, Any]) -> str:
    return f"  ! {event.get('block')}: {event.get('error_type')}: {event.get('message')}"


def _started_line(event: Mapping[str, Any]) -> str:
    return f"run {event['run_id']} of {event.get('diagram')}"


def _run_finished_line(event: Mapping[str, Any]) -> str:
    return f"run {event['status']} in {event['duration_ms']:.1f} ms, {event['steps']} steps"


def _provider_line(event: Mapping[str, Any]) -> str:
    usage = event.get("usage") or {}
    cost = event.get("cost")
    usd = cost.get("usd") if isinstance(cost, dict) else None
    return (f"    {event.get('model')}: {usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out, "
            f"{event.get('stop_reason')}"
            + (f", ${usd:.6f}" if isinstance(usd, (int, float)) else ", cost unknown" if "cost" in event else "")
            + (" (cached)" if event.get("cached") else "")
            + (f" (fallback for {event.get('requested_model')})" if event.get("requested_model") else ""))


def _fallback_line(event: Mapping[str, Any]) -> str:
    failed, to, error = event.get("failed") or {}, event.get("to"), event.get("error") or {}
    then = f"asking {to.get('vendor')} {to.get('model')}" if isinstance(to, dict) else "no fallback left to ask"
    return f"    {failed.get('vendor')} {failed.get('model')} failed ({error.get('type')}): {then}"


def _http_line(event: Mapping[str, Any]) -> str:
    attempts = int(event.get("attempts") or 1)
    return f"    {event.get('method')} {event.get('url')} → {event.get('status')}" + (
        f" ({attempts} attempts)" if attempts > 1 else "")


def _blocking_line(event: Mapping[str, Any]) -> str:
    return f"  ! {event.get('block')}: blocking_call: {event.get('message')}"


_LINES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "block_failed": _failed_line,
    "blocking_call": _blocking_line,
    "run_started": _started_line,
    "run_finished": _run_finished_line,
    "provider_called": _provider_line,
    "provider_fallback": _fallback_line,
    "http_called": _http_line,
}
"""The other events shown, one line each (the event names are engine.runtime.trace.Event's)."""


def console_printer(stream: TextIO | None = None) -> ConsoleLines:
    """Shows run events on `stream` (stderr by default) as short lines; every line is scrubbed of secrets first."""
    return ConsoleLines(stream if stream is not None else sys.stderr)


@click.command()
@click.argument("diagram", type=PATH)
@click.option("--input", "-i", "input", multiple=True, help="an input as name=value")
@click.option("--inputs", type=PATH, help="a YAML or JSON file of inputs")
@click.option("--offline", is_flag=True, help="answer request blocks with the built-in simulator")
@click.option("--message-level", type=click.Choice(LEVELS), help="overrides the Start block's level")
@click.option("--runs-dir", type=PATH, help="where run traces go (default ./runs)")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", help="text, or one JSON object on stdout")
@click.option("--quiet", "-q", is_flag=True, help="no per-block lines on stderr")
@click.option("--record", type=PATH, help="write the run as a scenario file")
@click.option("--data-root", type=PATH, multiple=True,
              help="a folder besides the diagram's own that it may read files from (repeatable)")
@click.option("--otel", is_flag=True, help=OTEL_HELP)
@click.option("--session", help="a conversation: start with the memory its last run left, store it at the end")
@click.option("--stream", is_flag=True, help="request blocks stream (unless one says stream: false); the model's text "
              "is printed as it comes: on stdout, on stderr with --output json")
@click.option("--cache", type=PATH, help=CACHE_HELP)
@click.option("--budget", "budget", multiple=True, metavar="usd=X,tokens=N,requests=N",
              help="lower Start's budget for this run (never raise it): a request that would pass it is not sent")
@click.option("--clock", metavar="ISO", help="the run's clock, as now() and today() read it (2026-03-01T09:00:00+00:00; "
                                            "no offset: UTC); default: the time it starts")
# Long: one command from its options to its exit code, each step a call; splitting it passes a dozen options on.
def run(diagram: Path, input: tuple[str, ...], inputs: Path | None, offline: bool, message_level: str | None,
        runs_dir: Path | None, output: str, quiet: bool, record: Path | None, data_root: tuple[Path, ...], otel: bool,
        session: str | None, stream: bool, cache: Path | None, budget: tuple[str, ...], clock: str | None) -> None:
    """Run a diagram once.

    Exit status: 0 succeeded, 1 failed, 2 a bad diagram or usage, 3 waiting for an answer (a Wait block;
    `diagrama resume RUN_ID --input name=value` answers).
    """
    import asyncio

    from rich.markup import escape

    from engine.compile.inputs import inputs_from_file, parse_input_pairs
    from engine.compile.loader import load_diagram
    from engine.errors import DiagramaError, UsageError
    from engine.format.levels import MESSAGE_LEVELS
    from engine.runtime.budgets import budget_from_text
    from engine.runtime.context import Services

    export = otel_export(otel, "run")
    try:
        # The environment it runs with: online, a secret('NAME') written out must be set in it before anything runs.
        loaded = load_diagram(diagram, blocks_registry(), data_roots=data_root or (), start_servers=True,
                              environ=None if offline else os.environ)
    except DiagramaError as exc:
        raise fail(exc) from None
    try:
        values = inputs_from_file(loaded, inputs) if inputs else {}
        values.update(parse_input_pairs(loaded, list(input)))
        lowered = budget_from_text(budget) if budget else None
        instant = _clock(clock) if clock else None
    except UsageError as exc:
        raise fail(exc) from None
    if loaded.knowledge:  # indexed now, with a bar for a large folder, rather than silently at the first retrieval
        from engine.cli.index import indexed

        indexed(loaded.knowledge)
    level = MESSAGE_LEVELS[message_level] if message_level else None
    err = console(stderr=True)
    if not quiet:
        for warning in loaded.warnings:  # the run goes on: these blocks simply never run
            err.print(escape(str(warning)))
    _go_quiet_on_broken_pipe(err, console())
    printer = None if quiet else console_printer(sys.stderr)
    folder = runs_folder(runs_dir)
    # One run in this process's main thread: a plain def Function runs on it, held to its timeout by a timer signal.
    services = Services(offline=offline, stream=stream, inline_calls=True, response_cache=open_cache_option(cache),
                        run_clock=instant)
    streamed = _stream_printer(services, printer, to_stderr=output == "json") if stream else None
    if export is not None:
        services.run_observers.append(export)
    recorded: list[dict[str, Any]] = []
    if record is not None:
        services.reply_observers.append(lambda block, reply: recorded.append({"block": block, **reply}))
    from engine.cli.durable import open_turn
    from engine.runs.turn import run_turn

    turn = open_turn(loaded, folder, session, values)
    turn.budget = lowered
    try:
        result = asyncio.run(run_turn(turn, services=services, runs_dir=folder, console=printer, message_level=level))
    except DiagramaError as exc:
        raise fail(exc) from None
    finally:
        if turn.store is not None:
            turn.store.close()
        if streamed is not None:
            streamed.end_line()
        if export is not None:
            dropped = export.shutdown()  # sends the run's spans before the command ends, waiting a moment at most
            if dropped:
                sys.stderr.write(dropped + "\n")
    _store_run(loaded, values, result, folder)
    if record is not None:
        from engine.testing.recorded import record_scenario

        record_scenario(record, diagram, values, result, recorded)
        err.print(f"recorded scenario {escape(str(record))}; review it before committing")
    if output == "json":
        from engine.format.jsonout import dumps_plain

        try:
            sys.stdout.write(dumps_plain(result.as_json()) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            _discard_output(sys.stdout)
    else:
        _print_result(result)
    raise click.exceptions.Exit(exit_code(result))  # the run's status: output lost to a closed pipe changes nothing


EXIT_WAITING = 3
"""`diagrama run` and `resume`: the run stopped at a Wait, waiting for a person's answer (README, "Durable runs")."""


def exit_code(result: RunResult) -> int:
    return 0 if result.succeeded else EXIT_WAITING if result.status == "waiting" else 1


def _stream_printer(services: Any, lines: ConsoleLines | None, *, to_stderr: bool) -> Any:
    """`--stream`'s printer, made the run's text observer; the per-block lines end its open line first."""
    from engine.cli.streamed import StreamPrinter

    printer = StreamPrinter(sys.stderr if to_stderr else sys.stdout, redactor())
    services.text_observers.append(printer.piece)
    if lines is not None:
        lines.before_lines = printer.end_line
    return printer


def _discard_output(stream: Any) -> None:
    """Send what is still written to `stream` nowhere: its reader has gone (`diagrama run … | head -1`).

    Python's own advice for a broken pipe; without it, the flush at exit fails again and the exit code is 120.
    """
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    except (OSError, ValueError):
        pass  # not a real file (a test's capture): nothing to redirect
    finally:
        os.close(devnull)


def _go_quiet_on_broken_pipe(*consoles: Console) -> None:
    """A console whose reader went away prints nothing more, and the run goes on.

    Rich's own answer to a broken pipe is SystemExit, which would end the run mid-step as interrupted.
    """
    for shown in consoles:
        def on_broken_pipe(shown: Console = shown) -> None:
            shown.quiet = True
            _discard_output(shown.file)

        shown.on_broken_pipe = on_broken_pipe  # type: ignore[method-assign]  # rich's documented hook, per console


def _print_result(result: RunResult) -> None:
    from rich.markup import escape

    from engine.format.jsonout import dumps_plain

    out = console()
    if result.waiting is not None:
        waiting = result.waiting
        out.print(f"[yellow]waiting[/yellow] at {escape(str(waiting['block']))}: {escape(str(waiting['prompt']))}")
        out.print(f"answer: diagrama resume {result.run_id} --input name=value (or --inputs answer.json)",
                  markup=False)
        return
    style = "green" if result.succeeded else "red"
    out.print(f"[{style}]{result.status}[/{style}] · {result.steps} steps · "
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


def _clock(text: str) -> datetime.datetime:
    """`--clock`'s instant; UsageError for text that is no ISO instant."""
    from engine.compile.clock import parse_clock
    from engine.errors import UsageError

    try:
        return parse_clock(text)
    except ValueError:
        raise UsageError(f"--clock {text!r} is no ISO instant (e.g. 2026-03-01T09:00:00+00:00)") from None
