"""`diagrama trace`, `diagrama runs` and `diagrama evals`: a run's steps as a table or JSON lines, the recent runs,
and the eval runs the store keeps.

Finding, reading and filtering traces is engine.runs.traces'; this module lays out the lines.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.cli import LEVELS, PATH, console, fail, has_module, redactor, runs_folder
from engine.runs.prune import DEFAULT_RETENTION

if TYPE_CHECKING:
    from engine.runs.trace_steps import Step


def _short(value: Any, width: int = 60) -> str:
    from engine.format.jsonout import dumps_plain

    text = value if isinstance(value, str) else dumps_plain(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def cost_text(cost: dict[str, Any] | None) -> str:
    """` $0.001234` or ` cost unknown` for a request's cost; nothing where the trace says none."""
    if cost is None:
        return ""
    usd = cost.get("usd")
    return f" ${usd:.6f}" if isinstance(usd, (int, float)) else " cost unknown"


def _tool_score(step: Step, name: str, score: float | None) -> str:
    """`get_order_status 0.62 (lex 0.80, emb 0.44)`: the fused score, then its lexical and embedding parts."""
    if not isinstance(score, (int, float)):
        return name
    parts = step.score_parts.get(name)
    return f"{name} {score:.2f}" + (f" (lex {parts[0]:.2f}, emb {parts[1]:.2f})" if parts else "")


def _step_line(step: Step) -> str:
    link = f"→ {step.next}" if step.next else ""
    if step.via and step.via not in ("next", None):
        link += f" ({step.via})"
    detail = []
    if step.model:
        tokens = f" {step.tokens[0]}/{step.tokens[1]} tok" if step.tokens else ""
        detail.append(f"{step.model}{tokens}{cost_text(step.cost)}")
    if step.http_calls:
        detail.append("; ".join(step.http_calls))
    if step.scores:
        ranked = ", ".join(_tool_score(step, name, score) for name, score in step.scores.items())
        detail.append(("passages " if step.block_type == "Retrieve" else "tools ") + ranked)
    if step.called_tools:
        detail.append("called " + ", ".join(step.called_tools))
    if step.error:
        detail.append(step.error)
    if step.failed_tools:
        detail.append("failed " + "; ".join(step.failed_tools))
    if step.inputs:
        detail.append("in " + _short(step.inputs))
    if step.set:
        detail.append("set " + _short(step.set))
    elif step.outputs:
        detail.append("out " + _short(step.outputs))
    offset = f"{step.offset_ms:9.2f}" if step.offset_ms is not None else " " * 9
    duration = f"{step.duration_ms:9.3f}" if step.duration_ms is not None else " " * 9
    return (f"{step.number:>5} {_block_cell(step):<18} {step.block_type[:16]:<16} {offset} {duration} "
            f"{step.status:<9} {link[:22]:<22} {' · '.join(detail)}")


def _block_cell(step: Step) -> str:
    """The block, indented under the Subdiagram step its child ran in (by its own id there), with the pass of a
    concurrent Loop it ran in: `  ask`, `classify [3]`."""
    name = step.block.rsplit("/", 1)[-1] if step.depth else step.block
    index = step.pass_index
    marked = f"{name} [{index}]" if index is not None else name
    return ("  " * step.depth + marked)[:18]


HEADER = (f"{'step':>5} {'block':<18} {'type':<16} {'start ms':>9} {'took ms':>9} {'status':<9} "
          f"{'link':<22} details")


def _table_lines(chosen: list[dict[str, Any]], errors: bool, show_payloads: bool) -> tuple[list[str], list[str]]:
    """The run's summary (its start, its end and errors) and one line per step (with `errors`, only failed or
    ignored steps and steps with failed tool calls)."""
    from engine.format.jsonout import dumps_plain
    from engine.runs.trace_steps import steps

    summary, lines = [], []
    for event in chosen:
        name = event.get("event")
        if name == "run_started":
            summary.append(f"run {event.get('run_id')} of {event.get('diagram')} ({event.get('message_level')})")
        elif name == "run_finished":
            summary.append(f"run {event.get('status')} after {event.get('steps')} steps in {event.get('duration_ms')} ms")
            for error in event.get("errors") or []:
                summary.append(f"  error in {error.get('block')}: {error.get('type')}: {error.get('message')}")
    for step in steps(chosen):
        if errors and step.status not in ("failed", "ignored") and not step.failed_tools:
            continue
        lines.append(_step_line(step))
        if show_payloads:
            lines += ["      " + dumps_plain({k: p.get(k) for k in ("event", "status", "url", "body") if k in p})
                      for p in step.payloads]
    return summary, lines


@click.command()
@click.argument("run", default="last", required=False)
@click.option("--block", help="only this block's steps")
@click.option("--level", type=click.Choice(LEVELS), help="only events kept at this message level")
@click.option("--errors", is_flag=True, help="only failed or ignored steps, and failed tool calls")
@click.option("--json", "as_json", is_flag=True, help="the raw events, one JSON object per line")
@click.option("--follow", "-f", is_flag=True, help="keep reading until the run finishes")
@click.option("--show-payloads", is_flag=True, help="print the (redacted) HTTP bodies")
@click.option("--runs-dir", type=PATH)
def trace(run: str, block: str | None, level: str | None, errors: bool, as_json: bool, follow: bool,
          show_payloads: bool, runs_dir: Path | None) -> None:
    """Show a run's steps: block, type, start offset, duration, status, link taken, short inputs/outputs."""
    import time

    from engine.errors import DiagramaError
    from engine.format.jsonout import dumps_plain
    from engine.format.levels import MESSAGE_LEVELS
    from engine.runs.trace_steps import keep_event
    from engine.runs.traces import INTERRUPTED, find_trace, latest_start, run_status
    from engine.runtime.trace import read_events

    try:
        path = find_trace(run, runs_folder(runs_dir))
    except DiagramaError as exc:
        raise fail(exc) from None
    limit = MESSAGE_LEVELS[level] if level else None
    scrub = redactor().text
    seen = 0
    header_done = as_json
    while True:
        events = read_events(path)
        fresh, seen = events[seen:], len(events)
        # The table filters whole steps for --errors (in _table_lines); JSON lines filter events.
        chosen = [e for e in fresh if keep_event(e, block=block, level=limit, errors=errors and as_json)]
        if as_json:
            lines = [dumps_plain(e) for e in chosen]
        else:
            summary, step_lines = _table_lines(chosen, errors, show_payloads)
            lines = summary
            if step_lines and not header_done:  # the header sits below the summary, above the steps
                lines.append(HEADER)
                header_done = True
            lines += step_lines
        # Traces are scrubbed when written; this catches keys of this environment in traces from elsewhere.
        lines = [scrub(line) for line in lines]
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()
        if not follow or (events and events[-1].get("event") == "run_finished"):
            break
        if events and run_status(latest_start(events), events[-1]) == INTERRUPTED:
            # Its process is gone: no run_finished will ever come.
            console(stderr=True).print("the run was interrupted: its process is gone without finishing it", markup=False)
            raise click.exceptions.Exit(1)
        time.sleep(0.2)


@click.command()
@click.option("--runs-dir", type=PATH)
@click.option("--limit", type=int, default=20, show_default=True, help="how many, newest first")
@click.option("--prune", is_flag=True, help="instead, delete the checkpoints of finished runs older than --older-than "
              "(their records and traces stay; they can no longer be replayed)")
@click.option("--older-than", help=f"with --prune: runs that ended longer ago than this (s, m, h, d) "
              f"[default: {DEFAULT_RETENTION}]")
def runs(runs_dir: Path | None, limit: int, prune: bool, older_than: str | None) -> None:
    """List recent runs: id, diagram, status, start, duration, steps, cost, and the batch row or `scenario`.

    A run that has not finished is `running` while its process lives and `interrupted` once it is gone; a
    `waiting` run waits at a Wait block. Each interrupted or waiting run is listed again with its resume command.
    Runs the store never heard of (scenario runs, the studio's) come from their traces. `--prune` deletes the
    checkpoints of runs that succeeded, failed or were cancelled longer ago than `--older-than` (README, "Durable
    runs"), and says what it removed.
    """
    from rich.markup import escape

    from engine.runs.traces import is_scenario_run, list_runs, unfinished_runs

    folder = runs_folder(runs_dir)
    if prune or older_than is not None:
        _prune(folder, prune, older_than or DEFAULT_RETENTION)
        return
    entries: list[dict[str, Any]] = []
    known: set[str] = set()
    if has_module("sqlalchemy"):  # the run store comes with the batch extra; without it, the traces are the record
        from engine.runs.store import open_recorded_store

        store = open_recorded_store(folder)
        if store is not None:
            entries = store.recent(limit)
            store.close()
            known = {entry["run_id"] for entry in entries}
            # The store hears of a run when it ends; runs still going, or killed, are only in their traces.
            entries += [_from_trace(s) for s in unfinished_runs(folder, limit) if s.run_id not in known]
            known |= {entry["run_id"] for entry in entries}
    entries += [_from_trace(s) for s in list_runs(folder, limit) if s.run_id not in known]
    if not entries:
        console(stderr=True).print(f"no runs in {escape(str(folder))}")
        return
    entries = sorted(entries, key=lambda entry: entry["started"] or 0, reverse=True)[:limit]
    _live_statuses(folder, entries)
    for entry in entries:
        entry["note"] = _note(entry, is_scenario_run(str(entry["run_id"])))
    # Columns as wide as their longest value: a batch row's id (`b…-r000007-a2`) stays aligned.
    width = max(24, *(len(str(entry["run_id"])) for entry in entries))
    named = max(24, *(len(Path(str(entry["diagram"])).name) for entry in entries))
    out = console()
    out.print(f"{'run':<{width}} {'diagram':<{named}} {'status':<11} {'started':<19} {'ms':>10} {'steps':>6} "
              f"{'cost $':>10} batch", markup=False)
    for entry in entries:
        out.print(_runs_line(entry, width, named), markup=False)
    # A durable run that stopped halfway continues with `diagrama resume` (README, "Durable runs").
    for entry in entries:
        if entry["status"] == "waiting":
            out.print(f"waiting: diagrama resume {entry['run_id']} --input name=value", markup=False)
        elif entry["status"] == "interrupted":
            out.print(f"interrupted: diagrama resume {entry['run_id']}", markup=False)


@click.command()
@click.argument("diagram", type=PATH, required=False)
@click.option("--limit", type=int, default=20, show_default=True, help="how many, newest first")
@click.option("--json", "as_json", is_flag=True, help="a JSON array of the eval runs (no reports)")
@click.option("--runs-dir", type=PATH)
@click.option("--store", "store_url", help="SQLAlchemy URL of the run store")
def evals(diagram: Path | None, limit: int, as_json: bool, runs_dir: Path | None, store_url: str | None) -> None:
    """List recorded eval runs: when, eval file, diagram, revision, score, passed/failed.

    Each `diagrama eval` is kept in the run store (the runs folder's SQLite file, $DIAGRAMA_STORE or --store) with
    its whole report; DIAGRAM lists only that diagram's. The studio's Evaluations tab shows them and compares two.
    """
    import json

    from rich.markup import escape

    folder = runs_folder(runs_dir)
    found: list[dict[str, Any]] = []
    if has_module("sqlalchemy"):  # the run store comes with the batch extra; without it no eval was recorded
        from engine.runs.store import open_recorded_store, open_store

        store = open_store(store_url, folder) if store_url else open_recorded_store(folder)
        if store is not None:
            try:
                found = store.evals(diagram, limit=limit)
            finally:
                store.close()
    if as_json:
        click.echo(json.dumps(found, ensure_ascii=False))
        return
    if not found:
        console(stderr=True).print(f"no eval runs recorded in {escape(store_url or str(folder))}"
                                   + (f" for {escape(str(diagram))}" if diagram else ""))
        return
    files = max(12, *(len(Path(e["eval_file"]).name) for e in found))
    named = max(12, *(len(Path(e["diagram"]).name) for e in found))
    out = console()
    out.print(f"{'when':<19} {'eval file':<{files}} {'diagram':<{named}} {'revision':<12} {'score':>6} "
              f"{'passed':>7} {'failed':>7}  eval id", markup=False)
    for entry in found:
        out.print(_evals_line(entry, files, named), markup=False)


def _evals_line(entry: dict[str, Any], files: int, named: int) -> str:
    import datetime

    when = datetime.datetime.fromtimestamp(entry["created"]).strftime("%Y-%m-%d %H:%M:%S")
    score = f"{entry['score']:.3f}" if entry["score"] is not None else "-"
    revision = entry["revision"] or entry["content_hash"][:12]
    counts = [str(entry[name]) if entry[name] is not None else "-" for name in ("passed", "failed")]
    return (f"{when:<19} {Path(entry['eval_file']).name:<{files}} {Path(entry['diagram']).name:<{named}} "
            f"{revision:<12} {score:>6} {counts[0]:>7} {counts[1]:>7}  {entry['eval_id']}")


def _prune(folder: Path, prune: bool, older_than: str) -> None:
    """`diagrama runs --prune`: the finished runs' checkpoints past the retention deleted, and what went said."""
    from engine.errors import UsageError
    from engine.runs.checkpoints import open_checkpoints
    from engine.runs.prune import parse_retention, prune_runs, shown_retention

    try:
        if not prune:
            raise UsageError("--older-than goes with --prune (diagrama runs --prune --older-than 7d)")
        retention = parse_retention(older_than)
    except UsageError as exc:
        raise fail(exc) from None
    try:
        store = open_checkpoints(None, folder)
    except OSError as exc:
        console(stderr=True).print(f"error: {exc}", markup=False)
        raise click.exceptions.Exit(2) from None
    record = None
    if has_module("sqlalchemy"):  # the run store (the batch extra): pruned session turns' records drop their memory
        from engine.runs.store import open_recorded_store

        record = open_recorded_store(folder)
    try:
        pruned = prune_runs(store, retention, record)
    finally:
        store.close()
        if record is not None:
            record.close()
    shown = shown_retention(retention)
    out = console()
    if not pruned.runs:
        out.print(f"nothing to prune: no finished run with checkpoints ended more than {shown} ago ({store.where})",
                  markup=False)
        return
    children = f" (and {pruned.children} of their subdiagrams' runs)" if pruned.children else ""
    out.print(f"pruned the checkpoints of {len(pruned.runs)} finished run{'s' if len(pruned.runs) != 1 else ''}"
              f"{children} that ended more than {shown} ago: {pruned.checkpoints} checkpoints, "
              f"{_size(pruned.bytes)} ({store.where})", markup=False)
    if pruned.records:
        out.print(f"{pruned.records} session turn{'s' if pruned.records != 1 else ''}' records in the run store no "
                  "longer repeat the session's memory (its session keeps it)", markup=False)
    out.print("their records (diagrama runs) and traces (diagrama trace RUN) stay; they can no longer be replayed "
              "(diagrama resume RUN --from BLOCK)", markup=False)


def _size(count: int) -> str:
    for unit, size in (("MB", 1_000_000), ("KB", 1000)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} bytes"


def _live_statuses(folder: Path, entries: list[dict[str, Any]]) -> None:
    """A durable run not finished when it was recorded (waiting, interrupted) as the checkpoint store has it now: it may
    have been answered, resumed or cancelled since, elsewhere."""
    import os

    unfinished = [entry for entry in entries if entry["status"] in ("running", "waiting", "interrupted")]
    if not unfinished or not (os.environ.get("DIAGRAMA_STORE") or (folder / "diagrama.db").is_file()):
        return
    from engine.runs.checkpoints import open_checkpoints

    try:
        store = open_checkpoints(None, folder)
    except OSError:
        return  # the traces and the run store are what there is to show
    try:
        for entry in unfinished:
            row = store.run(str(entry["run_id"]))
            if row is not None:
                entry["status"] = row["status"]
    finally:
        store.close()


def _from_trace(summary: Any) -> dict[str, Any]:
    return {"run_id": summary.run_id, "diagram": summary.path or summary.diagram, "status": summary.status,
            "started": summary.started, "duration_ms": summary.duration_ms, "steps": summary.steps, "batch_id": None,
            "row": None, "attempt": None}


def _note(entry: dict[str, Any], scenario: bool) -> str:
    if scenario:
        return "scenario"
    if not entry.get("batch_id"):
        return ""
    note = f"{entry['batch_id']}#{entry['row']}"
    return note + (f" attempt {entry['attempt']}" if (entry.get("attempt") or 1) > 1 else "")


def _runs_line(entry: dict[str, Any], width: int, named: int) -> str:
    import datetime

    started = datetime.datetime.fromtimestamp(entry["started"] or 0).strftime("%Y-%m-%d %H:%M:%S")
    duration = f"{entry['duration_ms']:.1f}" if entry["duration_ms"] is not None else "-"
    steps = entry["steps"] if entry["steps"] is not None else "-"
    return (f"{entry['run_id']:<{width}} {Path(str(entry['diagram'])).name:<{named}} {entry['status']:<11} "
            f"{started:<19} {duration:>10} {steps:>6} {_cost_cell(entry.get('cost')):>10} {entry['note']}").rstrip()


def _cost_cell(cost: Any) -> str:
    """A listed run's cost: USD, `unknown` where a price was, `-` where the record says nothing (a trace's run)."""
    if not isinstance(cost, dict):
        return "-"
    usd = cost.get("usd")
    return f"{usd:.6f}" if isinstance(usd, (int, float)) else "unknown"
