"""The studio's run endpoints: start a run (offline unless the server allows online), follow it, list a
diagram's runs, save a run as a scenario, and run a folder's scenarios.

Runs started here record their vendor replies in memory, so "save as scenario" can write the same
file `diagrama run --record` writes. Only runs of the folder's own diagrams are shown, even when
the runs directory is shared with other folders. Runs are durable as `diagrama run`'s are (the
checkpoint store beside the run store, unless Start says `durable: false`); for a durable run the
store's status is the truth (a run resumed here after its first process died is `running`, not
`interrupted`), and a waiting run's answer shows what its Wait asks. Resuming, replaying and
conversations are engine.web.durable's, launched through `launch`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from engine.compile.block import BlockRegistry
from engine.compile.inputs import check_inputs
from engine.compile.loader import load_diagram
from engine.errors import DiagramaError
from engine.format.redact import redact_value
from engine.runs.trace_steps import Step, run_path, steps
from engine.runs.traces import INTERRUPTED, latest_start, list_runs, resolved_path, run_status
from engine.runs.turn import new_turn, run_turn
from engine.runtime.context import Services
from engine.runtime.execute import RunResult
from engine.runtime.trace import read_events
from engine.web.files import Folder, FolderError
from engine.web.http import JSON, answer, dumped, json_body
from engine.web.models import (
    PathAnswer,
    RunData,
    RunListed,
    RunStarted,
    ScenarioResult,
    ScenarioResults,
    Waiting,
)
from engine.web.navigation import RunFilters
from engine.web.pins import PinRoutes

if TYPE_CHECKING:
    from engine.runs.checkpoints import CheckpointStore

__all__ = ["RunRoutes"]

_RUN_ID = re.compile(r"^[0-9A-Za-z_-]{1,64}$")
_KEPT_RUNS = 50


class RunRoutes:
    def __init__(self, folder: Folder, runs_dir: Path, registry: BlockRegistry, services: Services | None,
                 *, allow_online: bool) -> None:
        self.folder = folder
        self.runs_dir = runs_dir
        self.registry = registry
        self.services = services
        self.allow_online = allow_online
        self.tasks: set[asyncio.Task[Any]] = set()
        # run id → (diagram path, inputs, result or None, replies recorded): what "save as scenario" needs.
        self.recorded: OrderedDict[str, tuple[Path, dict[str, Any], list[RunResult], list[dict[str, Any]]]] = OrderedDict()
        self.active: set[str] = set()
        """Runs this studio is running now: `running` from the moment they are started or resumed (the trace of a
        resumed run still ends with its last stop until the resumed part writes)."""
        self.continued: set[str] = set()
        """Runs resumed or replayed here: their first part ran earlier, so they are not saved as scenarios."""
        self.pins = PinRoutes(folder)
        """Each diagram's pinned outputs (engine.web.pins): a run of it asks them instead of a pinned block's vendor."""

    def _trace(self, run_id: str) -> Path:
        if not _RUN_ID.match(run_id):
            raise FolderError(404, "not found")
        candidate = self.runs_dir / run_id / "trace.jsonl"
        if candidate.is_file():
            if run_id in self.recorded or self._of_this_folder(candidate):
                return candidate
            raise FolderError(404, "not found")  # a run of a diagram outside the folder, in a shared runs directory
        # A run of one of this folder's diagrams started elsewhere (another current folder): the run store knows.
        recorded = self._recorded(lambda store: store.run(run_id))
        if not recorded or not recorded[0].get("trace"):
            raise FolderError(404, "not found")
        trace = Path(recorded[0]["trace"])
        if not trace.is_file() or not Path(recorded[0]["diagram"]).resolve().is_relative_to(self.folder.root):
            raise FolderError(404, "not found")  # only runs of this folder's diagrams are shown
        return trace

    def _of_this_folder(self, trace: Path) -> bool:
        """Whether the run's diagram (its trace's first event names it) lies inside the served folder."""
        try:
            with trace.open("rb") as file:
                first = orjson.loads(file.readline(1 << 20) or b"{}")
        except (OSError, orjson.JSONDecodeError):
            return False
        written = first.get("path") if isinstance(first, dict) else None
        path = resolved_path(written if isinstance(written, str) else "", (Path.cwd(), self.runs_dir.resolve().parent))
        return path is not None and path.is_relative_to(self.folder.root)

    def _recorded(self, ask: Callable[[Any], Any]) -> list[dict[str, Any]]:
        """What the run store (if there is one, and SQLAlchemy to read it) answers; [] without one."""
        try:
            from engine.runs.store import open_recorded_store
        except ImportError:  # the batch extra is not installed: traces are the only record
            return []
        store = open_recorded_store(self.runs_dir)
        if store is None:
            return []
        try:
            found = ask(store)
        finally:
            store.close()
        if found is None:
            return []
        return found if isinstance(found, list) else [found]

    def checkpoint_store(self) -> CheckpointStore:
        """The checkpoint store `diagrama run` uses for this runs folder ($DIAGRAMA_STORE, else its SQLite file): a
        connection of the caller's own, to close; 503 when it cannot be opened."""
        from engine.runs.checkpoints import open_checkpoints

        try:
            return open_checkpoints(None, self.runs_dir)
        except OSError as exc:
            raise FolderError(503, str(exc)) from None

    def _stored(self, run_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The checkpoint store's rows of these runs (those it has), with their live status; none while the store
        cannot be opened (the runs are listed from their traces)."""
        if not run_ids:
            return {}
        try:
            store = self.checkpoint_store()
        except FolderError:
            return {}
        try:
            return {run_id: row for run_id in run_ids if (row := store.run(run_id)) is not None}
        finally:
            store.close()

    def _status(self, run_id: str, traced: str, row: dict[str, Any] | None) -> str:
        """A run's status: `running` while this studio runs it; else its trace's, read with its events (a finished
        one), or the store's for a run the trace cannot tell (one resumed elsewhere after its first process died)."""
        if run_id in self.active:
            return "running"
        return str(row["status"]) if row is not None and traced in ("running", INTERRUPTED) else traced

    def launch(self, run_id: str, path: Path, inputs: dict[str, Any], offline: bool,
               work: Callable[[Services], Awaitable[RunResult]], *, continued: bool = False) -> None:
        """Run `work` (given the run's services) as a task of this studio: followed, recorded, listed as running."""
        results: list[RunResult] = []
        replies: list[dict[str, Any]] = []
        self.recorded[run_id] = (path, dict(inputs), results, replies)
        self.recorded.move_to_end(run_id)
        while len(self.recorded) > _KEPT_RUNS:
            self.recorded.popitem(last=False)
        if continued:
            self.continued.add(run_id)
        services = self._services(offline, replies)
        services.pins = self.pins.vendors_for(path)
        self.active.add(run_id)

        async def go() -> None:
            try:
                results.append(await work(services))
            finally:
                self.active.discard(run_id)

        task = asyncio.create_task(go())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def check_offline(self, offline: Any) -> bool:
        if not isinstance(offline, bool):
            raise FolderError(422, "offline: true or false")
        if not offline and not self.allow_online:
            raise FolderError(403, "online runs from the page are off; start `diagrama serve --allow-online` to allow them")
        return offline

    def trace_of(self, run_id: str) -> Path:
        """The trace of a run of this folder's diagrams; FolderError 404 for any other."""
        return self._trace(run_id)

    def _services(self, offline: bool, replies: list[dict[str, Any]]) -> Services:
        services = Services(offline=offline)
        if self.services is not None:
            services.environ = self.services.environ
            services.share(self.services)
        # This run's own recorder (for "save as scenario"), beside whatever the server's services observe.
        services.reply_observers = [*services.reply_observers,
                                    lambda block, reply: replies.append({"block": block, **reply})]
        return services

    async def listing(self, request: Request) -> Response:

        path = self.folder.diagram(request.path_params["path"])
        filters = RunFilters(request.query_params)

        def work() -> list[RunListed]:
            listed = self._runs_of(path)
            return [entry for entry in listed if filters.keeps(entry, self._trace_or_none(entry.run_id))] \
                if filters else listed

        return answer(await asyncio.to_thread(work))  # reads traces and the store: off the loop

    def _trace_or_none(self, run_id: str) -> Path | None:
        try:
            return self._trace(run_id)
        except FolderError:
            return None

    def _runs_of(self, path: Path) -> list[RunListed]:
        """This diagram's own newest runs, however many other runs came since (a batch of a thousand rows)."""
        listed = [RunListed(run_id=s.run_id, status=s.status, started=s.started, duration_ms=s.duration_ms, steps=s.steps)
                  for s in list_runs(self.runs_dir, limit=200, diagram=path)]
        # Runs recorded in the store from another current folder, their traces elsewhere.
        known = {entry.run_id for entry in listed}
        listed += [RunListed(run_id=r["run_id"], status=r["status"], started=r["started"], duration_ms=r["duration_ms"],
                             steps=r["steps"])
                   for r in self._recorded(lambda store: store.runs_of(path))
                   if r["run_id"] not in known and r.get("trace") and Path(r["trace"]).is_file()]
        listed.sort(key=lambda entry: entry.started or 0, reverse=True)
        listed = listed[:200]
        stored = self._stored([entry.run_id for entry in listed])
        secrets = self._secrets()
        for entry in listed:
            row = stored.get(entry.run_id)
            entry.status = self._status(entry.run_id, entry.status, row)
            entry.waiting = _waiting(row, secrets) if entry.status == "waiting" else None
        return listed

    async def start(self, request: Request) -> Response:

        path = self.folder.diagram(request.path_params["path"])
        payload = await json_body(request)
        inputs = payload.get("inputs") or {}
        offline = payload.get("offline", True)
        if not isinstance(inputs, dict) or not isinstance(offline, bool):
            raise FolderError(422, "send {\"inputs\": {name: value}, \"offline\": true|false}")
        self.check_offline(offline)
        # Off the event loop: loading a diagram to run it starts its MCP servers to list their tools.
        loaded = await asyncio.to_thread(load_diagram, path, self.registry, data_roots=self.folder.data_roots,
                                         start_servers=True)
        values = check_inputs(loaded, inputs)
        # Durable as `diagrama run` is: a Wait can stop it, and a past run can be replayed from a block. The store is
        # opened now, so that one that cannot be is refused (503) here rather than in the task.
        store = self.checkpoint_store() if loaded.settings.durable else None
        try:
            turn = new_turn(loaded, values, store=store)
        except DiagramaError:
            if store is not None:
                store.close()
            raise

        async def work(services: Services) -> RunResult:
            try:
                return await run_turn(turn, services=services, runs_dir=self.runs_dir)
            finally:
                if store is not None:
                    store.close()

        self.launch(turn.run_id, path, inputs, offline, work)
        return answer(RunStarted(run_id=turn.run_id), 202)

    async def get(self, request: Request) -> Response:

        run_id = request.path_params["run_id"]
        if run_id in self.active and not (self.runs_dir / run_id / "trace.jsonl").is_file():
            return answer(self._starting(run_id))  # its task has not written its trace yet (a turn takes its session)
        trace = self._trace(run_id)
        after_text = request.query_params.get("after", "0") or "0"
        if not after_text.isdigit():
            raise FolderError(400, "after must be a whole number of events")
        after = int(after_text)
        # The store first: its events and status are then read together, with no wait between (the run goes on).
        row = (await asyncio.to_thread(self._stored, [run_id])).get(run_id)
        events = read_events(trace)
        drawn = run_path(trace)
        first = events[0] if events else {}
        finished = next((e for e in reversed(events) if e.get("event") == "run_finished"), None)
        # A relative path (a trace from an older version, run from the command line) is found as list_runs finds it.
        diagram_path = resolved_path(str(first.get("path", "")), (Path.cwd(), self.runs_dir.resolve().parent))
        relative = self.folder.relative(diagram_path) if diagram_path is not None and \
            diagram_path.is_relative_to(self.folder.root) else None
        errors = finished.get("errors") if finished else None
        # A resumed run's trace holds each part: its status is its last part's.
        status = self._status(run_id, run_status(latest_start(events), events[-1]) if events else "running", row)
        data = RunData(
            run_id=run_id, diagram=relative, status=status,
            errors=[e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else [],
            blocks=sorted(drawn.blocks), links=sorted(drawn.links),
            # One id as before; every failed block, handled ones too, when on_error handled any (#7).
            failed=sorted(drawn.failed_blocks()) if drawn.handled else drawn.failed, passes=drawn.passes,
            # The HTTP payloads stay in the trace: the page shows inputs and outputs.
            steps=_asked(list(steps(events)), events, status),
            events=events[after:], count=len(events), variables=self._variables(run_id) if status != "running" else None,
            waiting=_waiting(row, self._secrets()) if status == "waiting" else None,
            checkpointed=row is not None, replay_of=row.get("replay_of") if row else None,
            session=row.get("session") if row else None)
        # Traces are scrubbed when written; this scrubs again for traces written elsewhere or by older versions.
        return JSON(redact_value(dumped(data), self._secrets()))

    def _starting(self, run_id: str) -> RunData:
        path = self.recorded[run_id][0] if run_id in self.recorded else None
        return RunData(run_id=run_id, diagram=self.folder.relative(path) if path is not None else None,
                       status="running", errors=[], blocks=[], links=[], failed=None, passes={}, steps=[], events=[],
                       count=0, variables=None)

    def _variables(self, run_id: str) -> dict[str, Any] | None:
        """The final variables of a run this session started, once it has ended (the trace does not keep them)."""
        kept = self.recorded.get(run_id)
        return dict(kept[2][0].variables) if kept is not None and kept[2] else None

    def _secrets(self) -> list[str]:
        return (self.services or Services()).secrets()

    async def save_scenario(self, request: Request) -> Response:
        from engine.testing.recorded import record_scenario

        run_id = request.path_params["run_id"]
        payload = await json_body(request)
        kept = self.recorded.get(run_id)
        if run_id in self.continued:
            raise FolderError(409, "a resumed or replayed run cannot be saved as a scenario: its first part ran earlier")
        if kept is None or not kept[2] or run_id in self.active:
            raise FolderError(409, "only a finished run started from this studio session can be saved as a scenario")
        relative = payload.get("path")
        target = self.folder.inside(relative) if isinstance(relative, str) else None
        if target is None or not target.name.endswith(".scenario.yaml"):
            raise FolderError(422, "path: a file in the served folder ending in .scenario.yaml")
        diagram_path, inputs, results, replies = kept
        record_scenario(target, diagram_path, inputs, results[0], replies)
        return answer(PathAnswer(path=self.folder.relative(target)), 201)

    async def run_scenarios(self, request: Request) -> Response:
        from engine.testing.scenarios import load_scenarios, run_scenario_async

        payload = await json_body(request)
        one = payload.get("file")
        if one is not None:  # one scenario file, run from the files list
            path = self.folder.inside(one) if isinstance(one, str) else None
            if path is None or not path.is_file() or not path.name.endswith(".scenario.yaml"):
                raise FolderError(422, "file: a .scenario.yaml file inside the served folder")
            files = [path]
        else:
            relative = payload.get("folder", ".")
            folder = self.folder.inside(relative) if isinstance(relative, str) else None
            if folder is None or not folder.is_dir():
                raise FolderError(422, "folder: a folder inside the served folder")
            files = sorted(folder.rglob("*.scenario.yaml"))
        results: list[ScenarioResult] = []
        for file in files:
            if self.folder.inside(str(file.relative_to(self.folder.root))) is None:
                continue  # a symlink that leaves the folder
            try:
                scenarios = load_scenarios(file)
            except DiagramaError as exc:
                results.append(ScenarioResult(file=self.folder.relative(file), name=None, passed=False, failures=[str(exc)]))
                continue
            for scenario in scenarios:
                verdict = await run_scenario_async(scenario, self.registry, self.runs_dir, self.folder.data_roots)
                results.append(ScenarioResult(file=self.folder.relative(file), name=scenario.spec.scenario,
                                              passed=verdict.passed, failures=list(verdict.failures)))
        return answer(ScenarioResults(results=results))


def _asked(found: list[Step], events: list[dict[str, Any]], status: str) -> list[Step]:
    """The steps as the page shows them (without HTTP payloads, which stay in the trace); a Wait's step that asked
    and stopped the run is `waiting`, not `running` (the trace has it started, and its run stopped after it)."""
    asked = {e.get("block") for e in events if e.get("event") == "run_waiting"}
    shown = []
    for index, step in enumerate(found):
        stopped = index < len(found) - 1 or status != "running"
        waited = step.status == "running" and stopped and step.block in asked
        shown.append(dataclasses.replace(step, payloads=[], status="waiting" if waited else step.status))
    return shown


def _waiting(row: dict[str, Any] | None, secrets: list[str]) -> Waiting | None:
    """What a waiting run's Wait asks, from its store row (scrubbed: a prompt may quote anything)."""
    asked = row.get("waiting") if row is not None else None
    if not isinstance(asked, dict):
        return None
    asked = redact_value(asked, secrets)
    form = asked.get("form")
    return Waiting(block=str(asked.get("block")), prompt=str(asked.get("prompt") or ""),
                   form=form if isinstance(form, dict) else None, timeout=asked.get("timeout"),
                   asked_at=asked.get("asked_at"))
