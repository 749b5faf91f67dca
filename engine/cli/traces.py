"""`diagrama trace` and `diagrama runs`: a run's steps as a table or JSON lines, and the recent runs.

Finding, reading and filtering traces is engine.runs.traces'; this module lays out the lines.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.cli import Level, console, fail, has_module, redactor, runs_folder

if TYPE_CHECKING:
    from engine.runs.traces import Step


def _short(value: Any, width: int = 60) -> str:
    from engine.format.jsonout import dumps_plain

    text = value if isinstance(value, str) else dumps_plain(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _step_line(step: Step) -> str:
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


def _table_lines(chosen: list[dict[str, Any]], errors: bool, show_payloads: bool) -> list[str]:
    """The run's start and end lines, and one line per step (failed or ignored ones only, with `errors`)."""
    from engine.format.jsonout import dumps_plain
    from engine.runs.traces import steps

    lines = []
    for event in chosen:
        name = event.get("event")
        if name == "run_started":
            lines.append(f"run {event.get('run_id')} of {event.get('diagram')} ({event.get('message_level')})")
        elif name == "run_finished":
            lines.append(f"run {event.get('status')} after {event.get('steps')} steps in {event.get('duration_ms')} ms")
            for error in event.get("errors") or []:
                lines.append(f"  error in {error.get('block')}: {error.get('type')}: {error.get('message')}")
    for step in steps(chosen):
        if errors and step.status not in ("failed", "ignored"):
            continue
        lines.append(_step_line(step))
        if show_payloads:
            lines += ["      " + dumps_plain({k: p.get(k) for k in ("event", "status", "url", "body") if k in p})
                      for p in step.payloads]
    return lines


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
    import time

    from engine.errors import DiagramaError
    from engine.format.jsonout import dumps_plain
    from engine.format.spec import MESSAGE_LEVELS
    from engine.runs.traces import find_trace, keep_event
    from engine.runtime.trace import read_events

    try:
        path = find_trace(run, runs_folder(runs_dir))
    except DiagramaError as exc:
        raise fail(exc) from None
    limit = MESSAGE_LEVELS[level.value] if level else None
    scrub = redactor().text
    seen = 0
    header_done = as_json
    while True:
        events = read_events(path)
        fresh, seen = events[seen:], len(events)
        if not header_done:
            console().print(f"{'step':>5} {'block':<18} {'type':<16} {'start ms':>9} {'took ms':>9} {'status':<9} "
                            f"{'link':<22} details", markup=False)
            header_done = True
        # The table filters whole steps for --errors (in _table_lines); JSON lines filter events.
        chosen = [e for e in fresh if keep_event(e, block=block, level=limit, errors=errors and as_json)]
        lines = [dumps_plain(e) for e in chosen] if as_json else _table_lines(chosen, errors, show_payloads)
        # Traces are scrubbed when written; this catches keys of this environment in traces from elsewhere.
        lines = [scrub(line) for line in lines]
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()
        if not follow or (events and events[-1].get("event") == "run_finished"):
            break
        time.sleep(0.2)


def runs(
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
    limit: Annotated[int, typer.Option("--limit", help="how many, newest first")] = 20,
) -> None:
    """List recent runs: id, diagram, status, start, duration, steps.

    A run that has not finished is `running` while its process lives and `interrupted` once it is gone.
    """
    import datetime

    from rich.markup import escape

    from engine.runs.traces import list_runs, unfinished_runs

    folder = runs_folder(runs_dir)
    out = console()
    if has_module("sqlalchemy"):  # the run store comes with the batch extra; without it, the traces are the record
        from engine.runs.store import open_recorded_store

        store = open_recorded_store(folder)
        if store is not None:
            recorded: list[dict[str, Any]] = store.recent(limit)
            store.close()
            # The store hears of a run when it ends; runs still going, or killed, are only in their traces.
            known = {entry["run_id"] for entry in recorded}
            recorded += [{"run_id": s.run_id, "diagram": s.diagram if not s.path else s.path, "status": s.status,
                          "started": s.started, "duration_ms": None, "steps": None, "batch_id": None, "row": None,
                          "attempt": None}
                         for s in unfinished_runs(folder, limit) if s.run_id not in known]
            recorded = sorted(recorded, key=lambda entry: entry["started"] or 0, reverse=True)[:limit]
            out.print(f"{'run':<30} {'diagram':<28} {'status':<11} {'started':<19} {'ms':>10} {'steps':>6} {'batch':<24}",
                      markup=False)
            for entry in recorded:
                started = datetime.datetime.fromtimestamp(entry["started"] or 0).strftime("%Y-%m-%d %H:%M:%S")
                batch_note = f"{entry['batch_id']}#{entry['row']}" if entry["batch_id"] else ""
                if batch_note and (entry.get("attempt") or 1) > 1:
                    batch_note += f" attempt {entry['attempt']}"
                duration = f"{entry['duration_ms']:.1f}" if entry["duration_ms"] is not None else "-"
                steps = entry["steps"] if entry["steps"] is not None else "-"
                out.print(f"{entry['run_id']:<30} {Path(entry['diagram']).name[:28]:<28} {entry['status']:<11} "
                          f"{started:<19} {duration:>10} {steps:>6} {batch_note:<24}", markup=False)
            return
    found = list_runs(folder, limit)
    if not found:
        console(stderr=True).print(f"no runs in {escape(str(folder))}")
        return
    out.print(f"{'run':<24} {'diagram':<24} {'status':<11} {'started':<19} {'ms':>10} {'steps':>6}", markup=False)
    for summary in found:
        started = datetime.datetime.fromtimestamp(summary.started).strftime("%Y-%m-%d %H:%M:%S")
        duration = f"{summary.duration_ms:.1f}" if summary.duration_ms is not None else "-"
        out.print(f"{summary.run_id:<24} {summary.diagram[:24]:<24} {summary.status:<11} {started:<19} {duration:>10} "
                  f"{summary.steps if summary.steps is not None else '-':>6}", markup=False)
