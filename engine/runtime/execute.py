"""`execute`: run a diagram once, from Start or from a checkpoint, and get its result.

It builds what one run needs — its trace (the file, the chain, the redactor), its scope and
context, its Run (engine.runtime.run) with a Checkpointer when it is durable — writes
`run_started` and the run's record in the checkpoint store, and lets the Run go: its one
step loop (engine.runtime.advance) does the rest. Every run ends with `run_finished` and a
result. What a turn adds around a durable run (taking it over, a session's memory, releasing
it) is the caller's: engine.runs.turn.
"""

from __future__ import annotations

import asyncio
import datetime
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from engine.compile.diagram import Diagram
from engine.compile.secrets import run_environ
from engine.format.levels import MessageLevel, level_name
from engine.format.spec import Budget, tighter
from engine.format.values import short_value
from engine.runtime.checkpointing import Checkpointer
from engine.runtime.context import RunContext, Services
from engine.runtime.durable import Resumed, host_name, run_record
from engine.runtime.result import RunResult
from engine.runtime.run import Run
from engine.runtime.trace import Console, Event, Trace, new_run_id

__all__ = ["RunResult", "execute"]


# Long by its keyword arguments, one a line, and their docstring; the body is short.
async def execute(
    diagram: Diagram,
    inputs: Mapping[str, Any] | None = None,
    *,
    runs_dir: Path | None = Path("runs"),
    message_level: MessageLevel | None = None,
    services: Services | None = None,
    run_id: str | None = None,
    console: Console | None = None,
    trace_file: IO[bytes] | None = None,
    secrets: Iterable[str] = (),
    resume: Resumed | None = None,
    remembered: Mapping[str, Any] | None = None,
    record: Mapping[str, Any] | None = None,
    budget: Budget | None = None,
) -> RunResult:
    """Run `diagram` once. `runs_dir=None` keeps no trace file (events are still built).

    `trace_file` is written instead of a file under `runs_dir` (the caller closes it).
    `secrets` are scrubbed from the trace and the result besides the keys in the services'
    environment (a scenario runs with an empty environment, yet its caller's keys stay out).
    A run is durable when the services have a checkpoint store and Start does not say `durable: false`:
    `resume` continues one from a checkpoint (`run_id` is then the run's own); `remembered` are a session's
    memory values, set over Start's after its variables (except where an input of that name is given); `record`
    adds fields to the run's record in the store (its parent run, session, the run it replays). `budget` lowers
    Start's (never raises it: each limit is the tighter of the two; a resumed run keeps the one it started with).
    """
    services = services or Services()
    if diagram.tools is not None and diagram.tools.unlisted:
        # Loaded to be checked, not run: its MCP servers start now (off the loop), and list their tools.
        await asyncio.to_thread(diagram.tools.start_servers)
    run_id = run_id or new_run_id()
    trace_path = runs_dir / run_id / "trace.jsonl" if runs_dir is not None and trace_file is None else None
    run_level = message_level if message_level is not None else diagram.message_level
    levels = diagram.message_levels(message_level)  # None unless `message_level` changes some block's
    trace = _trace(diagram, run_id, trace_path, levels, services, [*secrets], console, trace_file)
    # The run's clock: fixed at its start (a resumed run's own, from its checkpoint), as `now()` reads it.
    clock = (resume.clock if resume is not None else None) or services.run_clock or datetime.datetime.now(datetime.UTC)
    scope = diagram.env.new_scope({}, run_environ(services.environ, offline=services.offline),  # read by `secret()`
                                  clock=clock)
    run = Run(diagram, RunContext(run_id, diagram, scope, trace, services, levels), trace)
    run.ctx.clock = clock
    run.ctx.ceiling = tighter(diagram.start.impl.spec.budget, budget)
    if services.checkpoints is not None and diagram.settings.durable:
        run.durable = Checkpointer(run, services.checkpoints)
    elif resume is not None:
        raise ValueError("a run resumes only with a checkpoint store, for a diagram that is durable")
    if remembered:
        run.remembered = dict(remembered)
    # pid and host let a reader tell a run still going from one whose process died (SIGKILL, power loss).
    start_fields: dict[str, Any] = {"diagram": diagram.name, "path": str(diagram.path.resolve()),
                                    "message_level": level_name(run_level), "pid": os.getpid(), "host": host_name()}
    if diagram.published is not None:
        start_fields["version"] = diagram.published
    if run_level >= MessageLevel.DEBUG:
        start_fields["inputs"] = {k: short_value(v) for k, v in (inputs or {}).items()}
    if resume is not None:
        start_fields["resumed_at"] = resume.next
    trace.emit(Event.RUN_STARTED, **start_fields)
    if run.durable is not None:
        # A store that cannot be written raises OSError here, before any block runs.
        fields = run_record(diagram, trace_path, **(record or {}))
        if fields.get("inputs"):
            fields["inputs"] = trace.redactor.value(fields["inputs"])  # a key given as an input stays out of the store
        if run.durable.remote:  # a database across a network: its round trip does not hold the event loop
            await run.durable.begin_off_loop(fields)
        else:
            run.durable.begin(fields)
    if diagram.tools is not None and diagram.tools.mcp_servers:
        from engine.tools.mcp import run_sessions  # the MCP client loads only for a diagram whose tools use it

        async with run_sessions(services.mcp_sessions):  # opened on first use, closed at the run's end
            status = await run.whole(inputs or {}, resume)
    else:
        status = await run.whole(inputs or {}, resume)
    return run.result(status)


def _trace(diagram: Diagram, run_id: str, path: Path | None, levels: Mapping[Any, MessageLevel] | None,
           services: Services, secrets: list[str], console: Console | None, file: IO[bytes] | None) -> Trace:
    """The run's trace: its chain built for the highest level any step can reach, once; the services' observers."""
    highest = max(levels.values() if levels is not None else (b.message_level for b in diagram.blocks.values()))
    trace = Trace(path, run_id, secrets=[*services.secrets(diagram.listed_secrets), *secrets], console=console,
                  file=file, level=highest)
    for make_observer in services.run_observers:
        trace.observe(make_observer(diagram, trace.redactor))
    return trace
